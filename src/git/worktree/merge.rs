//! Merges: a phase's branch into the run's branch, and the run's branch into a phase's
//! worktree for a fix session to resolve.
//!
//! The merge into the run's branch is made in a worktree of the run's own, detached at
//! the tip debussy last left the branch at, whatever the user's checkout is on now. Only a
//! finished merge reaches the branch: fast-forwarded into the user's checkout when it is
//! on that branch, else moved with a compare-and-swap. So a conflict, a refusing hook or a
//! killed debussy never leaves the user's checkout half merged, and a branch someone else
//! moved is never merged over.
//!
//! A conflict the fix session resolved is concluded only when git's index holds no
//! unmerged path: a text file without markers is staged by debussy; a binary file, a
//! deletion on one side, a rename or a submodule must have been settled in the index.

use std::path::Path;

use crate::git::{Conflict, GitCli, GitCommandError, GitError, Repo};

/// How long delivering a merge waits for another process's lock on the checkout's index
/// (the tests' git commands in their editors are not waited on that long).
const LOCK_WAIT: std::time::Duration = if cfg!(test) {
    std::time::Duration::from_millis(300)
} else {
    std::time::Duration::from_secs(10)
};

use super::{MergeOutcome, RunBranch, place};

/// Where a worktree's merge stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MergeState {
    /// No merge is in progress.
    Clear,
    /// A merge of `merge_head` is in progress (`MERGE_HEAD` exists).
    InProgress {
        /// The commit being merged.
        merge_head: String,
    },
}

/// Why a merge in a phase's worktree could not be concluded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unsettled {
    /// These paths are still unmerged in the index.
    Paths(Vec<Conflict>),
    /// These files were conflicted and still hold conflict markers.
    Markers(Vec<String>),
    /// No merge is in progress and the run's branch is not in the worktree's history:
    /// the merge was abandoned.
    Abandoned,
    /// Git refused, in its words.
    Git(String),
}

impl std::fmt::Display for Unsettled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unsettled::Paths(conflicts) => {
                let listed: Vec<String> = conflicts
                    .iter()
                    .map(|c| format!("{} ({})", c.path, c.kind))
                    .collect();
                write!(
                    f,
                    "git still holds these paths as unmerged: {}",
                    listed.join(", ")
                )
            }
            Unsettled::Markers(files) => {
                write!(f, "conflict markers remain in {}", files.join(", "))
            }
            Unsettled::Abandoned => f.write_str("the merge was abandoned (`git merge --abort`)"),
            Unsettled::Git(message) => f.write_str(message),
        }
    }
}

/// Whether a merge is in progress in `dir`.
pub async fn merge_state(git: &GitCli, dir: &Path) -> MergeState {
    match git
        .run(dir, &["rev-parse", "--verify", "--quiet", "MERGE_HEAD"])
        .await
    {
        Ok(merge_head) if !merge_head.is_empty() => MergeState::InProgress { merge_head },
        _ => MergeState::Clear,
    }
}

/// The commit `branch` points at, `None` when it does not exist.
pub async fn tip_of(git: &GitCli, root: &Path, branch: &str) -> Option<String> {
    git.run(
        root,
        &[
            "rev-parse",
            "--verify",
            "--quiet",
            &format!("refs/heads/{branch}^{{commit}}"),
        ],
    )
    .await
    .ok()
    .filter(|tip| !tip.is_empty())
}

/// `-c user.name=… -c user.email=…` when the repository has no identity, so merges are
/// made as debussy, as its own commits are.
async fn identity(git: &GitCli, dir: &Path) -> Vec<&'static str> {
    if git.succeeds(dir, &["config", "user.email"]).await
        || std::env::var_os("GIT_AUTHOR_EMAIL").is_some()
    {
        Vec::new()
    } else {
        vec![
            "-c",
            "user.name=debussy",
            "-c",
            "user.email=debussy@localhost",
        ]
    }
}

