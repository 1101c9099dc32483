//! Recovery of a run whose debussy died (a SIGKILL, a crash, a power cut): what its killed
//! sessions left in their working trees becomes a `recovered (interrupted)` checkpoint,
//! so `--resume` goes on with one command and no `--allow-dirty`.
//!
//! debussy knows which files were its agent's: the attempts the dead run left running
//! name the tree each worked in (the project's, or the phase's worktree), and nothing
//! but that agent wrote there while it ran. Their changes are committed with a message
//! that lists them, and the phase's next session starts from that checkpoint
//! (`resume.rs`). A worktree in the middle of a merge (a fix session resolving a
//! conflict) is left as it is: the fix session goes on with it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::config::Config;
use crate::plan::Plan;
use crate::state::{ExecutionStatus, RunRecord, Store};

use super::error::RunError;
use crate::git::vcs;

/// The status a recovered checkpoint's commit message gives.
pub const RECOVERED: &str = "recovered (interrupted)";

/// The most files a recovered checkpoint's message lists by name.
const MAX_LISTED: usize = 50;

/// A checkpoint made of a killed session's work.
#[derive(Debug, Clone)]
pub(super) struct Recovered {
    /// The phase whose session it was.
    pub(super) phase: String,
    /// The commit.
    pub(super) commit: String,
    /// Its message's first line.
    pub(super) headline: String,
    /// The files it holds.
    pub(super) files: Vec<String>,
    /// Where `HEAD` was before it.
    pub(super) base: Option<String>,
}

/// Commit what the attempts `run` left running had changed, each in the tree it worked
/// in. Returns the checkpoints made.
///
/// # Errors
/// [`RunError::Recovery`] when a checkpoint cannot be committed (a hook refused it): the
/// work stays in the tree.
pub(super) async fn adopt_killed_work(
    root: &Path,
    store: &Store,
    run: &RunRecord,
    plan: &Plan,
    config: &Config,
) -> Result<Vec<Recovered>, RunError> {
    let mut trees: BTreeMap<String, PathBuf> = BTreeMap::new();
    for execution in store.executions(&run.id)? {
        if execution.status == ExecutionStatus::Interrupted {
            let tree = execution
                .workdir
                .map_or_else(|| root.to_path_buf(), PathBuf::from);
            trees.insert(execution.phase_id, tree);
        } else {
            trees.remove(&execution.phase_id);
        }
    }
    let mut recovered = Vec::new();
    for (phase_id, tree) in trees {
        // In the project's own tree, only on the branch the run commits on: a checkout
        // switched since is the user's, and the resume refuses it.
        let on_branch = if tree == root {
            run.start_branch.clone()
        } else {
            None
        };
        let Some(files) = left_changed(tree.clone(), on_branch.clone()).await else {
            continue;
        };
        let title = plan
            .phases
            .iter()
            .find(|phase| phase.id.as_str() == phase_id)
            .map(|phase| phase.title.clone())
            .unwrap_or_default();
        let base = vcs::head(tree.clone()).await;
        let headline = vcs::commit_message(
            &config.commit_message_template,
            &phase_id,
            &title,
            RECOVERED,
        );
        let message = format!(
            "{headline}\n\ndebussy was stopped (killed or crashed) while a session of this phase ran; these are the files its agent had changed:\n{}",
            listed(&files)
        );
        let commit = match vcs::commit_all(
            tree.clone(),
            message,
            super::parallel::git_cli(config),
            vcs::hook_policy(&config.git),
            on_branch.map(|branch| vcs::OnBranch {
                branch,
                after: None,
            }),
        )
        .await
        {
            Ok(Some(commit)) => commit,
            Ok(None) => continue,
            Err(err) => {
                return Err(RunError::Recovery {
                    tree: tree.display().to_string(),
                    files: listed(&files),
                    why: crate::error_chain::error_chain(&err),
                });
            }
        };
        recovered.push(Recovered {
            phase: phase_id,
            commit: commit.id,
            headline,
            files,
            base: base.map(|oid| oid.to_string()),
        });
    }
    Ok(recovered)
}

/// The files a killed session left changed in `tree`: `None` when there are none, the
/// tree is gone, a merge (or another operation) is under way there, or `HEAD` is not on
/// `branch` (when given).
async fn left_changed(tree: PathBuf, branch: Option<String>) -> Option<Vec<String>> {
    vcs::blocking(move || {
        let repo = crate::git::Repo::discover(&tree).ok()?;
        if repo.operation_in_progress().is_some() {
            return None;
        }
        if let Some(branch) = branch {
            let on_it = matches!(
                repo.head().ok()?,
                crate::git::HeadState::Branch { name, .. } if name == branch
            );
            if !on_it {
                return None;
            }
        }
        let files = repo.uncommitted_files().ok()?;
        (!files.is_empty()).then_some(files)
    })
    .await
}

/// Remove the compaction-guard FIFOs the sessions of a dead run left beside their
/// transcripts (a session removes its own when it ends; a killed one cannot).
pub(super) fn remove_stale_guards(root: &Path, run_id: &str) {
    let run_dir = root.join(".debussy/runs").join(run_id);
    let Ok(phases) = std::fs::read_dir(&run_dir) else {
        return;
    };
    for phase in phases.flatten() {
        let Ok(files) = std::fs::read_dir(phase.path()) else {
            continue;
        };
        for file in files.flatten() {
            let is_fifo = file
                .file_type()
                .is_ok_and(|kind| std::os::unix::fs::FileTypeExt::is_fifo(&kind));
            if is_fifo && file.path().extension().is_some_and(|ext| ext == "guard") {
                let _ = std::fs::remove_file(file.path());
            }
        }
    }
}

/// The files, one per line, at most [`MAX_LISTED`].
fn listed(files: &[String]) -> String {
    let mut lines: Vec<String> = files
        .iter()
        .take(MAX_LISTED)
        .map(|file| format!("  {file}"))
        .collect();
    if files.len() > MAX_LISTED {
        lines.push(format!("  … and {} more", files.len() - MAX_LISTED));
    }
    lines.join("\n")
}
