//! Agent backends: how to launch a headless coding agent and how to read what it prints.
//!
//! A backend is plain data plus two pure functions ([`AgentBackend`]): it describes the
//! command to run for a prompt ([`AgentCommand`], spawned by the `process` layer, which
//! this module never touches) and turns each line the agent prints into typed
//! [`AgentEvent`]s. It also says what usage information the agent reports
//! ([`UsageReporting`]), which tells the context meter whether to trust the agent's numbers
//! or estimate.
//!
//! Backends: [`claude::ClaudeBackend`] (Claude Code in `stream-json` mode),
//! [`codex::CodexBackend`] (`codex exec --json`, plus its rollout file),
//! [`gemini::GeminiBackend`] (the Gemini CLI's `stream-json`, estimated) and
//! [`sim::SimBackend`] (the built-in simulated agent, which prints Claude Code's format).
//!
//! A backend never does I/O beyond locating its program: what a session needs made on
//! disk (a private home directory for the agent, a file it writes to follow live) is
//! described in the [`AgentCommand`] and done by the session layer.

pub mod claude;
pub mod claude_failures;
pub mod codex;
mod event;
pub mod failure;
pub mod gemini;
pub mod known_windows;
pub mod last_words;
mod lenient;
mod settings;
pub mod sim;
pub mod stream_json;

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

pub use event::{
    AgentEvent, AssistantBlock, AssistantMessage, CompactBoundary, DeniedCall, HookEvent,
    McpServerStatus, ModelUsage, PermissionDenied, RateLimitEvent, ResultBlock, SessionInit,
    SessionResult, StatusEvent, StreamEvent, TextLine, Todo, TodoStatus, ToolResult,
    ToolResultContent, ToolUse, UnknownLine, Usage, UsageReport, UserBlock, UserMessage,
};
pub use failure::{AgentFailure, ApiRetry, FailureKind};
pub use last_words::LastWords;

pub use settings::BackendSettings;

use crate::config::AgentKind;

/// A process to start for one agent session, as plain data for the `process` layer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentCommand {
    /// The program: an absolute path when it was found on `PATH`.
    pub program: PathBuf,
    /// Arguments, not including the program.
    pub args: Vec<String>,
    /// Environment variables to set on top of the inherited environment.
    pub env: BTreeMap<String, String>,
    /// Text to write to the child's stdin before closing it; `None` leaves stdin empty.
    pub stdin: Option<String>,
    /// A private home directory the session layer makes for this session, if the agent
    /// needs one.
    pub home: Option<AgentHome>,
    /// A file the session layer writes for this session, if the agent needs one.
    pub file: Option<SessionFile>,
}

/// A file of one session's own (the Gemini CLI's settings), written by the session layer
/// beside the transcript and named to the agent in [`SessionFile::var`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionFile {
    /// The environment variable that names the file's path to the agent.
    pub var: String,
    /// The file's name; it is written as `…session-K.NAME`.
    pub name: String,
    /// What the file holds.
    pub contents: String,
}

/// A directory of its own for one session's agent (Codex's `CODEX_HOME`), made by the
/// session layer beside the transcript and named to the agent in [`AgentHome::var`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentHome {
    /// The environment variable that names the directory to the agent.
    pub var: String,
    /// The user's own home for this agent: each of its entries is linked into the
    /// private one, so settings, credentials and instructions stay the user's (and
    /// writes to them go through to the user's files).
    pub link_from: Option<PathBuf>,
    /// Entries of [`link_from`](Self::link_from) not linked (a name prefix match): the
    /// agent's per-session data.
    pub skip: Vec<String>,
    /// A file the agent writes under the home, followed live beside stdout and parsed by
    /// [`AgentBackend::parse_followed_line`].
    pub follow: Option<Follow>,
}

/// Which file under an [`AgentHome`] to follow: the first one found under `under`, at
/// any depth, whose name starts with `prefix` and ends with `suffix`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Follow {
    /// The directory to look in, relative to the home.
    pub under: PathBuf,
    /// How the file name begins.
    pub prefix: String,
    /// How the file name ends.
    pub suffix: String,
}

impl fmt::Display for AgentCommand {
    /// The command line, shell-quoted, for logs (stdin and environment not shown).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&shell_quote(&self.program.to_string_lossy()))?;
        for arg in &self.args {
            write!(f, " {}", shell_quote(arg))?;
        }
        Ok(())
    }
}

