//! A phase running in its own worktree: entering it, and bringing its completed work
//! back to the run's branch: its commits secured on its branch, the merge (one at a
//! time, in completion order), the fix session that resolves a conflict, and the
//! hand-over to a human when that fails.

use std::path::PathBuf;
use std::time::Instant;

use crate::events::{AttemptKind, Event, PhaseSummary};
use crate::git::vcs;
use crate::plan::Phase;
use crate::state::{ExecutionEnd, ExecutionStatus};

use super::ending::AttemptEnd;
use super::phase::PhaseResult;
use super::prompts;
use super::runner::Runner;
use super::selection::Standing;
use super::unmerged::{Handover, Unmerged};
use super::validate::Validation;
use crate::git::worktree::{self, MergeOutcome, MergeState, Worktree};

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
    /// Work in `worktree` from now on, making it (or reusing the one a paused run left):
    /// in the project's directory there, which is the worktree itself unless the project
    /// is a directory of its repository (a monorepo).
    ///
    /// # Errors
    /// Git's words when the worktree cannot be made.
    pub(crate) async fn enter_worktree(
        &mut self,
        worktree: Worktree,
        run_branch: &str,
    ) -> Result<(), String> {
        if let Err(err) = self.run.pool.enter(&worktree, run_branch).await {
            // On a full disk the run pauses ([`not_started`]).
            self.out_of_space("make the phase's worktree", &err);
            return Err(format!("could not make the phase's worktree: {err}"));
        }
        let project = self.run.pool.project_in(&worktree).await;
        // A project directory holding nothing git tracks is not in a new worktree.
        if let Err(err) = std::fs::create_dir_all(&project) {
            self.out_of_space("make the project's directory in the phase's worktree", &err);
            return Err(format!(
                "could not make the project's directory {} in the phase's worktree: {err}",
                project.display()
            ));
        }
        self.workdir = project;
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
        let worktree = Worktree::of(&self.run.root, &self.run.run_id, &id);
        // A fix session after the attempts recorded so far gets the next number.
        let attempts = self
            .run
            .store
            .executions(&self.run.run_id)
            .unwrap_or_default()
            .iter()
            .filter(|execution| execution.phase_id == id)
            .map(|execution| execution.attempt)
            .max()
            .unwrap_or(0);
        let result = PhaseResult {
            standing: Standing::Completed,
            error: None,
            summary: PhaseSummary {
                id: id.clone(),
                title: phase.title.clone(),
                status: Standing::Completed.state(),
                attempts,
                ..PhaseSummary::default()
            },
            execution: Some(execution),
        };
        let git = *self.run.pool.git();
        let merged = match worktree::tip_of(&git, &self.run.root, &worktree.branch).await {
            Some(tip) => {
                git.succeeds(
                    &self.run.root,
                    &[
                        "merge-base",
                        "--is-ancestor",
                        &tip,
                        &format!("refs/heads/{run_branch}"),
                    ],
                )
                .await
            }
            None => false,
        };
        if merged {
            self.worktree = Some(worktree);
            self.remove_worktree().await;
            self.mark_merged(Some(execution));
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
        // A fix session killed mid-merge left its merge of the run's branch: it goes on.
        let continuing = self.merge_left_in_worktree(&worktree).await;
        let files = match &continuing {
            Some(files) => files.clone(),
            None => match self
                .secure_and_merge(phase, &worktree, result.execution)
                .await
            {
                Ok(()) => {
                    self.mark_merged(result.execution);
                    self.remove_worktree().await;
                    return self.conclude(phase, result, Standing::Completed, None);
                }
                // No room to merge: the branch waits for the resume, which merges it.
                Err(Unmerged::Human(..)) if self.pausing() => {
                    self.mark_unmerged(result.execution);
                    return self.conclude(phase, result, Standing::Paused, None);
                }
                Err(Unmerged::Human(why, how)) => {
                    return self.awaiting_human(phase, result, &why, how);
                }
                Err(Unmerged::Conflict(files)) => files,
            },
        };
        self.emit(Event::MergeConflict {
            phase_id: phase.id.as_str().to_owned(),
            branch: worktree.branch.clone(),
            files: files.clone(),
        });
        let attempt = result.summary.attempts + 1;
        match self
            .resolve_conflicts(
                phase,
                &worktree,
                run_branch,
                attempt,
                position,
                continuing.is_some(),
            )
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
                    "merging its branch conflicted in {} and the merge fix did not resolve it: {why}",
                    files.join(", ")
                );
                return self.awaiting_human(phase, result, &why, Handover::MergeByHand);
            }
        }
        match self
            .secure_and_merge(phase, &worktree, result.execution)
            .await
        {
            Ok(()) => {
                self.mark_merged(result.execution);
                self.remove_worktree().await;
                self.conclude(phase, result, Standing::Completed, None)
            }
            Err(Unmerged::Conflict(files)) => {
                let why = format!(
                    "its branch conflicted again with the run's branch in {}",
                    files.join(", ")
                );
                self.awaiting_human(phase, result, &why, Handover::MergeByHand)
            }
            Err(Unmerged::Human(why, how)) => self.awaiting_human(phase, result, &why, how),
        }
    }

    /// The conflicted paths of the merge of the run's branch a fix session left in the
    /// worktree, to go on with; any other merge left there is abandoned.
    async fn merge_left_in_worktree(&mut self, worktree: &Worktree) -> Option<Vec<String>> {
        let git = *self.run.pool.git();
        let MergeState::InProgress { merge_head } =
            worktree::merge_state(&git, &worktree.path).await
        else {
            return None;
        };
        let run_tip = self.run.pool.run_branch().map(|run| run.tip);
        if run_tip.as_deref() == Some(merge_head.as_str()) {
            return Some(worktree::unmerged_paths(&git, &worktree.path).await);
        }
        worktree::abort_merge(&git, &worktree.path).await;
        None
    }

    /// Secure the phase's commits on its branch, then merge it into the run's branch.
    async fn secure_and_merge(
        &mut self,
        phase: &Phase,
        worktree: &Worktree,
        execution: Option<i64>,
    ) -> Result<(), Unmerged> {
        let since = self.phase_started(phase.id.as_str());
        let salvaged = self
            .run
            .pool
            .secure(worktree, since)
            .await
            .map_err(|unsaved| {
                Unmerged::Human(
                    format!(
                        "{unsaved}. Nothing was merged; the worktree {} and its branch {} are kept",
                        worktree.path.display(),
                        worktree.branch
                    ),
                    Handover::Resume,
                )
            })?;
        for note in &salvaged.notes {
            self.warn(format!("phase {}: {note}", phase.id.as_str()));
        }
        if let Some(execution) = execution
            && let Err(err) = self
                .run
                .store
                .set_execution_branch_tip(execution, &salvaged.tip)
        {
            self.could_not("record the phase's branch tip", &err);
        }
        self.merge_into_run(phase, worktree).await
    }

    /// Merge the phase's branch into the run's branch, after the merges before it.
    async fn merge_into_run(&mut self, phase: &Phase, worktree: &Worktree) -> Result<(), Unmerged> {
        let message = vcs::commit_message(
            &self.run.config.merge_message_template,
            phase.id.as_str(),
            &phase.title,
            "merged",
        );
        let outcome = self
            .run
            .pool
            .merge(&worktree.branch, message, self.run.config.git.run_hooks)
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
            Ok(held) => Unmerged::held(held, &self.run.pool.run_branch_name(), &worktree.branch)
                .map_or(Ok(()), Err),
            Err(err) => {
                // On a full disk the run pauses instead ([`Self::integrate`]).
                self.out_of_space("merge the phase's branch", &err);
                Err(Unmerged::Human(err.to_string(), Handover::MergeByHand))
            }
        }
    }

    /// Merge the run's branch into the worktree (or go on with that merge, left by a
    /// killed fix session) and have a remediation session resolve the conflicts;
    /// conclude the merge once git's index says every path is settled, and run the gates
    /// again.
    async fn resolve_conflicts(
        &mut self,
        phase: &Phase,
        worktree: &Worktree,
        run_branch: &str,
        attempt: u32,
        (index, total): (usize, usize),
        continuing: bool,
    ) -> Resolution {
        let id = phase.id.as_str().to_owned();
        let git = *self.run.pool.git();
        let Some(run_tip) = self.run.pool.run_branch().map(|run| run.tip) else {
            return Resolution::Failed("the run has no branch to merge into".into());
        };
        let files = if continuing {
            worktree::unmerged_paths(&git, &worktree.path).await
        } else {
            let message = format!("debussy: merge {run_branch} into phase {id}");
            match worktree::merge_into_worktree(&git, &worktree.path, &run_tip, &message).await {
                Ok(files) => files,
                Err(err) => return Resolution::Failed(err.to_string()),
            }
        };
        let conflicts = vcs::conflicts_in(worktree.path.clone())
            .await
            .unwrap_or_default();
        let execution = match self.run.store.start_execution(
            &self.run.run_id,
            &id,
            attempt,
            true,
            Some(&worktree.path.display().to_string()),
        ) {
            Ok(execution) => execution,
            Err(err) => {
                self.abort_worktree_merge(worktree).await;
                if self.out_of_space("record the attempt", &err) {
                    return Resolution::Stopped;
                }
                return Resolution::Failed(format!(
                    "could not record the attempt: {}",
                    crate::error_chain::error_chain(&err)
                ));
            }
        };
        self.emit(Event::PhaseStarted {
            phase_id: id.clone(),
            title: phase.title.clone(),
            index,
            total,
            attempt,
            max_attempts: attempt,
            kind: AttemptKind::MergeFix,
        });
        let base = vcs::head(self.workdir.clone()).await;
        let (end, tally) = if files.is_empty() {
            (AttemptEnd::Done, super::attempt::AttemptTally::default())
        } else {
            let place = self.run.pool.project_place().await;
            let prompt =
                prompts::merge_conflict_prompt(phase, run_branch, &files, &conflicts, place);
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
            outcome = match worktree::conclude_merge(
                &git,
                &worktree.path,
                &run_tip,
                &files,
                self.run.config.git.run_hooks,
            )
            .await
            {
                Ok(id) => {
                    commit = Some(id);
                    None
                }
                Err(unsettled) => Some(Resolution::Failed(unsettled.to_string())),
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
        if let Err(err) = self.run.store.finish_execution(execution, &end) {
            self.could_not("record the attempt's end", &err);
        }
        outcome
    }

    async fn abort_worktree_merge(&self, worktree: &Worktree) {
        worktree::abort_merge(self.run.pool.git(), &worktree.path).await;
    }

    /// The phase is merged: its branch goes, its worktree is kept for a later phase (or
    /// removed); a warning when git refuses.
    pub(crate) async fn remove_worktree(&mut self) {
        let Some(worktree) = self.worktree.clone() else {
            return;
        };
        if let Err(err) = self.run.pool.retire(&worktree).await {
            self.warn(format!(
                "could not remove the worktree {} of phase {}: {err}; `debussy clean` removes it",
                worktree.path.display(),
                worktree.branch
            ));
        }
    }

    /// The completed work cannot be merged without a human: keep the worktree and the
    /// branch, and say exactly how to finish.
    fn awaiting_human(
        &mut self,
        phase: &Phase,
        result: PhaseResult,
        why: &str,
        how: Handover,
    ) -> PhaseResult {
        self.mark_unmerged(result.execution);
        let (branch, path) = self.worktree.as_ref().map_or_else(
            || (String::new(), PathBuf::new()),
            |wt| (wt.branch.clone(), wt.path.clone()),
        );
        let worktree = Worktree {
            path,
            branch: branch.clone(),
        };
        let resume = worktree::resume_command(&self.run.plan.master);
        let error = match how {
            Handover::MergeByHand => {
                let run_branch = self.run.pool.run_branch_name();
                let checkout = crate::git::Repo::discover(&self.run.root)
                    .and_then(|repo| repo.checkout_of(&run_branch))
                    .ok()
                    .flatten();
                format!(
                    "{why}. Its work is on branch {branch}, in the kept worktree {}. To finish by hand:\n  {}",
                    worktree.path.display(),
                    worktree::finish_by_hand(
                        &self.run.root,
                        checkout.as_deref(),
                        &worktree,
                        &run_branch,
                        &resume
                    )
                )
            }
            Handover::Resume => format!("{why}. Then: {resume}"),
        };
        self.conclude(phase, result, Standing::AwaitingHuman, Some(error))
    }

    /// Record that the phase's completed attempt is merged: it is completed now.
    fn mark_merged(&mut self, execution: Option<i64>) {
        self.mark(execution, ExecutionStatus::Completed, "record the merge");
    }

    /// Record that the phase's completed attempt is not merged, so `--resume` merges it
    /// instead of taking it as done.
    fn mark_unmerged(&mut self, execution: Option<i64>) {
        self.mark(
            execution,
            ExecutionStatus::AwaitingHuman,
            "record the unmerged phase",
        );
    }

    /// Set the status of the recorded attempt `execution`, if there is one; a failure is
    /// a warning that debussy could not `what`.
    fn mark(&self, execution: Option<i64>, status: ExecutionStatus, what: &str) {
        if let Some(execution) = execution
            && let Err(err) = self.run.store.set_execution_status(execution, status)
        {
            self.could_not(what, &err);
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

/// A failure before the phase's first attempt (its worktree could not be made); on a
/// full disk, a pause.
pub(crate) fn not_started(runner: &mut Runner<'_>, phase: &Phase, error: String) -> PhaseResult {
    let tally = super::attempt::AttemptTally::default();
    let (standing, error) = if runner.pausing() {
        (Standing::Paused, None)
    } else {
        (Standing::Failed, Some(error))
    };
    runner.finish(phase, standing, error, 0, &tally, Instant::now())
}