/// Merge `branch` into the run's branch with `message` (a fast-forward when possible),
/// in the worktree at `place`; on success `run.tip` is where the branch now is.
///
/// # Errors
/// When git fails for another reason than a conflict or a moved branch (nothing reaches
/// the run's branch then either).
pub async fn merge_into_run(
    git: &GitCli,
    root: &Path,
    place: &Path,
    run: &mut RunBranch,
    branch: &str,
    message: &str,
    run_hooks: bool,
) -> Result<MergeOutcome, GitCommandError> {
    if let Some(moved) = moved(git, root, run).await {
        return Ok(moved);
    }
    place::ensure_merge_place(git, root, place, &run.tip).await?;
    let mut args = identity(git, place).await;
    args.extend(["merge", "--no-edit", "-m", message]);
    if !run_hooks {
        args.push("--no-verify");
    }
    args.push(branch);
    let said = match git.run(place, &args).await {
        Ok(said) => said,
        Err(err) => {
            let conflicted = unmerged_paths(git, place).await;
            abort_merge(git, place).await;
            return if conflicted.is_empty() {
                Err(err)
            } else {
                Ok(MergeOutcome::Conflict(conflicted))
            };
        }
    };
    if said
        .lines()
        .any(|line| line.starts_with("Already up to date"))
    {
        return Ok(MergeOutcome::UpToDate);
    }
    let fast_forward = said.lines().any(|line| line.starts_with("Fast-forward"));
    let commit = git.run(place, &["rev-parse", "HEAD"]).await?;
    match deliver(git, root, run, &commit).await {
        Ok(None) => {}
        Ok(Some(held)) => return Ok(held),
        Err(err) => {
            return match moved(git, root, run).await {
                Some(moved) => Ok(moved),
                None => Err(err),
            };
        }
    }
    run.tip.clone_from(&commit);
    Ok(MergeOutcome::Merged {
        commit,
        fast_forward,
    })
}

/// The run's branch moved away from where debussy left it, if it did.
async fn moved(git: &GitCli, root: &Path, run: &RunBranch) -> Option<MergeOutcome> {
    let found = tip_of(git, root, &run.name).await;
    (found.as_deref() != Some(run.tip.as_str())).then(|| MergeOutcome::Moved {
        expected: run.tip.clone(),
        found,
    })
}

/// Move the run's branch from `run.tip` to `commit`: a fast-forward of the working tree
/// that has the branch checked out, the user's checkout or a linked worktree of theirs
/// (so its files follow), else the reference alone, only if it still points where
/// debussy left it. Neither while an operation under way on the branch would set it
/// over the merge, or the tree is busy or holds files the merge would overwrite: the
/// outcome that holds the merge back is returned then, nothing moved.
async fn deliver(
    git: &GitCli,
    root: &Path,
    run: &RunBranch,
    commit: &str,
) -> Result<Option<MergeOutcome>, GitCommandError> {
    let (dir, name) = (root.to_path_buf(), run.name.clone());
    let (under_way, checkout) = crate::git::vcs::blocking(move || {
        let repo = Repo::discover(&dir)?;
        Ok((repo.operation_on(&name)?, repo.checkout_of(&name)?))
    })
    .await
    .map_err(|err: GitError| GitCommandError {
        command: "worktree list".to_owned(),
        message: crate::error_chain::error_chain(&err),
    })?;
    if let Some(under_way) = under_way {
        return Ok(Some(MergeOutcome::OperationUnderWay(under_way)));
    }
    let Some(tree) = checkout else {
        let reference = format!("refs/heads/{}", run.name);
        git.run(root, &["update-ref", &reference, commit, &run.tip])
            .await?;
        return Ok(None);
    };
    // A fast-forward killed with debussy leaves its lock; nobody holds it any more. A
    // `git commit` of the user's waiting for its editor keeps it closed: that is waited
    // on, never removed.
    let dir = tree.clone();
    let cleared = crate::git::vcs::blocking(move || {
        Repo::discover(&dir).and_then(|repo| repo.clear_index_lock(LOCK_WAIT))
    })
    .await;
    match cleared {
        Ok(_) => {}
        Err(GitError::IndexLocked { pids, .. }) => {
            return Ok(Some(MergeOutcome::CheckoutBusy { tree, pids }));
        }
        Err(err) => {
            return Err(GitCommandError {
                command: format!("merge --ff-only {commit}"),
                message: crate::error_chain::error_chain(&err),
            });
        }
    }
    if let Err(err) = git
        .run(&tree, &["merge", "--ff-only", "--quiet", commit])
        .await
    {
        let paths = overwritten_by_merge(&err.message);
        return if paths.is_empty() {
            Err(err)
        } else {
            Ok(Some(MergeOutcome::CheckoutChanges { tree, paths }))
        };
    }
    Ok(None)
}

/// The files git refused to overwrite with a merge ("Your local changes to the following
/// files would be overwritten by merge", or untracked files), as it listed them (one a
/// line, indented with a tab, under either heading); empty for any other failure.
fn overwritten_by_merge(said: &str) -> Vec<String> {
    let mut paths = Vec::new();
    let mut listing = false;
    for line in said.lines() {
        if let Some(path) = line.strip_prefix('\t') {
            if listing {
                paths.push(path.to_owned());
            }
        } else {
            listing = line.ends_with("would be overwritten by merge:");
        }
    }
    paths
}

