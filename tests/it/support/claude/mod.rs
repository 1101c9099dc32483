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

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::OnceLock;
use std::time::Duration;

pub use run::{ClaudeRun, Transcript, run};
pub use sandbox::{Harness, Login, Sandbox};

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
#[derive(Clone, Debug)]
pub struct ClaudeCli {
    path: PathBuf,
    version: String,
}

impl ClaudeCli {
    /// The executable.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// What `claude --version` printed, e.g. `2.1.330 (Claude Code)`.
    pub fn version(&self) -> &str {
        &self.version
    }
}

/// Where to look for `claude`: the override when set and non-empty, else the
/// project-local install under `manifest_dir`.
pub fn candidate_path(override_path: Option<OsString>, manifest_dir: &Path) -> PathBuf {
    match override_path {
        Some(path) if !path.is_empty() => PathBuf::from(path),
        _ => manifest_dir.join(CLAUDE_INSTALL_PATH),
    }
}

/// Checks that `path` is a `claude` that runs, returning its version.
pub fn probe(path: &Path) -> Result<ClaudeCli, String> {
    if !path.is_file() {
        return Err(format!(
            "the Claude Code CLI is not installed at {} (run scripts/test-tools, or set {CLAUDE_OVERRIDE_ENV})",
            path.display()
        ));
    }
    let output = std::process::Command::new(path)
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .map_err(|error| format!("cannot run {} --version: {error}", path.display()))?;
    if !output.status.success() {
        return Err(format!(
            "{} --version failed ({}): {}",
            path.display(),
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    Ok(ClaudeCli {
        path: path.to_owned(),
        version: String::from_utf8_lossy(&output.stdout).trim().to_owned(),
    })
}

/// Finds the CLI (once per test process).
pub fn locate() -> Result<ClaudeCli, String> {
    static FOUND: OnceLock<Result<ClaudeCli, String>> = OnceLock::new();
    FOUND
        .get_or_init(|| {
            probe(&candidate_path(
                std::env::var_os(CLAUDE_OVERRIDE_ENV),
                Path::new(env!("CARGO_MANIFEST_DIR")),
            ))
        })
        .clone()
}

/// The CLI for a test that needs it; a missing CLI fails the test. Such a test is
/// `#[ignore]`d, so it runs only when asked for (`--run-ignored all`, as
/// `scripts/check` does).
pub fn require() -> ClaudeCli {
    match locate() {
        Ok(claude) => claude,
        Err(reason) => super::cli::missing("the real Claude Code CLI", &reason),
    }
}
