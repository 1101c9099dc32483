//! Phase file parsing: title, `**Status:**`, `**Depends On:**` and `## Dependencies`,
//! gates, tasks, required agents, notes in and out, and the process-wrapper steps.
//!
//! Pure: takes the text and the file's path (relative paths in the file resolve against
//! its directory) and reads nothing.

use std::path::Path;

use super::agents::required_agents;
use super::gates::parse_gates;
use super::markdown::{Block, Document, Inlines, Span};
use super::master::local_target;
use super::model::{
    DependencyTarget, Gate, Location, NotesPath, PhaseStatus, Problem, ProblemScope, ProcessStep,
    RequiredAgent, STATUS_WORDS, Task, resolve_path,
};
use super::refs::{bare_ids, phase_refs};

/// A dependency as written, before the loader knows the phase's own id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RawDependency {
    /// What it points at.
    pub(crate) target: DependencyTarget,
    /// Where it is written.
    pub(crate) location: Location,
    /// Found in the `## Dependencies` prose (where a phase naming itself is description,
    /// not a dependency) rather than the `**Depends On:**` field.
    pub(crate) from_section: bool,
}

/// What a phase file declares.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct PhaseDoc {
    /// The title from the H1 (`... Phase N: Title` → `Title`).
    pub(crate) title: Option<String>,
    /// The `**Status:**` value.
    pub(crate) status: Option<PhaseStatus>,
    /// Dependencies, in order of appearance (not deduplicated).
    pub(crate) depends_on: Vec<RawDependency>,
    /// Gates.
    pub(crate) gates: Vec<Gate>,
    /// Tasks.
    pub(crate) tasks: Vec<Task>,
    /// Required agents.
    pub(crate) required_agents: Vec<RequiredAgent>,
    /// Notes to read.
    pub(crate) notes_in: Vec<NotesPath>,
    /// Notes to write.
    pub(crate) notes_out: Option<NotesPath>,
    /// Process-wrapper steps.
    pub(crate) steps: Vec<ProcessStep>,
    /// What could not be understood.
    pub(crate) problems: Vec<Problem>,
}

/// Parse a phase file. `scope` labels the problems found.
pub(crate) fn parse_phase(text: &str, path: &Path, scope: ProblemScope) -> PhaseDoc {
    let doc = Document::parse(text);
    let dir = path.parent().unwrap_or(Path::new(""));
    let mut out = PhaseDoc {
        title: doc.title().map(|(title, _)| phase_title(&title)),
        gates: parse_gates(&doc.sections(|h| h.starts_with("gates")), path),
        tasks: tasks(&doc, path),
        required_agents: required_agents(&doc, path),
        steps: steps(&doc, path),
        ..PhaseDoc::default()
    };
    fields(&doc, path, dir, scope, &mut out);
    dependency_section(&doc, path, dir, &mut out.depends_on);
    notes(&doc, path, dir, &mut out);
    out
}

/// "Test Feature Phase 1: Phase One" → "Phase One"; any other H1 as it is.
fn phase_title(h1: &str) -> String {
    let lower = h1.to_ascii_lowercase();
    for (at, _) in lower.match_indices("phase") {
        let rest = &h1[at + 5..];
        let Some((id, title)) = rest.split_once(':') else {
            continue;
        };
        let title = title.trim();
        if super::model::PhaseId::parse(id).is_some() && !title.is_empty() {
            return title.to_owned();
        }
    }
    h1.trim().to_owned()
}

/// `**Status:**` and `**Depends On:**`: the first line carrying each label, among
/// paragraph lines and the list items above the first `##` section (a header written as
/// a list).
fn fields(doc: &Document, path: &Path, dir: &Path, scope: ProblemScope, out: &mut PhaseDoc) {
    let header_end = doc
        .blocks
        .iter()
        .position(|b| b.heading_level().is_some_and(|level| level >= 2))
        .unwrap_or(doc.blocks.len());
    let lines = doc
        .blocks
        .iter()
        .enumerate()
        .flat_map(|(index, block)| match block {
            Block::Paragraph(lines) => lines.iter().map(|l| (l.line, &l.content)).collect(),
            Block::Item { content, line, .. } if index < header_end => vec![(*line, content)],
            _ => Vec::new(),
        });
    let mut status_seen = false;
    let mut depends_seen = false;
    for (line, content) in lines {
        let location = Location::line(path, line);
        if !status_seen && let Some(value) = content.after_label("status") {
            status_seen = true;
            let text = value.plain();
            let text = text.trim();
            out.status = PhaseStatus::parse(text);
            if out.status.is_none() {
                out.problems.push(Problem {
                    scope,
                    message: format!("unknown status `{text}`"),
                    location: location.clone(),
                    hint: format!("use one of: {STATUS_WORDS}"),
                });
            }
        }
        if !depends_seen && let Some(value) = content.after_label("depends on") {
            depends_seen = true;
            match depends_on(&value, dir, &location) {
                Some(deps) => out.depends_on.extend(deps),
                None => out.problems.push(Problem {
                    scope,
                    message: format!("cannot tell which phases `Depends On: {}` means", value.display()),
                    location,
                    hint: "name phases like `Phase 1` or `[Phase 1](phase-1.md)`, list several with commas, or write `None`".to_owned(),
                }),
            }
        }
    }
}

