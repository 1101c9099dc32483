//! Lines out to the client, written through: a line goes straight to the pipe when
//! nothing waits before it, and waits in order, bounded in bytes, when the pipe is full.
//!
//! A request in and an answer out is the proxy's hot path. A writer task between the
//! front and the pipe would cost a task hand-off per message; here the front writes
//! itself, never waiting, and what the pipe does not take at once goes out from the
//! front's loop when the pipe is writable again ([`LineWriter::flush`], cancel-safe, in
//! its `select!`).

use std::future::poll_fn;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use tokio::io::AsyncWrite;

/// Pending bytes kept between bursts: a buffer grown past this by one burst is freed once
/// the burst is written, so an idle proxy holds little.
const KEEP_CAPACITY: usize = 64 * 1024;

/// Where the writer is in its life.
#[derive(Debug, PartialEq, Eq)]
enum State {
    /// Writing.
    Open,
    /// A write failed, or the peer stopped reading past the bound: the reason, not yet
    /// handed to the owner.
    Failed(String),
    /// Given up and reported: later lines are dropped.
    Gone,
}

/// Lines for one peer: written at once when the pipe takes them, queued in order when it
/// does not. A peer that stops reading while more than `max_queued` bytes wait is given
/// up: the line that would pass the bound is dropped, and so is every line after it, and
/// [`flush`](Self::flush) reports why once. Memory stays bounded whatever the server
/// sends, and the owner never waits on the peer.
pub(crate) struct LineWriter {
    out: Pin<Box<dyn AsyncWrite + Send>>,
    /// Bytes not yet written, from `start` on.
    pending: Vec<u8>,
    start: usize,
    max_queued: usize,
    state: State,
}

impl std::fmt::Debug for LineWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LineWriter")
            .field("queued", &self.queued())
            .field("max_queued", &self.max_queued)
            .field("state", &self.state)
            .finish_non_exhaustive()
    }
}

impl LineWriter {
    /// A writer to `out` holding at most `max_queued` bytes the peer has not taken yet.
    pub(crate) fn new(out: Pin<Box<dyn AsyncWrite + Send>>, max_queued: usize) -> Self {
        LineWriter {
            out,
            pending: Vec::new(),
            start: 0,
            max_queued,
            state: State::Open,
        }
    }

    /// Bytes waiting for the peer.
    pub(crate) fn queued(&self) -> usize {
        self.pending.len() - self.start
    }

    /// Send one line (without its newline). Never waits.
    pub(crate) fn send(&mut self, mut line: Vec<u8>) {
        if self.state != State::Open {
            return;
        }
        line.push(b'\n');
        if self.queued() > 0 {
            // What waits goes first, and the pipe may have room again: the owner's loop
            // may be too busy to poll `flush` (a server that floods it with output).
            let _ = self.write_pending(&mut Context::from_waker(Waker::noop()));
        }
        let queued = self.queued();
        if self.state != State::Open {
            return;
        }
        if queued > 0 {
            // A line alone always goes (its size is bounded by the line limit).
            if queued + line.len() > self.max_queued {
                self.state = State::Failed(format!(
                    "it stopped reading: {queued} bytes wait for it, and {} more would pass the limit of {} (mcp.buffer_max_bytes)",
                    line.len(),
                    self.max_queued
                ));
            } else {
                self.pending.extend_from_slice(&line);
            }
            return;
        }
        match self.write_now(&line) {
            Ok(written) if written < line.len() => {
                self.pending = line;
                self.start = written;
            }
            Ok(_) => {}
            Err(err) => self.state = State::Failed(err.to_string()),
        }
    }

    /// Write what the pipe takes of `bytes` now, without waiting.
    fn write_now(&mut self, bytes: &[u8]) -> io::Result<usize> {
        let mut cx = Context::from_waker(Waker::noop());
        let mut written = 0;
        while written < bytes.len() {
            match self.out.as_mut().poll_write(&mut cx, &bytes[written..]) {
                Poll::Ready(Ok(0)) => return Err(io::ErrorKind::WriteZero.into()),
                Poll::Ready(Ok(n)) => written += n,
                Poll::Ready(Err(err)) if err.kind() == io::ErrorKind::Interrupted => {}
                Poll::Ready(Err(err)) => return Err(err),
                // The pipe is full: the rest waits for `flush`, which registers the
                // owner's waker for writability.
                Poll::Pending => break,
            }
        }
        Ok(written)
    }

    /// Whether [`flush`](Self::flush) has something to do: bytes wait, or a failure is
    /// not reported yet. The owner's loop polls `flush` only then.
    pub(crate) fn needs_flush(&self) -> bool {
        self.queued() > 0 || matches!(self.state, State::Failed(_))
    }

    /// Write what waits, until the pipe has taken all of it. Cancel-safe: what is
    /// written is accounted at once.
    ///
    /// # Errors
    /// Why the peer was given up (a failed write, or the bound passed), once; the writer
    /// drops every line after it.
    pub(crate) async fn flush(&mut self) -> Result<(), String> {
        poll_fn(|cx| {
            let written = self.write_pending(cx);
            match std::mem::replace(&mut self.state, State::Gone) {
                State::Failed(why) => {
                    self.pending = Vec::new();
                    self.start = 0;
                    Poll::Ready(Err(why))
                }
                State::Gone => Poll::Ready(Ok(())),
                State::Open => {
                    self.state = State::Open;
                    written.map(Ok)
                }
            }
        })
        .await
    }

