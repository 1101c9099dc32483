//! The sim agent's scenario file: its YAML shape, validation, and script selection.
//!
//! A scenario holds scripts; the player picks the first script whose `phase`, `attempt`
//! and `restart` selectors match the session (a script without selectors matches every
//! session) and plays its turns. The format is documented in `docs/sim-agent.md`. Every
//! error, structural or semantic, points at the file, line and column it comes from.
//! Pure data: reading the file is the only I/O here.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer};

use crate::agent::event::Usage;

/// The context window reported when a scenario does not set `window`.
pub const DEFAULT_WINDOW: u64 = 200_000;

/// Default timeout of a `bash` action, as Claude Code's Bash tool uses.
pub const DEFAULT_BASH_TIMEOUT_MS: u64 = 120_000;

/// A parsed, validated scenario file.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(try_from = "RawScenario")]
pub struct Scenario {
    /// The context window the agent reports in `result.modelUsage`, and the base of
    /// `percent` usage.
    pub window: u64,
    /// Model name printed in the stream; `None` uses `--model`.
    pub model: Option<String>,
    /// The scripts, in selection order.
    pub scripts: Vec<Script>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScenario {
    #[serde(default)]
    window: Option<u64>,
    #[serde(default)]
    model: Option<String>,
    scripts: Vec<Script>,
}

impl TryFrom<RawScenario> for Scenario {
    type Error = String;
    fn try_from(raw: RawScenario) -> Result<Self, String> {
        let window = raw.window.unwrap_or(DEFAULT_WINDOW);
        if window == 0 {
            return Err("`window` must be a positive number of tokens".to_owned());
        }
        if raw.scripts.is_empty() {
            return Err("`scripts` is empty: add at least one script with `turns`".to_owned());
        }
        Ok(Scenario {
            window,
            model: raw.model,
            scripts: raw.scripts,
        })
    }
}

/// Which session a script is for, and what it does.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    /// Match `DEBUSSY_PHASE_ID` (a string or a number in YAML).
    #[serde(default, deserialize_with = "string_or_number")]
    pub phase: Option<String>,
    /// Match `DEBUSSY_ATTEMPT` (1-based).
    #[serde(default)]
    pub attempt: Option<u32>,
    /// Match `DEBUSSY_RESTART` (0-based index of the context restart within the attempt).
    #[serde(default)]
    pub restart: Option<u32>,
    /// Substrings the prompt must contain; a missing one fails the session.
    #[serde(default)]
    pub expect_prompt: Vec<String>,
    /// What the agent does, in order.
    pub turns: Vec<Turn>,
    /// The final `result` line.
    #[serde(default)]
    pub result: ResultSpec,
    /// Process exit code after the result line.
    #[serde(default)]
    pub exit_code: i32,
}

impl Script {
    /// Whether this script is for the session described by `selector`.
    #[must_use]
    pub fn matches(&self, selector: &Selector) -> bool {
        self.phase
            .as_deref()
            .is_none_or(|phase| selector.phase.as_deref() == Some(phase))
            && self.attempt.is_none_or(|a| a == selector.attempt)
            && self.restart.is_none_or(|r| r == selector.restart)
    }
}

/// What the orchestrator told the agent about its session (from `DEBUSSY_*` variables).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selector {
    /// `DEBUSSY_PHASE_ID`, when set.
    pub phase: Option<String>,
    /// `DEBUSSY_ATTEMPT` (1-based; 1 when unset).
    pub attempt: u32,
    /// `DEBUSSY_RESTART` (0-based; 0 when unset).
    pub restart: u32,
}

impl fmt::Display for Selector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.phase {
            Some(phase) => write!(f, "phase {phase}")?,
            None => f.write_str("no phase")?,
        }
        write!(f, ", attempt {}, restart {}", self.attempt, self.restart)
    }
}

impl Scenario {
    /// Read and validate a scenario file.
    ///
    /// # Errors
    /// [`ScenarioError::Read`] when the file cannot be read, [`ScenarioError::Parse`] with
    /// the file, line and column when it is not a valid scenario.
    pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
        let text = std::fs::read_to_string(path).map_err(|source| ScenarioError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Scenario::parse(&text, path)
    }

