//! How a session ends: the driver closes the transcript, decides the outcome from what
//! it saw (a result, a stop it made, the exit), and assembles the [`SessionReport`].

use std::time::Duration;

use super::event::{SessionWarning, StopCause};
use super::log::{LogState, stderr_log_path};
use super::outcome::{SessionOutcome, SpawnFailure};
use super::report::{ReportedWindow, SessionReport, StopSummary};
use super::run::Driver;
use super::stop::Course;
use crate::process::ExitStatus;

impl Driver<'_> {
    /// The agent never started: close the log and report why.
    pub(super) async fn not_started(mut self, failure: SpawnFailure) -> SessionReport {
        tracing::debug!(%failure, "agent session not started");
        self.close_log(false).await;
        self.report(SessionOutcome::SpawnError(failure))
    }

    /// The agent was reaped and its output read: close the log (with the marker for a
    /// context limit) and report.
    pub(super) async fn finish(mut self) -> SessionReport {
        let outcome = self.outcome();
        self.flush_snapshot();
        match self.throttle.take_dropped() {
            0 => {}
            gap => self.send_gap_note(gap),
        }
        // A stderr log whose write failed was said then; flushing it again says nothing new.
        if let LogState::Writing(log) = std::mem::replace(&mut self.stderr_log, LogState::Missing)
            && let Err(err) = log.finish()
        {
            let path = stderr_log_path(&self.spec.log_path);
            self.warn(SessionWarning::Log {
                path,
                message: format!("failed to close it: {err}"),
            });
        }
        self.close_log(outcome.is_context_limit()).await;
        self.report(outcome)
    }

    pub(super) async fn close_log(&mut self, marker: bool) {
        let Some(log) = self.log.take() else { return };
        let closed = tokio::task::spawn_blocking(move || log.finish(marker)).await;
        let message = match closed {
            Ok(Ok(())) => return,
            Ok(Err(err)) => err.to_string(),
            Err(err) => err.to_string(),
        };
        let what = if marker {
            "mark it as a context-limit log"
        } else {
            "close it"
        };
        self.warn(SessionWarning::Log {
            path: self.spec.log_path.clone(),
            message: format!("failed to {what}: {message}"),
        });
    }

    /// The outcome, by precedence: completed on its own before any stop; interrupted;
    /// the stop the session decided; a failure the backend recognises in the agent's last
    /// words; the agent's result; the exit status.
    pub(super) fn outcome(&self) -> SessionOutcome {
        let result = self.tracker.result();
        let completed = |result: &crate::agent::SessionResult| SessionOutcome::Completed {
            subtype: result.subtype.clone(),
            is_error: result.is_error,
            result: result.result.clone(),
            session_id: result
                .session_id
                .clone()
                .or_else(|| self.tracker.session_id().map(str::to_owned)),
        };
        if let Course::Completed = self.stops.course()
            && let Some(result) = result
        {
            return completed(result);
        }
        if let Some(stop) = self.stops.state() {
            let stop = stop.stopping();
            return match &stop.cause {
                StopCause::Interrupt => SessionOutcome::Interrupted,
                StopCause::Timeout { .. } => SessionOutcome::Timeout,
                StopCause::ContextLimit(reason) => SessionOutcome::ContextLimit {
                    reason: reason.clone(),
                    snapshot: stop.snapshot.clone(),
                },
                StopCause::AgentFailure(failure) => SessionOutcome::AgentFailure(failure.clone()),
            };
        }
        let now = jiff::Zoned::now();
        if let Some(failure) = self.spec.backend.diagnose(&self.words, &now) {
            return SessionOutcome::AgentFailure(failure);
        }
        if let Some(result) = result {
            return completed(result);
        }
        SessionOutcome::Failed {
            exit: self
                .state
                .exit()
                .map_or(ExitStatus::Unknown, |exit| exit.status),
        }
    }

    pub(super) fn stop_summary(&self) -> Option<StopSummary> {
        let state = self.stops.state()?;
        let stop = state.stopping();
        let exit_stop = self.state.exit().and_then(|exit| exit.stop.as_ref());
        let latency = match (exit_stop, state.requested_at(), self.state.exited_at()) {
            (Some(report), Some(requested_at), _) => {
                requested_at.saturating_duration_since(stop.decided_at) + report.took
            }
            (_, _, Some(exited_at)) => exited_at.saturating_duration_since(stop.decided_at),
            (_, _, None) => Duration::ZERO,
        };
        Some(StopSummary {
            cause: stop.cause.clone(),
            latency,
            actions: exit_stop
                .map(|report| report.actions.clone())
                .unwrap_or_default(),
            escalated: exit_stop.is_some_and(|report| report.escalated),
        })
    }

    pub(super) fn report(self, outcome: SessionOutcome) -> SessionReport {
        let stop = self.stop_summary();
        let pid = self.state.pid();
        let reported_window = self
            .meter
            .reported_window()
            .map(|(model, tokens)| ReportedWindow {
                model: model.to_owned(),
                tokens,
            });
        SessionReport {
            agent: self.spec.backend.name(),
            outcome,
            snapshot: self.meter.snapshot(),
            agent_session_id: self.tracker.session_id().map(str::to_owned),
            model: self.tracker.model().map(str::to_owned),
            reported_window,
            todos: self.tracker.todos(),
            last_message: self.tracker.last_text().map(str::to_owned),
            invoked_agents: self.tracker.invoked_agents().clone(),
            permission_denials: self.tracker.permission_denials().to_vec(),
            files_written: self.tracker.files_written().clone(),
            result: self.tracker.result().cloned(),
            exit: self.state.into_exit(),
            cut_short: self
                .stops
                .state()
                .and_then(|state| state.cut_short().map(str::to_owned)),
            stop,
            pid,
            command: self.command,
            stderr_tail: self.words.stderr.clone(),
            last_words: self.words,
            warnings: self.warnings,
            started_at: self.started_at,
            ended_at: jiff::Timestamp::now(),
            duration: self.started.elapsed(),
            log_path: self.spec.log_path.clone(),
        }
    }
}