/// What usage information an agent reports, which decides how its context is measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UsageReporting {
    /// Every assistant message carries the API's token usage (Claude Code).
    PerMessage,
    /// Each model request's usage comes as a [`UsageReport`] of its own (Codex's rollout).
    PerRequest,
    /// No usage at all: the meter estimates everything it sees with the tokenizer.
    Nothing,
}

/// An agent backend: command construction and output parsing, no I/O beyond locating the
/// program.
pub trait AgentBackend: Send + Sync {
    /// Short name for logs and messages (`claude`, `sim`).
    fn name(&self) -> &'static str;

    /// The command that runs one session on `prompt` with `model`.
    ///
    /// # Errors
    /// When the agent program cannot be found, or the backend's inputs (a scenario file)
    /// are unusable; the error says what was looked for and how to fix it.
    fn command(&self, prompt: &str, model: &str) -> Result<AgentCommand, AgentError>;

    /// Turn one output line into the events it carries (zero or more). Never fails: lines
    /// the backend does not understand become [`AgentEvent::Unknown`] or
    /// [`AgentEvent::Text`]. By default the line is Claude Code's stream-json, which the
    /// sim agent speaks too.
    fn parse_line(&self, line: &[u8]) -> Vec<AgentEvent> {
        stream_json::parse_line(line).into_iter().collect()
    }

    /// Turn one line of the file the session follows ([`AgentHome::follow`]) into the
    /// events it carries. By default the backend follows no file and this gives nothing.
    fn parse_followed_line(&self, line: &[u8]) -> Vec<AgentEvent> {
        let _ = line;
        Vec::new()
    }

    /// What usage information this agent reports; by default usage per model request,
    /// as stream-json carries it.
    fn usage_reporting(&self) -> UsageReporting {
        UsageReporting::PerMessage
    }

    /// Why a session failed, from what it left behind (its error result, its lines that
    /// were not JSON, its stderr), when the failure is one the backend recognises. `now`
    /// reads times the agent gave in local words (Codex's "try again at 3:15 PM"). By
    /// default Claude Code's words, as stream-json carries them.
    fn diagnose(&self, words: &LastWords, now: &jiff::Zoned) -> Option<AgentFailure> {
        let _ = now;
        claude_failures::diagnose(words)
    }

    /// One of the agent's own API retries announced on stderr (the Gemini CLI's "Attempt
    /// 2 failed. Retrying…"), if `line` is one. By default the agent announces none there.
    fn stderr_retry(&self, line: &str) -> Option<ApiRetry> {
        let _ = line;
        None
    }

    /// Whether [`resume_command`](Self::resume_command) can continue a stopped session, so
    /// the stopped agent can write its own handoff. By default it cannot.
    fn can_resume(&self) -> bool {
        false
    }

    /// The command that resumes a stopped session (same context) for one turn, with no
    /// tools allowed: the agent-written handoff. Only called when
    /// [`can_resume`](Self::can_resume) says so.
    ///
    /// # Errors
    /// As [`command`](Self::command); [`AgentError::CannotResume`] by default.
    fn resume_command(&self, resume: &ResumeRequest<'_>) -> Result<AgentCommand, AgentError> {
        let _ = resume;
        Err(AgentError::CannotResume { agent: self.name() })
    }
}

/// The most tokens an agent-written handoff may answer with: the room a stopped session
/// needs for its answer, beside the handoff prompt.
pub const HANDOFF_ANSWER_TOKENS: u64 = 8_000;

/// A stopped session resumed for one answer (the agent-written handoff).
#[derive(Debug, Clone, Copy)]
pub struct ResumeRequest<'a> {
    /// The agent's id of the stopped session.
    pub session_id: &'a str,
    /// What to ask.
    pub prompt: &'a str,
    /// The model.
    pub model: &'a str,
    /// The stopped session's context window in tokens, as debussy measured it: the
    /// answer must fit in what is left of it.
    pub window: Option<u64>,
}

/// Where a run is, for backends that need paths (the sim agent's default scenario).
#[derive(Debug, Clone, Copy)]
pub struct BackendContext<'a> {
    /// The project root (relative configured paths are resolved against it).
    pub project_root: &'a Path,
    /// The master plan being run, if any.
    pub plan_path: Option<&'a Path>,
}

