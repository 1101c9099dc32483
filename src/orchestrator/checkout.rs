//! [`Checkout`]: the project's own checkout when phases work in it (`--jobs 1`): the
//! branch the run commits on, and the commit debussy last left it at.
//!
//! The checkout is the user's too, and the agent has git at hand there. A commit is made
//! only while the checkout is still on the run's branch and what debussy committed
//! before is still in its history ([`vcs::check_on_branch`]): a switch, a detached
//! `HEAD`, a merge started mid-run or a reset over a checkpoint fails the phase and
//! leaves its work uncommitted, instead of putting it on another branch or reporting it
//! completed without the work before it. A phase whose work was stashed there and not
//! taken back is not completed either.

use std::cell::Cell;
use std::path::Path;

use git2::Oid;

use crate::git::GitError;
use crate::git::vcs::{self, OnBranch};

/// The run's branch in the project's checkout, and where debussy last left it.
#[derive(Debug)]
pub(crate) struct Checkout {
    branch: String,
    left_at: Cell<Option<Oid>>,
    /// The stashes there when the run took the checkout: the user's, not a phase's.
    stashed_before: Vec<Oid>,
}

impl Checkout {
    /// The checkout on `branch`, whose tip is `tip` (`None` before its first commit),
    /// holding the stashes `stashed_before`.
    pub(crate) fn new(branch: String, tip: Option<Oid>, stashed_before: Vec<Oid>) -> Self {
        Checkout {
            branch,
            left_at: Cell::new(tip),
            stashed_before,
        }
    }

    /// Where a commit made there now must land.
    pub(crate) fn on_branch(&self) -> OnBranch {
        OnBranch {
            branch: self.branch.clone(),
            after: self.left_at.get(),
        }
    }

    /// What was stashed there since `since` (seconds since the epoch), and not before
    /// the run took the checkout, that is not on the run's branch, each named with how
    /// to get it back.
    ///
    /// # Errors
    /// When git cannot list the stashes.
    pub(crate) async fn stashed_since(
        &self,
        root: &Path,
        since: i64,
    ) -> Result<Vec<String>, GitError> {
        vcs::stashed_off(
            root.to_path_buf(),
            self.branch.clone(),
            since,
            self.stashed_before.clone(),
        )
        .await
    }

    /// debussy committed `commit` there: the next commit must have it in its history.
    pub(crate) fn committed(&self, commit: &str) {
        if let Ok(id) = Oid::from_str(commit) {
            self.left_at.set(Some(id));
        }
    }
}
