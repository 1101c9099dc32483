//! A script's turns (assistant messages with their usage, pauses, compactions and crashes)
//! and the tool calls a message makes: what the model would ask for, and what the player
//! does. One file, because a subagent's task is itself a list of turns.

use serde::Deserialize;
use serde::de::{self, Deserializer};

use super::string_or_number;
use crate::sim::Usage;

/// One step of a script.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(try_from = "RawTurn")]
pub enum Turn {
    /// One assistant message: text and tool calls, with the usage its request reports.
    Message(MessageTurn),
    /// A `compact_boundary` line, as when the agent compacts its own context.
    Compact(CompactSpec),
    /// Die abruptly, without a result line.
    Crash(CrashSpec),
    /// Pause, printing nothing.
    Sleep {
        /// How long.
        sleep_ms: u64,
    },
}

/// An assistant message turn.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct MessageTurn {
    /// Pause before the message.
    pub sleep_ms: u64,
    /// Visible text.
    pub say: Option<String>,
    /// Thinking text.
    pub think: Option<String>,
    /// The usage the message reports.
    pub usage: UsageSpec,
    /// Tool calls, run in order after the message.
    pub tools: Vec<Action>,
}

/// How a turn's usage is given.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum UsageSpec {
    /// The previous context plus what was said and returned since, roughly.
    #[default]
    Auto,
    /// Context tokens in use (input + cache read + cache creation).
    Context(u64),
    /// Percent of the scenario's window.
    Percent(f64),
    /// The usage numbers, verbatim.
    Exact(Usage),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTurn {
    #[serde(default)]
    sleep_ms: Option<u64>,
    #[serde(default)]
    say: Option<String>,
    #[serde(default)]
    think: Option<String>,
    #[serde(default)]
    context: Option<u64>,
    #[serde(default)]
    percent: Option<f64>,
    #[serde(default)]
    usage: Option<ExactUsage>,
    #[serde(default)]
    tools: Vec<RawAction>,
    #[serde(default)]
    compact: Option<CompactSpec>,
    #[serde(default)]
    crash: Option<CrashSpec>,
}

/// The longest pause a turn takes: a day, in milliseconds. A longer one is a slip (a
/// figure meant as seconds times a thousand), and no run waits it out.
const MAX_SLEEP_MS: u64 = 86_400_000;

impl TryFrom<RawTurn> for Turn {
    type Error = String;
    fn try_from(raw: RawTurn) -> Result<Self, String> {
        let has_message = raw.say.is_some() || raw.think.is_some() || !raw.tools.is_empty();
        let usage_keys = [
            raw.context.is_some(),
            raw.percent.is_some(),
            raw.usage.is_some(),
        ];
        let has_usage = usage_keys.iter().any(|set| *set);
        let special = usize::from(raw.compact.is_some()) + usize::from(raw.crash.is_some());
        if special > 1 || (special == 1 && (has_message || has_usage || raw.sleep_ms.is_some())) {
            return Err(
                "a `compact` or `crash` turn takes no other keys: put it in a turn of its own"
                    .to_owned(),
            );
        }
        if let Some(compact) = raw.compact {
            return Ok(Turn::Compact(compact));
        }
        if let Some(crash) = raw.crash {
            return Ok(Turn::Crash(crash));
        }
        if let Some(sleep_ms) = raw.sleep_ms.filter(|ms| *ms > MAX_SLEEP_MS) {
            return Err(format!(
                "`sleep_ms: {sleep_ms}` is out of range (0 to {MAX_SLEEP_MS}, a day)"
            ));
        }
        if usage_keys.iter().filter(|set| **set).count() > 1 {
            return Err("give at most one of `context`, `percent` and `usage`".to_owned());
        }
        if !has_message {
            return match (raw.sleep_ms, has_usage) {
                (Some(sleep_ms), false) => Ok(Turn::Sleep { sleep_ms }),
                _ => Err(
                    "a turn needs `say`, `think` or `tools` (or is a lone `sleep_ms`, `compact` or `crash`)"
                        .to_owned(),
                ),
            };
        }
        let usage = match (raw.context, raw.percent, raw.usage) {
            (Some(context), _, _) => UsageSpec::Context(context),
            (_, Some(percent), _) if !(0.0..=1000.0).contains(&percent) => {
                return Err(format!("`percent: {percent}` is out of range (0 to 1000)"));
            }
            (_, Some(percent), _) => UsageSpec::Percent(percent),
            (_, _, Some(usage)) => UsageSpec::Exact(Usage {
                input_tokens: usage.input_tokens,
                cache_read_input_tokens: usage.cache_read_input_tokens,
                cache_creation_input_tokens: usage.cache_creation_input_tokens,
                output_tokens: usage.output_tokens,
            }),
            _ => UsageSpec::Auto,
        };
        Ok(Turn::Message(MessageTurn {
            sleep_ms: raw.sleep_ms.unwrap_or(0),
            say: raw.say,
            think: raw.think,
            usage,
            tools: raw.tools.into_iter().map(|action| action.0).collect(),
        }))
    }
}

/// `usage:` as written in a scenario: the API's four counts, each defaulting to zero.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ExactUsage {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    cache_read_input_tokens: u64,
    #[serde(default)]
    cache_creation_input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
}

/// A `compact_boundary` line's metadata.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CompactSpec {
    /// `auto` (default) or `manual`.
    #[serde(default = "default_trigger")]
    pub trigger: String,
    /// Context tokens before compaction; default: the context reported so far.
    #[serde(default)]
    pub pre_tokens: Option<u64>,
}

fn default_trigger() -> String {
    "auto".to_owned()
}

/// How the agent dies.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CrashSpec {
    /// Exit code (default 1), used when no signal is given.
    #[serde(default = "default_crash_code")]
    pub exit_code: i32,
    /// A signal to kill itself with (`SIGKILL`, `SIGSEGV`, `SIGABRT`, …).
    #[serde(default, deserialize_with = "signal_name")]
    pub signal: Option<nix::sys::signal::Signal>,
    /// Printed on stderr first.
    #[serde(default)]
    pub stderr: Option<String>,
    /// Print half a JSON line, without its newline, first.
    #[serde(default)]
    pub partial_line: bool,
}

fn default_crash_code() -> i32 {
    1
}

/// A signal by name, with or without the `SIG` prefix.
fn signal_name<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<nix::sys::signal::Signal>, D::Error> {
    let name = String::deserialize(deserializer)?;
    let full = if name.starts_with("SIG") {
        name.clone()
    } else {
        format!("SIG{name}")
    };
    full.parse().map(Some).map_err(|_| {
        de::Error::custom(format!(
            "unknown signal `{name}` (try SIGKILL, SIGSEGV, SIGABRT)"
        ))
    })
}

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
