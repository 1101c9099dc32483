//! The git worktrees and branches phases run in when they run side by side (`jobs` > 1),
//! and the merges that bring their work back to the run's branch.
//!
//! These are git's own commands (`git worktree`, `git merge`, `git commit`), run through
//! [`GitCli`](super::GitCli) (each in its own process group, under `git.timeout`):
//! the merges, their hooks and their conflicts are exactly the ones the user gets
//! finishing a merge by hand with the commands debussy prints.
//!
//! - `place.rs`: making, parking, taking up and removing worktrees;
//! - `merge.rs`: merging a phase's branch into the run's branch (in a worktree of the
//!   run's own, so the user's checkout is never left half merged), and the merge a fix
//!   session resolves in the phase's worktree, concluded only when git's index says so;
//! - `salvage.rs`: before a merge, making sure every commit the phase made is on its
//!   branch, whatever the agent did with `HEAD`;
//! - `handover.rs`: the commands that finish by hand what debussy could not.

mod handover;
mod merge;
mod place;
mod salvage;

use std::path::{Path, PathBuf};

pub use handover::{finish_by_hand, resume_command};
pub use merge::{
    MergeState, Unsettled, abort_merge, conclude_merge, files_with_markers, merge_into_run,
    merge_into_worktree, merge_state, tip_of, unmerged_paths,
};
pub use place::{
    adopt, branch_exists, ensure, ensure_merge_place, leftovers, park, remove, remove_parked,
};
pub use salvage::{Salvaged, Unsaved, secure};

/// Where the worktrees of runs live, relative to the project root.
pub const WORKTREES_DIR: &str = ".debussy/worktrees";
/// The prefix of the branches phases run on.
pub const BRANCH_PREFIX: &str = "debussy/";
/// The name of the worktree a run merges in, beside its phases' worktrees.
pub const MERGE_PLACE: &str = ".merge";

/// A phase's worktree and branch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Worktree {
    /// The worktree's directory: `.debussy/worktrees/<run>/<phase>`.
    pub path: PathBuf,
    /// Its branch: `debussy/<run-id>/phase-<id>`.
    pub branch: String,
}

impl Worktree {
    /// The worktree and branch of `phase_id` in `run_id`.
    #[must_use]
    pub fn of(root: &Path, run_id: &str, phase_id: &str) -> Worktree {
        Worktree {
            path: root.join(WORKTREES_DIR).join(run_id).join(phase_id),
            branch: format!("{BRANCH_PREFIX}{run_id}/phase-{phase_id}"),
        }
    }
}

/// The worktree a run merges its phases' branches in: `.debussy/worktrees/<run>/.merge`.
#[must_use]
pub fn merge_place(root: &Path, run_id: &str) -> PathBuf {
    root.join(WORKTREES_DIR).join(run_id).join(MERGE_PLACE)
}

/// The branch a run merges into, and where debussy last left it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunBranch {
    /// Its name, e.g. `main`.
    pub name: String,
    /// The commit it pointed at when the run started or after debussy's last merge: a
    /// different tip means someone else moved it.
    pub tip: String,
}

/// How merging a phase's branch into the run's branch went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MergeOutcome {
    /// Merged; `fast_forward` when no merge commit was needed.
    Merged {
        /// The run branch's new tip.
        commit: String,
        /// Whether the branch was fast-forwarded.
        fast_forward: bool,
    },
    /// The branch brought nothing new (its phase changed nothing).
    UpToDate,
    /// Both sides changed the same files: these paths conflicted, and the merge was
    /// abandoned.
    Conflict(Vec<String>),
    /// The run's branch is not where debussy left it: someone committed to it, reset it
    /// or deleted it while the run went on. Nothing was merged.
    Moved {
        /// Where debussy left it.
        expected: String,
        /// Where it is now (`None`: it is gone).
        found: Option<String>,
    },
    /// A working tree of the user's has the run's branch checked out, and a git command
    /// working in it kept its index past the wait (a `git commit` waiting for its editor
    /// or running a hook). Nothing was merged.
    CheckoutBusy {
        /// The working tree that has the branch checked out.
        tree: std::path::PathBuf,
        /// The git commands.
        pids: Vec<u32>,
    },
    /// An operation is under way on the run's branch (a rebase of it, or a merge left in
    /// the checkout on it): its end or its abort would set the branch over the merge.
    /// Nothing was merged.
    OperationUnderWay(crate::git::BranchOperation),
    /// Files not committed in the checkout on the run's branch (changed, or untracked)
    /// would be overwritten by the fast-forward, which git refused. Nothing was merged.
    CheckoutChanges {
        /// The working tree that has the branch checked out.
        tree: std::path::PathBuf,
        /// The files, as git named them.
        paths: Vec<String>,
    },
}

#[cfg(test)]
mod branch_tests;
#[cfg(test)]
mod tests;
