//! The configuration's shape: [`Config`] and its sections, with their built-in defaults.
//!
//! The keys these types hold are declared once more, as data, in [`super::keys`]; a
//! test keeps the two equal. Values are checked in [`super::validate`], not here.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Deserializer, Serialize};

use super::Seconds;
use super::gates::default_gates;
use super::jobs::Jobs;
use super::profiles::{AgentKind, AgentPermissions, AgentProfiles};
use super::section::section;

/// The effective configuration of one debussy invocation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// Model name passed to the agent.
    pub model: String,
    /// Seconds before one agent session is stopped as timed out.
    pub timeout: Seconds,
    /// Extra attempts per phase after the first.
    pub max_retries: u32,
    /// Percent of the context window at which a session is stopped (0 < x ≤ 100; 100 disables).
    pub context_threshold: crate::config::ContextLimit,
    /// Main-thread tool calls after which a session is stopped for a restart.
    pub tool_call_threshold: u32,
    /// Context restarts allowed per attempt (0 disables restarts).
    pub max_restarts: u32,
    /// Pause the run when its cost reaches this many US dollars (`None`: no limit).
    pub max_cost_usd: Option<f64>,
    /// Pause the run when one phase's cost reaches this many US dollars.
    pub max_phase_cost_usd: Option<f64>,
    /// Pause the run when it has run this long.
    pub max_duration: Option<super::RunDuration>,
    /// Fail an attempt after this many context restarts in a row that made no progress
    /// (0: never).
    pub no_progress_restarts: u32,
    /// Who writes the handoff a restarted session starts from.
    pub handoff: HandoffMode,
    /// Seconds the stopped agent has to write its handoff.
    pub handoff_timeout: Seconds,
    /// Seconds between a context stop and the next session.
    pub restart_delay: Seconds,
    /// Commit the agent's work after each phase and at each checkpoint.
    pub auto_commit: bool,
    /// Also commit the work of failed phases.
    pub commit_on_failure: bool,
    /// Commit message template; `{phase_id}`, `{phase_name}`, `{status}` are replaced.
    pub commit_message_template: String,
    /// Phases run at once: one at a time in the working tree itself, or side by side,
    /// each in its own git worktree.
    pub jobs: Jobs,
    /// Message of the commit merging a phase's branch into the run's branch (phases run
    /// side by side); the same placeholders as `commit_message_template`.
    pub merge_message_template: String,
    /// Show the terminal dashboard when stdout is a terminal.
    pub interactive: bool,
    /// Where run output goes.
    pub output: OutputMode,
    /// Seconds before one gate command is stopped as failed.
    pub gate_timeout: Seconds,
    /// Stop and restart remediation ("fix the findings") sessions for their context too.
    pub restart_in_fix_sessions: bool,
    /// The agent that runs sessions.
    #[serde(deserialize_with = "section")]
    pub agent: AgentConfig,
    /// Each agent kind's own program, arguments, environment, model, permissions and
    /// window.
    #[serde(deserialize_with = "section")]
    pub agents: AgentProfiles,
    /// Default command for each gate name, used when a gate names no command itself.
    #[serde(deserialize_with = "gates_section")]
    pub gates: BTreeMap<String, String>,
    /// Where run notifications are sent.
    #[serde(deserialize_with = "section")]
    pub notifications: NotificationsConfig,
    /// Limits and restart policy of `debussy mcp supervise`.
    #[serde(deserialize_with = "section")]
    pub mcp: McpConfig,
    /// How debussy's commits treat the repository.
    #[serde(deserialize_with = "section")]
    pub git: GitConfig,
    /// The `limits` section.
    #[serde(deserialize_with = "section")]
    pub limits: LimitsConfig,
}

/// The `limits` section: how long a run waits for what it does not control.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LimitsConfig {
    /// The longest a run waits for an agent's usage limit to reset before it pauses;
    /// `None` waits for the reset however far it is.
    pub max_wait: Option<super::RunDuration>,
}

impl Default for LimitsConfig {
    fn default() -> Self {
        LimitsConfig {
            max_wait: super::RunDuration::parse(DEFAULT_MAX_WAIT).ok(),
        }
    }
}

/// `limits.max_wait` unless configured: six hours, past a five-hour usage window.
pub const DEFAULT_MAX_WAIT: &str = "6h";

/// Who writes the handoff at the top of a restarted session's checkpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HandoffMode {
    /// The stopped session is resumed once to write it, with the mechanical sections
    /// below it; backends that cannot resume fall back to `mechanical`.
    #[default]
    Agent,
    /// debussy assembles the checkpoint alone (progress, todos, changes, last message).
    Mechanical,
}

/// The `git` section.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GitConfig {
    /// Run the repository's `pre-commit`, `commit-msg` and `post-commit` hooks around
    /// debussy's commits, as `git commit` does; a hook that fails fails the commit.
    pub run_hooks: bool,
    /// Seconds one git command debussy runs (a merge, a worktree change, a commit with
    /// the repository's hooks) may take; past it, its process group is stopped.
    pub timeout: Seconds,
}

