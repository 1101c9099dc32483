//! Master plan parsing: the title and the phases table.
//!
//! The phases table is the first table with a "Phase" column (ids such as `1`, `2`,
//! `3.1`) whose rows link their phase files; columns are found by their header cells,
//! in any order, and columns the parser does not know are ignored. Pure: takes the
//! text and the file's path, reads nothing.

use std::path::{Path, PathBuf};

use super::markdown::{Block, Document, Inlines, Row};
use super::model::{Location, PhaseId, PhaseStatus, Problem, ProblemScope, STATUS_WORDS};

/// One row of the phases table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MasterRow {
    /// The phase id.
    pub(crate) id: PhaseId,
    /// The title cell, else the link text.
    pub(crate) title: String,
    /// The linked phase file, resolved against the master plan's directory.
    pub(crate) file: Option<PathBuf>,
    /// The status cell, when there is a Status column and the cell is not empty.
    pub(crate) status: Option<PhaseStatus>,
    /// The row's line.
    pub(crate) line: usize,
}

/// What a master plan declares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MasterDoc {
    /// The title (first H1, without a trailing "- Master Plan").
    pub(crate) title: Option<String>,
    /// The line of the phases table's header, when there is one.
    pub(crate) table_line: Option<usize>,
    /// The phases, in table order.
    pub(crate) rows: Vec<MasterRow>,
    /// What could not be understood.
    pub(crate) problems: Vec<Problem>,
}

/// Header cells that name the phase-id column.
const ID_HEADERS: &[&str] = &[
    "phase",
    "phase #",
    "phase id",
    "phase no",
    "phase no.",
    "#",
    "id",
];
/// Header cells that name the title column.
const TITLE_HEADERS: &[&str] = &["title", "name", "phase title", "phase name"];
/// Header cells that name the status column.
const STATUS_HEADERS: &[&str] = &["status", "state"];

/// Parse a master plan.
pub(crate) fn parse_master(text: &str, path: &Path) -> MasterDoc {
    let doc = Document::parse(text);
    let title = doc.title().map(|(title, _)| strip_master_suffix(&title));
    let mut problems = Vec::new();
    let Some(table) = find_phases_table(&doc) else {
        return MasterDoc {
            title,
            table_line: None,
            rows: Vec::new(),
            problems,
        };
    };
    let base = path.parent().unwrap_or(Path::new(""));
    let mut rows = Vec::new();
    for row in table.rows {
        let cell = |column: Option<usize>| column.and_then(|c| row.cells.get(c));
        let id_text = cell(Some(table.id_column))
            .map(Inlines::plain)
            .unwrap_or_default();
        let id_text = id_text.trim();
        if row.cells.iter().all(|c| c.plain().trim().is_empty()) {
            continue;
        }
        let Some(id) = PhaseId::parse(id_text) else {
            problems.push(Problem {
                scope: ProblemScope::Master,
                message: format!(
                    "the phases table has a row whose phase id `{id_text}` is not an id like 1, 2 or 3.1"
                ),
                location: Location::line(path, row.line),
                hint: "write the phase's number in the Phase column, e.g. `| 2 | [Backend](phase-2.md) | Pending |`".to_owned(),
            });
            continue;
        };
        let link = row.cells.iter().find_map(|cell| {
            cell.links()
                .find_map(|(dest, text)| local_target(dest).map(|t| (t, text)))
        });
        let file = link
            .as_ref()
            .map(|(target, _)| super::model::resolve_path(base, target));
        let title = cell(table.title_column)
            .map(|c| c.plain().trim().to_owned())
            .filter(|t| !t.is_empty())
            .or_else(|| link.as_ref().map(|(_, text)| text.trim().to_owned()))
            .unwrap_or_default();
        if file.is_none() {
            problems.push(Problem {
                scope: ProblemScope::Master,
                message: format!("the phases table's row for phase {id} links no phase file"),
                location: Location::line(path, row.line),
                hint: format!(
                    "link the phase file in one of the row's cells, e.g. `[{}](phase-{id}.md)`",
                    if title.is_empty() { "Title" } else { &title }
                ),
            });
        }
        let status_text = cell(table.status_column)
            .map(Inlines::plain)
            .unwrap_or_default();
        let status_text = status_text.trim();
        let status = if status_text.is_empty() {
            None
        } else {
            let parsed = PhaseStatus::parse(status_text);
            if parsed.is_none() {
                problems.push(Problem {
                    scope: ProblemScope::Master,
                    message: format!("phase {id} has an unknown status `{status_text}`"),
                    location: Location::line(path, row.line),
                    hint: format!("use one of: {STATUS_WORDS}"),
                });
            }
            parsed
        };
        rows.push(MasterRow {
            id,
            title,
            file,
            status,
            line: row.line,
        });
    }
    MasterDoc {
        title,
        table_line: Some(table.line),
        rows,
        problems,
    }
}

