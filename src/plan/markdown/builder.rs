//! Turns `pulldown-cmark` events (with byte offsets) into the flat block list of a
//! [`Document`]: tracks where inline content goes (heading, paragraph line, list item,
//! table cell, link), nesting of list items, and code blocks to skip or, inside list
//! items, to keep.

use std::ops::Range;

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

use super::{Block, Document, Inlines, ParagraphLine, Row, Span};

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

pub(super) struct Builder<'t> {
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
    pub(super) fn new(text: &'t str) -> Self {
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

    pub(super) fn build(mut self) -> Document {
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
