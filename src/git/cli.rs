//! [`GitCli`]: the `git` program, for what libgit2 does not do the way git does (worktrees,
//! merges with their hooks and conflicts, checkouts).
//!
//! Every command runs through the process layer ([`crate::process`]): in a process group
//! of its own below a reaper, so a `git merge` and the hooks it starts die with debussy
//! (a merge orphaned by a SIGKILL must never finish later and leave `MERGE_HEAD` behind),
//! and under `git.timeout`, past which the group is stopped. The environment is made
//! predictable: no inherited `GIT_DIR`/`GIT_WORK_TREE`/`GIT_INDEX_FILE`, no prompt, no
//! editor, git's own (English) messages.

use std::path::Path;
use std::time::Duration;

use crate::process::{
    Finish, Output, ProcessCommand, ProcessError, Role, Signal, StopAction, StopLadder, StopStep,
};

/// How long a stopped git command gets after SIGTERM before SIGKILL.
const TERM_GRACE: Duration = Duration::from_secs(2);

/// A git command that failed, in git's words.
#[derive(Debug, Clone, thiserror::Error, miette::Diagnostic)]
#[error("`git {command}` failed: {message}")]
pub struct GitCommandError {
    /// The command, without `git`.
    pub command: String,
    /// What git printed (or why it could not run).
    pub message: String,
}

impl GitCommandError {
    /// Whether git said it ran out of room: the disk is full or the quota spent (its
    /// own words under `LC_ALL=C`; a checkout names only the file it could not write).
    #[must_use]
    pub fn is_out_of_space(&self) -> bool {
        says_out_of_space(&self.message) || self.message.contains("unable to write file ")
    }
}

/// Whether `text`, git's or libgit2's words for a failure, says the disk is full or
/// the quota spent.
pub(crate) fn says_out_of_space(text: &str) -> bool {
    [
        "No space left on device",
        "Disk quota exceeded",
        "Out of diskspace",
    ]
    .iter()
    .any(|said| text.contains(said))
}

/// The git program, run with a time limit per command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GitCli {
    timeout: Duration,
}

impl GitCli {
    /// Run git commands that may each take up to `timeout` (`git.timeout`).
    #[must_use]
    pub const fn new(timeout: Duration) -> GitCli {
        GitCli { timeout }
    }

    /// The time limit of one command.
    #[must_use]
    pub const fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Run `git args…` in `dir`; its stdout (trimmed), or git's error.
    ///
    /// # Errors
    /// When git is missing, exits non-zero, or runs past the time limit.
    pub async fn run(&self, dir: &Path, args: &[&str]) -> Result<String, GitCommandError> {
        self.ask(dir, args).await?.into_stdout(args)
    }

    /// Whether `git args…` succeeds in `dir` (a question asked with an exit code).
    pub async fn succeeds(&self, dir: &Path, args: &[&str]) -> bool {
        self.run(dir, args).await.is_ok()
    }

    /// Ask `git args…` in `dir` a question it answers with exit code 0 (yes, with its
    /// stdout) or 1 (no), as `merge-base --is-ancestor` and `merge-tree` do: `Some`
    /// stdout for yes, `None` for no.
    ///
    /// # Errors
    /// When git is missing, fails in any other way, or runs past the time limit.
    pub async fn answer(
        &self,
        dir: &Path,
        args: &[&str],
    ) -> Result<Option<String>, GitCommandError> {
        match self.ask(dir, args).await {
            Ok(Answer::Yes(stdout)) => Ok(Some(stdout)),
            Ok(Answer::No(_)) => Ok(None),
            Err(err) => Err(err),
        }
    }

    /// [`run`](Self::run) for code that is not async: the libgit2 side, on a blocking
    /// thread.
    ///
    /// # Errors
    /// When git is missing, exits non-zero, or runs past the time limit.
    pub fn run_blocking(&self, dir: &Path, args: &[&str]) -> Result<String, GitCommandError> {
        let output = command(dir, args).output_blocking(self.timeout);
        answer_of(args, output)?.into_stdout(args)
    }

    /// Run `git args…`: its stdout on success, what it said on exit code 1, and an error
    /// for anything else.
    async fn ask(&self, dir: &Path, args: &[&str]) -> Result<Answer, GitCommandError> {
        answer_of(args, command(dir, args).output(self.timeout).await)
    }
}

