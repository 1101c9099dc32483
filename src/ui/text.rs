//! Plain-text building blocks shared by every text output: ANSI colour that can be
//! switched off, and tables with multi-line cells.

use unicode_width::UnicodeWidthChar;

/// Colours text when enabled (see [`crate::logging::use_color`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Palette {
    enabled: bool,
}

impl Palette {
    /// A palette that colours when `enabled`.
    pub(crate) fn new(enabled: bool) -> Self {
        Palette { enabled }
    }

    fn paint(self, text: &str, code: &str) -> String {
        if self.enabled {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_owned()
        }
    }

    /// Errors and failures.
    pub(crate) fn red(self, text: &str) -> String {
        self.paint(text, "1;31")
    }

    /// Warnings.
    pub(crate) fn yellow(self, text: &str) -> String {
        self.paint(text, "1;33")
    }

    /// Success.
    pub(crate) fn green(self, text: &str) -> String {
        self.paint(text, "1;32")
    }

    /// Headings.
    pub(crate) fn bold(self, text: &str) -> String {
        self.paint(text, "1")
    }

    /// Secondary detail (locations, sources).
    pub(crate) fn dim(self, text: &str) -> String {
        self.paint(text, "2")
    }
}

/// The visible width of text that may hold ANSI colour sequences, in terminal columns
/// (a CJK character or an emoji takes two), as the HUD measures it.
fn visible_width(text: &str) -> usize {
    let mut width = 0;
    let mut in_escape = false;
    for c in text.chars() {
        match (in_escape, c) {
            (false, '\x1b') => in_escape = true,
            (true, 'm') => in_escape = false,
            (true, _) => {}
            (false, _) => width += c.width().unwrap_or(0),
        }
    }
    width
}

/// A table whose cells may span several lines; columns are padded to their widest line
/// and separated by two spaces.
#[derive(Debug, Default)]
pub(crate) struct Table {
    header: Vec<String>,
    rows: Vec<Vec<Vec<String>>>,
}

impl Table {
    /// A table with these column headings.
    pub(crate) fn new(header: &[&str]) -> Self {
        Table {
            header: header.iter().map(|h| (*h).to_owned()).collect(),
            rows: Vec::new(),
        }
    }

    /// Add a row: one list of lines per column.
    pub(crate) fn row(&mut self, cells: Vec<Vec<String>>) {
        self.rows.push(cells);
    }

    /// Render with `indent` before every line; the header in bold, rows separated by
    /// a blank line when any row spans several lines.
    pub(crate) fn render(&self, indent: &str, palette: Palette) -> String {
        let columns = self.header.len();
        let mut widths: Vec<usize> = self.header.iter().map(|h| visible_width(h)).collect();
        for row in &self.rows {
            for (column, cell) in row.iter().enumerate().take(columns) {
                for line in cell {
                    widths[column] = widths[column].max(visible_width(line));
                }
            }
        }
        let line = |cells: &[&str]| {
            let mut out = String::from(indent);
            for (column, text) in cells.iter().enumerate() {
                out.push_str(text);
                if column + 1 < cells.len() {
                    let pad = widths[column].saturating_sub(visible_width(text)) + 2;
                    out.push_str(&" ".repeat(pad));
                }
            }
            out.trim_end().to_owned()
        };
        let header: Vec<String> = self.header.iter().map(|h| palette.bold(h)).collect();
        let mut out = String::new();
        out.push_str(&line(
            &header.iter().map(String::as_str).collect::<Vec<_>>(),
        ));
        out.push('\n');
        let tall = self
            .rows
            .iter()
            .any(|row| row.iter().any(|cell| cell.len() > 1));
        for (index, row) in self.rows.iter().enumerate() {
            if tall && index > 0 {
                out.push('\n');
            }
            let height = row.iter().map(Vec::len).max().unwrap_or(0).max(1);
            for at in 0..height {
                let cells: Vec<&str> = (0..columns)
                    .map(|column| {
                        row.get(column)
                            .and_then(|cell| cell.get(at))
                            .map_or("", String::as_str)
                    })
                    .collect();
                out.push_str(&line(&cells));
                out.push('\n');
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn palette_off_is_plain_text() {
        let off = Palette::new(false);
        assert_eq!(off.red("x"), "x");
        let on = Palette::new(true);
        assert_eq!(on.red("x"), "\x1b[1;31mx\x1b[0m");
        assert_eq!(visible_width(&on.green("abc")), 3);
    }

    #[test]
    fn tables_pad_columns_and_span_lines() {
        let mut table = Table::new(&["ID", "Gates"]);
        table.row(vec![
            vec!["1".into()],
            vec!["ruff: ruff check .".into(), "pytest".into()],
        ]);
        table.row(vec![vec!["10".into()], vec![]]);
        let text = table.render("  ", Palette::new(false));
        assert_eq!(
            text,
            "  ID  Gates\n  1   ruff: ruff check .\n      pytest\n\n  10\n"
        );
        let colored = table.render("", Palette::new(true));
        assert!(colored.starts_with("\x1b[1mID\x1b[0m  \x1b[1mGates"));
    }

    #[test]
    fn wide_characters_take_two_columns() {
        assert_eq!(visible_width("日本"), 4);
        let mut table = Table::new(&["TITLE", "STATUS"]);
        table.row(vec![vec!["日本語".into()], vec!["done".into()]]);
        table.row(vec![vec!["abc".into()], vec!["done".into()]]);
        let text = table.render("", Palette::new(false));
        assert_eq!(text, "TITLE   STATUS\n日本語  done\nabc     done\n");
    }
}
