//! [`WorktreePool`]: the run's changes to the repository itself, one at a time; the
//! worktrees of merged phases kept for the phases that follow; and the run's branch with
//! the tip debussy last left it at.
//!
//! git does not take worktree changes concurrently (one `worktree add` reads another's
//! half-made admin directory), so every change waits its turn. A new worktree writes
//! every file of the project, which in a large repository costs far more than the
//! phase's merge; a merged phase's worktree is parked instead and the next phase takes
//! it up on its own branch, rewriting only the files that differ. Merges are made in a
//! worktree of the run's own (`.merge`, a parked one when there is one), never in the
//! user's checkout. What is still parked when the run ends is removed.
//!
//! A worktree holds the whole repository, and the project may be a directory of it (a
//! monorepo): what runs "in the project" during a phase runs in the project's copy in
//! the worktree ([`WorktreePool::project_in`]), while commits and merges take the
//! whole worktree.

use std::cell::{Cell, RefCell};
use std::path::{Path, PathBuf};

use crate::git::{GitCli, GitCommandError};

use crate::git::worktree::{self, MergeOutcome, RunBranch, Salvaged, Unsaved, Worktree};

/// The run's worktrees and its turns at the repository.
#[derive(Debug)]
pub(crate) struct WorktreePool {
    git: GitCli,
    root: PathBuf,
    /// Where merges are made: `.debussy/worktrees/<run>/.merge`.
    place: PathBuf,
    /// The run's branch and where debussy last left it (phases in worktrees only).
    run: RefCell<Option<RunBranch>>,
    turn: tokio::sync::Mutex<()>,
    spares: RefCell<Vec<PathBuf>>,
    parked: Cell<u32>,
    /// The project's path in its repository (empty at the top level), asked of git once.
    project_place: tokio::sync::OnceCell<PathBuf>,
}

impl WorktreePool {
    /// The pool of run `run_id` in `root`, merging into `run` (`None` when phases run in
    /// the working tree itself).
    pub(crate) fn new(git: GitCli, root: &Path, run_id: &str, run: Option<RunBranch>) -> Self {
        WorktreePool {
            git,
            root: root.to_path_buf(),
            place: worktree::merge_place(root, run_id),
            run: RefCell::new(run),
            turn: tokio::sync::Mutex::new(()),
            spares: RefCell::new(Vec::new()),
            parked: Cell::new(0),
            project_place: tokio::sync::OnceCell::new(),
        }
    }

    /// How git is run.
    pub(crate) fn git(&self) -> &GitCli {
        &self.git
    }

    /// The run's branch and where debussy last left it.
    pub(crate) fn run_branch(&self) -> Option<RunBranch> {
        self.run.borrow().clone()
    }

    /// The run branch's name; empty when the phases run in the working tree.
    pub(crate) fn run_branch_name(&self) -> String {
        self.run
            .borrow()
            .as_ref()
            .map(|run| run.name.clone())
            .unwrap_or_default()
    }

    /// Make `worktree` ready: as it is when a paused run left it, else a parked one
    /// taken up on a branch from `run_branch`, else a new one.
    pub(crate) async fn enter(
        &self,
        worktree: &Worktree,
        run_branch: &str,
    ) -> Result<(), GitCommandError> {
        let _turn = self.turn.lock().await;
        let (git, root) = (&self.git, self.root.as_path());
        let spare = self.spares.borrow_mut().pop();
        let fresh = !worktree.path.join(".git").exists()
            && !worktree::branch_exists(git, root, &worktree.branch).await;
        let entered = match spare {
            // A paused phase's own worktree (or branch) goes on; the spare waits.
            Some(spare) if !fresh => {
                self.spares.borrow_mut().push(spare);
                worktree::ensure(git, root, worktree, run_branch).await
            }
            Some(spare) => {
                if worktree::adopt(git, root, &spare, worktree, run_branch)
                    .await
                    .is_ok()
                {
                    return Ok(());
                }
                // A spare git would not move: made anew, the spare goes.
                let _ = worktree::remove_parked(git, root, &[spare]).await;
                let _ = worktree::remove(git, root, worktree).await;
                worktree::ensure(git, root, worktree, run_branch).await
            }
            None => worktree::ensure(git, root, worktree, run_branch).await,
        };
        entered.map(|_| ())
    }