struct PhasesTable<'a> {
    line: usize,
    rows: &'a [Row],
    id_column: usize,
    title_column: Option<usize>,
    status_column: Option<usize>,
}

/// The first table with a phase-id column whose rows link files; else the first table
/// with a phase-id column at all.
fn find_phases_table(doc: &Document) -> Option<PhasesTable<'_>> {
    let mut candidates = doc.blocks.iter().filter_map(|block| {
        let Block::Table { header, rows, line } = block else {
            return None;
        };
        let names: Vec<String> = header.iter().map(header_name).collect();
        let column = |wanted: &[&str]| names.iter().position(|n| wanted.contains(&n.as_str()));
        Some(PhasesTable {
            line: *line,
            rows,
            id_column: column(ID_HEADERS)?,
            title_column: column(TITLE_HEADERS),
            status_column: column(STATUS_HEADERS),
        })
    });
    let first = candidates.next()?;
    let links_files = |table: &PhasesTable<'_>| {
        table.rows.iter().any(|row| {
            row.cells
                .iter()
                .any(|cell| cell.links().any(|(dest, _)| local_target(dest).is_some()))
        })
    };
    if links_files(&first) {
        return Some(first);
    }
    candidates.find(|t| links_files(t)).or(Some(first))
}

fn header_name(cell: &Inlines) -> String {
    cell.plain()
        .trim()
        .trim_end_matches(':')
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

/// A link destination that names a file beside the plan: not a URL, not an anchor.
/// Fragments and queries are dropped and `%XX` escapes decoded.
pub(crate) fn local_target(dest: &str) -> Option<String> {
    let dest = dest.trim();
    if dest.is_empty()
        || dest.starts_with('#')
        || dest.contains("://")
        || dest.starts_with("mailto:")
    {
        return None;
    }
    let dest = dest.split(['#', '?']).next().unwrap_or_default();
    if dest.is_empty() {
        return None;
    }
    Some(percent_decode(dest))
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        if bytes[at] == b'%'
            && let Some(hex) = text.get(at + 1..at + 3)
            && let Ok(byte) = u8::from_str_radix(hex, 16)
        {
            out.push(byte);
            at += 3;
            continue;
        }
        out.push(bytes[at]);
        at += 1;
    }
    String::from_utf8(out).unwrap_or_else(|_| text.to_owned())
}

