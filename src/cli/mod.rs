//! Command-line types, clap derive only.
//!
//! Nothing here does work: `commands/` turns these into effects. The flags that set
//! configuration keys are not declared here but built from the configuration's key table
//! ([`RunOverrides`]), and only the ones the user actually typed override the
//! configuration files (see [`crate::config`]).

use std::path::PathBuf;

pub use crate::logging::ColorChoice;

use clap::{Args, Parser, Subcommand, ValueEnum};

#[cfg(test)]
pub(crate) mod docs_tests;
mod overrides;

pub use overrides::RunOverrides;

/// debussy: run multi-phase coding-agent plans with smart context restarts, and keep MCP
/// servers restartable without breaking the client's session.
#[derive(Debug, Parser)]
#[command(name = "debussy", version, about, long_about = None, propagate_version = true)]
pub struct Cli {
    /// Options shared by every subcommand.
    #[command(flatten)]
    pub global: GlobalArgs,

    /// The subcommand to run.
    #[command(subcommand)]
    pub command: Command,
}

/// Options accepted by every subcommand.
#[derive(Debug, Args)]
pub struct GlobalArgs {
    /// Read configuration from FILE instead of the project's `.debussy/config.yaml`.
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// More log output on stderr (repeat for more: -v debug, -vv trace).
    #[arg(short, long, global = true, action = clap::ArgAction::Count, conflicts_with = "quiet")]
    pub verbose: u8,

    /// Less log output on stderr (-q warnings only, -qq errors only).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub quiet: u8,

    /// When to use colour in output.
    #[arg(long, global = true, value_enum, default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,
}

impl GlobalArgs {
    /// What the logging options ask of [`crate::logging::init`].
    #[must_use]
    pub fn log_settings(&self) -> crate::logging::LogSettings {
        crate::logging::LogSettings {
            verbose: self.verbose,
            quiet: self.quiet,
            color: self.color,
        }
    }
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Execute a plan, one agent session per phase attempt, restarting before the context fills.
    Run(RunArgs),
    /// Check a plan for structural problems without running anything.
    Audit(AuditArgs),
    /// Show the state of the latest run (or one run).
    Status(StatusArgs),
    /// List past runs.
    History(HistoryArgs),
    /// Remove the git worktrees and branches that phases run side by side left behind.
    Clean(CleanArgs),
    /// Write a commented config, an example plan and agent command files into a project.
    Init(InitArgs),
    /// Report that a phase is finished (called by the agent).
    Done(DoneArgs),
    /// Log a progress step for a phase (called by the agent).
    Progress(ProgressArgs),
    /// Feed a saved session transcript through the context meter.
    Replay(ReplayArgs),
    /// Print the effective configuration and where each value came from.
    Config(ConfigArgs),
    /// Print shell completions.
    Completions(CompletionsArgs),
    /// Check that the project is ready to run: config, agent, scenario, git, plan.
    Doctor(DoctorArgs),
    /// Show what happened in one attempt at a phase: prompt, checkpoint, transcript, gates, commits.
    Show(ShowArgs),
    /// MCP server tools.
    #[command(subcommand)]
    Mcp(McpCommand),
    /// Play a simulated agent scenario (used by the `sim` agent backend).
    #[command(name = "__sim-agent", hide = true)]
    SimAgent(SimAgentArgs),
    /// A hook debussy gives the agent (Claude Code runs it).
    #[command(name = "__hook", hide = true)]
    Hook(HookArgs),
}

/// `debussy __hook EVENT`.
#[derive(Debug, Args)]
pub struct HookArgs {
    /// The hook event being handled.
    #[arg(value_enum)]
    pub event: HookEvent,
}

/// The agent hook events debussy handles.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum HookEvent {
    /// Claude Code is about to compact the context: block it when a session listens.
    PreCompact,
    /// A tool call returned: end the session now when debussy has decided to stop it.
    PostToolUse,
}

/// Output format of reporting commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum ReportFormat {
    /// Human-readable text.
    #[default]
    Text,
    /// Machine-readable JSON.
    Json,
}

/// `debussy run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The master plan (e.g. `plans/feature/MASTER_PLAN.md`).
    pub plan: PathBuf,

    /// Parse and audit the plan and print the execution order, without running anything.
    #[arg(long)]
    pub dry_run: bool,

    /// Skip phases already completed by an earlier run of this plan, continuing a paused run.
    #[arg(long, conflicts_with = "restart")]
    pub resume: bool,

    /// Ignore the history of earlier runs of this plan.
    #[arg(long)]
    pub restart: bool,

    /// Start at this phase id (earlier phases are taken as done).
    #[arg(long, value_name = "ID")]
    pub phase: Option<String>,

    /// Do not audit the plan before running it.
    #[arg(long)]
    pub skip_audit: bool,

    /// Run even when the working tree has uncommitted changes to tracked files.
    #[arg(long)]
    pub allow_dirty: bool,

    /// How run progress is printed: `text` (the dashboard in a terminal, plain lines
    /// otherwise) or `json` (one event per line, in place of the dashboard too).
    #[arg(long, value_enum)]
    pub output_format: Option<ReportFormat>,

    /// Configuration overrides for this run.
    #[command(flatten)]
    pub overrides: RunOverrides,
}