/// Start merging the run's branch (at `run_tip`) into the phase's worktree, leaving
/// conflicts in its files for a fix session to resolve. The conflicted paths; empty
/// when it merged cleanly (the merge is then concluded).
///
/// # Errors
/// When git fails for another reason than a conflict.
pub async fn merge_into_worktree(
    git: &GitCli,
    worktree: &Path,
    run_tip: &str,
    message: &str,
) -> Result<Vec<String>, GitCommandError> {
    let mut args = identity(git, worktree).await;
    args.extend(["merge", "--no-edit", "--no-verify", "-m", message, run_tip]);
    match git.run(worktree, &args).await {
        Ok(_) => Ok(Vec::new()),
        Err(err) => {
            let conflicted = unmerged_paths(git, worktree).await;
            if conflicted.is_empty() {
                abort_merge(git, worktree).await;
                Err(err)
            } else {
                Ok(conflicted)
            }
        }
    }
}

/// The paths git holds as unmerged in `dir`.
pub async fn unmerged_paths(git: &GitCli, dir: &Path) -> Vec<String> {
    git.run(dir, &["diff", "--name-only", "--diff-filter=U"])
        .await
        .map(|out| out.lines().map(str::to_owned).collect())
        .unwrap_or_default()
}

/// Conclude the merge of `run_tip` in progress in `worktree`, once git's index says
/// every conflict is settled: a text file (among `conflicted`) with no markers left is
/// staged; any other unmerged path must have been settled by the fix session. Then
/// everything in the tree is committed. A fix session that concluded the merge itself
/// is taken as it is. Returns the worktree's new `HEAD`.
///
/// # Errors
/// [`Unsettled`]: what is still in conflict, or why the merge cannot be concluded.
pub async fn conclude_merge(
    git: &GitCli,
    worktree: &Path,
    run_tip: &str,
    conflicted: &[String],
    run_hooks: bool,
) -> Result<String, Unsettled> {
    let failed = |err: GitCommandError| Unsettled::Git(err.to_string());
    let marked = files_with_markers(worktree, conflicted);
    if !marked.is_empty() {
        return Err(Unsettled::Markers(marked));
    }
    if merge_state(git, worktree).await == MergeState::Clear {
        let settled = git
            .succeeds(worktree, &["merge-base", "--is-ancestor", run_tip, "HEAD"])
            .await;
        return if settled {
            git.run(worktree, &["rev-parse", "HEAD"])
                .await
                .map_err(failed)
        } else {
            Err(Unsettled::Abandoned)
        };
    }
    let conflicts = crate::git::vcs::conflicts_in(worktree.to_path_buf())
        .await
        .map_err(|err| Unsettled::Git(crate::error_chain::error_chain(&err)))?;
    let (by_editing, unsettled): (Vec<Conflict>, Vec<Conflict>) = conflicts
        .into_iter()
        .partition(|conflict| conflict.kind.settled_by_editing());
    if !unsettled.is_empty() {
        return Err(Unsettled::Paths(unsettled));
    }
    for conflict in &by_editing {
        git.run(worktree, &["add", "--", &conflict.path])
            .await
            .map_err(failed)?;
    }
    git.run(worktree, &["add", "-A"]).await.map_err(failed)?;
    let mut args = identity(git, worktree).await;
    args.extend(["commit", "--no-edit", "--quiet"]);
    if !run_hooks {
        args.push("--no-verify");
    }
    git.run(worktree, &args).await.map_err(failed)?;
    git.run(worktree, &["rev-parse", "HEAD"])
        .await
        .map_err(failed)
}

/// Files still holding conflict markers (`<<<<<<<`, `>>>>>>>` lines) among `files` in
/// `dir`.
#[must_use]
pub fn files_with_markers(dir: &Path, files: &[String]) -> Vec<String> {
    files
        .iter()
        .filter(|file| {
            std::fs::read_to_string(dir.join(file)).is_ok_and(|text| {
                text.lines().any(|line| {
                    line.starts_with("<<<<<<< ")
                        || line.starts_with(">>>>>>> ")
                        || line == "<<<<<<<"
                        || line == ">>>>>>>"
                })
            })
        })
        .cloned()
        .collect()
}

/// Abandon the merge in progress in `dir`, if any.
pub async fn abort_merge(git: &GitCli, dir: &Path) {
    if let MergeState::InProgress { .. } = merge_state(git, dir).await {
        let _ = git.run(dir, &["merge", "--abort"]).await;
    }
}
