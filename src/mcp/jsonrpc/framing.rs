//! Newline-delimited framing of the client's stream, with a maximum line length: the
//! process layer's framer behind an async, cancel-safe reader, and the line writer.
//!
//! MCP's stdio transport sends one JSON-RPC message per line. Framing works on bytes, not
//! text, so a UTF-8 character split across two reads is never corrupted: a line is only
//! decoded (by `serde_json`, from bytes) once it is whole. A line longer than the limit is
//! dropped and reported instead of growing the buffer without bound (the same defence as
//! rmcp's `transport/async_rw.rs`), with its first and last [`LINE_EXCERPT_BYTES`](crate::process::LINE_EXCERPT_BYTES) kept so that
//! the proxy can still answer it (see `oversized`). This module owns reading and writing lines; what a line
//! means is [`super::message`]'s business.

use std::collections::VecDeque;
use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, BufWriter};
use tokio::sync::mpsc;

use crate::process::{LineFrame, LineFramer};

/// Default cap on one message: 16 MiB, as rmcp's stdio transport (the process layer's
/// cap on a line, the same framer).
pub(crate) const DEFAULT_MAX_LINE_LENGTH: usize = crate::process::DEFAULT_MAX_LINE;

/// What is kept of a dropped over-long line: its length and both ends.
pub(crate) type Dropped = crate::process::Excerpt;

/// One framing step.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Frame {
    /// A whole line, without its `\n` (and without a `\r` before it).
    Line(Vec<u8>),
    /// A line longer than the limit was dropped.
    Oversized(Dropped),
    /// The stream ended. Bytes after the last newline are not a message and are dropped.
    Eof,
}

/// Reads lines from a byte stream with the process layer's [`LineFramer`], never holding
/// more than the maximum line length.
///
/// Cancel-safe: [`LineReader::next`] may be dropped at any await (it runs in the
/// dispatcher's `select!`); bytes taken from the stream are framed in the same step, and
/// frames not yet returned wait in the reader.
pub(crate) struct LineReader<R> {
    inner: BufReader<R>,
    framer: LineFramer,
    ready: VecDeque<LineFrame>,
}

impl<R: AsyncRead + Unpin> LineReader<R> {
    /// A reader of lines of at most `max` bytes.
    pub(crate) fn new(inner: R, max: usize) -> Self {
        LineReader {
            inner: BufReader::with_capacity(64 * 1024, inner),
            framer: LineFramer::new(max),
            ready: VecDeque::new(),
        }
    }

    /// The next frame. Blank lines are skipped.
    ///
    /// # Errors
    /// Read errors of the underlying stream.
    pub(crate) async fn next(&mut self) -> io::Result<Frame> {
        loop {
            match self.next_raw().await? {
                Frame::Line(line) if line.iter().all(u8::is_ascii_whitespace) => {}
                other => return Ok(other),
            }
        }
    }

    async fn next_raw(&mut self) -> io::Result<Frame> {
        loop {
            match self.ready.pop_front() {
                Some(LineFrame::Line(line)) => return Ok(Frame::Line(line)),
                Some(LineFrame::TooLong(excerpt)) => return Ok(Frame::Oversized(excerpt)),
                None => {}
            }
            // Between the await and `consume` nothing awaits: what is read is framed and
            // consumed in the same step, so cancelling loses nothing.
            let available = self.inner.fill_buf().await?;
            if available.is_empty() {
                return Ok(match self.framer.finish() {
                    Some(LineFrame::TooLong(excerpt)) => Frame::Oversized(excerpt),
                    Some(LineFrame::Line(_)) | None => Frame::Eof,
                });
            }
            let read = available.len();
            let mut frames = Vec::new();
            self.framer.push(available, &mut frames);
            self.inner.consume(read);
            self.ready.extend(frames);
        }
    }
}

/// The task writing the client's lines: what is sent on the channel from
/// [`spawn_client_writer`] goes out in order.
#[derive(Debug)]
pub(crate) struct ClientWriter(tokio::task::JoinHandle<()>);

