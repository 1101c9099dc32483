//! Small text helpers shared by the reporting commands: aligned tables, durations, JSON.

use std::fmt::Write as _;

use crate::exit::Failure;

/// Left-aligned columns separated by two spaces, header first.
pub(super) fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let header: Vec<String> = header.iter().map(|h| (*h).to_owned()).collect();
    for row in std::iter::once(&header).chain(rows) {
        let line: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(cell, width)| format!("{cell:width$}"))
            .collect();
        let _ = writeln!(out, "{}", line.join("  ").trim_end());
    }
    out
}

/// `1h02m`, `3m05s` or `12s` between two RFC 3339 times; until now when `end` is `None`.
pub(super) fn duration_between(start: &str, end: Option<&str>) -> String {
    let Ok(start) = start.parse::<jiff::Timestamp>() else {
        return "-".into();
    };
    let end = end
        .and_then(|e| e.parse::<jiff::Timestamp>().ok())
        .unwrap_or_else(jiff::Timestamp::now);
    let secs = (end.as_second() - start.as_second()).max(0);
    match secs {
        s if s >= 3600 => format!("{}h{:02}m", s / 3600, (s % 3600) / 60),
        s if s >= 60 => format!("{}m{:02}s", s / 60, s % 60),
        s => format!("{s}s"),
    }
}

/// Pretty JSON on stdout (a closed pipe is a quiet exit).
pub(super) fn print_json(value: &impl serde::Serialize) -> Result<(), Failure> {
    let text = serde_json::to_string_pretty(value)
        .map_err(|err| Failure::failed(miette::miette!("failed to encode JSON: {err}")))?;
    super::render::print(&format!("{text}\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_align_columns() {
        let rows = vec![
            vec!["1".into(), "completed".into()],
            vec!["10".into(), "-".into()],
        ];
        assert_eq!(
            table(&["ID", "STATUS"], &rows),
            "ID  STATUS\n1   completed\n10  -\n"
        );
    }

    #[test]
    fn durations_read_naturally() {
        let start = "2026-01-01T00:00:00Z";
        assert_eq!(duration_between(start, Some("2026-01-01T00:00:12Z")), "12s");
        assert_eq!(
            duration_between(start, Some("2026-01-01T00:03:05Z")),
            "3m05s"
        );
        assert_eq!(
            duration_between(start, Some("2026-01-01T01:02:00Z")),
            "1h02m"
        );
        assert_eq!(duration_between("garbage", None), "-");
    }
}
