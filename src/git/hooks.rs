//! The repository's own commit hooks, run around debussy's commits the way `git commit`
//! runs them: `pre-commit` (after staging; it may re-stage files), `commit-msg` (with the
//! message in `.git/COMMIT_EDITMSG`, which it may edit), then `post-commit` (its result is
//! ignored, as git ignores it). libgit2 runs no hooks, so without this a project's checks
//! were skipped silently.
//!
//! Hooks live in `core.hooksPath` (relative to the work tree) when it is set, else in
//! `.git/hooks`; a hook that is missing or not executable is skipped, as git skips it.
//! They run with the work tree as their directory and `GIT_INDEX_FILE` naming the index,
//! through the process layer: in a process group of their own, killed with it if debussy
//! dies, and stopped past `git.timeout` ([`HookPolicy`]).

use std::ffi::OsStr;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::process::{Finish, ProcessCommand, Role, Signal, StopAction, StopLadder, StopStep};

/// The most output of a failing hook quoted in the error.
const OUTPUT_TAIL_BYTES: usize = 4_000;

/// How long a hook stopped past its time limit gets after SIGTERM before SIGKILL.
const TERM_GRACE: Duration = Duration::from_secs(2);

/// Whether debussy's commits run the repository's hooks, and for how long each may run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookPolicy {
    /// Commit without running hooks (`git.run_hooks: false`).
    Skip,
    /// Run them as `git commit` does, stopping one that runs past `timeout`.
    Run {
        /// The longest one hook may run (`git.timeout`).
        timeout: Duration,
    },
}

/// A hook that refused the commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookFailure {
    /// The hook's name, e.g. `pre-commit`.
    pub hook: String,
    /// How it ended, e.g. `exit code 1`.
    pub status: String,
    /// The end of what it printed (stdout and stderr together).
    pub output: String,
}

/// Where a repository's hooks are and how to run them.
#[derive(Debug, Clone)]
pub(crate) struct Hooks {
    dir: PathBuf,
    workdir: PathBuf,
    index: PathBuf,
    timeout: Duration,
}

impl Hooks {
    /// The hooks of `repo`, whose work tree is `workdir`, each allowed `timeout`.
    pub(crate) fn of(repo: &git2::Repository, workdir: &Path, timeout: Duration) -> Hooks {
        let configured = repo
            .config()
            .ok()
            .and_then(|config| config.get_path("core.hooksPath").ok());
        let dir = match configured {
            Some(path) if path.is_absolute() => path,
            Some(path) => workdir.join(path),
            // A linked worktree's hooks are the main repository's (`repo.path()` is
            // the worktree's own `.git/worktrees/<name>`).
            None => repo.commondir().join("hooks"),
        };
        Hooks {
            dir,
            workdir: workdir.to_path_buf(),
            index: repo.path().join("index"),
            timeout,
        }
    }

    /// Run the hook `name` with `args`, if it exists and is executable.
    ///
    /// # Errors
    /// A [`HookFailure`] when it exits non-zero or cannot be started.
    pub(crate) fn run(&self, name: &str, args: &[&OsStr]) -> Result<(), HookFailure> {
        let path = self.dir.join(name);
        let executable = std::fs::metadata(&path)
            .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0);
        if !executable {
            return Ok(());
        }
        let output = ProcessCommand::new(&path)
            .args(args)
            .current_dir(&self.workdir)
            .env("GIT_INDEX_FILE", &self.index)
            .role(Role::Hook(name.to_owned()))
            .stop_ladder(StopLadder::new([StopStep::new(
                StopAction::Signal(Signal::SIGTERM),
                TERM_GRACE,
            )]))
            .output_blocking(self.timeout)
            .map_err(|err| HookFailure {
                hook: name.to_owned(),
                status: format!("could not be started ({err})"),
                output: String::new(),
            })?;
        if output.is_success() {
            return Ok(());
        }
        let mut text = output.stdout;
        if !text.is_empty() && !output.stderr.is_empty() {
            text.push('\n');
        }
        text.push_str(&output.stderr);
        let text = text.trim();
        let mut start = text.len().saturating_sub(OUTPUT_TAIL_BYTES);
        while !text.is_char_boundary(start) {
            start += 1;
        }
        Err(HookFailure {
            hook: name.to_owned(),
            status: match output.finish {
                Finish::TimedOut(limit) => format!(
                    "did not finish within git.timeout ({}s) and was stopped",
                    limit.as_secs()
                ),
                Finish::Exited(status) => match status.code() {
                    Some(code) => format!("exit code {code}"),
                    None => "killed by a signal".to_owned(),
                },
            },
            output: text[start..].to_owned(),
        })
    }
}
