//! Git through libgit2: the pre-flight checks, the changed-files list a checkpoint shows,
//! and the auto-commits that make every phase and checkpoint recoverable; and the `git`
//! program itself ([`GitCli`]) for worktrees and merges, which libgit2 does not do the
//! way git does: the worktrees and branches of phases run side by side, the merges that
//! bring their work back ([`worktree`]), and how commits descend from each other, which
//! libgit2 cannot tell in a shallow clone (`ancestry.rs`).
//!
//! The libgit2 side is blocking; async callers run it on `spawn_blocking`. The `git`
//! program runs through the process layer. Nothing here decides *when* to commit or
//! merge: the orchestrator does.

mod ancestry;
mod busy;
mod changes;
mod cli;
mod commit;
mod conflicts;
mod cut_short;
mod error;
mod history;
mod hooks;
mod locks;
mod operations;
mod repo;
mod submodules;
pub mod vcs;
pub mod worktree;

pub use changes::{ChangeKind, FileChange, diffstat};
pub use cli::{GitCli, GitCommandError};
pub use commit::{CommitOutcome, Identity, StaleLock};
pub use conflicts::{Conflict, ConflictKind};
pub use error::GitError;
pub use history::Stash;
pub use hooks::{HookFailure, HookPolicy};
pub use locks::clear_left_locks;
pub use operations::BranchOperation;
pub use repo::{HeadState, Repo};
pub use submodules::UncommittedSubmodule;

/// A commit id as debussy names commits to people: its first twelve digits.
fn short_id(id: git2::Oid) -> String {
    id.to_string().chars().take(12).collect()
}

/// Attach what was being done to a libgit2 error.
fn op(action: &'static str) -> impl FnOnce(git2::Error) -> GitError {
    move |source| GitError::Git { action, source }
}

#[cfg(test)]
mod repo_kinds_tests;
#[cfg(test)]
pub(crate) mod test_git;
#[cfg(test)]
mod tests;
