//! Git through libgit2: the pre-flight checks, the changed-files list a checkpoint shows,
//! and the auto-commits that make every phase and checkpoint recoverable.
//!
//! Everything here is blocking; async callers run it on `spawn_blocking`. Nothing here
//! decides *when* to commit: the orchestrator does.

mod changes;
mod commit;
mod error;
mod hooks;
mod repo;

pub use changes::{ChangeKind, FileChange, diffstat};
pub use commit::{CommitOutcome, Identity, StaleLock};
pub use error::GitError;
pub use hooks::HookFailure;
pub use repo::{HeadState, Repo};

/// Attach what was being done to a libgit2 error.
fn op(action: &'static str) -> impl FnOnce(git2::Error) -> GitError {
    move |source| GitError::Git { action, source }
}

#[cfg(test)]
mod tests;
