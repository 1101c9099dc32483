//! The commands that read a run or the project without changing it: `status`, `show`, `audit`, `history`, `replay`, `config`, `doctor`.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use super::RunOverrides;

/// Output format of reporting commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum ReportFormat {
    /// Human-readable text.
    #[default]
    Text,
    /// Machine-readable JSON.
    Json,
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

/// `debussy history`.
#[derive(Debug, Args)]
pub struct HistoryArgs {
    /// How many runs to list, newest first.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..))]
    pub limit: u32,

    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: ReportFormat,
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
