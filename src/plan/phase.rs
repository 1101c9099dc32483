//! Phase file parsing: title, `**Status:**`, `**Depends On:**` and `## Dependencies`,
//! `**Agent:**` and `**Model:**`, gates, tasks, required agents, notes in and out, and the
//! process-wrapper steps.
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
use crate::config::AgentKind;

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
    /// The `**Agent:**` that runs the phase, when it names one.
    pub(crate) agent: Option<AgentKind>,
    /// The `**Model:**` the phase runs on, when it names one.
    pub(crate) model: Option<String>,
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
    agent_fields(&doc, path, scope, &mut out);
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

/// `**Agent:** codex` and `**Model:** gpt-5.5` among the lines above the first `##`
/// section: one word after `Label: `, so an `AGENT:name` marker (a required subagent) is
/// not taken for it.
fn agent_fields(doc: &Document, path: &Path, scope: ProblemScope, out: &mut PhaseDoc) {
    for block in &doc.blocks {
        if block.heading_level().is_some_and(|level| level >= 2) {
            break;
        }
        let lines: Vec<(usize, &Inlines)> = match block {
            Block::Paragraph(lines) => lines.iter().map(|l| (l.line, &l.content)).collect(),
            Block::Item { content, line, .. } => vec![(*line, content)],
            _ => Vec::new(),
        };
        for (line, content) in lines {
            let word = |label: &str| -> Option<String> {
                let value = content.after_label(label)?.plain();
                if !value.starts_with(char::is_whitespace) {
                    return None;
                }
                let value = value.trim();
                (!value.is_empty() && !value.contains(char::is_whitespace))
                    .then(|| value.trim_matches('`').to_owned())
            };
            if out.agent.is_none()
                && let Some(name) = word("agent")
            {
                match serde_norway::from_str::<AgentKind>(&name.to_ascii_lowercase()) {
                    Ok(kind) => out.agent = Some(kind),
                    Err(_) => out.problems.push(Problem {
                        scope,
                        message: format!("unknown agent `{name}`"),
                        location: Location::line(path, line),
                        hint: "use one of: claude, codex, gemini, sim".to_owned(),
                    }),
                }
            }
            if out.model.is_none() {
                out.model = word("model");
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
#[path = "phase_tests.rs"]
mod tests;
