//! The tool calls a message makes.

use serde::Serialize;

use super::Turn;

/// A tool call as written: a one-key map (`- write: {…}`), which the scenario parser
/// reads, rather than serde_norway's default YAML tag for an enum.
#[derive(Debug, Clone, Serialize)]
#[serde(transparent)]
pub(super) struct Tool(#[serde(with = "serde_norway::with::singleton_map")] pub(super) Action);

/// A tool call the agent makes.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// `Write` a file.
    Write {
        /// The file, relative to the working directory.
        path: String,
        /// Its new content.
        content: String,
    },
    /// `Read` a file.
    Read(String),
    /// Run a shell command.
    Bash(Bash),
    /// Replace the todo list.
    Todos(Vec<Todo>),
    /// Run a subagent.
    Task(Task),
    /// `debussy done`.
    Done(Done),
    /// `debussy progress`.
    Progress(Progress),
}

impl Action {
    /// Write `content` to `path`.
    pub fn write(path: &str, content: &str) -> Action {
        Action::Write {
            path: path.to_owned(),
            content: content.to_owned(),
        }
    }

    /// Run `command` with the default timeout.
    pub fn bash(command: &str) -> Action {
        Action::Bash(Bash::Command(command.to_owned()))
    }

    /// Run `command`, killed after `timeout_ms`.
    pub fn bash_within(command: &str, timeout_ms: u64) -> Action {
        Action::Bash(Bash::Full {
            command: command.to_owned(),
            timeout_ms,
        })
    }
}

/// A `bash` call: a command line, or one with a timeout.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum Bash {
    /// `bash: CMD`
    Command(String),
    /// `bash: {command, timeout_ms}`
    Full {
        /// The command line.
        command: String,
        /// Kill it after this long.
        timeout_ms: u64,
    },
}

/// A `debussy done` report: a status, or one with a reason and an explicit phase.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum Done {
    /// `done: STATUS`
    Status(Status),
    /// `done: {status, reason, phase}`
    Full {
        /// How the phase ended.
        status: Status,
        /// Why.
        #[serde(skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
        /// The phase, in place of `DEBUSSY_PHASE_ID`.
        #[serde(skip_serializing_if = "Option::is_none")]
        phase: Option<String>,
    },
}

/// The statuses `debussy done` reports.
#[derive(Debug, Clone, Copy, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Finished.
    Completed,
    /// Needs a human.
    Blocked,
    /// Failed.
    Failed,
}

/// A `debussy progress` step, in the session's phase or an explicit one.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum Progress {
    /// `progress: STEP`
    Step(String),
    /// `progress: {step, phase}`
    InPhase {
        /// What was done.
        step: String,
        /// The phase.
        phase: String,
    },
}

/// One todo-list entry.
#[derive(Debug, Clone, Serialize)]
pub struct Todo {
    content: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<TodoStatus>,
}

/// A todo's state.
#[derive(Debug, Clone, Copy, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TodoStatus {
    /// Not started.
    Pending,
    /// Being worked on.
    InProgress,
    /// Finished.
    Completed,
}

impl Todo {
    /// A todo in no stated status (pending).
    pub fn new(content: &str) -> Todo {
        Todo {
            content: content.to_owned(),
            status: None,
        }
    }

    /// A todo in `status`.
    pub fn with(content: &str, status: TodoStatus) -> Todo {
        Todo {
            content: content.to_owned(),
            status: Some(status),
        }
    }
}

/// A subagent call: its instructions, its own turns and what it reports back.
#[derive(Debug, Clone, Serialize)]
pub struct Task {
    description: String,
    prompt: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    subagent_type: Option<String>,
    turns: Vec<Turn>,
    result: String,
}

impl Task {
    /// A subagent described as `description`, told `prompt`, reporting `result`.
    pub fn new(description: &str, prompt: &str, result: &str) -> Task {
        Task {
            description: description.to_owned(),
            prompt: prompt.to_owned(),
            subagent_type: None,
            turns: Vec::new(),
            result: result.to_owned(),
        }
    }

    /// Its type, in place of `general-purpose`.
    pub fn subagent_type(mut self, kind: &str) -> Task {
        self.subagent_type = Some(kind.to_owned());
        self
    }

    /// The subagent plays `turn` after its turns already there.
    pub fn turn(mut self, turn: Turn) -> Task {
        self.turns.push(turn);
        self
    }
}
