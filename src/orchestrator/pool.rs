//! [`WorktreePool`]: the run's changes to the repository itself, one at a time, and the
//! worktrees of merged phases kept for the phases that follow.
//!
//! git does not take worktree changes concurrently (one `worktree add` reads another's
//! half-made admin directory), so every change waits its turn. A new worktree writes
//! every file of the project, which in a large repository costs far more than the
//! phase's merge; a merged phase's worktree is parked instead and the next phase takes
//! it up on its own branch, rewriting only the files that differ. What is still parked
//! when the run ends is removed.

use std::cell::{Cell, RefCell};
use std::path::{Path, PathBuf};

use super::vcs::blocking;
use super::worktree::{self, GitCommandError, MergeOutcome, Worktree};

/// The run's worktrees and its turns at the repository.
#[derive(Debug, Default)]
pub(crate) struct WorktreePool {
    turn: tokio::sync::Mutex<()>,
    spares: RefCell<Vec<PathBuf>>,
    parked: Cell<u32>,
}

impl WorktreePool {
    /// Make `worktree` ready: as it is when a paused run left it, else a parked one
    /// taken up on a branch from `run_branch`, else a new one.
    pub(crate) async fn enter(
        &self,
        root: &Path,
        worktree: &Worktree,
        run_branch: &str,
    ) -> Result<(), GitCommandError> {
        let _turn = self.turn.lock().await;
        let spare = self.spares.borrow_mut().pop();
        let (root, target, branch) = (root.to_path_buf(), worktree.clone(), run_branch.to_owned());
        let (entered, unused) = blocking(move || {
            let fresh = !target.path.join(".git").exists()
                && !worktree::branch_exists(&root, &target.branch);
            match spare {
                // A paused phase's own worktree (or branch) goes on; the spare waits.
                Some(spare) if !fresh => {
                    (worktree::ensure(&root, &target).map(|_| ()), Some(spare))
                }
                Some(spare) => {
                    if worktree::adopt(&root, &spare, &target, &branch).is_ok() {
                        return (Ok(()), None);
                    }
                    // A spare git would not move: made anew, the spare goes.
                    let _ = worktree::remove_parked(&root, &[spare]);
                    let _ = worktree::remove(&root, &target);
                    (worktree::ensure(&root, &target).map(|_| ()), None)
                }
                None => (worktree::ensure(&root, &target).map(|_| ()), None),
            }
        })
        .await;
        if let Some(spare) = unused {
            self.spares.borrow_mut().push(spare);
        }
        entered
    }

    /// Merge `branch` into the run's branch, after the merges before it.
    pub(crate) async fn merge(
        &self,
        root: &Path,
        branch: &str,
        message: String,
        run_hooks: bool,
    ) -> Result<MergeOutcome, GitCommandError> {
        let _turn = self.turn.lock().await;
        let (root, branch) = (root.to_path_buf(), branch.to_owned());
        blocking(move || worktree::merge(&root, &branch, &message, run_hooks)).await
    }

    /// A merged phase is done with `worktree`: park it for a later phase (or remove it
    /// when git will not move it), and delete its branch.
    pub(crate) async fn retire(
        &self,
        root: &Path,
        worktree: &Worktree,
    ) -> Result<(), GitCommandError> {
        let _turn = self.turn.lock().await;
        let number = self.parked.get() + 1;
        self.parked.set(number);
        let spare = worktree.path.with_file_name(format!(".spare-{number}"));
        let (root, target, parked) = (root.to_path_buf(), worktree.clone(), spare.clone());
        let kept = blocking(move || match worktree::park(&root, &target, &parked) {
            Ok(()) => Ok(true),
            Err(_) => worktree::remove(&root, &target).map(|()| false),
        })
        .await?;
        if kept {
            self.spares.borrow_mut().push(spare);
        }
        Ok(())
    }

    /// Remove the parked worktrees; what cannot be removed is left to `debussy clean`.
    pub(crate) async fn drain(&self, root: &Path) -> Option<String> {
        let _turn = self.turn.lock().await;
        let spares = std::mem::take(&mut *self.spares.borrow_mut());
        if spares.is_empty() {
            return None;
        }
        let root = root.to_path_buf();
        blocking(move || worktree::remove_parked(&root, &spares).err())
            .await
            .map(|err| err.to_string())
    }
}
