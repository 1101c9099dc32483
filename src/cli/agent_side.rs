//! The commands the agent itself runs inside a session (`hook`, `done`, `progress`), and the sim agent's own.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

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
