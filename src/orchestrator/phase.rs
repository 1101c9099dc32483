//! One phase: its attempts, the validation after each (gates, then compliance), and the
//! commit that records the result.

use std::time::Instant;

use crate::compliance::{Finding, Severity, Verdict};
use crate::events::{AttemptKind, Event, NoRestart, PhaseSummary};
use crate::plan::Phase;
use crate::state::{ExecutionEnd, ExecutionStatus};

use super::attempt::AttemptTally;
use super::ending::AttemptEnd;
use super::prompts::{self, PromptGate};
use super::resume::{Stage, StoppedAttempt};
use super::runner::Runner;
use super::selection::Standing;
use super::validate::Validation;
use crate::git::vcs;

/// How a phase ended in this run.
pub(crate) struct PhaseResult {
    pub(crate) standing: Standing,
    pub(crate) error: Option<String>,
    pub(crate) summary: PhaseSummary,
    /// The attempt that ended it (the completed one, for a completed phase).
    pub(crate) execution: Option<i64>,
}

/// What the next attempt is.
struct NextAttempt {
    kind: AttemptKind,
    prompt: String,
}

impl Runner<'_> {
    pub(crate) async fn run_phase(
        &mut self,
        phase: &Phase,
        index: usize,
        total: usize,
    ) -> PhaseResult {
        let started = Instant::now();
        let id = phase.id.as_str().to_owned();
        self.flags.skip_requested = false;
        let phase_spent = match self.run.store.totals(&self.run.run_id, Some(&id)) {
            Ok(totals) => totals.cost_usd,
            Err(err) => {
                self.could_not(&format!("read what phase {id} cost so far"), &err);
                0.0
            }
        };
        self.guards.enter_phase(&id, phase_spent);
        // A wait for a usage limit that a killed run left recorded is over.
        if let Err(err) = self.run.store.set_limit_wait(&self.run.run_id, &id, None) {
            self.could_not("record the end of a wait", &err);
        }
        // A phase the stopped run is resumed in started where that run's attempt did and
        // goes on with that attempt; one whose agent had said it was done goes on with
        // its gates.
        let resumed = self.resume_point.as_ref().filter(|point| point.phase == id);
        let mut agent_done = resumed.is_some_and(|point| point.stage == Stage::Done);
        let stopped = resumed.map(|point| point.attempt.clone());
        let base = match resumed.and_then(|point| point.base) {
            Some(base) => Some(base),
            None => vcs::head(self.workdir.clone()).await,
        };
        if agent_done {
            self.resume_point = None;
        }
        let gates = self.gate_specs(phase);
        let prompt_gates: Vec<PromptGate> = gates
            .iter()
            .map(|g| PromptGate {
                name: g.name.clone(),
                command: g.command.clone(),
            })
            .collect();
        let phase_prompt =
            prompts::phase_prompt(self.run.plan, phase, &prompt_gates, &self.run.root);
        let first_attempt = stopped.as_ref().map_or(1, |attempt| attempt.number);
        let max_attempts = (self.run.config.max_retries + 1).max(first_attempt);
        let mut next = match stopped {
            Some(ref attempt) => self.going_on_with(&id, attempt, &phase_prompt),
            None => NextAttempt {
                kind: AttemptKind::First,
                prompt: phase_prompt.clone(),
            },
        };
        // The restarts taken before the stop are the phase's too.
        let mut tally = AttemptTally {
            restarts: stopped.as_ref().map_or(0, |attempt| attempt.phase_restarts),
            ..AttemptTally::default()
        };
        let mut attempts = first_attempt;
        let mut carried = stopped;
        let mut last_error = None;

        for attempt in first_attempt..=max_attempts {
            attempts = attempt;
            self.emit(Event::PhaseStarted {
                phase_id: id.clone(),
                title: phase.title.clone(),
                index,
                total,
                attempt,
                max_attempts,
                kind: next.kind,
            });
            let workdir = self
                .worktree
                .as_ref()
                .map(|worktree| worktree.path.display().to_string());
            let execution = match self.run.store.start_execution(
                &self.run.run_id,
                &id,
                attempt,
                next.kind == AttemptKind::Remediation,
                workdir.as_deref(),
            ) {
                Ok(execution) => execution,
                Err(err) => {
                    let (standing, error) = if self.out_of_space("record the attempt", &err) {
                        (Standing::Paused, None)
                    } else {
                        let cause = crate::error_chain::error_chain(&err);
                        (
                            Standing::Failed,
                            Some(format!("could not record the attempt: {cause}")),
                        )
                    };
                    return self.finish(phase, standing, error, attempts, &tally, started);
                }
            };
            if let Some(base) = base
                && let Err(err) = self
                    .run
                    .store
                    .set_execution_base(execution, &base.to_string())
            {
                self.could_not("record where the phase started", &err);
            }
            if let Err(err) = self.run.store.update_run(
                &self.run.run_id,
                crate::state::RunStatus::Running,
                Some(&id),
                None,
            ) {
                self.could_not("record progress", &err);
            }

            self.no_restart = if !self.run.config.context_threshold.is_on() {
                Some(NoRestart::ThresholdOff)
            } else if self.run.config.max_restarts == 0 {
                Some(NoRestart::NoRestartsAllowed)
            } else if next.kind == AttemptKind::Remediation
                && !self.run.config.restart_in_fix_sessions
            {
                Some(NoRestart::FixSession)
            } else {
                None
            };
            let restarts_allowed = self.no_restart.is_none();
            let (end, mut attempt_tally) = if std::mem::take(&mut agent_done) {
                (AttemptEnd::Done, AttemptTally::default())
            } else {
                self.run_attempt(
                    phase,
                    attempt,
                    execution,
                    &next.prompt,
                    restarts_allowed,
                    base,
                )
                .await
            };
            // The attempt a resume went on with is judged on what its sessions did
            // before the stop too.
            if let Some(before) = carried.take() {
                attempt_tally.take_up(before);
            }
            tally.absorb(&attempt_tally);

            let (mut status, mut error, mut standing) = match end {
                AttemptEnd::Interrupted => (ExecutionStatus::Paused, None, Some(Standing::Paused)),
                AttemptEnd::Skipped => (
                    ExecutionStatus::Skipped,
                    None,
                    Some(Standing::Dropped("skipped by user".into())),
                ),
                AttemptEnd::Fatal(message) => (
                    ExecutionStatus::Failed,
                    Some(message),
                    Some(Standing::Failed),
                ),
                AttemptEnd::Blocked(reason) => (
                    ExecutionStatus::Blocked,
                    Some(reason),
                    Some(Standing::Blocked),
                ),
                AttemptEnd::Failed(reason) => {
                    let finding = Finding {
                        severity: Severity::Critical,
                        problem: reason.clone(),
                        fix: "check the work so far against the phase file and finish it".into(),
                        gate: None,
                    };
                    next = NextAttempt {
                        kind: AttemptKind::Retry,
                        prompt: prompts::full_retry_prompt(&phase_prompt, attempt + 1, &[finding]),
                    };
                    (ExecutionStatus::Failed, Some(reason), None)
                }
                AttemptEnd::Done => match self
                    .validate(phase, attempt, execution, &gates, &attempt_tally)
                    .await
                {
                    Validation::Interrupted => {
                        (ExecutionStatus::Paused, None, Some(Standing::Paused))
                    }
                    Validation::Skipped => (
                        ExecutionStatus::Skipped,
                        None,
                        Some(Standing::Dropped("skipped by user".into())),
                    ),
                    Validation::Judged {
                        verdict,
                        gates: gate_outcomes,
                    } => {
                        if verdict.accepts() {
                            for finding in verdict.findings() {
                                self.warn(format!(
                                    "phase {id}: accepted despite: {}",
                                    finding.problem
                                ));
                            }
                            (ExecutionStatus::Completed, None, Some(Standing::Completed))
                        } else {
                            let problems: Vec<String> = verdict
                                .findings()
                                .iter()
                                .map(|f| f.problem.clone())
                                .collect();
                            next = match &verdict {
                                Verdict::FullRetry(findings) => NextAttempt {
                                    kind: AttemptKind::Retry,
                                    prompt: prompts::full_retry_prompt(
                                        &phase_prompt,
                                        attempt + 1,
                                        findings,
                                    ),
                                },
                                _ => NextAttempt {
                                    kind: AttemptKind::Remediation,
                                    prompt: prompts::remediation_prompt(
                                        phase,
                                        verdict.findings(),
                                        &gate_outcomes,
                                        &self.run.root,
                                    ),
                                },
                            };
                            (ExecutionStatus::Failed, Some(problems.join("; ")), None)
                        }
                    }
                },
            };

            let commit = match standing {
                Some(Standing::Completed) => match self.commit(phase, "completed").await {
                    // Work stashed and not taken back, or left uncommitted in a
                    // submodule, is not on the branch: not completed.
                    Ok(commit) => {
                        let stashed = self.stashed_work(phase.id.as_str()).await;
                        let submodules = self.submodule_work().await;
                        let missing: Vec<String> = stashed.into_iter().chain(submodules).collect();
                        if !missing.is_empty() {
                            status = ExecutionStatus::Failed;
                            standing = Some(Standing::Failed);
                            error = Some(format!(
                                "the phase's work is not all on the branch: {}",
                                missing.join("; ")
                            ));
                        }
                        commit
                    }
                    // No room for it: the run pauses, and the resume takes the work up
                    // from the tree.
                    Err(_) if self.pausing() => {
                        status = ExecutionStatus::Paused;
                        standing = Some(Standing::Paused);
                        self.keep_paused_work(phase, base).await
                    }
                    // The work is done but not recorded: the phase fails, loudly, and
                    // the work stays in the tree for the user.
                    Err(err) => {
                        status = ExecutionStatus::Failed;
                        standing = Some(Standing::Failed);
                        error = Some(format!(
                            "the completed work could not be committed ({err}); it is still in {}",
                            self.where_the_work_is()
                        ));
                        None
                    }
                },
                Some(Standing::Paused) => self.keep_paused_work(phase, base).await,
                Some(Standing::Failed | Standing::Blocked) if self.run.config.commit_on_failure => {
                    self.commit(phase, status.as_str()).await.ok().flatten()
                }
                _ => None,
            };
            // In a worktree, the attempt is completed once its branch is merged.
            if status == ExecutionStatus::Completed && self.worktree.is_some() {
                status = ExecutionStatus::Merging;
            }
            let end = ExecutionEnd {
                status,
                restarts: attempt_tally.restarts,
                outcome_code: attempt_tally.last_code.map(i64::from),
                billed: attempt_tally.billed,
                cost_usd: attempt_tally.cost_usd,
                cost_estimated: attempt_tally.cost_estimated,
                commit_id: commit,
                error: error.clone(),
            };
            if let Err(err) = self.run.store.finish_execution(execution, &end) {
                self.could_not("record the attempt's end", &err);
            }
            if let Some(standing) = standing {
                let mut result = self.finish(phase, standing, error, attempts, &tally, started);
                result.execution = Some(execution);
                return result;
            }
            self.emit(Event::AttemptFailed {
                phase_id: id.clone(),
                attempt,
                reason: error.clone().unwrap_or_default(),
            });
            last_error = error;
        }

        if self.run.config.commit_on_failure {
            // A failure to commit was reported as a warning; the phase fails either way.
            let _ = self.commit(phase, "failed").await;
        }
        let error = last_error.map(|e| {
            format!(
                "{e} (after {attempts} attempt{})",
                crate::words::plural(attempts)
            )
        });
        self.finish(phase, Standing::Failed, error, attempts, &tally, started)
    }

    /// The stopped `attempt` at phase `id` a resume goes on with: a retry or a fix is
    /// told what it was told (the findings to act on), a first attempt the phase's
    /// prompt.
    fn going_on_with(&self, id: &str, attempt: &StoppedAttempt, phase_prompt: &str) -> NextAttempt {
        let prompt = match (&attempt.prompt, attempt.kind) {
            (_, AttemptKind::First) => phase_prompt.to_owned(),
            (Some(told), _) => told.clone(),
            (None, _) => {
                self.warn(format!(
                    "phase {id}: what attempt {} was told was not recorded; it goes on with the phase's prompt",
                    attempt.number
                ));
                phase_prompt.to_owned()
            }
        };
        NextAttempt {
            kind: attempt.kind,
            prompt,
        }
    }

    pub(crate) fn finish(
        &mut self,
        phase: &Phase,
        standing: Standing,
        error: Option<String>,
        attempts: u32,
        tally: &AttemptTally,
        started: Instant,
    ) -> PhaseResult {
        // A completed phase in a worktree is finished once its branch is merged.
        if !(standing == Standing::Completed && self.worktree.is_some()) {
            self.emit(Event::PhaseFinished {
                phase_id: phase.id.as_str().to_owned(),
                status: standing.state(),
                attempts,
                restarts: tally.restarts,
                error: error.clone(),
            });
        }
        self.count(tally);
        let summary = PhaseSummary {
            id: phase.id.as_str().to_owned(),
            title: phase.title.clone(),
            status: standing.state(),
            attempts,
            restarts: tally.restarts,
            sessions: tally.sessions,
            billed: tally.billed,
            handoffs: tally.handoffs,
            cost_usd: tally.cost_usd,
            cost_estimated: tally.cost_estimated,
            duration_secs: started.elapsed().as_secs_f64(),
            refused_calls: tally
                .permission_denials
                .iter()
                .map(|call| crate::events::RefusedCall {
                    call: call.describe(),
                    allow_with: call.suggested_rule(),
                })
                .collect(),
        };
        PhaseResult {
            standing,
            error,
            summary,
            execution: None,
        }
    }

    /// Add what an attempt's sessions did to the run's figures.
    pub(crate) fn count(&mut self, tally: &AttemptTally) {
        self.summary.restarts += tally.restarts;
        self.summary.sessions += tally.sessions;
        self.summary.billed += tally.billed;
        self.summary.cost_usd += tally.cost_usd;
        self.summary.handoffs += tally.handoffs;
        self.summary.handoff_cost_usd += tally.handoff_cost_usd;
        self.summary.cost_estimated |= tally.cost_estimated;
    }
}
