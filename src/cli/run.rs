//! `debussy run`: the plan and what it may change for this run.

use std::path::PathBuf;

use clap::Args;

use super::{ReportFormat, RunOverrides};

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
