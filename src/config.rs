//! Layered YAML configuration: defaults < user file < project file < environment < flags.
//!
//! This module owns the configuration's shape, its defaults and how the layers merge.
//! It reads files and the environment it is given; it never touches plans or processes.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The effective configuration of one debussy invocation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// Model name passed to the agent.
    pub model: String,
    /// Seconds before one agent session is stopped as timed out.
    pub timeout: u64,
    /// Extra attempts per phase after the first.
    pub max_retries: u32,
    /// Percent of the context window at which a session is stopped (0 < x ≤ 100; 100 disables).
    pub context_threshold: f64,
    /// Main-thread tool calls after which a session is stopped for a restart.
    pub tool_call_threshold: u32,
    /// Context restarts allowed per attempt (0 disables restarts).
    pub max_restarts: u32,
    /// Seconds between a context stop and the next session.
    pub restart_delay: u64,
    /// Commit the agent's work after each phase and at each checkpoint.
    pub auto_commit: bool,
    /// Also commit the work of failed phases.
    pub commit_on_failure: bool,
    /// Commit message template; `{phase_id}`, `{phase_name}`, `{status}` are replaced.
    pub commit_message_template: String,
    /// Show the terminal dashboard when stdout is a terminal.
    pub interactive: bool,
    /// Where run output goes.
    pub output: OutputMode,
    /// Seconds before one gate command is stopped as failed.
    pub gate_timeout: u64,
    /// The agent that runs sessions.
    pub agent: AgentConfig,
    /// Default command for each gate name, used when a gate names no command itself.
    pub gates: BTreeMap<String, String>,
    /// Where run notifications are sent.
    pub notifications: NotificationsConfig,
    /// Limits and restart policy of `debussy mcp supervise`.
    pub mcp: McpConfig,
}

/// The `mcp` section: timing, size limits and restart policy of `debussy mcp supervise`.
/// Durations are in seconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct McpConfig {
    /// Seconds a new server has to answer the replayed `initialize`.
    pub readiness_timeout: f64,
    /// Seconds requests in flight may take to finish before a planned restart stops the server.
    pub drain_grace: f64,
    /// Seconds a request may wait for a ready server before it is answered with an error.
    pub request_deadline: f64,
    /// Messages that may wait for a ready server.
    pub buffer_max_messages: usize,
    /// Bytes that may wait for a ready server.
    pub buffer_max_bytes: usize,
    /// Longest accepted JSON-RPC message, in bytes.
    pub max_line_bytes: usize,
    /// Seconds between closing a server's stdin and SIGTERM.
    pub stop_close_grace: f64,
    /// Seconds between SIGTERM and SIGKILL.
    pub stop_term_grace: f64,
    /// Exit-42 restarts happen at most once per this many seconds.
    pub restart_interval: f64,
    /// Delay after each crash of a streak: `{up_to: N, delay: SECS}` tiers.
    pub crash_backoff: Vec<McpBackoffTier>,
    /// Delay in seconds after crashes past the last tier.
    pub crash_backoff_after: f64,
    /// This many crashes within `crash_window` seconds make the supervisor degraded (0: never).
    pub max_crashes: u32,
    /// The window for `max_crashes`, in seconds.
    pub crash_window: f64,
    /// A server that ran this many seconds before crashing starts a new backoff streak.
    pub stable_after: f64,
}

/// One tier of the MCP crash backoff.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpBackoffTier {
    /// The last crash number (in a streak) this tier covers.
    pub up_to: u32,
    /// Seconds to wait before restarting.
    pub delay: f64,
}