impl Default for GitConfig {
    fn default() -> Self {
        GitConfig {
            run_hooks: true,
            timeout: Seconds(600),
        }
    }
}

/// The `mcp` section: timing, size limits and restart policy of `debussy mcp supervise`.
/// Durations are in seconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct McpConfig {
    /// Seconds a new server has to answer the replayed `initialize`.
    pub readiness_timeout: f64,
    /// Seconds the first server has to answer the client's own `initialize`.
    pub first_readiness_timeout: f64,
    /// Seconds requests in flight may take to finish before a planned restart stops the server.
    pub drain_grace: f64,
    /// Seconds a request may wait for a ready server before it is answered with an error.
    pub request_deadline: f64,
    /// Seconds a request sent to a server may wait for its answer before the client gets
    /// an error instead.
    pub answer_timeout: f64,
    /// Messages that may wait for a ready server.
    pub buffer_max_messages: u64,
    /// Bytes that may wait for a ready server.
    pub buffer_max_bytes: u64,
    /// Longest accepted JSON-RPC message, in bytes.
    pub max_line_bytes: u64,
    /// Seconds between closing a server's stdin and SIGTERM.
    pub stop_close_grace: f64,
    /// Seconds between SIGTERM and SIGKILL.
    pub stop_term_grace: f64,
    /// Exit-42 restarts happen at most once per this many seconds.
    pub restart_interval: f64,
    /// Delay before restarting a crashed server, by crash number in a streak.
    #[serde(deserialize_with = "section")]
    pub crash_backoff: McpBackoffConfig,
    /// This many crashes within `crash_window` seconds make the supervisor degraded (0: never).
    pub max_crashes: u64,
    /// The window for `max_crashes`, in seconds.
    pub crash_window: f64,
    /// A server that ran this many seconds before crashing starts a new backoff streak.
    pub stable_after: f64,
}

/// The `mcp.crash_backoff` section: three tiers of delay after a crash.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct McpBackoffConfig {
    /// Seconds to wait after each of the first `first_count` crashes in a row.
    pub first: f64,
    /// How many crashes in a row wait `first`.
    pub first_count: u64,
    /// Seconds to wait after the following crashes, up to crash number `second_until`.
    pub second: f64,
    /// The last crash number (in a row) that waits `second`.
    pub second_until: u64,
    /// Seconds to wait after later crashes.
    pub after: f64,
}

impl Default for McpConfig {
    fn default() -> Self {
        McpConfig {
            readiness_timeout: 10.0,
            first_readiness_timeout: 60.0,
            drain_grace: 10.0,
            request_deadline: 30.0,
            answer_timeout: 600.0,
            buffer_max_messages: 1000,
            buffer_max_bytes: 64 * 1024 * 1024,
            max_line_bytes: 16 * 1024 * 1024,
            stop_close_grace: 2.0,
            stop_term_grace: 3.0,
            restart_interval: 1.0,
            crash_backoff: McpBackoffConfig::default(),
            max_crashes: 5,
            crash_window: 60.0,
            stable_after: 60.0,
        }
    }
}

impl Default for McpBackoffConfig {
    /// 1 s for the first 3 crashes in a row, 5 s up to the 10th, 10 s after (issue 6).
    fn default() -> Self {
        McpBackoffConfig {
            first: 1.0,
            first_count: 3,
            second: 5.0,
            second_until: 10,
            after: 10.0,
        }
    }
}

/// Where run output goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum OutputMode {
    /// The terminal only.
    #[default]
    Terminal,
    /// `.debussy/logs/` only.
    File,
    /// Both.
    Both,
}

/// Default of `agent.stderr_tail_lines`.
pub const DEFAULT_STDERR_TAIL_LINES: usize = 20;

/// The tools the agent may use without asking under `agent.permissions: accept-edits`.
#[must_use]
pub fn default_allowed_tools() -> Vec<String> {
    [
        "Bash",
        "Read",
        "Edit",
        "MultiEdit",
        "Write",
        "NotebookEdit",
        "Glob",
        "Grep",
        "TodoWrite",
        "Task",
    ]
    .into_iter()
    .map(str::to_owned)
    .collect()
}

