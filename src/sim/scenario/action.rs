//! The tool calls a turn makes: what the model would ask for, and what the player does.

use serde::Deserialize;

use super::string_or_number;
use super::turn::Turn;

/// Default timeout of a `bash` action, as Claude Code's Bash tool uses.
pub const DEFAULT_BASH_TIMEOUT_MS: u64 = 120_000;
/// A tool call the agent makes (and the player really performs).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Action {
    /// `Write`: create or replace a file (relative paths are relative to the working
    /// directory).
    Write {
        /// The file.
        path: String,
        /// Its new content.
        content: String,
    },
    /// `Read`: read a file; its numbered lines become the tool result.
    Read(PathSpec),
    /// `Bash`: run a shell command; its output becomes the tool result.
    Bash(BashSpec),
    /// `TodoWrite`: replace the todo list.
    Todos(Vec<Todo>),
    /// `Task`: run a subagent whose lines carry this call's id as `parent_tool_use_id`.
    Task(TaskSpec),
    /// `debussy done`: report the phase's status, as a `Bash` call of the real command.
    Done(DoneSpec),
    /// `debussy progress`: log a finished step, as a `Bash` call of the real command.
    Progress(ProgressSpec),
}

/// An action as written: a one-key map (`- write: {…}`) rather than a YAML tag.
#[derive(Deserialize)]
#[serde(transparent)]
pub(super) struct RawAction(
    #[serde(deserialize_with = "serde_norway::with::singleton_map::deserialize")] pub(super) Action,
);

/// A path, as a string or `{path: …}`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum PathSpec {
    /// `read: notes.md`
    Path(String),
    /// `read: {path: notes.md}`
    Full {
        /// The file.
        path: String,
    },
}

impl PathSpec {
    /// The path as written.
    #[must_use]
    pub fn path(&self) -> &str {
        match self {
            PathSpec::Path(path) | PathSpec::Full { path } => path,
        }
    }
}

/// A shell command, as a string or with options.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum BashSpec {
    /// `bash: ls -la`
    Command(String),
    /// `bash: {command: …, description: …, timeout_ms: …}`
    Full {
        /// The command, run with `sh -c`.
        command: String,
        /// What it does, as the model would describe it.
        #[serde(default)]
        description: Option<String>,
        /// Kill the command after this long (default two minutes).
        #[serde(default)]
        timeout_ms: Option<u64>,
    },
}

impl BashSpec {
    /// The command line.
    #[must_use]
    pub fn command(&self) -> &str {
        match self {
            BashSpec::Command(command) | BashSpec::Full { command, .. } => command,
        }
    }

    /// The description, if any.
    #[must_use]
    pub fn description(&self) -> Option<&str> {
        match self {
            BashSpec::Command(_) => None,
            BashSpec::Full { description, .. } => description.as_deref(),
        }
    }

    /// The timeout in milliseconds.
    #[must_use]
    pub fn timeout_ms(&self) -> u64 {
        match self {
            BashSpec::Command(_) => DEFAULT_BASH_TIMEOUT_MS,
            BashSpec::Full { timeout_ms, .. } => timeout_ms.unwrap_or(DEFAULT_BASH_TIMEOUT_MS),
        }
    }
}

/// One todo-list entry.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Todo {
    /// What to do.
    pub content: String,
    /// Its state.
    #[serde(default)]
    pub status: TodoStatus,
    /// The present-continuous form shown while it runs; default: `content`.
    #[serde(default)]
    pub active_form: Option<String>,
}

/// A todo's state, as `TodoWrite` spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TodoStatus {
    /// Not started.
    #[default]
    Pending,
    /// Being worked on.
    InProgress,
    /// Finished.
    Completed,
}

impl TodoStatus {
    /// The spelling `TodoWrite` uses.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            TodoStatus::Pending => "pending",
            TodoStatus::InProgress => "in_progress",
            TodoStatus::Completed => "completed",
        }
    }
}

