//! A phase and what its file declares: tasks, required agents, notes, process steps ([`Phase`], [`PhaseFile`]).

use std::path::{Path, PathBuf};

use super::{Dependency, DependencyTarget, Gate, Location, PhaseId, PhaseStatus};

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
