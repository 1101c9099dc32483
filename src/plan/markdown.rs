//! A flat, line-numbered view of a markdown document, built from `pulldown-cmark` events.
//!
//! Plans are read through this view, never with line regexes: headings, paragraph lines,
//! list items (with depth and checkbox state) and tables, each with the 1-based line it
//! starts on. Inline content keeps only what plans give meaning to: text, inline code
//! spans and links. Fenced code blocks and HTML are dropped, so a `# comment` inside a
//! ```` ```bash ```` block is never mistaken for a heading.

use std::ops::Range;

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

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

    fn push_text(&mut self, text: &str) {
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
        Builder::new(text).build()
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

/// Maps byte offsets to 1-based line numbers.
struct LineIndex {
    starts: Vec<usize>,
}

impl LineIndex {
    fn new(text: &str) -> Self {
        let starts = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        LineIndex { starts }
    }

    fn line(&self, offset: usize) -> usize {
        match self.starts.binary_search(&offset) {
            Ok(index) => index + 1,
            Err(index) => index,
        }
    }
}

/// Where inline content currently goes.
enum Sink {
    Heading {
        level: u8,
        content: Inlines,
        line: usize,
    },
    Paragraph {
        lines: Vec<ParagraphLine>,
        /// The next text starts a new line.
        line_break: bool,
    },
    /// Text goes to the list item at this block index.
    Item(usize),
    Cell(Inlines),
    /// Inside a link: its destination and text so far, and the sink it belongs to.
    Link {
        dest: String,
        text: String,
    },
}

struct ItemFrame {
    block: usize,
    /// Still collecting the item's own text (no nested block seen yet).
    open: bool,
}

struct TableFrame {
    header: Vec<Inlines>,
    rows: Vec<Row>,
    line: usize,
    in_head: bool,
}

struct Builder<'t> {
    text: &'t str,
    lines: LineIndex,
    blocks: Vec<Block>,
    sinks: Vec<Sink>,
    items: Vec<ItemFrame>,
    table: Option<TableFrame>,
    /// Depth of code blocks, images and HTML blocks whose text is ignored.
    skip: usize,
    /// The text of a code block inside a list item, being collected.
    code: Option<String>,
}

impl<'t> Builder<'t> {
    fn new(text: &'t str) -> Self {
        Builder {
            text,
            lines: LineIndex::new(text),
            blocks: Vec::new(),
            sinks: Vec::new(),
            items: Vec::new(),
            table: None,
            skip: 0,
            code: None,
        }
    }

    fn build(mut self) -> Document {
        let options = Options::ENABLE_TABLES
            | Options::ENABLE_TASKLISTS
            | Options::ENABLE_STRIKETHROUGH
            | Options::ENABLE_FOOTNOTES
            | Options::ENABLE_YAML_STYLE_METADATA_BLOCKS;
        let text = self.text;
        for (event, range) in Parser::new_ext(text, options).into_offset_iter() {
            self.event(event, range);
        }
        Document {
            blocks: self.blocks,
        }
    }

    fn event(&mut self, event: Event<'_>, range: Range<usize>) {
        let line = self.lines.line(range.start);
        match event {
            Event::Start(tag) => self.start(tag, line),
            Event::End(tag) => self.end(tag),
            Event::Text(text) => self.text(&text, line, false),
            Event::Code(code) => self.text(&code, line, true),
            Event::SoftBreak | Event::HardBreak => self.line_break(),
            Event::TaskListMarker(checked) => {
                if let Some(frame) = self.items.last()
                    && let Some(Block::Item { checked: slot, .. }) =
                        self.blocks.get_mut(frame.block)
                {
                    *slot = Some(checked);
                }
            }
            _ => {}
        }
    }

