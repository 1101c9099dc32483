//! A flat, line-numbered view of a markdown document, built from `pulldown-cmark` events.
//!
//! Plans are read through this view, never with line regexes: headings, paragraph lines,
//! list items (with depth and checkbox state) and tables, each with the 1-based line it
//! starts on. Inline content keeps only what plans give meaning to: text, inline code
//! spans and links. Fenced code blocks and HTML are dropped, so a `# comment` inside a
//! ```` ```bash ```` block is never mistaken for a heading.

mod builder;

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

/// One line of a paragraph.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ParagraphLine {
    /// The 1-based line.
    pub(crate) line: usize,
    /// Its content.
    pub(crate) content: Inlines,
}

/// A table row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Row {
    /// The 1-based line.
    pub(crate) line: usize,
    /// The cells.
    pub(crate) cells: Vec<Inlines>,
}

/// A block of the document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Block {
    /// A heading (ATX or setext).
    Heading {
        /// 1 for `#`, 2 for `##`…
        level: u8,
        /// The heading text.
        content: Inlines,
        /// The 1-based line.
        line: usize,
    },
    /// A paragraph, line by line (soft and hard breaks split lines).
    Paragraph(Vec<ParagraphLine>),
    /// A list item: its own text, up to its first nested block (a nested list's items
    /// follow as their own blocks with a greater depth).
    Item {
        /// 0 for a top-level item, 1 inside it…
        depth: usize,
        /// `Some(ticked)` for a task-list checkbox.
        checked: Option<bool>,
        /// The item's text.
        content: Inlines,
        /// The fenced or indented code blocks inside the item (not its nested items').
        code: Vec<String>,
        /// The 1-based line.
        line: usize,
    },
    /// A table.
    Table {
        /// The header cells.
        header: Vec<Inlines>,
        /// The body rows.
        rows: Vec<Row>,
        /// The 1-based line of the header.
        line: usize,
    },
}

impl Block {
    /// The heading level, for headings.
    pub(crate) fn heading_level(&self) -> Option<u8> {
        match self {
            Block::Heading { level, .. } => Some(*level),
            _ => None,
        }
    }
}

/// A parsed document.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Document {
    /// The blocks, in document order.
    pub(crate) blocks: Vec<Block>,
}

impl Document {
    /// Parse markdown (CommonMark plus tables and task lists).
    pub(crate) fn parse(text: &str) -> Self {
        builder::Builder::new(text).build()
    }

    /// The first level-1 heading, with its line.
    pub(crate) fn title(&self) -> Option<(String, usize)> {
        self.blocks.iter().find_map(|block| match block {
            Block::Heading {
                level: 1,
                content,
                line,
            } => Some((content.plain().trim().to_owned(), *line)),
            _ => None,
        })
    }

    /// Every section whose heading text satisfies `matches` (given the lowercased,
    /// trimmed heading text): the blocks after such a heading up to the next heading of
    /// the same or a higher level. Sections come in document order.
    pub(crate) fn sections(&self, matches: impl Fn(&str) -> bool) -> Vec<Section<'_>> {
        let mut out = Vec::new();
        for (index, block) in self.blocks.iter().enumerate() {
            let Block::Heading { level, content, .. } = block else {
                continue;
            };
            if !matches(&content.plain().trim().to_lowercase()) {
                continue;
            }
            let body_start = index + 1;
            let body_end = self.blocks[body_start..]
                .iter()
                .position(|b| b.heading_level().is_some_and(|l| l <= *level))
                .map_or(self.blocks.len(), |offset| body_start + offset);
            out.push(Section {
                blocks: &self.blocks[body_start..body_end],
            });
        }
        out
    }
}

