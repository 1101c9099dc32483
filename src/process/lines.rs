//! Framing a child's output into lines on bytes, with a hard cap per line, and the
//! reader of one pipe: a task of its own feeding the event channel, or driven by
//! [`super::Events`] itself (see [`BatchSink`]).
//!
//! Framing works on raw bytes and splits only at `\n`, so a UTF-8 character cut in two
//! by a read boundary is reassembled untouched. Memory per stream is bounded by the
//! line cap plus one read buffer: an over-long line's bytes are dropped until the next
//! newline, keeping only its length and its first and last [`LINE_EXCERPT_BYTES`],
//! and it is reported once, when it ends.

use std::sync::{Arc, Mutex, PoisonError};
use std::task::Poll;

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::event::{ProcessEvent, Stream};

/// Events travel from the tasks to [`super::Events`] in batches: all the lines one read
/// completed. Never empty.
pub(crate) type EventBatch = Vec<ProcessEvent>;

/// Where a pipe's reader puts the batches it reads.
#[derive(Debug)]
pub(crate) enum BatchSink {
    /// The reader is a task of its own: batches go on the event channel, and the reader
    /// waits while the channel is full.
    Channel(mpsc::Sender<EventBatch>),
    /// The reader is polled by [`super::Events`] alone: one batch at a time in the slot.
    /// A full slot makes the reader wait without registering a waker, since `Events`
    /// empties the slot and then polls the reader again itself.
    Slot(Arc<Mutex<Option<EventBatch>>>),
}

impl BatchSink {
    /// Hand over `batch`. Fails once nobody receives any more.
    async fn send(&self, batch: EventBatch) -> Result<(), ()> {
        match self {
            BatchSink::Channel(events) => events.send(batch).await.map_err(drop),
            BatchSink::Slot(slot) => {
                let mut batch = Some(batch);
                std::future::poll_fn(|_| {
                    let mut slot = slot.lock().unwrap_or_else(PoisonError::into_inner);
                    if slot.is_none() {
                        *slot = batch.take();
                        Poll::Ready(Ok(()))
                    } else {
                        Poll::Pending
                    }
                })
                .await
            }
        }
    }
}

/// How a pipe's reader ended, once it has: what the supervising task waits for before
/// it reports the child's exit.
pub(crate) type ReaderDone = std::pin::Pin<Box<dyn std::future::Future<Output = ReaderEnd> + Send>>;

/// Read `pipe` on a task of its own into `sink`.
pub(crate) fn spawn_reader<R>(
    pipe: R,
    stream: Stream,
    max_line: usize,
    sink: BatchSink,
    exited: CancellationToken,
    abandon: CancellationToken,
) -> ReaderDone
where
    R: AsyncRead + Unpin + Send + 'static,
{
    let task = tokio::spawn(read_lines(pipe, stream, max_line, sink, exited, abandon));
    Box::pin(async move { task.await.unwrap_or(ReaderEnd::Failed) })
}

/// Default cap on one line: 16 MiB.
pub const DEFAULT_MAX_LINE: usize = 16 * 1024 * 1024;

/// Bytes kept of each end of an over-long line (see [`ProcessEvent::LineTooLong`]).
pub const LINE_EXCERPT_BYTES: usize = 4096;

/// Bytes asked of the pipe per read.
const READ_CHUNK: usize = 64 * 1024;

/// One framed unit out of [`LineFramer`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Frame {
    /// A complete line without its terminator.
    Line(Vec<u8>),
    /// A line over the cap ended; only its length and both ends were kept.
    TooLong(Excerpt),
}

/// What is kept of an over-long line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Excerpt {
    /// Its length in bytes, without the terminator.
    pub(crate) len: usize,
    /// Its first bytes, at most [`LINE_EXCERPT_BYTES`].
    pub(crate) head: Vec<u8>,
    /// Its last bytes, at most [`LINE_EXCERPT_BYTES`].
    pub(crate) tail: Vec<u8>,
}

impl Excerpt {
    /// Start keeping a line whose first bytes are `first` then `then`.
    fn start(first: &[u8], then: &[u8]) -> Self {
        let mut excerpt = Excerpt {
            len: 0,
            head: Vec::new(),
            tail: Vec::new(),
        };
        excerpt.extend(first);
        excerpt.extend(then);
        excerpt
    }

    /// More bytes of the line: count them and keep the last ones.
    fn extend(&mut self, data: &[u8]) {
        self.len += data.len();
        if self.head.len() < LINE_EXCERPT_BYTES {
            let room = LINE_EXCERPT_BYTES - self.head.len();
            self.head.extend_from_slice(&data[..data.len().min(room)]);
        }
        if data.len() >= LINE_EXCERPT_BYTES {
            self.tail.clear();
            self.tail
                .extend_from_slice(&data[data.len() - LINE_EXCERPT_BYTES..]);
        } else {
            self.tail.extend_from_slice(data);
            let over = self.tail.len().saturating_sub(LINE_EXCERPT_BYTES);
            self.tail.drain(..over);
        }
    }