/// The dependencies of a `**Depends On:**` value; `None` when it names none and does
/// not say there are none.
fn depends_on(value: &Inlines, dir: &Path, location: &Location) -> Option<Vec<RawDependency>> {
    let plain = value.plain();
    let lower = plain.trim().to_lowercase();
    let none_words = ["n/a", "na", "none", "nothing", "-", "—", "–"];
    if lower.is_empty()
        || none_words.iter().any(|w| {
            lower == *w
                || lower.starts_with(&format!("{w} "))
                || lower.starts_with(&format!("{w}("))
        })
    {
        return Some(Vec::new());
    }
    let mut deps = references(value, dir, location, false);
    if deps.is_empty()
        && let Some(ids) = bare_ids(&plain)
    {
        deps = ids
            .into_iter()
            .map(|id| RawDependency {
                target: DependencyTarget::Id(id),
                location: location.clone(),
                from_section: false,
            })
            .collect();
    }
    (!deps.is_empty()).then_some(deps)
}

/// Phase references in inline content: `Phase N` in text, code and link text; links
/// whose text names no phase point at their file.
fn references(
    content: &Inlines,
    dir: &Path,
    location: &Location,
    from_section: bool,
) -> Vec<RawDependency> {
    let mut deps = Vec::new();
    let mut push = |target| {
        deps.push(RawDependency {
            target,
            location: location.clone(),
            from_section,
        });
    };
    for span in &content.0 {
        match span {
            Span::Text(text) | Span::Code(text) => {
                phase_refs(text)
                    .into_iter()
                    .for_each(|id| push(DependencyTarget::Id(id)));
            }
            Span::Link { dest, text } => {
                let ids = phase_refs(text);
                if ids.is_empty() {
                    if let Some(target) = local_target(dest) {
                        push(DependencyTarget::File(resolve_path(dir, &target)));
                    }
                } else {
                    ids.into_iter()
                        .for_each(|id| push(DependencyTarget::Id(id)));
                }
            }
        }
    }
    deps
}

/// `## Dependencies` list items that speak about phases: unlabelled items, and items
/// labelled like "Previous phase:", "Depends on:", "Requires:" (not "External:").
fn dependency_section(doc: &Document, path: &Path, dir: &Path, deps: &mut Vec<RawDependency>) {
    for section in doc.sections(|h| h.starts_with("dependencies") || h.starts_with("depends on")) {
        for block in section.blocks {
            let Block::Item { content, line, .. } = block else {
                continue;
            };
            let plain = content.plain();
            let counts = match plain.split_once(':') {
                Some((label, _)) if label.len() <= 40 => {
                    let label = label.to_lowercase();
                    ["phase", "depend", "require", "after", "prerequisite"]
                        .iter()
                        .any(|word| label.contains(word))
                }
                _ => true,
            };
            if counts {
                deps.extend(references(content, dir, &Location::line(path, *line), true));
            }
        }
    }
}

/// `## Tasks` checkboxes, with their ids (`1.1: text`) and group headings.
fn tasks(doc: &Document, path: &Path) -> Vec<Task> {
    let mut tasks = Vec::new();
    for section in doc.sections(|h| h.starts_with("tasks")) {
        let mut group = None;
        for block in section.blocks {
            match block {
                Block::Heading { content, .. } => group = Some(content.plain().trim().to_owned()),
                Block::Item {
                    checked: Some(done),
                    content,
                    line,
                    ..
                } => {
                    let text = content.display();
                    let (id, text) = split_task_id(&text);
                    tasks.push(Task {
                        id,
                        text,
                        done: *done,
                        group: group.clone(),
                        location: Location::line(path, *line),
                    });
                }
                _ => {}
            }
        }
    }
    tasks
}

