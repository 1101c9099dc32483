//! The plan as data: a master plan, its phases, and everything a phase file declares
//! (status, dependencies, gates, tasks, required agents, notes, process steps).
//!
//! Every item the audit can point at carries a [`Location`] (file and 1-based line), so a
//! report can say exactly where to look. Nothing here reads files or knows about
//! markdown: the master-plan and phase-file parsers build these values.

mod status;

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Serialize, Serializer};

pub use status::{PhaseStatus, STATUS_WORDS};

/// A place in a plan file: the file and, when known, the 1-based line.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Location {
    /// The file, as reached from the path the user gave (relative paths stay relative).
    pub file: PathBuf,
    /// The 1-based line, or `None` when the whole file is meant.
    pub line: Option<usize>,
}

impl Location {
    /// A line in a file.
    #[must_use]
    pub fn line(file: &Path, line: usize) -> Self {
        Location {
            file: file.to_path_buf(),
            line: Some(line),
        }
    }

    /// A whole file.
    #[must_use]
    pub fn file(file: &Path) -> Self {
        Location {
            file: file.to_path_buf(),
            line: None,
        }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{line}", self.file.display()),
            None => write!(f, "{}", self.file.display()),
        }
    }
}

impl Serialize for Location {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// A phase identifier such as `1`, `2` or `3.1`: dot-separated decimal numbers.
///
/// Leading zeros are dropped (`01` and `1` are the same phase), so ids compare by value.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PhaseId(String);

impl PhaseId {
    /// Parse an id, accepting an optional leading `Phase` word (`Phase 2` → `2`).
    #[must_use]
    pub fn parse(text: &str) -> Option<Self> {
        let mut text = text.trim();
        if let Some(rest) = text
            .get(..5)
            .filter(|head| head.eq_ignore_ascii_case("phase"))
            .and_then(|_| text.get(5..))
        {
            text = rest.trim_start();
        }
        let text = text.trim_start_matches('#').trim();
        if text.is_empty() {
            return None;
        }
        let mut parts = Vec::new();
        for part in text.split('.') {
            if part.is_empty() || !part.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            let trimmed = part.trim_start_matches('0');
            parts.push(if trimmed.is_empty() { "0" } else { trimmed });
        }
        Some(PhaseId(parts.join(".")))
    }

    /// The id as text.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The id as a single whole number, when it is one (`3` but not `3.1`).
    #[must_use]
    pub fn as_number(&self) -> Option<u64> {
        self.0.parse().ok()
    }
}

impl fmt::Display for PhaseId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Serialize for PhaseId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

/// What a dependency points at.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum DependencyTarget {
    /// A phase named by id (`Phase 2`).
    Id(PhaseId),
    /// A phase file named only by a link whose text names no phase id; the loader turns
    /// it into an [`DependencyTarget::Id`] when the file is one of the plan's phases.
    File(PathBuf),
}

impl fmt::Display for DependencyTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DependencyTarget::Id(id) => write!(f, "phase {id}"),
            DependencyTarget::File(path) => write!(f, "{}", path.display()),
        }
    }
}

/// A phase this phase must wait for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dependency {
    /// The phase depended on.
    pub target: DependencyTarget,
    /// Where the dependency is written.
    pub location: Location,
}

/// A check that must pass before a phase counts as done.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gate {
    /// The gate's name (`tests`, `ruff`); for a bullet that names only a command, the command.
    pub name: String,
    /// What passing means, in words (`0 errors`).
    pub criterion: String,
    /// The command written in the plan (the bullet's inline code span), if any.
    pub command: Option<String>,
    /// Where the gate's bullet is.
    pub location: Location,
}

/// Where a gate's command came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GateOrigin {
    /// Written in the phase file.
    Plan,
    /// Taken from the `gates` map of the configuration.
    Config,
}

/// A gate's command, ready to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GateCommand {
    /// The shell command.
    pub command: String,
    /// Where it came from.
    pub origin: GateOrigin,
}

impl Gate {
    /// The command to run for this gate: the plan's own command, else the configured
    /// default for the gate's name (`gates` map; matched exactly, then case-insensitively
    /// with spaces and underscores read as `-`). `None` means the gate cannot be run and
    /// the audit reports it as `UNKNOWN_GATE`.
    #[must_use]
    pub fn resolve(&self, defaults: &BTreeMap<String, String>) -> Option<GateCommand> {
        if let Some(command) = &self.command {
            return Some(GateCommand {
                command: command.clone(),
                origin: GateOrigin::Plan,
            });
        }
        let normalized: String = self
            .name
            .trim()
            .chars()
            .map(|c| {
                if c.is_whitespace() || c == '_' {
                    '-'
                } else {
                    c.to_ascii_lowercase()
                }
            })
            .collect();
        defaults
            .get(&self.name)
            .or_else(|| defaults.get(&normalized))
            .or_else(|| {
                defaults
                    .iter()
                    .find(|(key, _)| key.eq_ignore_ascii_case(&normalized))
                    .map(|(_, command)| command)
            })
            .map(|command| GateCommand {
                command: command.clone(),
                origin: GateOrigin::Config,
            })
    }
}

