//! Why a phase's completed work did not reach the run's branch, in words a person can act
//! on: a conflict for a fix session, or what a human must put right first.

use crate::git::worktree::MergeOutcome;

/// Why a phase's branch is not on the run's branch.
pub(super) enum Unmerged {
    /// Both sides changed the same files: these paths conflicted.
    Conflict(Vec<String>),
    /// It cannot be merged until a human acts: why, and what to do.
    Human(String, Handover),
}

/// What a human does to finish a phase debussy could not merge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Handover {
    /// Merge its branch by hand (the printed commands), then resume.
    MergeByHand,
    /// Put things right as the message says, then resume: debussy merges.
    Resume,
}

impl Unmerged {
    /// Why the merge of `phase_branch` into `run_branch` is held back, when git did not
    /// fail but merged nothing: a conflict, the branch moved, a checkout or an operation
    /// in the way. `None` when nothing is held back (merged, or nothing to merge).
    pub(super) fn held(
        outcome: MergeOutcome,
        run_branch: &str,
        phase_branch: &str,
    ) -> Option<Unmerged> {
        let name = run_branch;
        let nothing = format!(
            "Nothing was merged into {name}; the phase's work is on its branch {phase_branch}"
        );
        let then = "then resume: the phase is merged then";
        let why = match outcome {
            MergeOutcome::Merged { .. } | MergeOutcome::UpToDate => return None,
            MergeOutcome::Conflict(files) => return Some(Unmerged::Conflict(files)),
            MergeOutcome::Moved { expected, found } => {
                let now = found.map_or_else(
                    || "it is gone".to_owned(),
                    |found| format!("it is now at {}", short(&found)),
                );
                format!(
                    "the run's branch {name} moved while the run went on: debussy left it at {}, {now} (a commit, a reset or a deletion not made by debussy). {nothing}. Put {name} where you want it, {then}",
                    short(&expected),
                )
            }
            MergeOutcome::CheckoutBusy { tree, pids } => {
                let pids = pids
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", ");
                format!(
                    "the checkout of {name} at {} is in use by a running git command (process {pids}): a `git commit` waiting for its editor or running a hook, say. {nothing}. Finish or stop that command, {then}",
                    tree.display(),
                )
            }
            MergeOutcome::OperationUnderWay(under_way) => format!(
                "{} of {name} is under way in {}: when it ends, or is aborted, git sets {name} over anything merged into it meanwhile. {nothing}. To go on, {}; {then}",
                under_way.operation,
                under_way.tree.display(),
                under_way.finish,
            ),
            MergeOutcome::CheckoutChanges { tree, paths } => {
                let (files, them) = match paths.len() {
                    1 => ("a file", "it"),
                    _ => ("files", "them"),
                };
                format!(
                    "the merge would overwrite {files} not committed in the checkout of {name} at {}: {}. {nothing}. Commit {them}, or stash {them} (`git stash -u`), {then}",
                    tree.display(),
                    paths.join(", "),
                )
            }
        };
        Some(Unmerged::Human(why, Handover::Resume))
    }
}

/// A commit id as the messages name it.
fn short(id: &str) -> &str {
    id.get(..12).unwrap_or(id)
}