    fn start(&mut self, tag: Tag<'_>, line: usize) {
        if self.skip > 0 {
            if is_skipped(&tag) {
                self.skip += 1;
            }
            return;
        }
        match tag {
            Tag::Heading { level, .. } => self.sinks.push(Sink::Heading {
                level: level as u8,
                content: Inlines::default(),
                line,
            }),
            Tag::Paragraph => {
                if self.item_is_open() {
                    if let Some(frame) = self.items.last() {
                        self.sinks.push(Sink::Item(frame.block));
                    }
                } else if self.table.is_none() {
                    self.sinks.push(Sink::Paragraph {
                        lines: vec![ParagraphLine {
                            line,
                            content: Inlines::default(),
                        }],
                        line_break: false,
                    });
                }
            }
            Tag::Item => {
                self.close_item_text();
                let depth = self.items.len();
                self.blocks.push(Block::Item {
                    depth,
                    checked: None,
                    content: Inlines::default(),
                    code: Vec::new(),
                    line,
                });
                self.items.push(ItemFrame {
                    block: self.blocks.len() - 1,
                    open: true,
                });
                // Tight lists put the item's text directly inside the item.
                self.sinks.push(Sink::Item(self.blocks.len() - 1));
            }
            Tag::List(_) | Tag::BlockQuote(_) | Tag::Table(_) => {
                self.close_item_text();
                if matches!(tag, Tag::Table(_)) {
                    self.table = Some(TableFrame {
                        header: Vec::new(),
                        rows: Vec::new(),
                        line,
                        in_head: false,
                    });
                }
            }
            Tag::TableHead => {
                if let Some(table) = &mut self.table {
                    table.in_head = true;
                }
            }
            Tag::TableRow => {
                if let Some(table) = &mut self.table {
                    table.rows.push(Row {
                        line,
                        cells: Vec::new(),
                    });
                }
            }
            Tag::TableCell => self.sinks.push(Sink::Cell(Inlines::default())),
            Tag::Link { dest_url, .. } => {
                self.begin_paragraph_line(line);
                self.sinks.push(Sink::Link {
                    dest: dest_url.to_string(),
                    text: String::new(),
                });
            }
            tag if is_skipped(&tag) => {
                self.close_item_text();
                self.skip += 1;
                if matches!(tag, Tag::CodeBlock(_)) && !self.items.is_empty() {
                    self.code = Some(String::new());
                }
            }
            _ => {}
        }
    }

    fn end(&mut self, tag: TagEnd) {
        if self.skip > 0 {
            if matches!(
                tag,
                TagEnd::CodeBlock | TagEnd::Image | TagEnd::HtmlBlock | TagEnd::MetadataBlock(_)
            ) {
                self.skip -= 1;
                if self.skip == 0
                    && let Some(code) = self.code.take()
                    && let Some(frame) = self.items.last()
                    && let Some(Block::Item { code: blocks, .. }) = self.blocks.get_mut(frame.block)
                {
                    blocks.push(code.trim_end().to_owned());
                }
            }
            return;
        }
        match tag {
            TagEnd::Heading(_) => {
                if let Some(Sink::Heading {
                    level,
                    content,
                    line,
                }) = self.sinks.pop()
                {
                    self.blocks.push(Block::Heading {
                        level,
                        content,
                        line,
                    });
                }
            }
            TagEnd::Paragraph => match self.sinks.last() {
                Some(Sink::Paragraph { .. }) => {
                    if let Some(Sink::Paragraph { lines, .. }) = self.sinks.pop() {
                        self.blocks.push(Block::Paragraph(lines));
                    }
                }
                Some(Sink::Item(_)) => {
                    // A loose item's paragraph: later paragraphs of the same item are
                    // joined with a space.
                    self.sinks.pop();
                    if let Some(frame) = self.items.last()
                        && let Some(Block::Item { content, .. }) = self.blocks.get_mut(frame.block)
                    {
                        content.push_text(" ");
                    }
                }
                _ => {}
            },
            TagEnd::Item => {
                if matches!(self.sinks.last(), Some(Sink::Item(_))) {
                    self.sinks.pop();
                }
                if let Some(frame) = self.items.pop()
                    && let Some(Block::Item { content, .. }) = self.blocks.get_mut(frame.block)
                {
                    trim_inlines(content);
                }
            }
            TagEnd::TableHead => {
                if let Some(table) = &mut self.table {
                    table.in_head = false;
                }
            }
            TagEnd::TableCell => {
                if let Some(Sink::Cell(mut cell)) = self.sinks.pop()
                    && let Some(table) = &mut self.table
                {
                    trim_inlines(&mut cell);
                    if table.in_head {
                        table.header.push(cell);
                    } else if let Some(row) = table.rows.last_mut() {
                        row.cells.push(cell);
                    }
                }
            }
            TagEnd::Table => {
                if let Some(table) = self.table.take() {
                    self.blocks.push(Block::Table {
                        header: table.header,
                        rows: table.rows,
                        line: table.line,
                    });
                }
            }
            TagEnd::Link => {
                if let Some(Sink::Link { dest, text }) = self.sinks.pop()
                    && let Some(content) = self.current_inlines()
                {
                    content.0.push(Span::Link { dest, text });
                }
            }
            _ => {}
        }
    }

