//! What phases running side by side need before the run starts: a repository they can
//! branch from (with no submodule, whose work a worktree cannot keep), and, on
//! `--resume`, which completed phases still wait for their merge, checked in the
//! repository: a phase is merged when its work is in the run's branch, whether or not
//! its branch is still there.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::config::Config;
use crate::git::GitCli;
use crate::plan::Plan;
use crate::state::{ExecutionStatus, Store};

use super::error::RunError;
use crate::git::worktree::{self, Worktree};

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
    let git = git_cli(config);
    let head = git.run(root, &["rev-parse", "--verify", "HEAD"]).await;
    let mut untracked = Vec::new();
    for file in plan_files(plan) {
        let tracked = git
            .succeeds(
                root,
                &["ls-files", "--error-unmatch", &file.to_string_lossy()],
            )
            .await;
        if !tracked {
            untracked.push(
                file.strip_prefix(root)
                    .unwrap_or(&file)
                    .display()
                    .to_string(),
            );
        }
    }
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
    let blocking = worktree::BRANCH_PREFIX.trim_end_matches('/');
    if worktree::branch_exists(&git, root, blocking).await {
        return Err(fail(
            format!(
                "a branch named {blocking} exists: phases running side by side work on branches named {}<run>/phase-<id>, which git cannot make beside it",
                worktree::BRANCH_PREFIX
            ),
            &format!(
                "rename it (`git branch -m {blocking} <new name>`), or run one phase at a time with --jobs 1"
            ),
        ));
    }
    let submodules = submodules(&git, root).await;
    if !submodules.is_empty() {
        return Err(fail(
            format!(
                "the repository has submodules ({}): a phase's worktree cannot keep work made inside one (its commits would live only in that worktree, and go with it), so phases cannot run side by side here",
                submodules.join(", ")
            ),
            "run one phase at a time with --jobs 1",
        ));
    }
    Ok(branch)
}

/// How the run runs git: with the configured time limit per command.
pub(super) fn git_cli(config: &Config) -> GitCli {
    GitCli::new(config.git.timeout.duration())
}

/// The submodules (gitlinks) the index of `root` holds, and `.gitmodules` if it exists.
async fn submodules(git: &GitCli, root: &Path) -> Vec<String> {
    let mut found: Vec<String> = git
        .run(root, &["ls-files", "--stage"])
        .await
        .unwrap_or_default()
        .lines()
        .filter(|line| line.starts_with("160000 "))
        .filter_map(|line| line.split_once('\t').map(|(_, path)| path.to_owned()))
        .collect();
    if found.is_empty() && root.join(".gitmodules").is_file() {
        found.push(".gitmodules".to_owned());
    }
    found
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
    let branch = crate::git::vcs::preflight(root.clone(), true).await.ok();
    check(&root, plan, config, branch).await
}

/// Refuse to resume `run_id` one phase at a time when its phases ran side by side and
/// left work on their branches: that work would be run again instead of merged.
///
/// # Errors
/// [`RunError::Parallel`] naming the branches.
pub(super) async fn no_worktrees_left(
    git: &GitCli,
    root: &Path,
    run_id: &str,
) -> Result<(), RunError> {
    let prefix = format!("{}{run_id}/", worktree::BRANCH_PREFIX);
    let branches: Vec<String> = worktree::leftovers(git, root)
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

/// Where the completed phases of a resumed run stand with their merge.
#[derive(Debug, Default)]
pub(super) struct Unmerged {
    /// Phases whose work is not on the run's branch yet, with the attempt that
    /// completed them: merged before anything else.
    pub(super) waiting: BTreeMap<String, i64>,
    /// Phases a human merged since (as the printed commands say): completed now.
    pub(super) by_hand: BTreeSet<String>,
    /// Phases whose work is gone (branch deleted before its merge, its last commit no
    /// longer in the repository): they run again.
    pub(super) lost: BTreeSet<String>,
    /// What the user should be told.
    pub(super) warnings: Vec<String>,
}

/// The phases of `run_id` whose completed work is not on `run_branch` yet. Whether it
/// is there is asked of the repository, from the phase branch's tip (or, when the branch
/// is gone, the tip recorded when the phase completed), never assumed from a branch that
/// is missing: a branch deleted before its merge is made again from its recorded tip.
///
/// # Errors
/// On state store failure.
pub(super) async fn unmerged(
    git: &GitCli,
    root: &Path,
    store: &Store,
    run_id: &str,
    run_branch: &str,
) -> Result<Unmerged, RunError> {
    let mut latest: BTreeMap<String, (i64, ExecutionStatus)> = BTreeMap::new();
    let mut tips: BTreeMap<String, String> = BTreeMap::new();
    for execution in store.executions(run_id)? {
        if let Some(tip) = execution.branch_tip {
            tips.insert(execution.phase_id.clone(), tip);
        }
        if matches!(
            execution.status,
            ExecutionStatus::Completed | ExecutionStatus::Merging | ExecutionStatus::AwaitingHuman
        ) {
            latest.insert(execution.phase_id, (execution.id, execution.status));
        }
    }
    let target = format!("refs/heads/{run_branch}");
    let mut found = Unmerged::default();
    for (phase, (execution, status)) in latest {
        let recorded = tips.remove(&phase);
        let branch = Worktree::of(root, run_id, &phase).branch;
        let current = worktree::tip_of(git, root, &branch).await;
        let tip = current.clone().or(recorded);
        let merged = match &tip {
            Some(tip) => {
                git.succeeds(root, &["merge-base", "--is-ancestor", tip, &target])
                    .await
            }
            None => false,
        };
        let awaiting = status != ExecutionStatus::Completed;
        match (current.is_some(), merged) {
            // Its worktree and branch are still there: merged (or retired) first thing.
            (true, _) => {
                found.waiting.insert(phase, execution);
            }
            (false, true) => {
                if awaiting {
                    // Merged (by hand, as the printed commands say), branch removed.
                    store.set_execution_status(execution, ExecutionStatus::Completed)?;
                    found.by_hand.insert(phase);
                }
            }
            (false, false) => {
                let revived = match &tip {
                    Some(tip) => git.run(root, &["branch", &branch, tip]).await.is_ok(),
                    None => false,
                };
                if revived {
                    found.warnings.push(format!(
                        "the branch {branch} of phase {phase} was deleted before its work was merged; made it again from its last commit {} and merging it",
                        tip.as_deref().map_or("", |t| t.get(..12).unwrap_or(t))
                    ));
                    found.waiting.insert(phase, execution);
                } else {
                    let why = format!(
                        "its branch {branch} was deleted before its work was merged, and its last commit is not in the repository any more"
                    );
                    store.set_execution_status(execution, ExecutionStatus::Failed)?;
                    found
                        .warnings
                        .push(format!("phase {phase}: {why}; it runs again"));
                    found.lost.insert(phase);
                }
            }
        }
    }
    Ok(found)
}
