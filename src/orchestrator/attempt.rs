//! One attempt at a phase: a restart loop of agent sessions. When the context meter stops
//! a session, the work is committed as a checkpoint and a fresh session continues with
//! the checkpoint context in front of the original prompt, until the agent finishes or
//! the restart budget runs out.
//!
//! A session refused by the agent's usage limit is not a failed attempt: the run waits
//! for the limit to reset (`usage_wait.rs`) and the attempt goes on. A session the
//! limit refused at its first request did nothing, so the next one gets the same prompt;
//! one refused part way is continued like a context stop, from a checkpoint of its work
//! (see docs/agents.md, "Usage limits", for why it is not resumed).

use std::collections::BTreeSet;

use crate::agent::FailureKind;
use crate::checkpoint::{self, CheckpointFacts, Continuation, TodoStatus};
use crate::context::cost::Billed;
use crate::events::Event;
use crate::plan::Phase;
use crate::restart::{BudgetDecision, NO_PROGRESS, ProgressWatch, RestartBudget, SessionProgress};
use crate::session::{SessionOutcome, SessionReport};
use crate::state::{CompletionStatus, RestartRecord, SessionKind, now};
use crate::words::plural;

use super::ending::{self, AttemptEnd};
use super::no_space::NoSpace;
use super::resume::{ResumePoint, Stage, StoppedAttempt};
use super::runner::Runner;
use super::usage_wait::{UsageWait, WaitEnd, WaitPlan};
use crate::git::vcs;

/// Outcome code of an attempt whose restart budget ran out.
pub const MAX_RESTARTS_EXCEEDED: i32 = crate::restart::MAX_RESTARTS_EXCEEDED;

/// What an attempt's sessions added up to.
#[derive(Debug, Default, Clone)]
pub(crate) struct AttemptTally {
    pub(crate) sessions: u32,
    pub(crate) restarts: u32,
    /// Tokens billed over every session, handoffs included.
    pub(crate) billed: Billed,
    /// Cost over every session, handoffs included.
    pub(crate) cost_usd: f64,
    pub(crate) handoffs: u32,
    pub(crate) handoff_cost_usd: f64,
    pub(crate) cost_estimated: bool,
    pub(crate) last_code: Option<i32>,
    pub(crate) invoked_agents: BTreeSet<String>,
    pub(crate) permission_denials: Vec<crate::agent::DeniedCall>,
}

impl AttemptTally {
    pub(crate) fn absorb(&mut self, other: &AttemptTally) {
        self.sessions += other.sessions;
        self.restarts += other.restarts;
        self.billed += other.billed;
        self.cost_usd += other.cost_usd;
        self.handoffs += other.handoffs;
        self.handoff_cost_usd += other.handoff_cost_usd;
        self.cost_estimated |= other.cost_estimated;
        self.last_code = other.last_code.or(self.last_code);
        self.invoked_agents
            .extend(other.invoked_agents.iter().cloned());
        self.permission_denials
            .extend(other.permission_denials.iter().cloned());
    }

    /// Count what the sessions of `stopped`, the attempt this one goes on with, did
    /// before the run stopped: the subagents they used and the calls they were refused.
    pub(crate) fn take_up(&mut self, stopped: StoppedAttempt) {
        self.invoked_agents.extend(stopped.agents_used);
        self.permission_denials.extend(stopped.refused_calls);
    }

    fn add_session(&mut self, report: &SessionReport) {
        self.sessions += 1;
        self.billed += report.snapshot.billed;
        self.cost_usd += report.snapshot.cost_usd.unwrap_or(0.0);
        self.cost_estimated |= report.snapshot.cost_estimated && report.snapshot.cost_usd.is_some();
        self.last_code = Some(report.outcome.code());
        self.invoked_agents
            .extend(report.invoked_agents.iter().cloned());
        self.permission_denials
            .extend(report.permission_denials.iter().cloned());
    }
}

