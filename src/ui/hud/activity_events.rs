//! The activity log's lines for each run event: what each milestone says, in which tone.

use std::time::Instant;

use super::super::compact::one_line;
use super::super::strings::{self, lines};
use super::super::tone::Tone;
use super::ActivityLog;
use crate::compliance::VerdictKind;
use crate::events::{Event, PhaseState};
use crate::session::OutcomeKind;

impl ActivityLog {
    /// Take in one run event: the lines it adds, and which phases are running.
    pub(super) fn on_event(&mut self, event: &Event, now: Instant) {
        // Most events are about the phase of the one before: no new string for them.
        if self.phase.as_deref() != event.phase_id() {
            self.phase = event.phase_id().map(str::to_owned);
        }
        match event {
            Event::SessionStarted { phase_id, .. } => {
                self.side_by_side |= self.running.iter().any(|running| running != phase_id);
                self.running.insert(phase_id.clone());
            }
            Event::SessionEnded { phase_id, .. } => {
                self.running.remove(phase_id);
            }
            _ => {}
        }
        match event {
            Event::RunStarted {
                plan_title,
                phases,
                resumed,
                ..
            } => {
                self.run_started = Some(now);
                self.note(
                    now,
                    Tone::Milestone,
                    lines::run_started(plan_title, phases.len(), *resumed),
                );
            }
            Event::PhaseSkipped { phase_id, reason } => {
                self.note(now, Tone::Dim, lines::phase_skipped(phase_id, reason));
            }
            Event::PhaseStarted {
                phase_id,
                title,
                attempt,
                max_attempts,
                kind,
                ..
            } => self.note(
                now,
                Tone::Milestone,
                lines::phase_started(phase_id, title, *attempt, *max_attempts, *kind),
            ),
            Event::SessionStarted {
                restart,
                max_restarts,
                pid,
                ..
            } => self.note(
                now,
                Tone::Dim,
                lines::session_started(*restart, *max_restarts, *pid),
            ),
            Event::Activity { activity, .. } => {
                self.activity(now, &activity.thread, &activity.kind);
            }
            Event::AgentStderr { line, .. } => self.push_full(
                now,
                None,
                Tone::Dim,
                strings::STDERR.to_owned(),
                one_line(line),
                None,
            ),
            Event::SessionEnded {
                outcome,
                detail,
                snapshot,
                last_words,
                ..
            } => {
                let tone = match outcome {
                    OutcomeKind::Failed
                    | OutcomeKind::Timeout
                    | OutcomeKind::SpawnError
                    | OutcomeKind::AgentFailure => Tone::Error,
                    _ => Tone::Dim,
                };
                self.note(now, tone, lines::session_ended(detail, snapshot.percent));
                if let Some(words) = last_words {
                    self.note(now, Tone::Error, lines::last_words(words));
                }
            }
            Event::AgentRetry { retry, .. } => {
                self.note(now, Tone::Warning, retry.to_string());
            }
            Event::WaitingForLimit {
                kind,
                until,
                reset_known,
                said,
                ..
            } => self.note(
                now,
                Tone::Warning,
                lines::waiting_for_limit(*kind, until, *reset_known, said),
            ),
            Event::Restart {
                restart,
                max_restarts,
                reason,
                context_percent,
                commit,
                delay_secs,
                ..
            } => self.note(
                now,
                Tone::Restart,
                lines::restart(
                    *restart,
                    *max_restarts,
                    *context_percent,
                    reason,
                    commit.as_deref(),
                    *delay_secs,
                ),
            ),
            Event::GateStarted { name, command, .. } => {
                self.note(now, Tone::Dim, lines::gate_started(name, command));
            }
            Event::GateFinished {
                name,
                command,
                passed,
                verdict,
                duration_ms,
                ..
            } => self.note(
                now,
                if *passed { Tone::Good } else { Tone::Error },
                lines::gate_finished(name, verdict, *duration_ms, command),
            ),
            Event::Compliance {
                verdict, findings, ..
            } => self.note(
                now,
                if *verdict == VerdictKind::Pass {
                    Tone::Good
                } else {
                    Tone::Warning
                },
                lines::compliance(*verdict, findings),
            ),
            Event::Merged {
                branch,
                commit,
                fast_forward,
                ..
            } => self.note(
                now,
                Tone::Commit,
                lines::merged(branch, commit, *fast_forward),
            ),
            Event::MergeConflict { branch, files, .. } => {
                self.note(now, Tone::Warning, lines::merge_conflict(branch, files));
            }
            Event::Committed {
                commit,
                message,
                files_changed,
                ..
            } => self.note(
                now,
                Tone::Commit,
                lines::committed(commit, *files_changed, message),
            ),
            Event::AttemptFailed {
                attempt, reason, ..
            } => self.note(now, Tone::Error, lines::attempt_failed(*attempt, reason)),
            Event::PhaseFinished {
                phase_id,
                status,
                attempts,
                restarts,
                error,
            } => {
                let tone = match status {
                    PhaseState::Completed => Tone::Good,
                    PhaseState::Failed | PhaseState::Blocked | PhaseState::AwaitingHuman => {
                        Tone::Error
                    }
                    PhaseState::Paused => Tone::Warning,
                    _ => Tone::Dim,
                };
                self.note(
                    now,
                    tone,
                    lines::phase_finished(
                        phase_id,
                        *status,
                        *attempts,
                        *restarts,
                        error.as_deref(),
                    ),
                );
            }
            Event::Paused { phase_id } => self.note(now, Tone::Warning, lines::paused(phase_id)),
            Event::HandoffRequested { .. } => {
                self.note(now, Tone::Restart, lines::HANDOFF_REQUESTED.to_owned());
            }
            Event::Handoff {
                written, detail, ..
            } => self.note(
                now,
                if *written { Tone::Good } else { Tone::Warning },
                lines::handoff(*written, detail),
            ),
            Event::LimitReached { detail, .. } => {
                self.note(now, Tone::Warning, lines::limit_reached(detail));
            }
            Event::Resumed { phase_id } => self.note(now, Tone::Good, lines::resumed(phase_id)),
            Event::Warning { message } => {
                self.note(now, Tone::Warning, one_line(message));
            }
            Event::RunFinished { summary } => self.note(
                now,
                Tone::Milestone,
                lines::run_finished(
                    summary.status,
                    summary.duration_secs,
                    summary.billed.total(),
                    summary.cost_usd,
                ),
            ),
            Event::Context { .. } => {}
        }
    }
}
