//! A flat, line-numbered view of a markdown document, built from `pulldown-cmark` events.
//!
//! Plans are read through this view, never with line regexes: headings, paragraph lines,
//! list items (with depth and checkbox state) and tables, each with the 1-based line it
//! starts on. Inline content keeps only what plans give meaning to: text, inline code
//! spans and links. Fenced code blocks and HTML are dropped, so a `# comment` inside a
//! ```` ```bash ```` block is never mistaken for a heading.

mod builder;
mod inlines;

pub(crate) use inlines::{Inlines, Span};

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
mod tests;