/// Where the front puts lines for the client: the writer task's queue, bounded in bytes.
/// A client that stops reading while more than the bound is queued is given up: the
/// line that would pass the bound is dropped, and so is every line after it, and the
/// owner hears why once (the front then shuts down). Memory stays bounded whatever the
/// server sends, and the front never waits on the client.
#[derive(Debug, Clone)]
pub(crate) struct ClientSink {
    lines: mpsc::UnboundedSender<Vec<u8>>,
    queued: Arc<AtomicUsize>,
    max_queued: usize,
    overflow: mpsc::UnboundedSender<String>,
}

impl ClientSink {
    /// Queue one line (without its newline) for the client. Never waits.
    pub(crate) fn send(&self, line: Vec<u8>) {
        let size = line.len() + 1;
        let before = self.queued.fetch_add(size, Ordering::AcqRel);
        // A line alone always goes (its size is bounded by the line limit).
        if before > 0 && before + size > self.max_queued {
            self.queued.fetch_sub(size, Ordering::AcqRel);
            let _ = self.overflow.send(format!(
                "it stopped reading: {before} bytes wait for it, and {size} more would pass the limit of {} (mcp.buffer_max_bytes)",
                self.max_queued
            ));
            return;
        }
        let _ = self.lines.send(line);
    }
}

/// Start writing lines to the client's `output`, at most `max_queued` bytes waiting; a
/// failed write or a client that stopped reading goes to `on_error` (once). The task
/// ends once every sink is dropped and what was queued is written.
pub(crate) fn spawn_client_writer<W>(
    output: W,
    max_queued: usize,
    on_error: impl Fn(String) + Send + 'static,
) -> (ClientSink, ClientWriter)
where
    W: AsyncWrite + Send + Unpin + 'static,
{
    let (lines, pending) = mpsc::unbounded_channel();
    let (overflow, mut overflowed) = mpsc::unbounded_channel();
    let queued = Arc::new(AtomicUsize::new(0));
    let written = Arc::clone(&queued);
    let task = tokio::spawn(async move {
        let writing = write_lines(output, pending, &written);
        tokio::pin!(writing);
        let result = tokio::select! {
            result = &mut writing => result,
            Some(why) = overflowed.recv() => Err(io::Error::other(why)),
        };
        if let Err(err) = result {
            on_error(err.to_string());
        }
    });
    let sink = ClientSink {
        lines,
        queued,
        max_queued,
        overflow,
    };
    (sink, ClientWriter(task))
}

impl ClientWriter {
    /// Wait (at most 5 s) until everything queued for the client is written: call it once
    /// every sender is dropped, before returning to the caller.
    pub(crate) async fn drain(self) {
        if tokio::time::timeout(std::time::Duration::from_secs(5), self.0)
            .await
            .is_err()
        {
            crate::mcp::say("the client did not read the last messages within 5 s");
        }
    }
}

/// Write lines from `lines` to `out`, each followed by `\n`, flushing whenever the queue
/// runs dry (one flush per burst, not per line). Ends when the channel closes or a write
/// fails; the error is returned so the owner can report it.
pub(crate) async fn write_lines<W: AsyncWrite + Unpin>(
    out: W,
    mut lines: mpsc::UnboundedReceiver<Vec<u8>>,
    queued: &AtomicUsize,
) -> io::Result<()> {
    let mut out = BufWriter::with_capacity(64 * 1024, out);
    while let Some(line) = lines.recv().await {
        out.write_all(&line).await?;
        out.write_all(b"\n").await?;
        queued.fetch_sub(line.len() + 1, Ordering::AcqRel);
        while let Ok(line) = lines.try_recv() {
            out.write_all(&line).await?;
            out.write_all(b"\n").await?;
            queued.fetch_sub(line.len() + 1, Ordering::AcqRel);
        }
        out.flush().await?;
    }
    out.flush().await?;
    out.into_inner().shutdown().await
}

#[cfg(test)]
mod tests {
    use tokio::io::AsyncWriteExt;