    /// The project's directory in `worktree`: the project's place in its repository
    /// joined to the worktree, where the phase's sessions, gates and checks run.
    pub(crate) async fn project_in(&self, worktree: &Worktree) -> PathBuf {
        worktree.path.join(self.project_place().await)
    }

    /// The project's path from its repository's top level (empty when it is the top).
    pub(crate) async fn project_place(&self) -> &Path {
        self.project_place
            .get_or_init(|| crate::git::vcs::project_place(self.root.clone()))
            .await
    }

    /// Make sure every commit of `worktree`'s phase since `since` is on its branch,
    /// while no other change to the repository runs.
    pub(crate) async fn secure(
        &self,
        worktree: &Worktree,
        since: i64,
    ) -> Result<Salvaged, Unsaved> {
        let _turn = self.turn.lock().await;
        let Some(run) = self.run_branch() else {
            return Err(Unsaved::Git(
                "phases run in the working tree: no branch to merge".into(),
            ));
        };
        worktree::secure(&self.git, worktree, &run.tip, since).await
    }

    /// Merge `branch` into the run's branch, after the merges before it.
    pub(crate) async fn merge(
        &self,
        branch: &str,
        message: String,
        run_hooks: bool,
    ) -> Result<MergeOutcome, GitCommandError> {
        let _turn = self.turn.lock().await;
        let Some(mut run) = self.run_branch() else {
            return Err(GitCommandError {
                command: format!("merge {branch}"),
                message: "phases run in the working tree: there is no run branch to merge into"
                    .into(),
            });
        };
        if !self.place.join(".git").exists() {
            self.take_spare_as_place().await;
        }
        let outcome = worktree::merge_into_run(
            &self.git,
            &self.root,
            &self.place,
            &mut run,
            branch,
            &message,
            run_hooks,
        )
        .await;
        *self.run.borrow_mut() = Some(run);
        outcome
    }

    /// A parked worktree becomes the merge place: cheaper than a new one.
    async fn take_spare_as_place(&self) {
        let Some(spare) = self.spares.borrow_mut().pop() else {
            return;
        };
        let moved = self
            .git
            .run(
                &self.root,
                &[
                    "worktree",
                    "move",
                    &spare.to_string_lossy(),
                    &self.place.to_string_lossy(),
                ],
            )
            .await;
        if moved.is_err() {
            self.spares.borrow_mut().push(spare);
        }
    }

    /// A merged phase is done with `worktree`: park it for a later phase (or remove it
    /// when git will not move it), and delete its branch.
    pub(crate) async fn retire(&self, worktree: &Worktree) -> Result<(), GitCommandError> {
        let _turn = self.turn.lock().await;
        let number = self.parked.get() + 1;
        self.parked.set(number);
        let spare = worktree.path.with_file_name(format!(".spare-{number}"));
        let (git, root) = (&self.git, self.root.as_path());
        let kept = match worktree::park(git, root, worktree, &spare).await {
            Ok(()) => true,
            Err(_) => {
                worktree::remove(git, root, worktree).await?;
                false
            }
        };
        if kept {
            self.spares.borrow_mut().push(spare);
        }
        Ok(())
    }

    /// Remove the parked worktrees and the merge place; what cannot be removed is left
    /// to `debussy clean`.
    pub(crate) async fn drain(&self) -> Option<String> {
        let _turn = self.turn.lock().await;
        let mut spares = std::mem::take(&mut *self.spares.borrow_mut());
        if self.place.join(".git").exists() {
            spares.push(self.place.clone());
        }
        if spares.is_empty() {
            return None;
        }
        worktree::remove_parked(&self.git, &self.root, &spares)
            .await
            .err()
            .map(|err| err.to_string())
    }
}