/// "1.1: Create x" → (Some("1.1"), "Create x"). An id is digits and dots followed by
/// `:` or `)`, or a dotted id followed by a space.
fn split_task_id(text: &str) -> (Option<String>, String) {
    let end = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let id = text[..end].trim_end_matches('.');
    let rest = &text[end..];
    let separated = rest.starts_with(':')
        || rest.starts_with(')')
        || (id.contains('.') && rest.starts_with(char::is_whitespace));
    if id.is_empty() || !id.starts_with(|c: char| c.is_ascii_digit()) || !separated {
        return (None, text.to_owned());
    }
    let rest = rest.trim_start_matches([':', ')']).trim();
    (Some(id.to_owned()), rest.to_owned())
}

/// `## Process Wrapper` top-level items.
fn steps(doc: &Document, path: &Path) -> Vec<ProcessStep> {
    let mut steps = Vec::new();
    for section in doc.sections(|h| h.starts_with("process wrapper")) {
        for block in section.blocks {
            if let Block::Item {
                depth: 0,
                checked,
                content,
                line,
                ..
            } = block
            {
                steps.push(ProcessStep {
                    text: content.display(),
                    done: *checked,
                    location: Location::line(path, *line),
                });
            }
        }
    }
    steps
}

/// Notes input (`Read previous notes: `path``, unless marked N/A) and output (the first
/// `Write … notes …` item's path).
fn notes(doc: &Document, path: &Path, dir: &Path, out: &mut PhaseDoc) {
    for block in &doc.blocks {
        let Block::Item { content, line, .. } = block else {
            continue;
        };
        let lower = content.plain().trim().to_lowercase();
        let location = Location::line(path, *line);
        let paths = || {
            content
                .code_spans()
                .map(str::trim)
                .filter(|code| looks_like_path(code))
                .map(|code| NotesPath {
                    path: resolve_path(dir, code),
                    location: location.clone(),
                })
        };
        let reads = lower.contains("previous notes")
            || ["read notes", "review notes", "read the notes"]
                .iter()
                .any(|p| lower.starts_with(p));
        if reads && !lower.contains("n/a") {
            for notes in paths() {
                if !out.notes_in.iter().any(|n| n.path == notes.path) {
                    out.notes_in.push(notes);
                }
            }
        }
        if out.notes_out.is_none() && lower.starts_with("write") && lower.contains("notes") {
            out.notes_out = paths().next();
        }
    }
}