/// A checkbox under `## Tasks`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Task {
    /// The task's id (`1.1`), when the text starts with one.
    pub id: Option<String>,
    /// The task's text, without its id.
    pub text: String,
    /// Whether the box is ticked.
    pub done: bool,
    /// The heading the task sits under (`1. Setup`), if any.
    pub group: Option<String>,
    /// Where the task is.
    pub location: Location,
}

/// An agent the phase requires the coding agent to use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequiredAgent {
    /// The agent's name, as `.claude/agents/<name>.md` would define it.
    pub name: String,
    /// Where the requirement is first written.
    pub location: Location,
}

/// A notes file a phase reads or writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotesPath {
    /// The path, resolved against the directory of the file that names it.
    pub path: PathBuf,
    /// Where it is named.
    pub location: Location,
}

/// One step of a phase's `## Process Wrapper` checklist.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessStep {
    /// The step's text, with inline code kept in backticks.
    pub text: String,
    /// The checkbox state, when the step is a checkbox.
    pub done: Option<bool>,
    /// Where the step is.
    pub location: Location,
}

/// Whether a phase's file could be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PhaseFile {
    /// Read and parsed.
    Loaded(PathBuf),
    /// The master plan links a file that does not exist.
    NotFound(PathBuf),
    /// The file exists but could not be read (permissions, not UTF-8, a directory…).
    Unreadable {
        /// The file.
        path: PathBuf,
        /// Why it could not be read.
        reason: String,
    },
    /// The master plan's row links no file.
    NoLink,
}

impl PhaseFile {
    /// The file's path, when the row links one.
    #[must_use]
    pub fn path(&self) -> Option<&Path> {
        match self {
            PhaseFile::Loaded(path)
            | PhaseFile::NotFound(path)
            | PhaseFile::Unreadable { path, .. } => Some(path),
            PhaseFile::NoLink => None,
        }
    }

    /// Whether the file was read and parsed.
    #[must_use]
    pub fn is_loaded(&self) -> bool {
        matches!(self, PhaseFile::Loaded(_))
    }
}

/// One phase: its row in the master plan and what its phase file declares.
///
/// When the file could not be loaded ([`Phase::file`] is not `Loaded`), the declared
/// parts (dependencies, gates, tasks…) are empty.
#[derive(Debug, Clone, PartialEq)]
pub struct Phase {
    /// The phase's id.
    pub id: PhaseId,
    /// The phase's title: the master plan's title cell, else the phase file's H1.
    pub title: String,
    /// The phase file's `**Status:**`, else the master table's status, else `Pending`.
    pub status: PhaseStatus,
    /// The master plan row that lists the phase.
    pub row: Location,
    /// The phase file and whether it was read.
    pub file: PhaseFile,
    /// Phases this one waits for (`**Depends On:**` and `## Dependencies`), deduplicated.
    pub depends_on: Vec<Dependency>,
    /// The `## Gates` bullets.
    pub gates: Vec<Gate>,
    /// The `## Tasks` checkboxes.
    pub tasks: Vec<Task>,
    /// Agents the phase requires (`AGENT:name` markers and REQUIRED rows of an
    /// "Agents to Use" table), deduplicated in order of first mention.
    pub required_agents: Vec<RequiredAgent>,
    /// Notes from earlier phases to read first.
    pub notes_in: Vec<NotesPath>,
    /// Where the phase writes its notes.
    pub notes_out: Option<NotesPath>,
    /// The `## Process Wrapper` steps.
    pub steps: Vec<ProcessStep>,
    /// The agent that runs the phase (`**Agent:**`), when it is not the configured one.
    pub agent: Option<crate::config::AgentKind>,
    /// The model the phase runs on (`**Model:**`), when it is not the configured one.
    pub model: Option<String>,
}

impl Phase {
    /// The ids this phase depends on (dependencies on files outside the plan are left out).
    pub fn dependency_ids(&self) -> impl Iterator<Item = &PhaseId> {
        self.depends_on.iter().filter_map(|dep| match &dep.target {
            DependencyTarget::Id(id) => Some(id),
            DependencyTarget::File(_) => None,
        })
    }

    /// Where the phase file starts, else the master row that lists it.
    #[must_use]
    pub fn location(&self) -> Location {
        match &self.file {
            PhaseFile::Loaded(path) => Location::line(path, 1),
            _ => self.row.clone(),
        }
    }
}

/// Which file a parse problem is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProblemScope {
    /// The master plan.
    Master,
    /// A phase file (the index into [`Plan::phases`]).
    Phase(usize),
}

/// Something in a plan file that could not be understood.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// Which file.
    pub scope: ProblemScope,
    /// What is wrong, as a lowercase sentence fragment.
    pub message: String,
    /// Where.
    pub location: Location,
    /// How to fix it.
    pub hint: String,
}