/// The `agent` section: the default kind and the settings every kind shares.
///
/// `permissions`, `command`, `args`, `env` and `model_context_window` are the old
/// spelling of the default kind's profile (`agents.<kind>`). Loading folds each into the
/// profile of the kind that `agent.kind` named where it was set, then sets them back to
/// the default kind's profile, so they show what the run uses; code reads
/// [`Config::agents`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AgentConfig {
    /// Which backend.
    pub kind: AgentKind,
    /// What the agent may do without asking.
    pub permissions: AgentPermissions,
    /// Tools allowed without asking under `accept-edits` (Claude Code's `--allowedTools`
    /// rules, e.g. `Bash(npm test:*)`).
    pub allowed_tools: Vec<String>,
    /// Program to run; `None` means the backend's default (`claude`, or debussy itself for `sim`).
    pub command: Option<String>,
    /// Extra arguments appended to the backend's own.
    pub args: Vec<String>,
    /// Extra environment variables for the agent process.
    #[serde(deserialize_with = "section")]
    pub env: BTreeMap<String, String>,
    /// Context window in tokens, overriding what the agent reports and the model-name guess.
    pub model_context_window: Option<u64>,
    /// Seconds between the steps of the stop ladder (SIGINT, SIGTERM, SIGKILL).
    pub stop_grace: f64,
    /// Seconds a context stop decided while a tool call runs waits for the call's result
    /// before interrupting it; 0 stops at once.
    pub tool_grace: Seconds,
    /// Seconds the agent may go on retrying an API it cannot reach before its session is
    /// stopped and the run waits for the network.
    pub offline_grace: Seconds,
    /// The agent's last stderr lines kept in memory for error messages (all of them go
    /// to the session's `.stderr.log`).
    pub stderr_tail_lines: usize,
    /// Multiplier applied to tiktoken's count when estimating tool results not yet in usage.
    pub token_estimate_factor: f64,
    /// Scenario file for the `sim` backend; default `sim-scenario.yaml` beside the master plan.
    pub scenario: Option<PathBuf>,
    /// Prices that override the built-in table, by model-name fragment: four numbers,
    /// dollars per million tokens, `input output cache_write cache_read`.
    #[serde(deserialize_with = "section")]
    pub prices: BTreeMap<String, String>,
}

/// The `notifications` section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct NotificationsConfig {
    /// Send notifications at all.
    pub enabled: bool,
    /// Where to send them.
    pub provider: NotificationProvider,
    /// Settings for the ntfy provider.
    #[serde(deserialize_with = "section")]
    pub ntfy: NtfyConfig,
}

/// Notification providers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum NotificationProvider {
    /// No notifications.
    #[default]
    None,
    /// The desktop's notification daemon.
    Desktop,
    /// An ntfy server (HTTP POST).
    Ntfy,
}

/// The `notifications.ntfy` section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct NtfyConfig {
    /// Server base URL.
    pub server: String,
    /// Topic to publish to.
    pub topic: Option<String>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            model: "opus".to_owned(),
            timeout: Seconds(1800),
            max_retries: 2,
            context_threshold: crate::config::ContextLimit::At(80.0),
            tool_call_threshold: 100,
            max_restarts: 3,
            max_cost_usd: None,
            max_phase_cost_usd: None,
            max_duration: None,
            no_progress_restarts: 2,
            handoff: HandoffMode::Agent,
            handoff_timeout: Seconds(120),
            restart_delay: Seconds(2),
            auto_commit: true,
            commit_on_failure: false,
            commit_message_template: "debussy: phase {phase_id} - {phase_name} {status}".to_owned(),
            jobs: Jobs::InPlace,
            merge_message_template: "debussy: merge phase {phase_id} - {phase_name}".to_owned(),
            interactive: true,
            output: OutputMode::Terminal,
            gate_timeout: Seconds(600),
            restart_in_fix_sessions: false,
            agent: AgentConfig::default(),
            agents: AgentProfiles::default(),
            gates: default_gates(),
            notifications: NotificationsConfig::default(),
            mcp: McpConfig::default(),
            git: GitConfig::default(),
            limits: LimitsConfig::default(),
        }
    }
}

impl Default for AgentConfig {
    fn default() -> Self {
        AgentConfig {
            kind: AgentKind::Claude,
            permissions: AgentPermissions::default(),
            allowed_tools: default_allowed_tools(),
            command: None,
            args: Vec::new(),
            env: BTreeMap::new(),
            model_context_window: None,
            stop_grace: 2.0,
            tool_grace: Seconds(60),
            offline_grace: Seconds(60),
            stderr_tail_lines: DEFAULT_STDERR_TAIL_LINES,
            token_estimate_factor: 1.0,
            scenario: None,
            prices: BTreeMap::new(),
        }
    }
}

impl Default for NotificationsConfig {
    fn default() -> Self {
        NotificationsConfig {
            enabled: false,
            provider: NotificationProvider::None,
            ntfy: NtfyConfig::default(),
        }
    }
}

impl Default for NtfyConfig {
    fn default() -> Self {
        NtfyConfig {
            server: "https://ntfy.sh".to_owned(),
            topic: None,
        }
    }
}

/// Like [`section`](super::section::section), for `gates`: `null` means the default gate commands.
fn gates_section<'de, D>(deserializer: D) -> Result<BTreeMap<String, String>, D::Error>
where
    D: Deserializer<'de>,
{
    Ok(Option::deserialize(deserializer)?.unwrap_or_else(default_gates))
}