    /// Write what waits while the pipe takes it; ready once all of it is written and
    /// flushed, or the writer failed.
    fn write_pending(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        while self.state == State::Open {
            if self.queued() == 0 {
                self.pending.clear();
                self.start = 0;
                if self.pending.capacity() > KEEP_CAPACITY {
                    self.pending = Vec::new();
                }
                return match self.out.as_mut().poll_flush(cx) {
                    Poll::Ready(Ok(())) => Poll::Ready(()),
                    Poll::Ready(Err(err)) => {
                        self.state = State::Failed(err.to_string());
                        Poll::Ready(())
                    }
                    Poll::Pending => Poll::Pending,
                };
            }
            match self
                .out
                .as_mut()
                .poll_write(cx, &self.pending[self.start..])
            {
                Poll::Ready(Ok(0)) => {
                    self.state =
                        State::Failed(io::Error::from(io::ErrorKind::WriteZero).to_string());
                }
                Poll::Ready(Ok(n)) => self.start += n,
                Poll::Ready(Err(err)) if err.kind() == io::ErrorKind::Interrupted => {}
                Poll::Ready(Err(err)) => self.state = State::Failed(err.to_string()),
                Poll::Pending => return Poll::Pending,
            }
        }
        Poll::Ready(())
    }

    /// Write everything still waiting, for at most `limit`: the last step before the
    /// front returns.
    ///
    /// # Errors
    /// The peer was given up, or did not take it all within `limit`.
    pub(crate) async fn drain(&mut self, limit: Duration) -> Result<(), String> {
        match tokio::time::timeout(limit, self.flush()).await {
            Ok(result) => result,
            Err(_) => Err(format!(
                "it did not read them within {}",
                crate::words::precise_span(limit)
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::AsyncReadExt;

    use super::*;

    #[tokio::test]
    async fn lines_go_out_with_newlines_in_order() {
        let (out, mut read_end) = tokio::io::duplex(1024);
        let mut writer = LineWriter::new(Box::pin(out), 1 << 20);
        writer.send(b"one".to_vec());
        writer.send(b"two".to_vec());
        assert!(!writer.needs_flush(), "both fit in the pipe at once");
        writer.drain(Duration::from_secs(5)).await.expect("drained");
        drop(writer);
        let mut got = Vec::new();
        read_end.read_to_end(&mut got).await.expect("read");
        assert_eq!(got, b"one\ntwo\n");
    }

    #[tokio::test]
    async fn what_the_pipe_does_not_take_waits_in_order() {
        // 8 bytes fit; the rest waits until the reader takes some.
        let (out, mut read_end) = tokio::io::duplex(8);
        let mut writer = LineWriter::new(Box::pin(out), 1 << 20);
        writer.send(b"0123456789".to_vec());
        writer.send(b"abc".to_vec());
        assert!(writer.needs_flush());
        assert_eq!(writer.queued(), 3 + 4);
        let reader = tokio::spawn(async move {
            let mut got = Vec::new();
            read_end.read_to_end(&mut got).await.expect("read");
            got
        });
        writer.drain(Duration::from_secs(5)).await.expect("drained");
        assert!(!writer.needs_flush());
        drop(writer);
        let got = tokio::time::timeout(Duration::from_secs(5), reader)
            .await
            .expect("read in time")
            .expect("reader");
        assert_eq!(got, b"0123456789\nabc\n");
    }

    #[tokio::test]
    async fn a_peer_that_stops_reading_is_given_up_past_the_bound() {
        // Nobody reads the other end: 64 bytes fit in the pipe, then writes wait.
        let (out, _unread) = tokio::io::duplex(64);
        let mut writer = LineWriter::new(Box::pin(out), 1000);
        for _ in 0..1000 {
            writer.send(vec![b'x'; 99]);
        }
        assert!(writer.queued() <= 1000, "{}", writer.queued());
        let why = tokio::time::timeout(Duration::from_secs(5), writer.flush())
            .await
            .expect("reported at once")
            .expect_err("given up");
        assert!(why.contains("stopped reading"), "{why}");
        assert!(why.contains("limit of 1000"), "{why}");
        // Reported once; later lines are dropped.
        writer.send(b"late".to_vec());
        assert!(!writer.needs_flush());
        assert_eq!(writer.queued(), 0);
    }

    #[tokio::test]
    async fn a_closed_peer_is_reported_once() {
        let (out, read_end) = tokio::io::duplex(64);
        drop(read_end);
        let mut writer = LineWriter::new(Box::pin(out), 1000);
        writer.send(b"hello".to_vec());
        assert!(writer.needs_flush());
        let why = writer.flush().await.expect_err("the peer is gone");
        assert!(!why.is_empty());
        assert!(!writer.needs_flush());
        assert_eq!(writer.flush().await, Ok(()));
    }

    #[tokio::test]
    async fn a_client_that_does_not_read_the_last_lines_ends_the_drain_in_time() {
        let (out, _unread) = tokio::io::duplex(4);
        let mut writer = LineWriter::new(Box::pin(out), 1000);
        writer.send(b"more than four bytes".to_vec());
        let why = writer
            .drain(Duration::from_millis(50))
            .await
            .expect_err("not read");
        assert!(why.contains("did not read them within"), "{why}");
    }
}