    /// Parse and validate scenario text; `path` is only used in errors.
    ///
    /// # Errors
    /// [`ScenarioError::Parse`] with the line and column of the problem.
    pub fn parse(text: &str, path: &Path) -> Result<Scenario, ScenarioError> {
        serde_norway::from_str(text).map_err(|err| ScenarioError::parse(&err, text, path))
    }

    /// The first script for this session.
    #[must_use]
    pub fn select(&self, selector: &Selector) -> Option<&Script> {
        self.scripts.iter().find(|script| script.matches(selector))
    }
}

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
}

/// An action as written: a one-key map (`- write: {…}`) rather than a YAML tag.
#[derive(Deserialize)]
#[serde(transparent)]
struct RawAction(
    #[serde(deserialize_with = "serde_norway::with::singleton_map::deserialize")] Action,
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

/// The final `result` line.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ResultSpec {
    /// `success`, `error_max_turns`, `error_during_execution`, …
    pub subtype: String,
    /// Default: true unless the subtype is `success`.
    pub is_error: Option<bool>,
    /// The result text; default: the last thing the agent said.
    pub text: Option<String>,
}

impl Default for ResultSpec {
    fn default() -> Self {
        ResultSpec {
            subtype: "success".to_owned(),
            is_error: None,
            text: None,
        }
    }
}

impl ResultSpec {
    /// Whether the result reports an error.
    #[must_use]
    pub fn is_error(&self) -> bool {
        self.is_error.unwrap_or(self.subtype != "success")
    }
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

/// Accept `phase: 1` as well as `phase: "1"`.
fn string_or_number<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<String>, D::Error> {
    struct PhaseVisitor;
    impl Visitor<'_> for PhaseVisitor {
        type Value = Option<String>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a phase id (string or number)")
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
            Ok(Some(v.to_owned()))
        }
        fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
            Ok(Some(v.to_string()))
        }
        fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
            Ok(Some(v.to_string()))
        }
        fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
            Ok(Some(v.to_string()))
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
    }
    deserializer.deserialize_any(PhaseVisitor)
}

/// A scenario that cannot be used.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum ScenarioError {
    /// The file could not be read.
    #[error("read sim scenario {}", path.display())]
    #[diagnostic(code(debussy::sim::read))]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The file is not a valid scenario.
    #[error("invalid sim scenario {}:{line}:{column}: {message}", path.display())]
    #[diagnostic(
        code(debussy::sim::invalid),
        help("the scenario format is described in docs/sim-agent.md")
    )]
    Parse {
        /// The file.
        path: PathBuf,
        /// 1-based line of the problem (0 when unknown).
        line: usize,
        /// 1-based column of the problem (0 when unknown).
        column: usize,
        /// What is wrong.
        message: String,
        /// The file's text, for the rendered snippet.
        #[source_code]
        source_code: std::sync::Arc<miette::NamedSource<String>>,
        /// Where in the text.
        #[label("here")]
        span: Option<miette::SourceSpan>,
    },
}

impl ScenarioError {
    fn parse(err: &serde_norway::Error, text: &str, path: &Path) -> Self {
        let location = err.location();
        let (line, column) = location
            .as_ref()
            .map_or((0, 0), |loc| (loc.line(), loc.column()));
        // serde_norway appends "at line L column C" itself; we print the location up front.
        let mut message = err.to_string();
        if let Some(cut) = message.find(" at line ") {
            message.truncate(cut);
        }
        ScenarioError::Parse {
            path: path.to_path_buf(),
            line,
            column,
            message,
            source_code: std::sync::Arc::new(miette::NamedSource::new(
                path.display().to_string(),
                text.to_owned(),
            )),
            span: location.map(|loc| miette::SourceSpan::from((loc.index().min(text.len()), 0))),
        }
    }
}

#[cfg(test)]
#[path = "scenario_tests.rs"]
mod tests;