/// Build the backend of `settings.kind`, running that kind's own profile: never another
/// kind's program. Nothing is checked yet: problems (a missing program, a bad scenario)
/// are reported by [`AgentBackend::command`].
///
/// # Errors
/// None today; the `Result` leaves room for backends whose setup can fail.
pub fn backend(
    settings: &BackendSettings,
    context: BackendContext<'_>,
) -> Result<Box<dyn AgentBackend>, AgentError> {
    Ok(match settings.kind {
        AgentKind::Claude => Box::new(claude::ClaudeBackend::new(settings)),
        AgentKind::Codex => Box::new(codex::CodexBackend::new(settings)),
        AgentKind::Gemini => Box::new(gemini::GeminiBackend::new(settings)),
        AgentKind::Sim => {
            let scenario = sim::scenario_path(
                settings.scenario.as_deref(),
                context.project_root,
                context.plan_path,
            );
            Box::new(sim::SimBackend::new(settings, scenario))
        }
    })
}

/// Why an agent could not be prepared.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum AgentError {
    /// The agent program is not on `PATH` (or not at the configured path).
    #[error("agent program `{program}` not found ({searched})")]
    #[diagnostic(code(debussy::agent::not_found), help("{help}"))]
    ProgramNotFound {
        /// What was looked for.
        program: String,
        /// Where it was looked for, in words (`searched PATH=/usr/bin:/bin`).
        searched: String,
        /// How to fix it.
        help: String,
    },
    /// The running debussy executable could not be located (needed by the sim agent).
    #[error("locate the debussy executable for the simulated agent")]
    #[diagnostic(
        code(debussy::agent::current_exe),
        help("set `agents.sim.command` to the path of the debussy binary")
    )]
    CurrentExe(#[source] std::io::Error),
    /// The sim agent has no scenario to play.
    #[error("sim scenario file {} not found", path.display())]
    #[diagnostic(
        code(debussy::agent::no_scenario),
        help(
            "write a scenario (see docs/sim-agent.md) at that path, or set `agent.scenario` in the configuration"
        )
    )]
    ScenarioMissing {
        /// The path that was tried.
        path: PathBuf,
    },
    /// The agent cannot resume a stopped session (for the agent-written handoff).
    #[error("the {agent} agent cannot resume a stopped session")]
    #[diagnostic(code(debussy::agent::cannot_resume), help("set `handoff: mechanical`"))]
    CannotResume {
        /// The backend's name.
        agent: &'static str,
    },
    /// The sim agent's scenario is invalid.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Scenario(#[from] crate::sim::ScenarioError),
}

pub(crate) use crate::process::shell_quote;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_quote_leaves_plain_words_and_quotes_the_rest() {
        assert_eq!(shell_quote("stream-json"), "stream-json");
        assert_eq!(shell_quote("/usr/bin/claude"), "/usr/bin/claude");
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_quote(""), "''");
    }

    #[test]
    fn command_displays_as_a_shell_line() {
        let command = AgentCommand {
            program: PathBuf::from("/bin/claude"),
            args: vec!["-p".into(), "--model".into(), "opus 4".into()],
            env: BTreeMap::new(),
            stdin: Some("prompt".into()),
            home: None,
            file: None,
        };
        assert_eq!(command.to_string(), "/bin/claude -p --model 'opus 4'");
    }

    #[test]
    fn backend_follows_the_settings_kind() {
        let dir = tempfile::tempdir().expect("tempdir");
        let plan = dir.path().join("MASTER_PLAN.md");
        std::fs::write(dir.path().join("sim-scenario.yaml"), "scripts: []\n").expect("write");
        let context = BackendContext {
            project_root: dir.path(),
            plan_path: Some(&plan),
        };
        let config = crate::config::Config::default();
        let of = |kind| backend(&crate::session::backend_settings(&config, kind), context);
        let claude = of(AgentKind::Claude).expect("claude");
        assert_eq!(claude.name(), "claude");
        assert_eq!(claude.usage_reporting(), UsageReporting::PerMessage);
        let codex = of(AgentKind::Codex).expect("codex");
        assert_eq!(codex.name(), "codex");
        assert_eq!(codex.usage_reporting(), UsageReporting::PerRequest);
        let sim = of(AgentKind::Sim).expect("sim");
        assert_eq!(sim.name(), "sim");
    }
}
