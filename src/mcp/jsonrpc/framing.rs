//! Newline-delimited framing of the client's stream, with a maximum line length: the
//! process layer's framer behind an async, cancel-safe reader.
//!
//! MCP's stdio transport sends one JSON-RPC message per line. Framing works on bytes, not
//! text, so a UTF-8 character split across two reads is never corrupted: a line is only
//! decoded (by `serde_json`, from bytes) once it is whole. A line longer than the limit is
//! dropped and reported instead of growing the buffer without bound (the same defence as
//! rmcp's `transport/async_rw.rs`), with its first and last [`LINE_EXCERPT_BYTES`](crate::process::LINE_EXCERPT_BYTES) kept so that
//! the proxy can still answer it (see `oversized`). This module owns reading lines
//! (writing them is [`super::line_writer`]'s); what a line means is [`super::message`]'s
//! business.

use std::collections::VecDeque;
use std::io;

use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};

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
    /// What one read completes, before it joins `ready` (kept to reuse its allocation).
    framed: Vec<LineFrame>,
}

impl<R: AsyncRead + Unpin> LineReader<R> {
    /// A reader of lines of at most `max` bytes.
    pub(crate) fn new(inner: R, max: usize) -> Self {
        LineReader {
            inner: BufReader::with_capacity(64 * 1024, inner),
            framer: LineFramer::new(max),
            ready: VecDeque::new(),
            framed: Vec::new(),
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
            self.framer.push(available, &mut self.framed);
            self.inner.consume(read);
            self.ready.extend(self.framed.drain(..));
        }
    }
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
}