impl Default for McpConfig {
    fn default() -> Self {
        McpConfig {
            readiness_timeout: 10.0,
            drain_grace: 10.0,
            request_deadline: 30.0,
            buffer_max_messages: 1000,
            buffer_max_bytes: 64 * 1024 * 1024,
            max_line_bytes: 16 * 1024 * 1024,
            stop_close_grace: 2.0,
            stop_term_grace: 3.0,
            restart_interval: 1.0,
            crash_backoff: vec![
                McpBackoffTier {
                    up_to: 3,
                    delay: 1.0,
                },
                McpBackoffTier {
                    up_to: 10,
                    delay: 5.0,
                },
            ],
            crash_backoff_after: 10.0,
            max_crashes: 5,
            crash_window: 60.0,
            stable_after: 60.0,
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

/// Which agent backend runs sessions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum AgentKind {
    /// Claude Code in headless stream-json mode.
    #[default]
    Claude,
    /// The built-in simulated agent (offline demos and tests).
    Sim,
}

/// The `agent` section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AgentConfig {
    /// Which backend.
    pub kind: AgentKind,
    /// Program to run; `None` means the backend's default (`claude`, or debussy itself for `sim`).
    pub command: Option<String>,
    /// Extra arguments appended to the backend's own.
    pub args: Vec<String>,
    /// Extra environment variables for the agent process.
    pub env: BTreeMap<String, String>,
    /// Context window in tokens, overriding what the agent reports and the model-name guess.
    pub model_context_window: Option<u64>,
    /// Seconds between the steps of the stop ladder (SIGINT, SIGTERM, SIGKILL).
    pub stop_grace: f64,
    /// Multiplier applied to tiktoken's count when estimating tool results not yet in usage.
    pub token_estimate_factor: f64,
    /// Scenario file for the `sim` backend; default `sim-scenario.yaml` beside the master plan.
    pub scenario: Option<PathBuf>,
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
            timeout: 1800,
            max_retries: 2,
            context_threshold: 80.0,
            tool_call_threshold: 100,
            max_restarts: 3,
            restart_delay: 2,
            auto_commit: true,
            commit_on_failure: false,
            commit_message_template: "debussy: phase {phase_id} - {phase_name} {status}".to_owned(),
            interactive: true,
            output: OutputMode::Terminal,
            gate_timeout: 600,
            agent: AgentConfig::default(),
            gates: default_gates(),
            notifications: NotificationsConfig::default(),
            mcp: McpConfig::default(),
        }
    }
}

impl Default for AgentConfig {
    fn default() -> Self {
        AgentConfig {
            kind: AgentKind::Claude,
            command: None,
            args: Vec::new(),
            env: BTreeMap::new(),
            model_context_window: None,
            stop_grace: 2.0,
            token_estimate_factor: 1.0,
            scenario: None,
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

/// Gate commands for common tools, so plans can say `- pytest: all pass` without a command.
fn default_gates() -> BTreeMap<String, String> {
    [
        ("cargo-build", "cargo build --all-targets"),
        ("cargo-test", "cargo test --all"),
        ("cargo-clippy", "cargo clippy --all-targets -- -D warnings"),
        ("cargo-fmt", "cargo fmt --check"),
        ("clippy", "cargo clippy --all-targets -- -D warnings"),
        ("pytest", "pytest"),
        ("ruff", "ruff check ."),
        ("ruff-format", "ruff format --check ."),
        ("pyright", "pyright"),
        ("mypy", "mypy ."),
        ("npm-test", "npm test"),
        ("npm-lint", "npm run lint"),
        ("npm-build", "npm run build"),
        ("pnpm-test", "pnpm test"),
        ("pnpm-lint", "pnpm lint"),
        ("pnpm-build", "pnpm build"),
        ("tsc", "npx tsc --noEmit"),
        ("eslint", "npx eslint ."),
    ]
    .into_iter()
    .map(|(name, command)| (name.to_owned(), command.to_owned()))
    .collect()
}

/// Where a configuration value came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", content = "detail", rename_all = "snake_case")]
pub enum Source {
    /// The built-in default.
    Default,
    /// The user file (`$XDG_CONFIG_HOME/debussy/config.yaml`).
    UserFile(PathBuf),
    /// The project file (`.debussy/config.yaml`) or the file given with `--config`.
    ProjectFile(PathBuf),
    /// A `DEBUSSY_*` environment variable.
    Env(String),
    /// A command-line flag.
    Flag(String),
}

/// A loaded configuration, with the origin of every leaf value.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// The merged configuration.
    pub config: Config,
    /// For each dotted key path (`agent.kind`), the layer that set it.
    pub sources: BTreeMap<String, Source>,
    /// The project root: the directory holding `.debussy/`, else the starting directory.
    pub project_root: PathBuf,
}

impl Loaded {
    /// The configuration with only built-in defaults, rooted at `project_root`.
    #[must_use]
    pub fn defaults(project_root: &Path) -> Self {
        Loaded {
            config: Config::default(),
            sources: BTreeMap::new(),
            project_root: project_root.to_path_buf(),
        }
    }
}
