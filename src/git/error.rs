//! [`GitError`]: git failures, each saying what was being done.

use std::path::PathBuf;

use super::{GitCommandError, HookFailure};

/// Errors from git operations, each saying what it was about.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum GitError {
    /// The directory is not inside a git repository.
    #[error("{} is not inside a git repository", .path.display())]
    #[diagnostic(help(
        "run `git init` there (debussy commits each phase's work), or pass --no-auto-commit"
    ))]
    NotARepository {
        /// The directory searched from.
        path: PathBuf,
    },
    /// A repository owned by another user, which git (and libgit2) will not use until it
    /// is trusted.
    #[error("the git repository at {} is owned by another user", .path.display())]
    #[diagnostic(help(
        "trust it as git asks (`git config --global --add safe.directory {}`), or run debussy as its owner",
        .path.display()
    ))]
    NotOwned {
        /// The repository's directory.
        path: PathBuf,
    },
    /// A repository git can use and libgit2, which debussy commits with, cannot: one of
    /// SHA-256 objects, or a split index.
    #[error("debussy cannot read the git repository at {}: {reason}", .path.display())]
    #[diagnostic(help("{help}"))]
    Unsupported {
        /// The directory searched from.
        path: PathBuf,
        /// libgit2's words.
        reason: String,
        /// What to do about it.
        help: &'static str,
    },
    /// A linked worktree that its repository has no usable record of.
    #[error("git has no usable record of the worktree at {}", .path.display())]
    #[diagnostic(help(
        "{} is empty or unreadable (a `git worktree move` or `add` was stopped half way): run `git worktree repair {}` from the main checkout, or remove the directory and run `git worktree prune`",
        .record.display(),
        .path.display()
    ))]
    LostWorktree {
        /// The directory.
        path: PathBuf,
        /// The record that should lead back to it.
        record: PathBuf,
    },
    /// The repository has no working tree.
    #[error("the repository at {} is bare; debussy needs a working tree", .path.display())]
    Bare {
        /// The repository's git directory.
        path: PathBuf,
    },
    /// A git command kept the index lock for longer than a commit waits: it has the lock
    /// open, or works in the tree with the lock closed (a `git commit` waiting for its
    /// editor or running a hook).
    #[error(
        "{} is in use by a running git command (process {}), so nothing was committed",
        .path.display(),
        .pids.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
    )]
    #[diagnostic(help(
        "finish that git command (a `git commit` may be waiting for its editor, or running a hook) or stop it, then resume the run"
    ))]
    IndexLocked {
        /// The lock file.
        path: PathBuf,
        /// The processes that have it open, or the git commands working in its tree.
        pids: Vec<u32>,
    },
    /// A git lock file found when a run started after an interrupted one is still in use:
    /// a live process has it open, or (an `index.lock`) a git command works in its tree.
    #[error(
        "{} is in use by a running git command (process {}), so it was not removed",
        .path.display(),
        .pids.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
    )]
    #[diagnostic(help(
        "wait for that git command to finish, then resume; if no git command is running in this repository, remove {} and resume",
        .path.display()
    ))]
    LockInUse {
        /// The lock file.
        path: PathBuf,
        /// The processes that have it open, or the git commands working in its tree.
        pids: Vec<u32>,
    },
    /// Removing a stale lock failed.
    #[error("failed to remove stale lock {}", .path.display())]
    RemoveLock {
        /// The lock file.
        path: PathBuf,
        /// Why removal failed.
        #[source]
        source: std::io::Error,
    },
    /// A file a cut-short fast-forward left in the checkout could not be set back.
    #[error("failed to set back {}, left by a fast-forward a kill cut short", .path.display())]
    #[diagnostic(help(
        "the file holds what the run's branch will bring: remove it from the checkout, then resume"
    ))]
    SetBack {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The work tree holds git repositories of its own that the last commit did not: a
    /// commit would record only which commit each is at, not its files, and those would
    /// be lost with the work tree (a phase's worktree goes when the run ends).
    #[error(
        "{} {} a git repository of its own (made by `git init`, or a clone), so a commit would not hold {} files",
        .paths.join(", "),
        if .paths.len() == 1 { "is" } else { "are" },
        if .paths.len() == 1 { "its" } else { "their" }
    )]
    #[diagnostic(help(
        "keep the files by removing the inner `.git` (`rm -rf {}/.git`), or move the repository out of the project, then resume",
        .paths.first().map_or("", String::as_str)
    ))]
    EmbeddedRepository {
        /// The directories, relative to the work tree.
        paths: Vec<String>,
    },
    /// The checkout is no longer on the branch the run commits on (switched, or `HEAD`
    /// detached by a rebase or a checkout of a commit).
    #[error("the run commits on {expected}, and the checkout {now} now")]
    #[diagnostic(help(
        "switch back (`git switch {expected}`; uncommitted work comes along) and resume the run, with --allow-dirty when the work changed tracked files; commits made on the other branch meanwhile can follow with `git merge`"
    ))]
    OffBranch {
        /// The branch the run commits on.
        expected: String,
        /// Where the checkout is, as a phrase (`is on feature`).
        now: String,
    },
    /// The branch the run commits on is gone and the checkout is on another: the branch
    /// was renamed (`git branch -m`) mid-run, or deleted and another checked out.
    #[error("the run commits on {expected}, which no longer exists; the checkout is on {now} now")]
    #[diagnostic(help(
        "if {now} is {expected} renamed, rename it back (`git branch -m {now} {expected}`) and resume the run; else make {expected} again where the run left it and switch to it"
    ))]
    BranchGone {
        /// The branch the run commits on.
        expected: String,
        /// The branch the checkout is on.
        now: String,
    },
    /// A commit debussy made on the run's branch (or its tip when the run started) is
    /// no longer in the branch's history, and its changes are not there either.
    #[error(
        "commit {commit}, where debussy last left {branch}, is no longer in its history (now at {head}): a reset or a rewrite took its work off the branch"
    )]
    #[diagnostic(help(
        "bring the work back with `git merge {commit}` (git keeps the commit), then resume the run"
    ))]
    LeftHistory {
        /// The commit debussy left the branch at.
        commit: String,
        /// The branch the run commits on.
        branch: String,
        /// Where the branch is now.
        head: String,
    },
    /// A merge, rebase, cherry-pick, revert, bisect or `git am` was started in the
    /// working tree a commit was asked of: a commit now would record its conflict
    /// markers, or leave the operation's own commits out.
    #[error(
        "{operation} was started in {}, so a commit now would record it half done",
        .tree.display()
    )]
    #[diagnostic(help("{finish} there; then resume the run"))]
    OperationUnderWay {
        /// What is in progress, e.g. `a merge`.
        operation: &'static str,
        /// How to finish or abort it.
        finish: &'static str,
        /// The working tree it is under way in.
        tree: PathBuf,
    },
    /// Files in the working tree have conflicts git still records as unresolved.
    #[error(
        "{} {} unresolved conflicts (left by a `git stash pop`, a merge or a `git apply --3way`), so a commit now would record {} markers",
        .paths.join(", "),
        if .paths.len() == 1 { "has" } else { "have" },
        if .paths.len() == 1 { "its" } else { "their" }
    )]
    #[diagnostic(help(
        "resolve them and `git add` each, or take a side (`git checkout --theirs -- PATH`, then `git add PATH`), then resume the run"
    ))]
    Unmerged {
        /// The files, relative to the work tree.
        paths: Vec<String>,
    },
    /// A commit hook refused the commit.
    #[error("the {} hook refused the commit ({}){}", .0.hook, .0.status, if .0.output.is_empty() { String::new() } else { format!(":\n{}", .0.output) })]
    Hook(HookFailure),
    /// The commit message file for the hooks could not be written or read back.
    #[error("failed to pass the commit message through {}", .path.display())]
    MessageFile {
        /// `.git/COMMIT_EDITMSG`.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The `git` program failed.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Command(#[from] GitCommandError),
    /// Any other libgit2 failure.
    #[error("git {action} failed")]
    Git {
        /// What was being done.
        action: &'static str,
        /// libgit2's error.
        #[source]
        source: git2::Error,
    },
}

impl GitError {
    /// Whether git (the program, or libgit2 writing an object) said it ran out of room:
    /// the disk is full or the quota spent.
    #[must_use]
    pub fn is_out_of_space(&self) -> bool {
        match self {
            GitError::Command(command) => command.is_out_of_space(),
            GitError::Git { source, .. } => {
                source.class() == git2::ErrorClass::Os
                    && super::cli::says_out_of_space(source.message())
            }
            _ => false,
        }
    }
}