/// "Feature X - Master Plan" → "Feature X".
fn strip_master_suffix(title: &str) -> String {
    const SUFFIX: &str = "master plan";
    let split = title.len().saturating_sub(SUFFIX.len());
    if let (Some(head), Some(tail)) = (title.get(..split), title.get(split..))
        && tail.eq_ignore_ascii_case(SUFFIX)
    {
        let stripped = head.trim_end_matches(|c: char| {
            c.is_whitespace() || matches!(c, '-' | '–' | '—' | ':' | '|')
        });
        if !stripped.is_empty() {
            return stripped.to_owned();
        }
    }
    title.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> MasterDoc {
        parse_master(text, Path::new("plans/x/MASTER_PLAN.md"))
    }

    #[test]
    fn title_drops_the_master_plan_suffix() {
        let cases = [
            ("# Valid Test Plan - Master Plan\n", Some("Valid Test Plan")),
            ("# Thing — master plan\n", Some("Thing")),
            ("# Master Plan\n", Some("Master Plan")),
            ("# Just A Plan\n", Some("Just A Plan")),
            ("no heading\n", None),
        ];
        for (text, title) in cases {
            assert_eq!(parse(text).title.as_deref(), title, "{text}");
        }
    }

    #[test]
    fn the_phases_table_is_found_by_its_headers_in_any_order() {
        let doc = parse(
            "# P\n\n| Metric | Phase 1 |\n|---|---|\n| x | 1 |\n\n## Phases\n\n\
             | Status | Focus | Title | Phase |\n|---|---|---|---|\n\
             | In Progress | a | [First](phase-1.md) | 1 |\n\
             | | b | [Second](sub/phase-2.md#top) | 3.1 |\n",
        );
        assert!(doc.problems.is_empty(), "{:?}", doc.problems);
        assert_eq!(doc.table_line, Some(9));
        assert_eq!(doc.rows.len(), 2);
        let first = &doc.rows[0];
        assert_eq!(first.id.as_str(), "1");
        assert_eq!(first.title, "First");
        assert_eq!(first.file.as_deref(), Some(Path::new("plans/x/phase-1.md")));
        assert_eq!(first.status, Some(PhaseStatus::InProgress));
        assert_eq!(first.line, 11);
        let second = &doc.rows[1];
        assert_eq!(second.id.as_str(), "3.1");
        assert_eq!(
            second.file.as_deref(),
            Some(Path::new("plans/x/sub/phase-2.md"))
        );
        assert_eq!(second.status, None);
    }

    #[test]
    fn the_link_may_sit_in_any_column_and_the_title_falls_back_to_its_text() {
        let doc =
            parse("| # | File | Notes |\n|---|---|---|\n| 2 | [Build it](p%202.md) | `x` |\n");
        assert_eq!(doc.rows[0].title, "Build it");
        assert_eq!(
            doc.rows[0].file.as_deref(),
            Some(Path::new("plans/x/p 2.md"))
        );
    }

    #[test]
    fn freeform_plans_have_no_table() {
        let doc =
            parse("# Plan\n\n### Phase: Database\n\n| Risk | Impact |\n|---|---|\n| a | b |\n");
        assert_eq!(doc.table_line, None);
        assert!(doc.rows.is_empty());
    }

    #[test]
    fn an_empty_phases_table_is_a_table_without_rows() {
        let doc = parse("| Phase | Title | Status |\n|---|---|---|\n");
        assert_eq!(doc.table_line, Some(1));
        assert!(doc.rows.is_empty());
        assert!(doc.problems.is_empty());
    }

    #[test]
    fn bad_rows_are_problems_with_lines() {
        let doc = parse(
            "| Phase | Title | Status |\n|---|---|---|\n| TBD | [A](a.md) | Pending |\n\
             | 2 | No link | Pending |\n| 3 | [C](c.md) | Someday |\n",
        );
        let lines: Vec<usize> = doc
            .problems
            .iter()
            .map(|p| p.location.line.unwrap_or(0))
            .collect();
        assert_eq!(lines, [3, 4, 5]);
        assert!(doc.problems[0].message.contains("`TBD`"));
        assert!(doc.problems[1].message.contains("links no phase file"));
        assert!(doc.problems[2].message.contains("unknown status `Someday`"));
        assert!(doc.problems.iter().all(|p| p.scope == ProblemScope::Master));
        // The row without a link still counts as a phase; the bad-id row does not.
        let ids: Vec<&str> = doc.rows.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(ids, ["2", "3"]);
        assert_eq!(doc.rows[1].status, None);
    }

    #[test]
    fn local_targets_skip_urls_and_anchors() {
        assert_eq!(local_target("phase-1.md"), Some("phase-1.md".into()));
        assert_eq!(local_target("./a/b.md?x=1"), Some("./a/b.md".into()));
        assert_eq!(local_target("https://example.com/p.md"), None);
        assert_eq!(local_target("#phases"), None);
        assert_eq!(local_target("mailto:a@b"), None);
        assert_eq!(local_target("%zz.md"), Some("%zz.md".into()));
    }
}
