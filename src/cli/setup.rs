//! The commands that set a project up or tidy it: `init`, `clean`, `completions`.

use std::path::PathBuf;

use clap::Args;

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

/// `debussy init`.
#[derive(Debug, Args)]
pub struct InitArgs {
    /// Project directory (default: the current directory).
    pub dir: Option<PathBuf>,

    /// Overwrite files that already exist.
    #[arg(long)]
    pub force: bool,
}

/// `debussy completions`.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to generate completions for.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}
