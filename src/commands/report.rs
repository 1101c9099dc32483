//! What the reporting commands share: the recorded runs, aligned tables, durations, JSON.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::cli::GlobalArgs;
use crate::exit::Failure;
use crate::state::{RunRecord, Store};
use crate::terminal_safe::clipped;

/// The project root and its run history, or a failure saying no run was recorded there.
pub(super) fn recorded_runs(global: &GlobalArgs) -> Result<(PathBuf, Store), Failure> {
    let root = super::load_config(global, None)?.project_root;
    match Store::open_to_read(&root).map_err(Failure::failed)? {
        Some(store) => Ok((root, store)),
        None => Err(no_runs(&root)),
    }
}

/// The newest recorded run.
pub(super) fn latest_run(store: &Store, root: &Path) -> Result<RunRecord, Failure> {
    store
        .runs(None, 1)
        .map_err(Failure::failed)?
        .into_iter()
        .next()
        .ok_or_else(|| no_runs(root))
}

fn no_runs(root: &Path) -> Failure {
    Failure::failed(miette::miette!(
        "no runs recorded in {} yet",
        root.display()
    ))
}

/// The most characters of a cell: a plan title or a phase id is the user's text, of any
/// length, cut in its middle past it.
const MAX_CELL: usize = 80;

/// Left-aligned columns separated by two spaces, header first.
pub(super) fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let header: Vec<String> = header.iter().map(|h| (*h).to_owned()).collect();
    let cells: Vec<Vec<Cow<'_, str>>> = std::iter::once(&header)
        .chain(rows)
        .map(|row| row.iter().map(|cell| clipped(cell, MAX_CELL)).collect())
        .collect();
    let mut widths: Vec<usize> = vec![0; header.len()];
    for row in &cells {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in &cells {
        let line: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(cell, width)| {
                let pad = width.saturating_sub(cell.chars().count());
                format!("{cell}{}", " ".repeat(pad))
            })
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

/// A stored RFC 3339 time as people read it: to the second, in the local time zone
/// (`2026-11-23 23:08:35 UTC`); the text as stored when it does not parse.
pub(super) fn local_time(stored: &str) -> String {
    stored.parse::<jiff::Timestamp>().map_or_else(
        |_| stored.to_owned(),
        |at| {
            at.to_zoned(jiff::tz::TimeZone::system())
                .strftime("%Y-%m-%d %H:%M:%S %Z")
                .to_string()
        },
    )
}

/// The name of a stored outcome code (see `SessionOutcome::code`): `success`,
/// `timeout`, `context limit`, `max restarts`, `interrupted`, `spawn error`, a signal or
/// an exit code.
pub(super) fn outcome_name(code: i64) -> String {
    use crate::session as codes;
    match code {
        0 => "success".into(),
        1 => "failed".into(),
        c if c == i64::from(codes::CODE_TIMEOUT) => "timeout".into(),
        c if c == i64::from(codes::CODE_CONTEXT_LIMIT) => "context limit".into(),
        -3 => "max restarts".into(),
        c if c == i64::from(crate::restart::NO_PROGRESS) => "no progress".into(),
        c if c == i64::from(codes::CODE_INTERRUPTED) => "interrupted".into(),
        c if c == i64::from(codes::CODE_SPAWN_ERROR) => "spawn error".into(),
        c if c == i64::from(codes::CODE_AGENT_FAILURE) => "agent failure".into(),
        c if (129..=192).contains(&c) => format!("signal {}", c - 128),
        c => format!("exit {c}"),
    }
}

/// The last `lines` lines of `text`, each behind `indent`, with a note of how many
/// were left out.
pub(super) fn tail(text: &str, lines: usize, indent: &str) -> String {
    let all: Vec<&str> = text.trim_end().lines().collect();
    let skipped = all.len().saturating_sub(lines);
    let mut out = String::new();
    if skipped > 0 {
        let _ = writeln!(out, "{indent}… {skipped} earlier lines");
    }
    for line in &all[skipped..] {
        let _ = writeln!(out, "{indent}{line}");
    }
    out
}

/// Pretty JSON on stdout (a closed pipe is a quiet exit).
pub(super) fn print_json(value: &impl serde::Serialize) -> Result<(), Failure> {
    let text = serde_json::to_string_pretty(value)
        .map_err(|err| Failure::failed(miette::miette!("failed to encode JSON: {err}")))?;
    super::render::print_exactly(&format!("{text}\n"))
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

    #[test]
    fn outcome_codes_have_names() {
        assert_eq!(outcome_name(0), "success");
        assert_eq!(outcome_name(-2), "context limit");
        assert_eq!(outcome_name(-4), "interrupted");
        assert_eq!(outcome_name(137), "signal 9");
        assert_eq!(outcome_name(3), "exit 3");
    }

    #[test]
    fn times_drop_the_nanoseconds_and_tails_keep_the_end() {
        assert!(!local_time("2026-11-23T23:08:35.887285069Z").contains(".887"));
        assert_eq!(local_time("garbage"), "garbage");
        assert_eq!(
            tail("a\nb\nc\n", 2, "  "),
            "  … 1 earlier lines\n  b\n  c\n"
        );
    }
}
