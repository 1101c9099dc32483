//! A phase running in its own worktree: entering it, and bringing its completed work
//! back to the run's branch: the merge (one at a time, in completion order), the
//! remediation session that resolves a conflict, and the hand-over to a human when
//! that fails.

use std::path::PathBuf;
use std::time::Instant;

use crate::events::{AttemptKind, Event, PhaseSummary};
use crate::plan::Phase;
use crate::state::{ExecutionEnd, ExecutionStatus};

use super::attempt::AttemptEnd;
use super::phase::PhaseResult;
use super::prompts;
use super::runner::Runner;
use super::selection::Standing;
use super::validate::Validation;
use super::vcs::{self, blocking};
use super::worktree::{self, MergeOutcome, Worktree};

/// Why a phase's branch is not on the run's branch.
enum Unmerged {
    /// Both sides changed the same lines of these files.
    Conflict(Vec<String>),
    /// Git failed otherwise, in its words.
    Git(String),
}

/// How resolving a conflict in the worktree went.
enum Resolution {
    /// Resolved, committed, and the gates pass.
    Resolved,
    /// The user interrupted (or skipped) it; the merge in the worktree was abandoned.
    Stopped,
    /// It could not be resolved: why.
    Failed(String),
}

impl Runner<'_> {
    /// Work in `worktree` from now on, making it (or reusing the one a paused run left).
    ///
    /// # Errors
    /// Git's words when the worktree cannot be made.
    pub(crate) async fn enter_worktree(
        &mut self,
        worktree: Worktree,
        run_branch: &str,
    ) -> Result<(), String> {
        self.pool
            .enter(&self.root, &worktree, run_branch)
            .await
            .map_err(|err| format!("could not make the phase's worktree: {err}"))?;
        self.workdir.clone_from(&worktree.path);
        self.worktree = Some(worktree);
        Ok(())
    }

    /// A completed phase of an earlier invocation whose branch was not merged: merge it
    /// now (the user may have merged it by hand meanwhile).
    pub(crate) async fn settle_merge(
        &mut self,
        phase: &Phase,
        execution: i64,
        run_branch: &str,
        position: (usize, usize),
    ) -> PhaseResult {
        let id = phase.id.as_str().to_owned();
        let worktree = Worktree::of(&self.root, &self.run_id, &id);
        let result = PhaseResult {
            standing: Standing::Completed,
            error: None,
            summary: PhaseSummary {
                id: id.clone(),
                title: phase.title.clone(),
                status: Standing::Completed.state(),
                ..PhaseSummary::default()
            },
            execution: Some(execution),
        };
        let (root, branch) = (self.root.clone(), worktree.branch.clone());
        if blocking(move || worktree::is_merged(&root, &branch)).await {
            self.worktree = Some(worktree);
            self.remove_worktree().await;
            if let Err(err) = self
                .store
                .set_execution_status(execution, ExecutionStatus::Completed)
            {
                self.warn(format!("could not record the merge: {err}"));
            }
            return self.conclude(phase, result, Standing::Completed, None);
        }
        if let Err(error) = self.enter_worktree(worktree, run_branch).await {
            return self.conclude(phase, result, Standing::AwaitingHuman, Some(error));
        }
        self.integrate(phase, result, run_branch, position).await
    }

    /// Merge the completed phase's branch into the run's branch; on a conflict, one
    /// remediation session in the worktree resolves it, the gates run again, and the
    /// merge is tried once more. What cannot be merged is left to a human.
    /// `position` is the phase's place in the plan's order and the number of phases.
    pub(crate) async fn integrate(
        &mut self,
        phase: &Phase,
        result: PhaseResult,
        run_branch: &str,
        position: (usize, usize),
    ) -> PhaseResult {
        let Some(worktree) = self.worktree.clone() else {
            return result;
        };
        let files = match self.merge_into_run(phase, &worktree).await {
            Ok(()) => {
                self.remove_worktree().await;
                return self.conclude(phase, result, Standing::Completed, None);
            }
            Err(Unmerged::Git(why)) => return self.awaiting_human(phase, result, &why),
            Err(Unmerged::Conflict(files)) => files,
        };
        self.emit(Event::MergeConflict {
            phase_id: phase.id.as_str().to_owned(),
            branch: worktree.branch.clone(),
            files: files.clone(),
        });
        let attempt = result.summary.attempts + 1;
        match self
            .resolve_conflicts(phase, &worktree, run_branch, attempt, position)
            .await
        {
            Resolution::Resolved => {}
            Resolution::Stopped => {
                self.mark_unmerged(result.execution);
                let standing = if self.flags.skip_requested {
                    Standing::Dropped("skipped by user".into())
                } else {
                    Standing::Paused
                };
                return self.conclude(phase, result, standing, None);
            }
            Resolution::Failed(why) => {
                let why = format!(
                    "merging its branch conflicted in {} and the remediation session did not resolve it: {why}",
                    files.join(", ")
                );
                return self.awaiting_human(phase, result, &why);
            }
        }
        match self.merge_into_run(phase, &worktree).await {
            Ok(()) => {
                self.remove_worktree().await;
                self.conclude(phase, result, Standing::Completed, None)
            }
            Err(Unmerged::Conflict(files)) => {
                let why = format!(
                    "its branch conflicted again with the run's branch in {}",
                    files.join(", ")
                );
                self.awaiting_human(phase, result, &why)
            }
            Err(Unmerged::Git(why)) => self.awaiting_human(phase, result, &why),
        }
    }

    /// Merge the phase's branch into the run's branch, after the merges before it.
    async fn merge_into_run(&mut self, phase: &Phase, worktree: &Worktree) -> Result<(), Unmerged> {
        let message = vcs::commit_message(
            &self.config.merge_message_template,
            phase.id.as_str(),
            &phase.title,
            "merged",
        );
        let outcome = self
            .pool
            .merge(
                &self.root,
                &worktree.branch,
                message,
                self.config.git.run_hooks,
            )
            .await;
        match outcome {
            Ok(MergeOutcome::Merged {
                commit,
                fast_forward,
            }) => {
                self.emit(Event::Merged {
                    phase_id: phase.id.as_str().to_owned(),
                    branch: worktree.branch.clone(),
                    commit: commit.clone(),
                    fast_forward,
                });
                // A fast-forward brings commits the run has already counted.
                if !fast_forward {
                    self.summary.commits.push(commit);
                }
                Ok(())
            }
            Ok(MergeOutcome::UpToDate) => Ok(()),
            Ok(MergeOutcome::Conflict(files)) => Err(Unmerged::Conflict(files)),
            Err(err) => Err(Unmerged::Git(err.to_string())),
        }
    }

    /// Merge the run's branch into the worktree and have a remediation session resolve
    /// the conflicts; conclude the merge and run the gates again.
    async fn resolve_conflicts(
        &mut self,
        phase: &Phase,
        worktree: &Worktree,
        run_branch: &str,
        attempt: u32,
        (index, total): (usize, usize),
    ) -> Resolution {
        let id = phase.id.as_str().to_owned();
        let message = format!("debussy: merge {run_branch} into phase {id}");
        let (path, branch) = (worktree.path.clone(), run_branch.to_owned());
        let files =
            match blocking(move || worktree::merge_into_worktree(&path, &branch, &message)).await {
                Ok(files) => files,
                Err(err) => return Resolution::Failed(err.to_string()),
            };
        let execution = match self.store.start_execution(
            &self.run_id,
            &id,
            attempt,
            true,
            Some(&worktree.path.display().to_string()),
        ) {
            Ok(execution) => execution,
            Err(err) => {
                self.abort_worktree_merge(worktree).await;
                return Resolution::Failed(format!("could not record the attempt: {err}"));
            }
        };
        self.emit(Event::PhaseStarted {
            phase_id: id.clone(),
            title: phase.title.clone(),
            index,
            total,
            attempt,
            max_attempts: attempt,
            kind: AttemptKind::Remediation,
        });
        let base = vcs::head(self.workdir.clone()).await;
        let (end, tally) = if files.is_empty() {
            (AttemptEnd::Done, super::attempt::AttemptTally::default())
        } else {
            let prompt = prompts::merge_conflict_prompt(phase, run_branch, &files);
            self.run_attempt(phase, attempt, execution, &prompt, false, base)
                .await
        };
        self.count(&tally);
        let mut outcome = match end {
            AttemptEnd::Done => None,
            AttemptEnd::Interrupted | AttemptEnd::Skipped => Some(Resolution::Stopped),
            AttemptEnd::Blocked(why) | AttemptEnd::Failed(why) | AttemptEnd::Fatal(why) => {
                Some(Resolution::Failed(why))
            }
        };
        let mut commit = None;
        if outcome.is_none() {
            let (path, hooks) = (worktree.path.clone(), self.config.git.run_hooks);
            let marked = files.clone();
            outcome = match blocking(move || {
                let left = worktree::files_with_markers(&path, &marked);
                if left.is_empty() {
                    worktree::conclude_merge(&path, hooks).map_err(|err| err.to_string())
                } else {
                    Err(format!("conflict markers remain in {}", left.join(", ")))
                }
            })
            .await
            {
                Ok(id) => {
                    commit = Some(id);
                    None
                }
                Err(why) => Some(Resolution::Failed(why)),
            };
        }
        if outcome.is_none() {
            let gates = self.gate_specs(phase);
            outcome = match self
                .validate(phase, attempt, execution, &gates, &tally)
                .await
            {
                Validation::Interrupted | Validation::Skipped => Some(Resolution::Stopped),
                Validation::Judged { verdict, .. } if verdict.accepts() => None,
                Validation::Judged { verdict, .. } => Some(Resolution::Failed(format!(
                    "after resolving: {}",
                    verdict
                        .findings()
                        .iter()
                        .map(|f| f.problem.clone())
                        .collect::<Vec<_>>()
                        .join("; ")
                ))),
            };
        }
        let outcome = outcome.unwrap_or(Resolution::Resolved);
        if !matches!(outcome, Resolution::Resolved) {
            self.abort_worktree_merge(worktree).await;
        }
        let (status, error) = match &outcome {
            Resolution::Resolved => (ExecutionStatus::Completed, None),
            Resolution::Stopped => (ExecutionStatus::Paused, None),
            Resolution::Failed(why) => (ExecutionStatus::Failed, Some(why.clone())),
        };
        let end = ExecutionEnd {
            status,
            restarts: tally.restarts,
            outcome_code: tally.last_code.map(i64::from),
            billed: tally.billed,
            cost_usd: tally.cost_usd,
            cost_estimated: tally.cost_estimated,
            commit_id: commit,
            error,
        };
        if let Err(err) = self.store.finish_execution(execution, &end) {
            self.warn(format!("could not record the attempt's end: {err}"));
        }
        outcome
    }

    async fn abort_worktree_merge(&self, worktree: &Worktree) {
        let path = worktree.path.clone();
        blocking(move || worktree::abort_merge(&path)).await;
    }

    /// The phase is merged: its branch goes, its worktree is kept for a later phase (or
    /// removed); a warning when git refuses.
    pub(crate) async fn remove_worktree(&mut self) {
        let Some(worktree) = self.worktree.clone() else {
            return;
        };
        if let Err(err) = self.pool.retire(&self.root, &worktree).await {
            self.warn(format!(
                "could not remove the worktree {} of phase {}: {err}; `debussy clean` removes it",
                worktree.path.display(),
                worktree.branch
            ));
        }
    }

    /// The completed work cannot be merged without a human: keep the worktree and the
    /// branch, and say exactly how to finish.
    fn awaiting_human(&mut self, phase: &Phase, result: PhaseResult, why: &str) -> PhaseResult {
        self.mark_unmerged(result.execution);
        let (branch, path) = self.worktree.as_ref().map_or_else(
            || (String::new(), PathBuf::new()),
            |wt| (wt.branch.clone(), wt.path.clone()),
        );
        let worktree = Worktree {
            path,
            branch: branch.clone(),
        };
        let error = format!(
            "{why}. Its work is on branch {branch}, in the kept worktree {}. To finish by hand:\n  {}",
            worktree.path.display(),
            worktree::finish_by_hand(
                &self.root,
                &worktree,
                &format!("debussy run {} --resume", self.plan.master.display())
            )
        );
        self.conclude(phase, result, Standing::AwaitingHuman, Some(error))
    }

    /// Record that the phase's completed attempt is not merged, so `--resume` merges it
    /// instead of taking it as done.
    fn mark_unmerged(&mut self, execution: Option<i64>) {
        if let Some(execution) = execution
            && let Err(err) = self
                .store
                .set_execution_status(execution, ExecutionStatus::AwaitingHuman)
        {
            self.warn(format!("could not record the unmerged phase: {err}"));
        }
    }

    /// Where the phase ends up after its merge (or the attempt at one), said once.
    fn conclude(
        &mut self,
        phase: &Phase,
        mut result: PhaseResult,
        standing: Standing,
        error: Option<String>,
    ) -> PhaseResult {
        result.summary.status = standing.state();
        self.emit(Event::PhaseFinished {
            phase_id: phase.id.as_str().to_owned(),
            status: standing.state(),
            attempts: result.summary.attempts,
            restarts: result.summary.restarts,
            error: error.clone(),
        });
        result.standing = standing;
        result.error = error;
        result
    }
}

/// A failure before the phase's first attempt (its worktree could not be made).
pub(crate) fn not_started(runner: &mut Runner<'_>, phase: &Phase, error: String) -> PhaseResult {
    let tally = super::attempt::AttemptTally::default();
    runner.finish(
        phase,
        Standing::Failed,
        Some(error),
        0,
        &tally,
        Instant::now(),
    )
}