impl Runner<'_> {
    /// Run sessions until the agent finishes the attempt or it fails.
    pub(crate) async fn run_attempt(
        &mut self,
        phase: &Phase,
        attempt: u32,
        execution: i64,
        prompt: &str,
        restarts_allowed: bool,
        base: Option<git2::Oid>,
    ) -> (AttemptEnd, AttemptTally) {
        let id = phase.id.as_str().to_owned();
        let max_restarts = if restarts_allowed {
            self.run.config.max_restarts
        } else {
            0
        };
        let mut budget = RestartBudget::new(max_restarts);
        let mut tally = AttemptTally::default();
        let mut session_prompt = prompt.to_owned();
        let mut checkpoint_text: Option<String> = None;
        let mut restart = 0;
        // The stopped run's attempt goes on: its next session, from a checkpoint.
        if let Some(point) = self.resume_point.take_if(|point| point.phase == id)
            && let Stage::Working { restarts, handoff } = &point.stage
        {
            budget = RestartBudget::resumed(max_restarts, *restarts);
            restart = *restarts;
            let checkpoint = self
                .resume_checkpoint(phase, &point, (*restarts, max_restarts), handoff.clone())
                .await;
            session_prompt = checkpoint::prompt_with_checkpoint(&checkpoint, prompt);
            checkpoint_text = Some(checkpoint);
        }
        let mut watch = ProgressWatch::new(self.run.config.no_progress_restarts);
        let mut tree_before = vcs::changes_since(self.workdir.clone(), base).await;
        let mut logged_before = self.progress_steps(&id).len();
        let mut completed_before = 0;
        let mut usage = UsageWait::new(self.run.config.limits.max_wait);
        loop {
            if self.flags.pause_requested && !self.wait_while_paused(&id).await {
                return (self.stop_reason(), tally);
            }
            if self.must_pause(&id, 0.0) {
                return (AttemptEnd::Interrupted, tally);
            }
            let signal_before = self.latest_signal_id(&id);
            // For `debussy show`: the transcript does not hold the prompt.
            if let Err(err) = self.run.store.record_prompt(
                execution,
                restart,
                &session_prompt,
                checkpoint_text.as_deref(),
            ) {
                self.could_not("record the session prompt", &err);
            }
            // No room to record the session: no agent is started on it.
            if self.pausing() {
                return (AttemptEnd::Interrupted, tally);
            }
            let report = self
                .run_session(
                    phase,
                    execution,
                    attempt,
                    restart,
                    max_restarts,
                    &session_prompt,
                    restarts_allowed,
                )
                .await;
            tally.add_session(&report);
            self.guards.spent(report.snapshot.cost_usd.unwrap_or(0.0));
            self.record_session(execution, restart, SessionKind::Work, &report);
            if self.flags.skip_requested {
                return (AttemptEnd::Skipped, tally);
            }
            // No room for the session's own files: not the phase's failure.
            if let SessionOutcome::SpawnError(failure) = &report.outcome
                && let Some(full) = NoSpace::at_session_start(failure)
            {
                self.pause_for_no_space(full);
            }
            // A limit or a full disk stopped the session: whatever it ended as, the run
            // pauses.
            if self.pausing() {
                return (AttemptEnd::Interrupted, tally);
            }
            match &report.outcome {
                SessionOutcome::Interrupted => return (AttemptEnd::Interrupted, tally),
                SessionOutcome::AgentFailure(failure) if failure.kind.is_waited_out() => {
                    let (wait, reset_known) = match usage.plan(failure, jiff::Timestamp::now()) {
                        WaitPlan::Wait { wait, reset_known } => (wait, reset_known),
                        WaitPlan::Pause(hit) => {
                            self.pause_for(&id, hit);
                            return (AttemptEnd::Interrupted, tally);
                        }
                    };
                    let trust = usage.address_trust();
                    match self
                        .wait_for_usage_limit(&id, attempt, failure, wait, reset_known, trust)
                        .await
                    {
                        WaitEnd::Stopped => return (self.stop_reason(), tally),
                        WaitEnd::Answered { unused } => usage.answered(unused),
                        WaitEnd::Ready => {}
                    }
                    if report.snapshot.turns > 0 {
                        // It worked before the limit refused it: continue from its work.
                        let reason = failure.to_string();
                        let checkpoint = self
                            .limit_checkpoint(
                                phase,
                                (restart, max_restarts),
                                base,
                                &report,
                                failure.kind,
                                reason,
                            )
                            .await;
                        session_prompt = checkpoint::prompt_with_checkpoint(&checkpoint, prompt);
                        checkpoint_text = Some(checkpoint);
                    }
                    continue;
                }
                SessionOutcome::Timeout => {
                    return (
                        AttemptEnd::Failed(format!(
                            "the session timed out after {}",
                            self.run.config.timeout
                        )),
                        tally,
                    );
                }
                SessionOutcome::SpawnError(_)
                | SessionOutcome::AgentFailure(_)
                | SessionOutcome::Failed { .. } => {
                    return (ending::attempt_end(&report), tally);
                }
                SessionOutcome::Completed { .. } if !report.outcome.is_success() => {
                    return (ending::attempt_end(&report), tally);
                }
                SessionOutcome::Completed { .. } => {
                    return (self.completion_verdict(&id, signal_before), tally);
                }
                SessionOutcome::ContextLimit { reason, snapshot } => {
                    usage.reset();
                    let changes = vcs::changes_since(self.workdir.clone(), base).await;
                    let progress = self.progress_steps(&id);
                    let completed = report
                        .todos
                        .iter()
                        .filter(|todo| todo.status == TodoStatus::Completed)
                        .count();
                    let moved = SessionProgress {
                        changed_files: changes != tree_before,
                        logged_progress: progress.len() > logged_before,
                        completed_todos: completed > completed_before,
                    };
                    (tree_before, logged_before, completed_before) =
                        (changes.clone(), progress.len(), completed);
                    let number = match budget.try_restart() {
                        BudgetDecision::Restart { number } => number,
                        BudgetDecision::Exhausted { max } => {
                            tally.last_code = Some(MAX_RESTARTS_EXCEEDED);
                            return (
                                AttemptEnd::Failed(format!(
                                    "max restarts exceeded: the context filled again after {max} restart{}",
                                    plural(max)
                                )),
                                tally,
                            );
                        }
                    };
                    if let Some(stalled) = watch.after_stop(moved) {
                        tally.last_code = Some(NO_PROGRESS);
                        return (
                            AttemptEnd::Failed(format!(
                                "no progress: the last {stalled} session{} stopped for their context changed no file, logged no progress and completed no todo",
                                plural(stalled)
                            )),
                            tally,
                        );
                    }
                    tally.restarts += 1;
                    let limit_reason = reason.clone();
                    let reason = reason.to_string();
                    let status = format!(
                        "checkpoint (restart {number}/{max_restarts}, context {:.1}%)",
                        snapshot.percent
                    );
                    let commit = if self.run.config.auto_commit {
                        let message = vcs::commit_message(
                            &self.run.config.commit_message_template,
                            &id,
                            &phase.title,
                            &status,
                        );
                        match self.commit_with(phase, message).await {
                            Ok(commit) => commit,
                            // No room for it: the run pauses (the work stays in the
                            // tree, recorded as the pause's).
                            Err(_) if self.pausing() => {
                                return (AttemptEnd::Interrupted, tally);
                            }
                            // A restart without its checkpoint would hand the next
                            // session work git does not hold: stop the run instead.
                            Err(err) => {
                                return (
                                    AttemptEnd::Fatal(format!(
                                        "the checkpoint could not be committed ({err}); the work is still in {}",
                                        self.where_the_work_is()
                                    )),
                                    tally,
                                );
                            }
                        }
                    } else {
                        None
                    };
                    let record = RestartRecord {
                        restart_number: number,
                        reason: reason.clone(),
                        context_percent: Some(snapshot.percent),
                        commit_id: commit.clone(),
                        at: now(),
                    };
                    if let Err(err) = self.run.store.record_restart(execution, &record) {
                        self.could_not("record the restart", &err);
                    }
                    let handoff = self
                        .handoff(
                            phase,
                            attempt,
                            restart,
                            number,
                            execution,
                            &report,
                            &limit_reason,
                            &mut tally,
                        )
                        .await;
                    if self.flags.skip_requested {
                        return (AttemptEnd::Skipped, tally);
                    }
                    if self.flags.interrupted || self.must_pause(&id, 0.0) {
                        return (AttemptEnd::Interrupted, tally);
                    }
                    let facts = CheckpointFacts {
                        phase_id: id.clone(),
                        phase_title: phase.title.clone(),
                        restart_number: number,
                        max_restarts,
                        stop_reason: reason.clone(),
                        commit: commit.clone(),
                        progress,
                        todos: report.todos.clone(),
                        changes,
                        last_message: report.last_message.clone(),
                        handoff: handoff.text,
                        why: Continuation::ContextStop,
                        cut_short: report.cut_short.clone(),
                    };
                    let delay = self.run.config.restart_delay;
                    self.emit(Event::Restart {
                        phase_id: id.clone(),
                        attempt,
                        restart: number,
                        max_restarts,
                        reason,
                        context_percent: snapshot.percent,
                        commit,
                        delay_secs: delay.0,
                    });
                    if !self.wait(delay.duration()).await {
                        return (self.stop_reason(), tally);
                    }
                    let rendered = checkpoint::render(&facts);
                    session_prompt = checkpoint::prompt_with_checkpoint(&rendered, prompt);
                    checkpoint_text = Some(rendered);
                    restart = number;
                }
            }
        }
    }

    /// The progress steps the agent logged for `phase_id` in this run, oldest first.
    fn progress_steps(&self, phase_id: &str) -> Vec<String> {
        self.run
            .store
            .progress(&self.run.run_id, phase_id)
            .map(|entries| entries.into_iter().map(|e| e.step).collect())
            .unwrap_or_default()
    }

    /// The checkpoint the first session of a phase resumed at `point` is given: the
    /// session after `restarts` restarts of `max_restarts`, with `handoff`.
    async fn resume_checkpoint(
        &self,
        phase: &Phase,
        point: &ResumePoint,
        (restarts, max_restarts): (u32, u32),
        handoff: Option<String>,
    ) -> String {
        let facts = CheckpointFacts {
            phase_id: point.phase.clone(),
            phase_title: phase.title.clone(),
            restart_number: restarts,
            max_restarts,
            stop_reason: point.reason.as_deref().map_or_else(
                || "the run was paused by the user and is now resumed".to_owned(),
                |reason| format!("the run was {reason}; it is now resumed"),
            ),
            commit: point.commit.clone(),
            progress: self.progress_steps(&point.phase),
            todos: Vec::new(),
            changes: vcs::changes_since(self.workdir.clone(), point.base).await,
            last_message: None,
            handoff,
            why: Continuation::ContextStop,
            cut_short: None,
        };
        checkpoint::render(&facts)
    }

    /// The checkpoint for the session after a usage limit (`kind`), or an API it could not
    /// reach, stopped one that had worked: its work committed (when `auto_commit` is on)
    /// and what it did.
    async fn limit_checkpoint(
        &mut self,
        phase: &Phase,
        (restart, max_restarts): (u32, u32),
        base: Option<git2::Oid>,
        report: &SessionReport,
        kind: FailureKind,
        reason: String,
    ) -> String {
        let id = phase.id.as_str().to_owned();
        let (label, why) = match kind {
            FailureKind::Unreachable => ("checkpoint (API unreachable)", Continuation::Offline),
            FailureKind::Overloaded => ("checkpoint (API overloaded)", Continuation::Offline),
            _ => ("checkpoint (usage limit)", Continuation::UsageLimit),
        };
        let commit = self.commit(phase, label).await.ok().flatten();
        let facts = CheckpointFacts {
            phase_id: id.clone(),
            phase_title: phase.title.clone(),
            restart_number: restart,
            max_restarts,
            stop_reason: reason,
            commit,
            progress: self.progress_steps(&id),
            todos: report.todos.clone(),
            changes: vcs::changes_since(self.workdir.clone(), base).await,
            last_message: report.last_message.clone(),
            handoff: None,
            why,
            cut_short: None,
        };
        checkpoint::render(&facts)
    }

    /// Interrupt or skip, whichever stopped the current step.
    fn stop_reason(&self) -> AttemptEnd {
        if self.flags.skip_requested {
            AttemptEnd::Skipped
        } else {
            AttemptEnd::Interrupted
        }
    }

    /// What the agent said with `debussy done` during the session, if anything new.
    fn completion_verdict(&self, phase_id: &str, before: Option<i64>) -> AttemptEnd {
        let signal = match self.run.store.completion(&self.run.run_id, phase_id) {
            Ok(signal) => signal.filter(|s| Some(s.id) != before),
            Err(err) => {
                self.could_not("read the completion signal", &err);
                None
            }
        };
        match signal {
            Some(signal) if signal.status == CompletionStatus::Blocked => AttemptEnd::Blocked(
                signal
                    .reason
                    .unwrap_or_else(|| "the agent reported the phase blocked".into()),
            ),
            Some(signal) if signal.status == CompletionStatus::Failed => {
                AttemptEnd::Failed(signal.reason.map_or_else(
                    || "the agent reported failure".into(),
                    |r| format!("the agent reported failure: {r}"),
                ))
            }
            _ => AttemptEnd::Done,
        }
    }

    fn latest_signal_id(&self, phase_id: &str) -> Option<i64> {
        self.run
            .store
            .completion(&self.run.run_id, phase_id)
            .ok()
            .flatten()
            .map(|s| s.id)
    }
}
