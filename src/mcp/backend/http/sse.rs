//! Server-sent events as the bridge reads them: the data of each event, with a bound on
//! its size. Lines are framed by the process layer's [`LineFramer`], so an event larger
//! than the message limit is dropped and reported (its first and last bytes kept), never
//! held whole. Events without data (priming events, keep-alives) are skipped. Comments, `event:`, `id:` and `retry:` fields are skipped: the bridge only
//! needs the JSON-RPC message in `data:`.

use std::collections::VecDeque;

use crate::process::{Excerpt, LINE_EXCERPT_BYTES, LineFrame, LineFramer};

/// One event's worth of what the stream carried.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum SseItem {
    /// The data of an event (its `data:` lines joined with `\n`), when it has any.
    Data(Vec<u8>),
    /// An event over the size limit was dropped.
    TooLong(Excerpt),
}

/// Turns the bytes of an event stream into [`SseItem`]s, holding at most the size
/// limit of one event.
#[derive(Debug)]
pub(crate) struct SseReader {
    framer: LineFramer,
    max: usize,
    data: Vec<u8>,
    has_data: bool,
    too_long: Option<Excerpt>,
    ready: VecDeque<SseItem>,
}

impl SseReader {
    /// A reader of events of at most `max` bytes of data.
    pub(crate) fn new(max: usize) -> Self {
        SseReader {
            framer: LineFramer::new(max.saturating_add(16)),
            max,
            data: Vec::new(),
            has_data: false,
            too_long: None,
            ready: VecDeque::new(),
        }
    }

    /// Take in the next bytes of the stream.
    pub(crate) fn push(&mut self, chunk: &[u8]) {
        let mut frames = Vec::new();
        self.framer.push(chunk, &mut frames);
        for frame in frames {
            self.on_frame(frame);
        }
    }

    /// The stream ended: an event not closed by a blank line is dispatched all the same.
    pub(crate) fn finish(&mut self) {
        if let Some(frame) = self.framer.finish() {
            self.on_frame(frame);
        }
        self.dispatch();
    }

    /// The next item, if one is complete.
    pub(crate) fn next_item(&mut self) -> Option<SseItem> {
        self.ready.pop_front()
    }

    fn on_frame(&mut self, frame: LineFrame) {
        match frame {
            LineFrame::Line(line) if line.is_empty() => self.dispatch(),
            LineFrame::Line(line) => self.on_line(&line),
            LineFrame::TooLong(mut excerpt) => {
                // The excerpt starts with the field name: keep only the data's, where
                // the message's id can be read.
                if let Some(data) = excerpt.head.strip_prefix(b"data:") {
                    excerpt.head = data.strip_prefix(b" ").unwrap_or(data).to_vec();
                }
                self.overflow(excerpt);
            }
        }
    }

    fn on_line(&mut self, line: &[u8]) {
        let Some(value) = line.strip_prefix(b"data") else {
            return;
        };
        let value = match value {
            [] => &[][..],
            [b':', b' ', rest @ ..] | [b':', rest @ ..] => rest,
            // A field named e.g. `database`: not `data`.
            _ => return,
        };
        if self.too_long.is_some() {
            return;
        }
        if self.has_data {
            self.data.push(b'\n');
        }
        self.has_data = true;
        self.data.extend_from_slice(value);
        if self.data.len() > self.max {
            let len = self.data.len();
            let head = self.data[..LINE_EXCERPT_BYTES.min(len)].to_vec();
            let tail = self.data[len.saturating_sub(LINE_EXCERPT_BYTES)..].to_vec();
            self.overflow(Excerpt { len, head, tail });
        }
    }

    fn overflow(&mut self, excerpt: Excerpt) {
        self.data = Vec::new();
        self.has_data = false;
        if self.too_long.is_none() {
            self.too_long = Some(excerpt);
        }
    }

    fn dispatch(&mut self) {
        if let Some(excerpt) = self.too_long.take() {
            self.ready.push_back(SseItem::TooLong(excerpt));
        } else if self.has_data && !self.data.iter().all(u8::is_ascii_whitespace) {
            // Priming events and keep-alives carry no message.
            self.ready
                .push_back(SseItem::Data(std::mem::take(&mut self.data)));
        }
        self.data.clear();
        self.has_data = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(chunks: &[&[u8]], max: usize) -> Vec<SseItem> {
        let mut reader = SseReader::new(max);
        let mut out = Vec::new();
        for chunk in chunks {
            reader.push(chunk);
            while let Some(item) = reader.next_item() {
                out.push(item);
            }
        }
        reader.finish();
        while let Some(item) = reader.next_item() {
            out.push(item);
        }
        out
    }

    #[test]
    fn events_are_split_on_blank_lines_and_fields_other_than_data_are_skipped() {
        let items = read(
            &[
                b": ping\r\n\r\nevent: message\r\nid: 1\r\nda",
                b"ta: {\"a\":1}\r\n\r\n",
                b"data:x\ndata: y\n\n",
            ],
            100,
        );
        assert_eq!(
            items,
            vec![
                SseItem::Data(b"{\"a\":1}".to_vec()),
                SseItem::Data(b"x\ny".to_vec())
            ]
        );
        assert_eq!(
            read(&[b"database: 1\n\n", b"data: last"], 100),
            vec![SseItem::Data(b"last".to_vec())]
        );
    }

    #[test]
    fn an_event_over_the_limit_is_reported_and_reading_goes_on() {
        let big = format!("data: {}\n\ndata: ok\n\n", "x".repeat(500));
        let items = read(&[big.as_bytes()], 100);
        assert!(
            matches!(&items[0], SseItem::TooLong(excerpt) if excerpt.len >= 100),
            "{items:?}"
        );
        assert_eq!(items[1], SseItem::Data(b"ok".to_vec()));
        let split = "data: aaaaaaaaaa\ndata: bbbbbbbbbb\ndata: cccccccccc\n\n";
        assert!(matches!(
            read(&[split.as_bytes()], 25)[0],
            SseItem::TooLong(_)
        ));
    }
}