/// A master plan and its phases.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// The title: the master plan's first H1 without a trailing "- Master Plan", else the
    /// file name.
    pub title: String,
    /// The master plan file.
    pub master: PathBuf,
    /// Where the phases table starts; `None` when the master plan has none.
    pub phases_table: Option<Location>,
    /// The phases, in table order.
    pub phases: Vec<Phase>,
    /// What could not be parsed.
    pub problems: Vec<Problem>,
    /// Where a master plan without a phases table reads like a phase file instead: its
    /// `**Status:**`, `**Depends On:**` or `## Tasks` line.
    pub phase_like: Option<Location>,
}

impl Plan {
    /// The first phase with this id.
    #[must_use]
    pub fn phase(&self, id: &PhaseId) -> Option<&Phase> {
        self.phases.iter().find(|phase| &phase.id == id)
    }

    /// The directory holding the master plan (the base for its relative links).
    #[must_use]
    pub fn dir(&self) -> &Path {
        self.master.parent().unwrap_or(Path::new(""))
    }
}

/// Join `relative` onto `base` and remove `.` and `..` components without touching the
/// file system, so plan paths stay as the user wrote them (relative stays relative).
#[must_use]
pub fn resolve_path(base: &Path, relative: &str) -> PathBuf {
    use std::path::Component;
    let joined = base.join(relative);
    let mut out = PathBuf::new();
    for component in joined.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                let last_is_normal =
                    matches!(out.components().next_back(), Some(Component::Normal(_)));
                if last_is_normal {
                    out.pop();
                } else if !matches!(
                    out.components().next_back(),
                    Some(Component::RootDir | Component::Prefix(_))
                ) {
                    out.push("..");
                }
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phase_ids_parse_and_normalize() {
        assert_eq!(PhaseId::parse("1").map(|id| id.0), Some("1".into()));
        assert_eq!(PhaseId::parse(" 3.1 ").map(|id| id.0), Some("3.1".into()));
        assert_eq!(PhaseId::parse("01").map(|id| id.0), Some("1".into()));
        assert_eq!(PhaseId::parse("Phase 2").map(|id| id.0), Some("2".into()));
        assert_eq!(PhaseId::parse("#4").map(|id| id.0), Some("4".into()));
        assert_eq!(PhaseId::parse(""), None);
        assert_eq!(PhaseId::parse("TBD"), None);
        assert_eq!(PhaseId::parse("1."), None);
        assert_eq!(PhaseId::parse("1a"), None);
        assert_eq!(PhaseId::parse("3").and_then(|id| id.as_number()), Some(3));
        assert_eq!(PhaseId::parse("3.1").and_then(|id| id.as_number()), None);
    }

    #[test]
    fn gate_commands_come_from_the_plan_then_the_config() {
        let defaults: BTreeMap<String, String> = [
            ("ruff", "ruff check ."),
            ("type-check", "pyright"),
            ("Coverage", "pytest --cov"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
        let gate = |name: &str, command: Option<&str>| Gate {
            name: name.to_owned(),
            criterion: String::new(),
            command: command.map(str::to_owned),
            location: Location::line(Path::new("p.md"), 1),
        };
        let own = gate("ruff", Some("uv run ruff check src")).resolve(&defaults);
        assert_eq!(
            own,
            Some(GateCommand {
                command: "uv run ruff check src".into(),
                origin: GateOrigin::Plan
            })
        );
        let configured = gate("ruff", None).resolve(&defaults);
        assert_eq!(
            configured.map(|c| (c.command, c.origin)),
            Some(("ruff check .".into(), GateOrigin::Config))
        );
        assert_eq!(
            gate("Type check", None)
                .resolve(&defaults)
                .map(|c| c.command),
            Some("pyright".into())
        );
        assert_eq!(
            gate("type_check", None)
                .resolve(&defaults)
                .map(|c| c.command),
            Some("pyright".into())
        );
        assert_eq!(
            gate("coverage", None).resolve(&defaults).map(|c| c.command),
            Some("pytest --cov".into())
        );
        assert_eq!(gate("security", None).resolve(&defaults), None);
    }

    #[test]
    fn paths_resolve_lexically() {
        assert_eq!(
            resolve_path(Path::new("plans/a"), "phase-1.md"),
            PathBuf::from("plans/a/phase-1.md")
        );
        assert_eq!(
            resolve_path(Path::new("plans/a"), "./../b/phase.md"),
            PathBuf::from("plans/b/phase.md")
        );
        assert_eq!(
            resolve_path(Path::new(""), "../x.md"),
            PathBuf::from("../x.md")
        );
        assert_eq!(
            resolve_path(Path::new("/r"), "../../x.md"),
            PathBuf::from("/x.md")
        );
    }

    #[test]
    fn locations_display_as_file_colon_line() {
        assert_eq!(
            Location::line(Path::new("a/b.md"), 7).to_string(),
            "a/b.md:7"
        );
        assert_eq!(Location::file(Path::new("a/b.md")).to_string(), "a/b.md");
    }
}