    /// A nested block starts inside the innermost item: the item's own text is complete.
    fn close_item_text(&mut self) {
        if let Some(frame) = self.items.last_mut()
            && frame.open
        {
            frame.open = false;
            if matches!(self.sinks.last(), Some(Sink::Item(_))) {
                self.sinks.pop();
            }
        }
    }

    fn item_is_open(&self) -> bool {
        self.items.last().is_some_and(|frame| frame.open)
    }

    fn line_break(&mut self) {
        match self.sinks.last_mut() {
            Some(Sink::Paragraph { line_break, .. }) => *line_break = true,
            Some(Sink::Link { text, .. }) => text.push(' '),
            _ => {
                if let Some(content) = self.current_inlines() {
                    content.push_text(" ");
                }
            }
        }
    }

    fn text(&mut self, text: &str, line: usize, code: bool) {
        if self.skip > 0 {
            if self.skip == 1
                && let Some(block) = &mut self.code
            {
                block.push_str(text);
            }
            return;
        }
        if let Some(Sink::Link {
            text: link_text, ..
        }) = self.sinks.last_mut()
        {
            link_text.push_str(text);
            return;
        }
        self.begin_paragraph_line(line);
        if let Some(content) = self.current_inlines() {
            if code {
                content.0.push(Span::Code(text.to_owned()));
            } else {
                content.push_text(text);
            }
        }
    }

    /// After a line break in a paragraph, the next inline content opens a new line.
    fn begin_paragraph_line(&mut self, line: usize) {
        if let Some(Sink::Paragraph { lines, line_break }) = self.sinks.last_mut()
            && *line_break
        {
            *line_break = false;
            lines.push(ParagraphLine {
                line,
                content: Inlines::default(),
            });
        }
    }

    /// The inline content being built: the innermost sink that is not a link.
    fn current_inlines(&mut self) -> Option<&mut Inlines> {
        let index = self
            .sinks
            .iter()
            .rposition(|sink| !matches!(sink, Sink::Link { .. }))?;
        match &mut self.sinks[index] {
            Sink::Heading { content, .. } | Sink::Cell(content) => Some(content),
            Sink::Paragraph { lines, .. } => lines.last_mut().map(|l| &mut l.content),
            Sink::Item(block) => match self.blocks.get_mut(*block) {
                Some(Block::Item { content, .. }) => Some(content),
                _ => None,
            },
            Sink::Link { .. } => None,
        }
    }
}

/// Blocks whose text plans never give meaning to: code, images, HTML, front matter.
fn is_skipped(tag: &Tag<'_>) -> bool {
    matches!(
        tag,
        Tag::CodeBlock(_) | Tag::Image { .. } | Tag::HtmlBlock | Tag::MetadataBlock(_)
    )
}

fn trim_inlines(content: &mut Inlines) {
    if let Some(Span::Text(first)) = content.0.first_mut() {
        *first = first.trim_start().to_owned();
    }
    if let Some(Span::Text(last)) = content.0.last_mut() {
        *last = last.trim_end().to_owned();
    }
    content
        .0
        .retain(|span| !matches!(span, Span::Text(text) if text.is_empty()));
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