    use super::*;

    async fn frames(input: Vec<Vec<u8>>, max: usize) -> Vec<Frame> {
        let (mut tx, rx) = tokio::io::duplex(7);
        let writer = tokio::spawn(async move {
            for chunk in input {
                tx.write_all(&chunk).await.expect("write");
            }
        });
        let mut reader = LineReader::new(rx, max);
        let mut out = Vec::new();
        loop {
            let frame = reader.next().await.expect("read");
            let end = frame == Frame::Eof;
            out.push(frame);
            if end {
                break;
            }
        }
        writer.await.expect("writer");
        out
    }

    #[tokio::test]
    async fn utf8_split_across_reads_is_intact() {
        let text = "{\"t\":\"日本語 ✓\"}\n".as_bytes().to_vec();
        // Cut inside the multi-byte characters, one byte at a time.
        let chunks = text.iter().map(|b| vec![*b]).collect();
        let got = frames(chunks, 1024).await;
        assert_eq!(
            got,
            vec![Frame::Line(text[..text.len() - 1].to_vec()), Frame::Eof]
        );
    }

    #[tokio::test]
    async fn crlf_blank_lines_and_trailing_bytes() {
        let got = frames(vec![b"a\r\n\n  \nb\nno-newline".to_vec()], 1024).await;
        assert_eq!(
            got,
            vec![
                Frame::Line(b"a".to_vec()),
                Frame::Line(b"b".to_vec()),
                Frame::Eof
            ]
        );
    }

    #[tokio::test]
    async fn oversized_lines_are_dropped_and_reading_goes_on() {
        let mut long = vec![b'x'; 100];
        long.push(b'\n');
        let mut input = b"ok\n".to_vec();
        input.extend_from_slice(&long);
        input.extend_from_slice(b"after\n");
        let got = frames(vec![input], 10).await;
        assert_eq!(
            got,
            vec![
                Frame::Line(b"ok".to_vec()),
                Frame::Oversized(Dropped {
                    len: 100,
                    head: vec![b'x'; 100],
                    tail: vec![b'x'; 100],
                }),
                Frame::Line(b"after".to_vec()),
                Frame::Eof
            ]
        );
        // A line of exactly the limit is accepted.
        let got = frames(vec![b"0123456789\n".to_vec()], 10).await;
        assert_eq!(got[0], Frame::Line(b"0123456789".to_vec()));
    }

    #[tokio::test]
    async fn a_client_that_stops_reading_is_given_up_past_the_bound() {
        // Nobody reads the other end: 64 bytes fit in the pipe, then writes wait.
        let (out, _unread) = tokio::io::duplex(64);
        let (why_tx, mut why) = mpsc::unbounded_channel();
        let (sink, writer) = spawn_client_writer(out, 1000, move |err| {
            let _ = why_tx.send(err);
        });
        for _ in 0..1000 {
            sink.send(vec![b'x'; 99]);
        }
        let why = tokio::time::timeout(std::time::Duration::from_secs(5), why.recv())
            .await
            .expect("given up in time")
            .expect("a reason");
        assert!(why.contains("stopped reading"), "{why}");
        assert!(why.contains("limit of 1000"), "{why}");
        assert!(sink.queued.load(Ordering::Acquire) <= 1000);
        drop(sink);
        writer.drain().await;
    }

    #[tokio::test]
    async fn writer_appends_newlines_and_flushes() {
        let (tx, rx) = mpsc::unbounded_channel();
        let (out, mut read_end) = tokio::io::duplex(1024);
        tx.send(b"one".to_vec()).expect("send");
        tx.send(b"two".to_vec()).expect("send");
        drop(tx);
        write_lines(out, rx, &AtomicUsize::new(usize::MAX / 2))
            .await
            .expect("write");
        let mut got = Vec::new();
        tokio::io::AsyncReadExt::read_to_end(&mut read_end, &mut got)
            .await
            .expect("read");
        assert_eq!(got, b"one\ntwo\n");
    }
}