    /// The line ended: drop a `\r` terminator from the count and the tail.
    fn end(mut self) -> Frame {
        if self.tail.last() == Some(&b'\r') {
            self.tail.pop();
            self.len -= 1;
            self.head.truncate(self.len);
        }
        Frame::TooLong(self)
    }
}

/// Splits a byte stream into lines of at most `max` bytes (terminator excluded).
///
/// Pure: feed it chunks with [`LineFramer::push`], then call [`LineFramer::finish`] at
/// end of stream for the final unterminated line.
#[derive(Debug)]
pub(crate) struct LineFramer {
    max: usize,
    partial: Vec<u8>,
    /// Set while dropping an over-long line: what is kept of it.
    discarding: Option<Excerpt>,
}

impl LineFramer {
    /// A framer accepting lines of up to `max` bytes.
    pub(crate) fn new(max: usize) -> Self {
        LineFramer {
            max,
            partial: Vec::new(),
            discarding: None,
        }
    }

    /// Consume `data`, appending every frame it completes to `out`.
    pub(crate) fn push(&mut self, mut data: &[u8], out: &mut Vec<Frame>) {
        while !data.is_empty() {
            match data.iter().position(|&b| b == b'\n') {
                Some(at) => {
                    let head = &data[..at];
                    data = &data[at + 1..];
                    if let Some(mut excerpt) = self.discarding.take() {
                        excerpt.extend(head);
                        out.push(excerpt.end());
                        continue;
                    }
                    let line = if self.partial.is_empty() {
                        head.to_vec()
                    } else {
                        let mut line = std::mem::take(&mut self.partial);
                        line.extend_from_slice(head);
                        line
                    };
                    out.push(self.complete(line));
                }
                None => {
                    if let Some(excerpt) = &mut self.discarding {
                        excerpt.extend(data);
                    } else if self.partial.len() + data.len()
                        > self.max + usize::from(ends_cr(data))
                    {
                        let partial = std::mem::take(&mut self.partial);
                        self.discarding = Some(Excerpt::start(&partial, data));
                    } else {
                        self.partial.extend_from_slice(data);
                    }
                    return;
                }
            }
        }
    }

    /// End of stream: the final line if it had no newline (and was not over-long).
    pub(crate) fn finish(&mut self) -> Option<Frame> {
        if let Some(excerpt) = self.discarding.take() {
            return Some(excerpt.end());
        }
        if self.partial.is_empty() {
            return None;
        }
        let line = std::mem::take(&mut self.partial);
        Some(self.complete(line))
    }

    /// Strip a `\r` terminator, enforce the cap, and produce the frame.
    fn complete(&self, mut line: Vec<u8>) -> Frame {
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        if line.len() > self.max {
            Frame::TooLong(Excerpt::start(&line, &[]))
        } else {
            Frame::Line(line)
        }
    }
}

/// A pending line may end in `\r` that the coming `\n` will strip: allow one byte for it.
fn ends_cr(data: &[u8]) -> bool {
    data.last() == Some(&b'\r')
}

/// How a reader task ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReaderEnd {
    /// The pipe reached end of file: every writer closed it.
    Eof,
    /// After the child exited, the pipe stayed open: some process outside the child's
    /// group holds it. Reading was given up.
    Abandoned,
    /// Reading failed; the error was logged.
    Failed,
}

/// Bytes a reader still takes after the child exited. What the child itself wrote is
/// at most a pipe buffer (64 KiB by default, 1 MiB at most unless raised by root), so
/// more than this comes from a leaked writer that would otherwise keep us reading forever.
const POST_EXIT_LIMIT: usize = 16 * 1024 * 1024;

