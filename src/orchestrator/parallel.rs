//! What phases running side by side need before the run starts: a repository they can
//! branch from, and, on `--resume`, which completed phases still wait for their merge.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::config::Config;
use crate::plan::Plan;
use crate::state::{ExecutionStatus, Store};

use super::run::RunError;
use super::vcs::blocking;
use super::worktree::{self, Worktree, git};

/// Check that phases can run in worktrees branched from the run's branch; returns it.
///
/// # Errors
/// [`RunError::Parallel`] naming what stands in the way and how to fix it.
pub(super) async fn check(
    root: &Path,
    plan: &Plan,
    config: &Config,
    branch: Option<String>,
) -> Result<String, RunError> {
    let fail = |problem: String, help: &str| RunError::Parallel {
        problem,
        help: help.to_owned(),
    };
    if !config.auto_commit {
        return Err(fail(
            format!(
                "jobs is {} but auto_commit is off: phases running side by side reach the run's branch as commits merged from their own branches",
                config.jobs
            ),
            "turn auto_commit on, or run one phase at a time with --jobs 1",
        ));
    }
    let Some(branch) = branch else {
        return Err(fail(
            "the repository is not ready for commits (see the git check): phases running side by side branch from it and merge into it".into(),
            "fix what the git check says, or run with --jobs 1",
        ));
    };
    let root = root.to_path_buf();
    let files = plan_files(plan);
    let (head, untracked) = blocking(move || {
        let head = git(&root, &["rev-parse", "--verify", "HEAD"]);
        let untracked: Vec<String> = files
            .iter()
            .filter(|file| {
                git(
                    &root,
                    &["ls-files", "--error-unmatch", &file.to_string_lossy()],
                )
                .is_err()
            })
            .map(|file| {
                file.strip_prefix(&root)
                    .unwrap_or(file)
                    .display()
                    .to_string()
            })
            .collect();
        (head, untracked)
    })
    .await;
    if let Err(err) = head {
        return Err(if err.message.contains("not installed") {
            fail(err.message, "install git, or run with --jobs 1")
        } else {
            fail(
                format!("the branch {branch} has no commit yet; phases' worktrees start from it"),
                "make a first commit (`git commit --allow-empty -m start`), or run with --jobs 1",
            )
        });
    }
    if !untracked.is_empty() {
        return Err(fail(
            format!(
                "the plan is not committed, so the phases' worktrees (made from {branch}) would not see it: {}",
                untracked.join(", ")
            ),
            "commit the plan first (`git add` its files and `git commit`), or run with --jobs 1",
        ));
    }
    Ok(branch)
}

/// Whether the project at `root` can run `plan`'s phases side by side with `config`
/// (as `debussy doctor` asks before a run); returns the branch they would merge into.
///
/// # Errors
/// What the run would refuse with.
pub async fn side_by_side_ready(
    root: std::path::PathBuf,
    plan: &Plan,
    config: &Config,
) -> Result<String, RunError> {
    let branch = super::vcs::preflight(root.clone(), true).await.ok();
    check(&root, plan, config, branch).await
}

/// Refuse to resume `run_id` one phase at a time when its phases ran side by side and
/// left work on their branches: that work would be run again instead of merged.
///
/// # Errors
/// [`RunError::Parallel`] naming the branches.
pub(super) async fn no_worktrees_left(root: &Path, run_id: &str) -> Result<(), RunError> {
    let root = root.to_path_buf();
    let prefix = format!("{}{run_id}/", worktree::BRANCH_PREFIX);
    let branches: Vec<String> = blocking(move || worktree::leftovers(&root))
        .await
        .map(|(_, branches)| branches)
        .unwrap_or_default()
        .into_iter()
        .filter(|branch| branch.starts_with(&prefix))
        .collect();
    if branches.is_empty() {
        return Ok(());
    }
    Err(RunError::Parallel {
        problem: format!(
            "the run being resumed ran phases side by side, and their work is on branches not merged yet: {}",
            branches.join(", ")
        ),
        help: "resume it with --jobs 2 (or more), so those phases go on in their worktrees and are merged".into(),
    })
}

/// The master plan and its phase files, as absolute paths.
fn plan_files(plan: &Plan) -> Vec<PathBuf> {
    std::iter::once(plan.master.clone())
        .chain(
            plan.phases
                .iter()
                .filter_map(|phase| phase.file.path().map(Path::to_path_buf)),
        )
        .map(|path| std::path::absolute(&path).unwrap_or(path))
        .collect()
}

/// The phases of `run_id` whose completed work is not on the run's branch yet, with the
/// attempt that completed them (to merge them before anything else), and those a human
/// merged since (their worktree and branch gone): recorded as completed now.
///
/// # Errors
/// On state store failure.
pub(super) async fn unmerged(
    root: &Path,
    store: &Store,
    run_id: &str,
) -> Result<(BTreeMap<String, i64>, BTreeSet<String>), RunError> {
    let mut latest: BTreeMap<String, (i64, ExecutionStatus)> = BTreeMap::new();
    for execution in store.executions(run_id)? {
        if matches!(
            execution.status,
            ExecutionStatus::Completed | ExecutionStatus::AwaitingHuman
        ) {
            latest.insert(execution.phase_id, (execution.id, execution.status));
        }
    }
    let (root, run) = (root.to_path_buf(), run_id.to_owned());
    let states = blocking(move || {
        latest
            .into_iter()
            .map(|(phase, (execution, status))| {
                let branch = Worktree::of(&root, &run, &phase).branch;
                let exists = worktree::branch_exists(&root, &branch);
                let merged = exists && worktree::is_merged(&root, &branch);
                (phase, execution, status, exists, merged)
            })
            .collect::<Vec<_>>()
    })
    .await;
    let mut waiting = BTreeMap::new();
    let mut by_hand = BTreeSet::new();
    for (phase, execution, status, exists, merged) in states {
        let awaiting = status == ExecutionStatus::AwaitingHuman;
        if exists && (awaiting || !merged) {
            waiting.insert(phase, execution);
        } else if awaiting {
            // Merged by hand, as the printed commands say, branch removed.
            store.set_execution_status(execution, ExecutionStatus::Completed)?;
            by_hand.insert(phase);
        }
    }
    Ok((waiting, by_hand))
}