/// A subagent call.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, try_from = "RawTaskSpec")]
pub struct TaskSpec {
    /// Short description of the task.
    pub description: String,
    /// The subagent's instructions.
    pub prompt: String,
    /// Subagent type (default `general-purpose`).
    pub subagent_type: String,
    /// The subagent's own turns; their usage is the subagent's context, not the main one.
    pub turns: Vec<Turn>,
    /// What the subagent reports back (the main thread's tool result).
    pub result: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTaskSpec {
    description: String,
    prompt: String,
    #[serde(default)]
    subagent_type: Option<String>,
    #[serde(default)]
    turns: Vec<Turn>,
    result: String,
}

impl TryFrom<RawTaskSpec> for TaskSpec {
    type Error = String;
    fn try_from(raw: RawTaskSpec) -> Result<Self, String> {
        for turn in &raw.turns {
            match turn {
                Turn::Compact(_) => {
                    return Err("a subagent's turns cannot `compact`".to_owned());
                }
                Turn::Message(message)
                    if message
                        .tools
                        .iter()
                        .any(|action| matches!(action, Action::Task(_))) =>
                {
                    return Err("a subagent cannot start another `task`".to_owned());
                }
                _ => {}
            }
        }
        Ok(TaskSpec {
            description: raw.description,
            prompt: raw.prompt,
            subagent_type: raw
                .subagent_type
                .unwrap_or_else(|| "general-purpose".to_owned()),
            turns: raw.turns,
            result: raw.result,
        })
    }
}

/// A `debussy done` report.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum DoneSpec {
    /// `done: completed`
    Status(DoneStatus),
    /// `done: {status: blocked, reason: …, phase: …}`
    Full {
        /// How the phase ended (default `completed`).
        #[serde(default)]
        status: DoneStatus,
        /// Why.
        #[serde(default)]
        reason: Option<String>,
        /// The phase id; default `DEBUSSY_PHASE_ID`.
        #[serde(default, deserialize_with = "string_or_number")]
        phase: Option<String>,
    },
}

impl DoneSpec {
    /// The reported status.
    #[must_use]
    pub fn status(&self) -> DoneStatus {
        match self {
            DoneSpec::Status(status) | DoneSpec::Full { status, .. } => *status,
        }
    }

    /// The reason, if any.
    #[must_use]
    pub fn reason(&self) -> Option<&str> {
        match self {
            DoneSpec::Status(_) => None,
            DoneSpec::Full { reason, .. } => reason.as_deref(),
        }
    }

    /// The explicit phase id, if any.
    #[must_use]
    pub fn phase(&self) -> Option<&str> {
        match self {
            DoneSpec::Status(_) => None,
            DoneSpec::Full { phase, .. } => phase.as_deref(),
        }
    }
}

/// A `debussy progress` step.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum ProgressSpec {
    /// `progress: wrote the parser`
    Step(String),
    /// `progress: {step: …, phase: …}`
    Full {
        /// What was done.
        step: String,
        /// The phase id; default `DEBUSSY_PHASE_ID`.
        #[serde(default, deserialize_with = "string_or_number")]
        phase: Option<String>,
    },
}

impl ProgressSpec {
    /// The step as written.
    #[must_use]
    pub fn step(&self) -> &str {
        match self {
            ProgressSpec::Step(step) | ProgressSpec::Full { step, .. } => step,
        }
    }

    /// The explicit phase id, if any.
    #[must_use]
    pub fn phase(&self) -> Option<&str> {
        match self {
            ProgressSpec::Step(_) => None,
            ProgressSpec::Full { phase, .. } => phase.as_deref(),
        }
    }
}

/// The statuses `debussy done --status` accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DoneStatus {
    /// The phase's work is finished.
    #[default]
    Completed,
    /// The phase needs a human.
    Blocked,
    /// The phase failed.
    Failed,
}

impl DoneStatus {
    /// The command-line spelling.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            DoneStatus::Completed => "completed",
            DoneStatus::Blocked => "blocked",
            DoneStatus::Failed => "failed",
        }
    }
}
