//! Locating and running the real Claude Code CLI against a [`ModelServer`].
//!
//! - [`require`] finds the pinned `claude` (installed by `scripts/test-tools` into
//!   `.tools/npm`, or named by `DEBUSSY_TEST_CLAUDE`); a test that needs it is
//!   `#[ignore]`d (run with `--run-ignored all`) and fails when it is missing.
//! - [`Sandbox`] is a temp dir with an isolated HOME / `CLAUDE_CONFIG_DIR` / TMPDIR
//!   and a working directory, plus the environment that keeps Claude Code offline
//!   and pointed at the scripted server.
//! - [`ClaudeRun`] (in `run.rs`) is one running `claude -p` child: prompt on stdin, stdout read line
//!   by line with timeouts, its whole process group killed on drop.
//! - [`Transcript`] is what a finished run printed, with accessors for the
//!   stream-json lines tests assert on.

mod run;
mod sandbox;

use std::time::Duration;

pub use run::{ClaudeRun, Transcript, run};
pub use sandbox::{Harness, Login, Sandbox};

use super::cli::{Pinned, PinnedCli};

/// Environment variable naming the `claude` executable to test against.
pub const CLAUDE_OVERRIDE_ENV: &str = "DEBUSSY_TEST_CLAUDE";

/// Where `scripts/test-tools` installs the CLI, relative to the crate root.
pub const CLAUDE_INSTALL_PATH: &str = ".tools/npm/node_modules/.bin/claude";

/// The model the tests ask for; any name works, the server answers every model.
pub const DEFAULT_MODEL: &str = "claude-sonnet-4-5";

/// Tools allowed without a prompt. As root Claude Code refuses
/// `--dangerously-skip-permissions`, so the tests run with
/// `--permission-mode acceptEdits` and allow these explicitly.
pub const DEFAULT_ALLOWED_TOOLS: &[&str] = &[
    "Bash",
    "Read",
    "Write",
    "Edit",
    "Glob",
    "Grep",
    "Agent",
    "Task",
    "TodoWrite",
];

/// How long a run may take unless a test says otherwise; a real session against the
/// scripted server takes about a second.
pub const RUN_TIMEOUT: Duration = Duration::from_mins(1);

/// A located, working `claude` executable.
pub type ClaudeCli = PinnedCli;

/// The Claude Code CLI as `scripts/test-tools` pins it.
pub static PINNED: Pinned = Pinned::new(
    "the Claude Code CLI",
    CLAUDE_OVERRIDE_ENV,
    CLAUDE_INSTALL_PATH,
);

/// The CLI for a test that needs it; see [`super::cli::require`] for what happens when
/// it is missing.
pub fn require() -> ClaudeCli {
    PINNED.require()
}
