//! [`SessionReport`]: everything the orchestrator records and acts on after a session.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Duration;

use crate::agent::Todo;
use crate::agent::{DeniedCall, LastWords, SessionResult};
use crate::context::Snapshot;
use crate::process::{ExitReport, StopAction};

use super::event::{SessionWarning, StopCause};
use super::outcome::SessionOutcome;

/// What one session did and how it ended.
#[derive(Debug, Clone)]
pub struct SessionReport {
    /// How it ended (see [`SessionOutcome::code`] for the documented codes).
    pub outcome: SessionOutcome,
    /// The context meter at the end: tokens, window, percent, exactness, main-thread
    /// tool calls and turns, cost, and the stop that fired, if any.
    pub snapshot: Snapshot,
    /// The agent's own session id (from its `init` or `result` line).
    pub agent_session_id: Option<String>,
    /// The backend that ran the session (`claude`, `codex`, `gemini`, `sim`).
    pub agent: &'static str,
    /// The model the agent ran, as it reported it.
    pub model: Option<String>,
    /// The context window the agent reported this session, for the caller to remember
    /// with [`crate::state::Store::learn_context_window`].
    pub reported_window: Option<ReportedWindow>,
    /// The agent's latest todo list (`TodoWrite`, or Claude Code's task tools).
    pub todos: Vec<Todo>,
    /// The last text the assistant wrote on the main thread.
    pub last_message: Option<String>,
    /// The `subagent_type` of every Task/Agent tool call (for compliance's required
    /// agents).
    pub invoked_agents: BTreeSet<String>,
    /// Tool calls the agent's permission system refused (a compliance finding).
    pub permission_denials: Vec<DeniedCall>,
    /// Files that Write/Edit/MultiEdit/NotebookEdit calls wrote successfully, absolute.
    pub files_written: BTreeSet<PathBuf>,
    /// The agent's final `result` line (cost, turns, cumulative usage), when it printed
    /// one.
    pub result: Option<SessionResult>,
    /// How the agent process ended; `None` when it never started.
    pub exit: Option<ExitReport>,
    /// Present when the session stopped the agent itself.
    pub stop: Option<StopSummary>,
    /// The agent's pid (its process group id); `None` when it never started.
    pub pid: Option<u32>,
    /// The command line that ran (prompt not shown); `None` when it could not be built.
    pub command: Option<String>,
    /// The agent's last stderr lines (at most `agent.stderr_tail_lines`), for diagnosing a
    /// failure.
    pub stderr_tail: Vec<String>,
    /// What the agent left behind to judge a failure by: its error result, its last
    /// lines that were not JSON, its stderr tail.
    pub last_words: LastWords,
    /// The tool call a context stop interrupted because it ran past `agent.tool_grace`,
    /// in a few words (`Bash: make test`).
    pub cut_short: Option<String>,
    /// Problems that did not end the session (also sent as events).
    pub warnings: Vec<SessionWarning>,
    /// When the session started.
    pub started_at: jiff::Timestamp,
    /// When it ended (the agent reaped, the log closed).
    pub ended_at: jiff::Timestamp,
    /// How long it took.
    pub duration: Duration,
    /// The session log.
    pub log_path: PathBuf,
}

impl SessionReport {
    /// The outcome's documented code.
    #[must_use]
    pub fn code(&self) -> i32 {
        self.outcome.code()
    }

    /// The cost the agent reported, in US dollars.
    #[must_use]
    pub fn cost_usd(&self) -> Option<f64> {
        self.snapshot.cost_usd
    }
}

/// The window an agent reported for a model (`result.modelUsage[m].contextWindow`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportedWindow {
    /// The model it is for.
    pub model: String,
    /// The window in tokens.
    pub tokens: u64,
}

/// How the session stopped its agent.
#[derive(Debug, Clone, PartialEq)]
pub struct StopSummary {
    /// Why (an interrupt replaces an earlier cause).
    pub cause: StopCause,
    /// From the moment the stop was decided — the arrival of the line that crossed the
    /// threshold, or the request — to the agent being reaped.
    pub latency: Duration,
    /// What the stop ladder did (SIGINT, SIGTERM, SIGKILL), in order; empty when the
    /// agent exited before the request reached it.
    pub actions: Vec<StopAction>,
    /// True when the ladder was cut short with SIGKILL (a second interrupt).
    pub escalated: bool,
}
