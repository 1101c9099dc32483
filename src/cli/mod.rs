//! Command-line types, clap derive only.
//!
//! Nothing here does work: `commands/` turns these into effects. The flags that set
//! configuration keys are not declared here but built from the configuration's key table
//! ([`RunOverrides`]), and only the ones the user actually typed override the
//! configuration files (see [`crate::config`]).

use std::path::PathBuf;

pub use crate::logging::ColorChoice;

use clap::{Args, Parser, Subcommand};

mod agent_side;
#[cfg(test)]
pub(crate) mod docs_tests;
mod inspect;
mod mcp;
mod overrides;
mod run;
mod setup;

pub use agent_side::{DoneArgs, DoneStatus, HookArgs, HookEvent, ProgressArgs, SimAgentArgs};
pub use inspect::{
    AuditArgs, ConfigArgs, ConfigFormat, DoctorArgs, HistoryArgs, ReplayArgs, ReportFormat,
    ShowArgs, StatusArgs,
};
pub use mcp::{BridgeArgs, McpCommand, SuperviseArgs};
pub use overrides::RunOverrides;
pub use run::RunArgs;
pub use setup::{CleanArgs, CompletionsArgs, InitArgs};

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

#[cfg(test)]
mod tests;