/// How `git args…`, run to its end or not, answered.
fn answer_of(
    args: &[&str],
    output: Result<Output, ProcessError>,
) -> Result<Answer, GitCommandError> {
    let fail = |message: String| GitCommandError {
        command: args.join(" "),
        message,
    };
    let output = output.map_err(|err| {
        fail(match err {
            ProcessError::ProgramNotFound { .. } => {
                "git is not installed or not on PATH".to_owned()
            }
            other => format!("failed to {other}"),
        })
    })?;
    match output.finish {
        Finish::TimedOut(limit) => Err(fail(format!(
            "it did not finish within git.timeout ({}s) and was stopped",
            limit.as_secs()
        ))),
        Finish::Exited(status) if status.is_success() => {
            if output.truncated {
                return Err(fail(
                    "it printed more than debussy keeps of a git command's output".to_owned(),
                ));
            }
            Ok(Answer::Yes(output.stdout.trim().to_owned()))
        }
        Finish::Exited(status) => {
            let mut message = output.stderr.trim().to_owned();
            if message.is_empty() {
                message = output.stdout.trim().to_owned();
            }
            if message.is_empty() {
                message = format!("it ended with {status}");
            }
            if status.code() == Some(1) {
                Ok(Answer::No(message))
            } else {
                Err(fail(message))
            }
        }
    }
}

/// How a git command that ran to its end answered.
enum Answer {
    /// Exit code 0, with its stdout (trimmed).
    Yes(String),
    /// Exit code 1, with what it said.
    No(String),
}

impl Answer {
    /// Its stdout, or, for a "no", the error of `git args…`.
    fn into_stdout(self, args: &[&str]) -> Result<String, GitCommandError> {
        match self {
            Answer::Yes(stdout) => Ok(stdout),
            Answer::No(message) => Err(GitCommandError {
                command: args.join(" "),
                message,
            }),
        }
    }
}

/// `git args…` in `dir`, as every git command debussy runs is started.
fn command(dir: &Path, args: &[&str]) -> ProcessCommand {
    ProcessCommand::new("git")
        .args(args)
        .current_dir(dir)
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_EDITOR", "true")
        .env("LC_ALL", "C")
        .role(role(args))
        .stop_ladder(StopLadder::new([StopStep::new(
            StopAction::Signal(Signal::SIGTERM),
            TERM_GRACE,
        )]))
}

/// What `git args…` is to the user: the git commands that run the project's hooks
/// (`merge`, `commit`) by name, the rest as [`Role::Other`].
fn role(args: &[&str]) -> Role {
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        match *arg {
            "-c" | "-C" => {
                rest.next();
            }
            option if option.starts_with('-') => {}
            "merge" | "commit" if !args.iter().any(|a| ["--no-verify", "--abort"].contains(a)) => {
                return Role::Git((*arg).to_owned());
            }
            _ => return Role::Other,
        }
    }
    Role::Other
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_commands_that_run_hooks_are_named() {
        let merge = ["-c", "user.name=debussy", "merge", "--no-edit", "branch"];
        assert_eq!(role(&merge), Role::Git("merge".into()));
        assert_eq!(role(&["commit", "--no-edit"]), Role::Git("commit".into()));
        assert_eq!(role(&["commit", "--no-verify"]), Role::Other);
        assert_eq!(role(&["merge", "--abort"]), Role::Other);
        assert_eq!(role(&["rev-parse", "HEAD"]), Role::Other);
    }

    #[tokio::test]
    async fn says_what_git_said_and_names_the_command() {
        let dir = tempfile::tempdir().expect("tempdir");
        let git = GitCli::new(Duration::from_secs(30));
        let err = git
            .run(dir.path(), &["rev-parse", "--verify", "HEAD"])
            .await
            .expect_err("not a repository");
        assert!(
            err.to_string()
                .starts_with("`git rev-parse --verify HEAD` failed: "),
            "{err}"
        );
        assert!(err.message.contains("not a git repository"), "{err}");
        git.run(dir.path(), &["init", "-q"]).await.expect("init");
        assert!(git.succeeds(dir.path(), &["rev-parse", "--git-dir"]).await);
    }

    #[tokio::test]
    async fn a_hook_past_the_limit_is_stopped_and_the_limit_is_said_as_configured() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        let git = GitCli::new(Duration::from_secs(30));
        git.run(root, &["init", "-q", "-b", "main"])
            .await
            .expect("init");
        let hook = root.join(".git/hooks/pre-commit");
        std::fs::write(&hook, "#!/bin/sh\nsleep 30\n").expect("hook");
        std::fs::set_permissions(
            &hook,
            <std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o755),
        )
        .expect("chmod");
        let slow = GitCli::new(Duration::from_secs(1));
        let started = std::time::Instant::now();
        let err = slow
            .run(
                root,
                &[
                    "-c",
                    "user.name=T",
                    "-c",
                    "user.email=t@example.com",
                    "commit",
                    "-q",
                    "--allow-empty",
                    "-m",
                    "x",
                ],
            )
            .await
            .expect_err("timed out");
        assert!(err.message.contains("git.timeout (1s)"), "{err}");
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "{:?}",
            started.elapsed()
        );
    }
}