/// Read `pipe` to its end, sending framed lines to `events`.
///
/// While the child runs, reads wait as long as needed. Once `exited` is cancelled (the
/// child was reaped), what is in the pipe is still read, but once `abandon` is cancelled
/// too (the supervisor gave up waiting for other writers to close it), a read that
/// would wait ends the reader with [`ReaderEnd::Abandoned`].
///
/// A full event channel (counted in reads, not lines) holds the reader back (and with it the child, whose pipe
/// fills): that is the flow control the MCP proxy relies on. If the receiver is gone,
/// the reader keeps draining and discarding so the child never blocks on a full pipe.
pub(crate) async fn read_lines<R>(
    mut pipe: R,
    stream: Stream,
    max_line: usize,
    events: BatchSink,
    exited: CancellationToken,
    abandon: CancellationToken,
) -> ReaderEnd
where
    R: AsyncRead + Unpin,
{
    let mut framer = LineFramer::new(max_line);
    let mut buf = vec![0_u8; READ_CHUNK];
    let mut frames = Vec::new();
    let mut receiver_gone = false;
    let mut after_exit = 0_usize;
    // One wait for the exit, made once: a fresh one per read would register and
    // unregister a waiter on every line of output.
    let exit_seen = exited.cancelled();
    tokio::pin!(exit_seen);
    let end = loop {
        let read = if exited.is_cancelled() {
            if after_exit > POST_EXIT_LIMIT {
                break ReaderEnd::Abandoned;
            }
            // Data already in the pipe (or its end) wins over abandoning.
            tokio::select! {
                biased;
                read = pipe.read(&mut buf) => read,
                () = abandon.cancelled() => break ReaderEnd::Abandoned,
            }
        } else {
            tokio::select! {
                read = pipe.read(&mut buf) => read,
                () = &mut exit_seen => continue,
            }
        };
        let n = match read {
            Ok(0) => break ReaderEnd::Eof,
            Ok(n) => n,
            Err(err) if err.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(err) => {
                tracing::warn!(%stream, error = %err, "failed to read child output");
                break ReaderEnd::Failed;
            }
        };
        if exited.is_cancelled() {
            after_exit += n;
        }
        framer.push(&buf[..n], &mut frames);
        if !frames.is_empty() && !receiver_gone {
            // One message per read, not per line: the channel costs the same for a
            // batch as for one line, and a read is at most READ_CHUNK bytes of new data.
            let batch: EventBatch = frames
                .drain(..)
                .map(|frame| to_event(stream, max_line, frame))
                .collect();
            receiver_gone = events.send(batch).await.is_err();
        }
        frames.clear();
    };
    if end == ReaderEnd::Eof
        && let Some(frame) = framer.finish()
        && !receiver_gone
    {
        let _ = events.send(vec![to_event(stream, max_line, frame)]).await;
    }
    end
}