/// `debussy audit`.
#[derive(Debug, Args)]
pub struct AuditArgs {
    /// The master plan to check.
    pub plan: PathBuf,

    /// Fail on warnings too.
    #[arg(long)]
    pub strict: bool,

    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: ReportFormat,
}

/// `debussy status`.
#[derive(Debug, Args)]
pub struct StatusArgs {
    /// Show this run instead of the latest one.
    #[arg(long, value_name = "ID")]
    pub run: Option<String>,

    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: ReportFormat,
}

/// `debussy clean`.
#[derive(Debug, Args)]
pub struct CleanArgs {
    /// List what would be removed, and what is kept and why, without removing anything.
    #[arg(long)]
    pub dry_run: bool,

    /// Also remove worktrees with uncommitted changes, unmerged branches and those of
    /// paused runs (their work is lost).
    #[arg(long)]
    pub force: bool,
}

/// `debussy history`.
#[derive(Debug, Args)]
pub struct HistoryArgs {
    /// How many runs to list, newest first.
    #[arg(long, default_value_t = 20)]
    pub limit: u32,

    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: ReportFormat,
}

/// `debussy init`.
#[derive(Debug, Args)]
pub struct InitArgs {
    /// Project directory (default: the current directory).
    pub dir: Option<PathBuf>,

    /// Overwrite files that already exist.
    #[arg(long)]
    pub force: bool,
}

/// How a phase ended, as the agent reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DoneStatus {
    /// The phase's work is finished.
    Completed,
    /// The phase cannot continue without a human.
    Blocked,
    /// The phase failed.
    Failed,
}

/// `debussy done`.
#[derive(Debug, Args)]
pub struct DoneArgs {
    /// Phase id (or use `--phase`).
    #[arg(value_name = "PHASE", conflicts_with = "phase")]
    pub phase_pos: Option<String>,

    /// Status (or use `--status`).
    #[arg(value_name = "STATUS", value_enum, conflicts_with = "status")]
    pub status_pos: Option<DoneStatus>,

    /// Phase id.
    #[arg(long, value_name = "ID")]
    pub phase: Option<String>,

    /// How the phase ended.
    #[arg(long, value_enum)]
    pub status: Option<DoneStatus>,

    /// Why (required for blocked and failed to be useful to a human).
    #[arg(long, value_name = "TEXT")]
    pub reason: Option<String>,
}

/// `debussy progress`.
#[derive(Debug, Args)]
pub struct ProgressArgs {
    /// Phase id (default: `DEBUSSY_PHASE_ID`, which debussy sets for its agent).
    #[arg(long, value_name = "ID")]
    pub phase: Option<String>,

    /// What was done, in words.
    #[arg(required = true, num_args = 1.., value_name = "STEP")]
    pub step: Vec<String>,
}

/// `debussy replay`.
#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// A saved stream-json transcript (`.jsonl`).
    pub file: PathBuf,

    /// Percent of the window at which a stop would fire (default: the configured threshold).
    #[arg(long, value_name = "PERCENT")]
    pub context_threshold: Option<f64>,

    /// Context window in tokens (default: reported by the transcript, else by model name).
    #[arg(long, value_name = "TOKENS")]
    pub window: Option<u64>,

    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: ReportFormat,
}

/// Format of `debussy config` output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum ConfigFormat {
    /// YAML with the source of each value as a comment.
    #[default]
    Yaml,
    /// JSON: `{config, sources}`.
    Json,
}

/// `debussy config`.
#[derive(Debug, Args)]
pub struct ConfigArgs {
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: ConfigFormat,

    /// The `run` overrides, to preview the configuration a run with them would use.
    #[command(flatten)]
    pub overrides: RunOverrides,
}

/// `debussy show`.
#[derive(Debug, Args)]
pub struct ShowArgs {
    /// The run: an id or a unique prefix of one, or `latest` (the default).
    pub run: Option<String>,

    /// The phase id (default: the last phase the run worked on).
    pub phase: Option<String>,

    /// The attempt number (default: the phase's last attempt).
    #[arg(long, value_name = "N")]
    pub attempt: Option<u32>,

    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: ReportFormat,
}

/// `debussy doctor`.
#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Also audit this master plan (and find the sim scenario beside it).
    pub plan: Option<PathBuf>,

    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: ReportFormat,

    /// The `run` overrides, to check what a run with them would use.
    #[command(flatten)]
    pub overrides: RunOverrides,
}

/// `debussy completions`.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to generate completions for.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// `debussy mcp …`.
#[derive(Debug, Subcommand)]
pub enum McpCommand {
    /// Run a stdio MCP server behind a proxy that survives its restarts.
    Supervise(SuperviseArgs),
    /// Connect a stdio MCP client to a persistent streamable-HTTP MCP daemon, starting
    /// and restarting the daemon as needed.
    Bridge(BridgeArgs),
}

