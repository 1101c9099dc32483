//! The last lines a server wrote on stderr, kept so that a crash can be explained where
//! the client and the audit log see it (a Python `SyntaxError`, a missing module), not
//! only on the supervisor's own stderr, where the lines still pass through.
//!
//! Pure and bounded: at most [`MAX_LINES`] lines of at most [`MAX_LINE_CHARS`]
//! characters each, whatever the server writes.

use std::collections::VecDeque;

/// Lines kept.
pub(crate) const MAX_LINES: usize = 20;
/// Characters kept of one line; the rest is replaced by `…`.
pub(crate) const MAX_LINE_CHARS: usize = 300;

/// The end of one server process's stderr.
#[derive(Debug, Default, Clone)]
pub(crate) struct StderrTail {
    lines: VecDeque<String>,
}

impl StderrTail {
    /// Keep `line` (raw bytes, without its newline) as the latest line.
    pub(crate) fn push(&mut self, line: &[u8]) {
        let text = String::from_utf8_lossy(line);
        let text = text.trim_end();
        if text.is_empty() {
            return;
        }
        let kept = match text.char_indices().nth(MAX_LINE_CHARS) {
            Some((cut, _)) => format!("{}…", &text[..cut]),
            None => text.to_owned(),
        };
        if self.lines.len() == MAX_LINES {
            self.lines.pop_front();
        }
        self.lines.push_back(kept);
    }

    /// The kept lines, oldest first.
    pub(crate) fn lines(&self) -> Vec<String> {
        self.lines.iter().cloned().collect()
    }

    /// Whether nothing was kept.
    pub(crate) fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }

    /// The last `count` lines as one indented block for an error message, or an empty
    /// string when there are none.
    pub(crate) fn excerpt(&self, count: usize) -> String {
        if self.lines.is_empty() {
            return String::new();
        }
        let skip = self.lines.len().saturating_sub(count);
        let mut text = String::from("; the end of its stderr:");
        for line in self.lines.iter().skip(skip) {
            text.push_str("\n    ");
            text.push_str(line);
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_last_lines_are_kept_and_long_ones_are_cut() {
        let mut tail = StderrTail::default();
        assert!(tail.is_empty());
        assert_eq!(tail.excerpt(5), "");
        for n in 0..30 {
            tail.push(format!("line {n}\r").as_bytes());
        }
        tail.push(b"   ");
        let lines = tail.lines();
        assert_eq!(lines.len(), MAX_LINES);
        assert_eq!(lines[0], "line 10");
        assert_eq!(lines[MAX_LINES - 1], "line 29");
        assert_eq!(
            tail.excerpt(2),
            "; the end of its stderr:\n    line 28\n    line 29"
        );
        tail.push("é".repeat(1000).as_bytes());
        let last = tail.lines().pop().expect("line");
        assert_eq!(last.chars().count(), MAX_LINE_CHARS + 1);
        assert!(last.ends_with('…'));
        tail.push(&[0xff, b'x']);
        assert_eq!(tail.lines().pop().as_deref(), Some("\u{fffd}x"));
    }
}