fn to_event(stream: Stream, limit: usize, frame: Frame) -> ProcessEvent {
    match frame {
        Frame::Line(line) => ProcessEvent::Line { stream, line },
        Frame::TooLong(Excerpt { len, head, tail }) => ProcessEvent::LineTooLong {
            stream,
            limit,
            len,
            head,
            tail,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame_all(max: usize, chunks: &[&[u8]]) -> Vec<Frame> {
        let mut framer = LineFramer::new(max);
        let mut out = Vec::new();
        for chunk in chunks {
            framer.push(chunk, &mut out);
        }
        out.extend(framer.finish());
        out
    }

    fn line(bytes: &[u8]) -> Frame {
        Frame::Line(bytes.to_vec())
    }

    fn too_long(text: &[u8]) -> Frame {
        Frame::TooLong(Excerpt {
            len: text.len(),
            head: text.to_vec(),
            tail: text.to_vec(),
        })
    }

    #[test]
    fn splits_on_newlines() {
        assert_eq!(
            frame_all(100, &[b"a\nbb\n\nccc\n"]),
            vec![line(b"a"), line(b"bb"), line(b""), line(b"ccc")]
        );
    }

    #[test]
    fn final_unterminated_line_is_delivered() {
        assert_eq!(
            frame_all(100, &[b"a\nlast"]),
            vec![line(b"a"), line(b"last")]
        );
        assert_eq!(frame_all(100, &[b"a\n"]), vec![line(b"a")]);
        assert_eq!(frame_all(100, &[]), vec![]);
    }

    #[test]
    fn crlf_is_stripped_but_lone_cr_inside_kept() {
        assert_eq!(
            frame_all(100, &[b"a\r\nb\rc\n"]),
            vec![line(b"a"), line(b"b\rc")]
        );
    }

    #[test]
    fn utf8_split_across_every_boundary_survives() {
        let text = "héllo → wörld 🎵\nsecond ✓ line\n";
        let bytes = text.as_bytes();
        for cut in 0..=bytes.len() {
            let frames = frame_all(1024, &[&bytes[..cut], &bytes[cut..]]);
            assert_eq!(
                frames,
                vec![
                    line("héllo → wörld 🎵".as_bytes()),
                    line("second ✓ line".as_bytes())
                ],
                "cut at {cut}"
            );
        }
        // One byte at a time.
        let chunks: Vec<&[u8]> = bytes.chunks(1).collect();
        let frames = frame_all(1024, &chunks);
        assert_eq!(frames.len(), 2);
        assert_eq!(frames[0], line("héllo → wörld 🎵".as_bytes()));
    }

    #[test]
    fn line_at_the_limit_passes_and_one_over_is_dropped() {
        assert_eq!(frame_all(4, &[b"abcd\n"]), vec![line(b"abcd")]);
        assert_eq!(frame_all(4, &[b"abcd\r\n"]), vec![line(b"abcd")]);
        assert_eq!(
            frame_all(4, &[b"abcde\nok\n"]),
            vec![too_long(b"abcde"), line(b"ok")]
        );
    }

    #[test]
    fn over_long_line_across_chunks_is_reported_once_and_skipped() {
        let frames = frame_all(4, &[b"ab", b"cd", b"ef", b"ghij", b"kl\r\nnext\n", b"tail"]);
        assert_eq!(
            frames,
            vec![too_long(b"abcdefghijkl"), line(b"next"), line(b"tail")]
        );
    }

    #[test]
    fn over_long_final_line_without_newline() {
        assert_eq!(
            frame_all(4, &[b"ok\n", b"toolong"]),
            vec![line(b"ok"), too_long(b"toolong")]
        );
    }

    #[test]
    fn memory_stays_bounded_while_discarding() {
        let mut framer = LineFramer::new(8);
        let mut out = Vec::new();
        let chunk = vec![b'x'; 4096];
        framer.push(b"{\"id\":1,", &mut out);
        for _ in 0..1000 {
            framer.push(&chunk, &mut out);
            assert!(framer.partial.capacity() <= 8 + 4096);
            let kept = framer.discarding.as_ref().expect("discarding");
            assert!(kept.head.len() <= LINE_EXCERPT_BYTES);
            assert!(kept.tail.len() <= LINE_EXCERPT_BYTES);
        }
        assert!(out.is_empty());
        framer.push(b"xyz\"}\nfine\n", &mut out);
        let Some(Frame::TooLong(excerpt)) = out.first() else {
            panic!("{out:?}")
        };
        assert_eq!(excerpt.len, 8 + 4096 * 1000 + 5);
        assert!(excerpt.head.starts_with(b"{\"id\":1,xxx"));
        assert_eq!(excerpt.head.len(), LINE_EXCERPT_BYTES);
        assert!(excerpt.tail.ends_with(b"xxxxyz\"}"));
        assert_eq!(excerpt.tail.len(), LINE_EXCERPT_BYTES);
        assert_eq!(out[1], line(b"fine"));
    }

    /// Read `data` to its end into `tx`, never told to stop.
    async fn read_all(
        data: &[u8],
        stream: Stream,
        tx: mpsc::Sender<Vec<ProcessEvent>>,
    ) -> ReaderEnd {
        let (exited, abandon) = (CancellationToken::new(), CancellationToken::new());
        read_lines(data, stream, 1024, BatchSink::Channel(tx), exited, abandon).await
    }

    #[tokio::test]
    async fn reader_frames_a_pipe_and_reports_eof() {
        let (tx, mut rx) = mpsc::channel(16);
        let data: &[u8] = b"one\ntwo\nthree";
        let end = read_all(data, Stream::Stdout, tx).await;
        assert_eq!(end, ReaderEnd::Eof);
        let mut lines = Vec::new();
        while let Some(batch) = rx.recv().await {
            assert!(!batch.is_empty());
            lines.extend(batch);
        }
        assert_eq!(
            lines,
            ["one", "two", "three"]
                .iter()
                .map(|l| ProcessEvent::Line {
                    stream: Stream::Stdout,
                    line: l.as_bytes().to_vec()
                })
                .collect::<Vec<_>>()
        );
    }

    #[tokio::test]
    async fn reader_keeps_draining_when_the_receiver_is_gone() {
        let (tx, rx) = mpsc::channel(1);
        drop(rx);
        let data = b"x\n".repeat(10_000);
        let end = read_all(&data[..], Stream::Stderr, tx).await;
        assert_eq!(end, ReaderEnd::Eof);
    }

    #[tokio::test]
    async fn reader_abandons_a_silent_pipe_once_told() {
        let (tx, mut rx) = mpsc::channel(4);
        let (mut writer, reader) = tokio::io::duplex(64);
        tokio::io::AsyncWriteExt::write_all(&mut writer, b"left in the pipe\n")
            .await
            .expect("write");
        let exited = CancellationToken::new();
        exited.cancel();
        let abandon = CancellationToken::new();
        abandon.cancel();
        let end = tokio::time::timeout(
            std::time::Duration::from_secs(5),
            read_lines(
                reader,
                Stream::Stdout,
                1024,
                BatchSink::Channel(tx),
                exited,
                abandon,
            ),
        )
        .await
        .expect("reader must give up on its own");
        assert_eq!(end, ReaderEnd::Abandoned);
        // What was already in the pipe was still delivered.
        assert_eq!(
            rx.recv().await,
            Some(vec![ProcessEvent::Line {
                stream: Stream::Stdout,
                line: b"left in the pipe".to_vec()
            }])
        );
    }
}