/// `debussy mcp bridge`.
#[derive(Debug, Args)]
pub struct BridgeArgs {
    /// The port the daemon listens on.
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..))]
    pub port: u16,

    /// The daemon's host.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,

    /// The path of the daemon's MCP endpoint.
    #[arg(long, default_value = "/mcp")]
    pub path: String,

    /// A path that answers 2xx once the daemon is ready (default: a successful `initialize`).
    #[arg(long, value_name = "PATH")]
    pub health: Option<String>,

    /// A path that shuts the daemon down when POSTed to, tried before SIGTERM on a restart.
    #[arg(long, value_name = "PATH")]
    pub shutdown_path: Option<String>,

    /// How long a newly started daemon has to become ready, e.g. 6s or 500ms.
    #[arg(long, value_name = "DURATION", default_value = "6s", value_parser = parse_timeout)]
    pub ready_timeout: std::time::Duration,

    /// Where the daemon's record, log and lock, the audit log and the marker are kept
    /// (default `.debussy/mcp/<name>/`). Bridges sharing a daemon must share it.
    #[arg(long, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,

    /// Name used in logs and for the default state directory (default: the program's
    /// name and the port).
    #[arg(long)]
    pub name: Option<String>,

    /// Stop the daemon when the bridge ends, if this bridge started it.
    #[arg(long)]
    pub stop_daemon_on_exit: bool,

    /// Do not add the `restart_server`, `verify_server_restarted` and `server_status` tools.
    #[arg(long)]
    pub no_inject_tools: bool,

    /// The daemon command and its arguments.
    #[arg(last = true, required = true, num_args = 1.., value_name = "DAEMON_CMD")]
    pub command: Vec<String>,
}

fn parse_timeout(text: &str) -> Result<std::time::Duration, String> {
    crate::config::RunDuration::parse(text).map(crate::config::RunDuration::get)
}

/// `debussy mcp supervise`.
#[derive(Debug, Args)]
pub struct SuperviseArgs {
    /// Name used in logs and for the default state directory.
    #[arg(long)]
    pub name: Option<String>,

    /// Restart the server when files under PATH change (repeatable).
    #[arg(long, value_name = "PATH")]
    pub watch: Vec<PathBuf>,

    /// Command run (with `sh -c`) after a change and before the restart; a failure keeps the old server.
    #[arg(long, value_name = "CMD")]
    pub build: Option<String>,

    /// Milliseconds of quiet before a burst of file changes triggers a restart.
    #[arg(long, value_name = "MS", default_value_t = 300)]
    pub debounce: u64,

    /// Where the audit log and restart marker are written (default `.debussy/mcp/<name>/`).
    #[arg(long, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,

    /// Do not add the `restart_server`, `verify_server_restarted` and `server_status` tools.
    #[arg(long)]
    pub no_inject_tools: bool,

    /// The server command and its arguments.
    #[arg(last = true, required = true, num_args = 1.., value_name = "CMD")]
    pub command: Vec<String>,
}

/// `debussy __sim-agent`.
#[derive(Debug, Args)]
pub struct SimAgentArgs {
    /// The scenario file to play.
    pub scenario: PathBuf,

    /// Model name to report in the stream.
    #[arg(long, default_value = "sim")]
    pub model: String,

    /// Continue the stopped session with this id: play its script's `handoff` turns.
    #[arg(long, value_name = "SESSION_ID")]
    pub resume: Option<String>,
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn untyped_flags_stay_none() {
        let cli = Cli::try_parse_from(["debussy", "run", "PLAN.md"]).expect("parses");
        let Command::Run(run) = cli.command else {
            panic!("not run")
        };
        assert!(!run.overrides.values.contains_key("model"));
        assert!(!run.overrides.values.contains_key("context_threshold"));
        assert!(!run.overrides.values.contains_key("auto_commit"));
    }

    #[test]
    fn done_accepts_positional_and_flag_forms() {
        let cli = Cli::try_parse_from(["debussy", "done", "2", "blocked"]).expect("parses");
        let Command::Done(d) = cli.command else {
            panic!("not done")
        };
        assert_eq!(d.phase_pos.as_deref(), Some("2"));
        assert_eq!(d.status_pos, Some(DoneStatus::Blocked));
        let cli = Cli::try_parse_from(["debussy", "done", "--phase", "2", "--status", "failed"])
            .expect("parses");
        let Command::Done(d) = cli.command else {
            panic!("not done")
        };
        assert_eq!(d.phase.as_deref(), Some("2"));
    }

    #[test]
    fn supervise_takes_the_command_after_dashes() {
        let cli = Cli::try_parse_from([
            "debussy",
            "mcp",
            "supervise",
            "--watch",
            "src",
            "--",
            "node",
            "server.js",
            "--port",
        ])
        .expect("parses");
        let Command::Mcp(McpCommand::Supervise(s)) = cli.command else {
            panic!("not supervise")
        };
        assert_eq!(s.command, ["node", "server.js", "--port"]);
        assert_eq!(s.watch, [PathBuf::from("src")]);
    }
}