/// The blocks under one heading.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Section<'a> {
    /// The blocks below it.
    pub(crate) blocks: &'a [Block],
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(s: &str) -> Span {
        Span::Text(s.to_owned())
    }

    #[test]
    fn headings_and_paragraph_lines_carry_line_numbers() {
        let doc =
            Document::parse("# Title\n\n**Status:** Pending\n**Depends On:** N/A\n\n## Gates\n");
        assert_eq!(doc.title(), Some(("Title".to_owned(), 1)));
        let Block::Paragraph(lines) = &doc.blocks[1] else {
            panic!("not a paragraph: {:?}", doc.blocks[1]);
        };
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0].line, 3);
        assert_eq!(lines[0].content.plain(), "Status: Pending");
        assert_eq!(lines[1].line, 4);
        assert_eq!(
            lines[1]
                .content
                .after_label("depends on")
                .map(|i| i.plain()),
            Some(" N/A".to_owned())
        );
        assert_eq!(doc.blocks[2].heading_level(), Some(2));
    }

    #[test]
    fn list_items_keep_depth_checkbox_code_and_links() {
        let doc = Document::parse(
            "- [ ] Write notes to: `notes/a.md`\n  - nested [link](x.md)\n- [x] **AGENT:doc** - sync\n",
        );
        let items: Vec<_> = doc
            .blocks
            .iter()
            .map(|b| match b {
                Block::Item {
                    depth,
                    checked,
                    content,
                    line,
                    ..
                } => (*depth, *checked, content.clone(), *line),
                other => panic!("unexpected {other:?}"),
            })
            .collect();
        assert_eq!(items.len(), 3);
        assert_eq!(
            items[0],
            (
                0,
                Some(false),
                Inlines(vec![
                    text("Write notes to: "),
                    Span::Code("notes/a.md".into())
                ]),
                1
            )
        );
        assert_eq!(items[1].0, 1);
        assert_eq!(
            items[1].2,
            Inlines(vec![
                text("nested "),
                Span::Link {
                    dest: "x.md".into(),
                    text: "link".into()
                }
            ])
        );
        assert_eq!(items[2].1, Some(true));
        assert_eq!(items[2].2.plain(), "AGENT:doc - sync");
        assert_eq!(items[2].3, 3);
    }

    #[test]
    fn code_blocks_are_dropped_even_inside_items() {
        let doc = Document::parse(
            "- [ ] Pre-validation:\n  ```bash\n  # not a heading\n  cargo test\n  ```\n- [ ] Next\n\n```\n# nope\n```\n",
        );
        assert!(
            doc.blocks.iter().all(|b| b.heading_level().is_none()),
            "{doc:?}"
        );
        let texts: Vec<String> = doc
            .blocks
            .iter()
            .filter_map(|b| match b {
                Block::Item { content, .. } => Some(content.plain()),
                _ => None,
            })
            .collect();
        assert_eq!(texts, ["Pre-validation:", "Next"]);
        let Block::Item { code, .. } = &doc.blocks[0] else {
            panic!("{doc:?}");
        };
        assert_eq!(code, &["# not a heading\ncargo test".to_owned()]);
        let Block::Item { code, .. } = &doc.blocks[1] else {
            panic!("{doc:?}");
        };
        assert!(code.is_empty(), "a top-level code block belongs to no item");
    }

    #[test]
    fn tables_have_header_rows_and_lines() {
        let doc = Document::parse(
            "intro\n\n| Phase | Title | Status |\n|---|---|---|\n| 1 | [One](p1.md) | Pending |\n| 2 | `two` | Done |\n",
        );
        let Block::Table { header, rows, line } = &doc.blocks[1] else {
            panic!("no table: {doc:?}");
        };
        assert_eq!(*line, 3);
        let header: Vec<String> = header.iter().map(Inlines::plain).collect();
        assert_eq!(header, ["Phase", "Title", "Status"]);
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].line, 5);
        assert_eq!(rows[1].line, 6);
        assert_eq!(
            rows[0].cells[1].links().collect::<Vec<_>>(),
            [("p1.md", "One")]
        );
        assert_eq!(rows[1].cells[1].code_spans().collect::<Vec<_>>(), ["two"]);
    }

    #[test]
    fn sections_end_at_a_heading_of_the_same_level() {
        let doc = Document::parse(
            "## Gates\n- a: b\n### Sub\n- c: d\n## Tasks\n- [ ] 1.1: x\n## Gates (again)\n- e: f\n",
        );
        let gates = doc.sections(|h| h.starts_with("gates"));
        assert_eq!(gates.len(), 2);
        assert_eq!(gates[0].blocks.len(), 3);
        assert_eq!(gates[1].blocks.len(), 1);
        assert!(doc.sections(|h| h == "nothing").is_empty());
    }

    #[test]
    fn loose_items_and_labels() {
        let doc = Document::parse("- first para\n\n  second para\n- other\n");
        let Block::Item { content, .. } = &doc.blocks[0] else {
            panic!("{doc:?}");
        };
        assert_eq!(content.plain(), "first para second para");
        let inl = Inlines(vec![text("Status : "), Span::Code("x".into())]);
        assert_eq!(
            inl.after_label("status").map(|i| i.0),
            Some(vec![text(" "), Span::Code("x".into())])
        );
        assert_eq!(inl.after_label("stat"), None);
        assert_eq!(Inlines(vec![text("é")]).after_label("status"), None);
    }
}
