//! Inline content: text, code spans and links, all a plan gives meaning to.

/// One piece of inline content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Span {
    /// Plain text (emphasis and strong markers removed).
    Text(String),
    /// An inline code span, without its backticks.
    Code(String),
    /// A link: its destination and its text (flattened to plain text).
    Link {
        /// The destination as written (`phase-1.md`).
        dest: String,
        /// The link text.
        text: String,
    },
}

/// A run of inline content.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Inlines(pub(crate) Vec<Span>);

impl Inlines {
    /// The content as plain text: code spans without backticks, links as their text.
    pub(crate) fn plain(&self) -> String {
        let mut out = String::new();
        for span in &self.0 {
            match span {
                Span::Text(text) | Span::Code(text) | Span::Link { text, .. } => {
                    out.push_str(text);
                }
            }
        }
        out
    }

    /// The content as a reader sees it: code spans keep their backticks.
    pub(crate) fn display(&self) -> String {
        let mut out = String::new();
        for span in &self.0 {
            match span {
                Span::Text(text) | Span::Link { text, .. } => out.push_str(text),
                Span::Code(code) => {
                    out.push('`');
                    out.push_str(code);
                    out.push('`');
                }
            }
        }
        out.trim().to_owned()
    }

    /// The inline code spans, in order.
    pub(crate) fn code_spans(&self) -> impl Iterator<Item = &str> {
        self.0.iter().filter_map(|span| match span {
            Span::Code(code) => Some(code.as_str()),
            _ => None,
        })
    }

    /// The links, in order, as `(destination, text)`.
    pub(crate) fn links(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().filter_map(|span| match span {
            Span::Link { dest, text } => Some((dest.as_str(), text.as_str())),
            _ => None,
        })
    }

    /// The text after a leading `label:` (matched case-insensitively on the plain text,
    /// spaces around the colon allowed), as inlines; `None` when the content does not
    /// start with that label.
    pub(crate) fn after_label(&self, label: &str) -> Option<Inlines> {
        let plain = self.plain();
        let trimmed = plain.trim_start();
        let head = trimmed.get(..label.len())?;
        if !head.eq_ignore_ascii_case(label) {
            return None;
        }
        let rest = trimmed.get(label.len()..)?.trim_start();
        let rest = rest.strip_prefix(':')?;
        let skip = plain.len() - rest.len();
        Some(self.skip_chars(skip))
    }

    /// The inlines without their first `bytes` bytes of plain text.
    fn skip_chars(&self, mut bytes: usize) -> Inlines {
        let mut out = Vec::new();
        for span in &self.0 {
            let len = match span {
                Span::Text(text) | Span::Code(text) | Span::Link { text, .. } => text.len(),
            };
            if bytes >= len {
                bytes -= len;
                continue;
            }
            if bytes > 0 {
                if let Span::Text(text) = span {
                    out.push(Span::Text(text.get(bytes..).unwrap_or_default().to_owned()));
                } else {
                    out.push(span.clone());
                }
                bytes = 0;
                continue;
            }
            out.push(span.clone());
        }
        Inlines(out)
    }

    /// Append text, merging it into a preceding text span.
    pub(super) fn push_text(&mut self, text: &str) {
        if let Some(Span::Text(last)) = self.0.last_mut() {
            last.push_str(text);
        } else {
            self.0.push(Span::Text(text.to_owned()));
        }
    }
}