fn looks_like_path(code: &str) -> bool {
    !code.is_empty()
        && !code.contains(char::is_whitespace)
        && (code.contains('/') || code.contains('.'))
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    fn parse(text: &str) -> PhaseDoc {
        parse_phase(
            text,
            Path::new("plans/x/phase-2.md"),
            ProblemScope::Phase(1),
        )
    }

    fn deps(doc: &PhaseDoc) -> Vec<(String, bool)> {
        doc.depends_on
            .iter()
            .map(|d| (d.target.to_string(), d.from_section))
            .collect()
    }

    #[test]
    fn titles() {
        assert_eq!(phase_title("Test Feature Phase 1: Phase One"), "Phase One");
        assert_eq!(phase_title("Phase 3.1: Polish: Final"), "Polish: Final");
        assert_eq!(phase_title("Sprint 1: Foundation"), "Sprint 1: Foundation");
        assert_eq!(phase_title("Phases: overview"), "Phases: overview");
        assert_eq!(
            parse("# Hello Phase 2: Page\n").title.as_deref(),
            Some("Page")
        );
    }

    #[test]
    fn status_and_depends_on_fields() {
        let doc = parse(
            "# X Phase 2: Y\n\n**Status:** In Progress\n**Master Plan:** [m](m.md)\n\
             **Depends On:** [Phase 1: Data](phase-1.md), [Setup](../setup.md)\n",
        );
        assert_eq!(doc.status, Some(PhaseStatus::InProgress));
        assert_eq!(
            deps(&doc),
            [
                ("phase 1".to_owned(), false),
                ("plans/setup.md".to_owned(), false)
            ]
        );
        assert_eq!(doc.depends_on[0].location.line, Some(5));
        assert!(doc.problems.is_empty());
    }

    #[test]
    fn header_fields_may_be_list_items_but_not_later_tasks() {
        let doc = parse(
            "# Phase 2: Y\n\n- **Status:** Done\n- **Depends On:** Phase 1\n\n## Tasks\n- [ ] Status: update the page\n",
        );
        assert_eq!(doc.status, Some(PhaseStatus::Completed));
        assert_eq!(deps(&doc), [("phase 1".to_owned(), false)]);
        let doc = parse("# Phase 2: Y\n\n## Tasks\n- [ ] Status: update the page\n");
        assert_eq!(doc.status, None);
        assert!(doc.problems.is_empty());
    }

    #[test]
    fn depends_on_none_forms_and_bare_ids() {
        for none in [
            "N/A",
            "N/A (initial phase)",
            "None",
            "None (foundational phase)",
            "-",
            "",
        ] {
            let doc = parse(&format!("**Depends On:** {none}\n"));
            assert!(
                doc.depends_on.is_empty() && doc.problems.is_empty(),
                "{none}: {doc:?}"
            );
        }
        let doc = parse("**Depends On:** 1, 3\n");
        assert_eq!(
            deps(&doc),
            [("phase 1".to_owned(), false), ("phase 3".to_owned(), false)]
        );
        let doc = parse("**Depends On:** Phases 1-3\n");
        assert_eq!(doc.depends_on.len(), 3);
    }

    #[test]
    fn unreadable_fields_are_problems() {
        let doc = parse("**Status:** Someday\n\n**Depends On:** the database work\n");
        assert_eq!(doc.status, None);
        let messages: Vec<&str> = doc.problems.iter().map(|p| p.message.as_str()).collect();
        assert_eq!(
            messages,
            [
                "unknown status `Someday`",
                "cannot tell which phases `Depends On: the database work` means"
            ]
        );
        assert_eq!(doc.problems[1].location.line, Some(3));
        assert!(
            doc.problems
                .iter()
                .all(|p| p.scope == ProblemScope::Phase(1))
        );
    }

    #[test]
    fn dependencies_section_reads_phase_items_only() {
        let doc = parse(
            "## Dependencies\n- Previous phase: Phase 1 (models)\n- Previous phases: Phases 3-4\n\
             - External: Phase 9 of the vendor rollout\n- [Phase 5](phase-5.md) must be done\n\n## Risks\n- Phase 6\n",
        );
        assert_eq!(
            deps(&doc),
            [
                ("phase 1".to_owned(), true),
                ("phase 3".to_owned(), true),
                ("phase 4".to_owned(), true),
                ("phase 5".to_owned(), true)
            ]
        );
    }

    #[test]
    fn tasks_with_ids_groups_and_state() {
        let doc = parse(
            "## Tasks\n\n### 1. Setup\n- [ ] 1.1: Create `src/`\n- [x] 1.2 Add config\n\n### 2. More\n\
             - [ ] Untagged task\n  - [ ] 2.1) nested\n- not a checkbox\n\n## Notes\n- [ ] 9.9: elsewhere\n",
        );
        let tasks: Vec<_> = doc
            .tasks
            .iter()
            .map(|t| {
                (
                    t.id.as_deref(),
                    t.text.as_str(),
                    t.done,
                    t.group.as_deref(),
                    t.location.line,
                )
            })
            .collect();
        assert_eq!(
            tasks,
            [
                (
                    Some("1.1"),
                    "Create `src/`",
                    false,
                    Some("1. Setup"),
                    Some(4)
                ),
                (Some("1.2"), "Add config", true, Some("1. Setup"), Some(5)),
                (None, "Untagged task", false, Some("2. More"), Some(8)),
                (Some("2.1"), "nested", false, Some("2. More"), Some(9)),
            ]
        );
        assert_eq!(split_task_id("3 apples"), (None, "3 apples".to_owned()));
        assert_eq!(
            split_task_id("3: apples"),
            (Some("3".to_owned()), "apples".to_owned())
        );
    }

    #[test]
    fn notes_in_and_out_resolve_against_the_file() {
        let doc = parse(
            "## Process Wrapper (MANDATORY)\n\
             - [ ] Read previous notes: `notes/a.md`, `../b.md`\n\
             - [ ] **[IMPLEMENTATION]**\n\
             - [ ] Write `notes/NOTES_2.md` (REQUIRED)\n\
             - [ ] Write notes to: `notes/other.md`\n",
        );
        let ins: Vec<&Path> = doc.notes_in.iter().map(|n| n.path.as_path()).collect();
        assert_eq!(
            ins,
            [Path::new("plans/x/notes/a.md"), Path::new("plans/b.md")]
        );
        assert_eq!(
            doc.notes_out
                .as_ref()
                .map(|n| (n.path.clone(), n.location.line)),
            Some((PathBuf::from("plans/x/notes/NOTES_2.md"), Some(4)))
        );
        let steps: Vec<&str> = doc.steps.iter().map(|s| s.text.as_str()).collect();
        assert_eq!(
            steps,
            [
                "Read previous notes: `notes/a.md`, `../b.md`",
                "[IMPLEMENTATION]",
                "Write `notes/NOTES_2.md` (REQUIRED)",
                "Write notes to: `notes/other.md`"
            ]
        );
    }

    #[test]
    fn notes_marked_not_applicable_are_not_inputs() {
        let doc = parse(
            "- [ ] Read previous notes: `notes/NOTES_0.md` (N/A - initial phase)\n\
             - [ ] Read previous notes: None (first phase)\n- [ ] Write notes to: N/A\n",
        );
        assert!(doc.notes_in.is_empty());
        assert!(doc.notes_out.is_none());
    }

    #[test]
    fn sample_phase_fixture() {
        let text = include_str!("../../tests/fixtures/plans/sample_phase.md");
        let doc = parse_phase(text, Path::new("f/sample_phase.md"), ProblemScope::Phase(0));
        assert!(doc.problems.is_empty(), "{:?}", doc.problems);
        assert_eq!(doc.title.as_deref(), Some("Setup Infrastructure"));
        assert_eq!(doc.status, Some(PhaseStatus::Pending));
        assert!(doc.depends_on.is_empty());
        let gates: Vec<(&str, &str, Option<&str>)> = doc
            .gates
            .iter()
            .map(|g| (g.name.as_str(), g.criterion.as_str(), g.command.as_deref()))
            .collect();
        assert_eq!(
            gates,
            [
                ("ruff", "0 errors", None),
                ("pytest", "all tests passing", None)
            ]
        );
        let tasks: Vec<&str> = doc.tasks.iter().filter_map(|t| t.id.as_deref()).collect();
        assert_eq!(tasks, ["1.1", "1.2", "2.1", "2.2"]);
        let agents: Vec<(&str, Option<usize>)> = doc
            .required_agents
            .iter()
            .map(|a| (a.name.as_str(), a.location.line))
            .collect();
        assert_eq!(
            agents,
            [("doc-sync-manager", Some(11)), ("task-validator", Some(18))]
        );
        assert!(doc.notes_in.is_empty(), "`N/A (first phase)` names no file");
        assert_eq!(
            doc.notes_out.map(|n| n.path),
            Some(PathBuf::from("f/notes/NOTES_test_phase_1.md"))
        );
        assert_eq!(doc.steps.len(), 7);
        assert_eq!(doc.steps[0].done, Some(false));
    }

    #[test]
    fn sample_phase2_fixture() {
        let text = include_str!("../../tests/fixtures/plans/sample_phase2.md");
        let doc = parse_phase(text, Path::new("sample_phase2.md"), ProblemScope::Phase(1));
        assert!(doc.problems.is_empty(), "{:?}", doc.problems);
        assert_eq!(doc.title.as_deref(), Some("Add Logic"));
        assert_eq!(deps(&doc), [("phase 1".to_owned(), false)]);
        let names: Vec<&str> = doc.gates.iter().map(|g| g.name.as_str()).collect();
        assert_eq!(names, ["ruff", "pytest", "coverage"]);
        let done: Vec<(Option<&str>, bool)> = doc
            .tasks
            .iter()
            .map(|t| (t.id.as_deref(), t.done))
            .collect();
        assert_eq!(done, [(Some("1.1"), false), (Some("1.2"), true)]);
        let ins: Vec<&Path> = doc.notes_in.iter().map(|n| n.path.as_path()).collect();
        assert_eq!(ins, [Path::new("notes/NOTES_test_phase_1.md")]);
        assert_eq!(doc.required_agents.len(), 2);
    }

    #[test]
    fn a_bare_phase_file_parses_to_nothing() {
        let doc = parse("Not a valid phase file");
        assert_eq!(doc, PhaseDoc::default());
    }
}
