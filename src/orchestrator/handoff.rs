//! The agent-written handoff: after a context stop, the stopped session is resumed once,
//! with no tools and the [handoff prompt](super::prompts::handoff_prompt), and its answer
//! heads the next session's checkpoint.
//!
//! The handoff is skipped, and debussy's own checkpoint used alone, when `handoff` is
//! `mechanical`, the backend cannot resume a session, the agent reported no session id,
//! the agent had compacted its context already, or the stop left less than
//! [`HANDOFF_ROOM`] tokens of the window (the resumed request carries the whole context
//! again, plus the prompt and a bounded answer). It falls back the same way when the
//! handoff session fails, times out, compacts or writes nothing. Every case is reported
//! as an [`Event::Handoff`] with its reason. A handoff written is kept with its restart
//! in the state store, so a resume after a kill or a pause still hands it on.
//!
//! The room is the prompt and [`HANDOFF_ANSWER_TOKENS`], not the agent's whole
//! compaction reserve: debussy's `PreCompact` hook blocks the compaction the agent would
//! try first, and the backend tells the agent how much it may answer (Claude Code:
//! `CLAUDE_CODE_MAX_OUTPUT_TOKENS`, and its "Prompt is too long" limit moved to the window
//! less the answer), so a session stopped at 90 % of a 200,000-token window still writes
//! its handoff.

use std::path::{Path, PathBuf};

use tokio::sync::mpsc;

use super::session::RestartRequest;
use crate::agent::HANDOFF_ANSWER_TOKENS;
use crate::config::{HandoffMode, Seconds};
use crate::context::StopReason;
use crate::events::Event;
use crate::plan::Phase;
use crate::session::guard::CompactionGuard;
use crate::session::{
    self, LimitReason, SessionControl, SessionEvent, SessionOutcome, SessionReport,
};
use crate::state::SessionKind;

use super::attempt::AttemptTally;
use super::prompts;
use super::runner::Runner;

/// Tokens the handoff prompt takes, with what the agent adds around it (the prompt
/// itself is about 400).
pub const HANDOFF_PROMPT_TOKENS: u64 = 1_000;

/// Tokens of the window that must be left after a stop for the handoff request: the
/// prompt and a bounded answer.
pub const HANDOFF_ROOM: u64 = HANDOFF_PROMPT_TOKENS + HANDOFF_ANSWER_TOKENS;

/// What is known about the stopped session when deciding whether to ask it.
#[derive(Debug, Clone, Copy)]
struct Stopped {
    /// The agent reported its session id.
    has_session_id: bool,
    /// It was stopped because it compacted its own context.
    compacted: bool,
    /// Context tokens at the stop.
    tokens: u64,
    /// The window.
    window: u64,
}

impl Stopped {
    fn of(report: &SessionReport, reason: &LimitReason) -> Stopped {
        Stopped {
            has_session_id: report.agent_session_id.is_some(),
            compacted: matches!(reason, LimitReason::Meter(StopReason::Compacted { .. })),
            tokens: report.snapshot.tokens,
            window: report.snapshot.window.tokens,
        }
    }
}

/// Why the stopped session is not asked for a handoff, decided before anything runs.
fn skip_reason(
    mode: HandoffMode,
    can_resume: bool,
    agent: &str,
    stopped: Stopped,
) -> Option<String> {
    if mode == HandoffMode::Mechanical {
        return Some("handoff is set to mechanical".to_owned());
    }
    if !can_resume {
        return Some(format!("the {agent} agent cannot resume a stopped session"));
    }
    if !stopped.has_session_id {
        return Some("the agent reported no session id to resume".to_owned());
    }
    if stopped.compacted {
        return Some("the agent had already compacted its context".to_owned());
    }
    let left = stopped.window.saturating_sub(stopped.tokens);
    if stopped.window > 0 && left < HANDOFF_ROOM {
        return Some(format!(
            "the stop left {} of {} tokens, fewer than the {} the handoff's prompt and answer need",
            crate::words::thousands(left),
            crate::words::thousands(stopped.window),
            crate::words::thousands(HANDOFF_ROOM)
        ));
    }
    None
}

/// The handoff text a finished handoff session gave, or why it is not used.
fn handoff_text(report: &SessionReport, timeout: Seconds) -> Result<String, String> {
    match &report.outcome {
        SessionOutcome::Completed { .. } if report.outcome.is_success() => report
            .last_message
            .as_deref()
            .map(str::trim)
            .filter(|text| !text.is_empty())
            .map(str::to_owned)
            .ok_or_else(|| "the handoff session wrote nothing".to_owned()),
        SessionOutcome::ContextLimit { .. } => {
            Err("the handoff session compacted its context".to_owned())
        }
        SessionOutcome::Timeout => Err(format!(
            "the handoff session did not answer within handoff_timeout ({timeout})"
        )),
        SessionOutcome::Interrupted => Err("the handoff session was interrupted".to_owned()),
        other => Err(match report.last_message.as_deref().map(str::trim) {
            Some(said) if !said.is_empty() => {
                format!(
                    "the handoff session failed: {other}: {}",
                    said.lines().next().unwrap_or(said)
                )
            }
            _ => format!("the handoff session failed: {other}"),
        }),
    }
}

/// `…/attempt-1-session-2.handoff.jsonl` beside the stopped session's transcript.
fn handoff_log_path(stopped_log: &Path) -> PathBuf {
    let stem = stopped_log
        .file_stem()
        .map(|stem| stem.to_string_lossy().into_owned())
        .unwrap_or_else(|| "session".to_owned());
    stopped_log.with_file_name(format!("{stem}.handoff.jsonl"))
}

/// Where a stop's handoff stands.
pub(crate) struct Handoff {
    /// The text the stopped agent wrote, when it did.
    pub(crate) text: Option<String>,
}

impl Runner<'_> {
    /// Ask the session stopped for `reason` (restart `restart` of the attempt) for its
    /// handoff, recording and announcing the outcome. `number` is the restart about to
    /// happen.
    #[expect(
        clippy::too_many_arguments,
        reason = "the attempt's place and the stopped session, each needed once"
    )]
    pub(crate) async fn handoff(
        &mut self,
        phase: &Phase,
        attempt: u32,
        restart: u32,
        number: u32,
        execution: i64,
        stopped: &SessionReport,
        reason: &LimitReason,
        tally: &mut AttemptTally,
    ) -> Handoff {
        let id = phase.id.as_str().to_owned();
        let backend = &self.session_spec(&id).backend;
        if let Some(skipped) = skip_reason(
            self.run.config.handoff,
            backend.can_resume(),
            backend.name(),
            Stopped::of(stopped, reason),
        ) {
            self.emit(Event::Handoff {
                phase_id: id,
                attempt,
                restart: number,
                written: false,
                detail: skipped,
                billed: Default::default(),
                cost_usd: 0.0,
            });
            return Handoff { text: None };
        }
        self.emit(Event::HandoffRequested {
            phase_id: id.clone(),
            attempt,
            restart: number,
        });
        let stop_words = reason.to_string();
        let prompt = prompts::handoff_prompt(&id, &phase.title, &stop_words);
        let report = self
            .run_handoff_session(&id, attempt, restart, stopped, prompt)
            .await;
        let cost = report.snapshot.cost_usd.unwrap_or(0.0);
        tally.billed += report.snapshot.billed;
        tally.cost_usd += cost;
        tally.cost_estimated |=
            report.snapshot.cost_estimated && report.snapshot.cost_usd.is_some();
        tally.handoffs += 1;
        tally.handoff_cost_usd += cost;
        self.guards.spent(cost);
        self.record_handoff(phase.id.as_str(), execution, restart, &report);
        let outcome = handoff_text(&report, self.run.config.handoff_timeout);
        // Kept with its restart: a resume after a kill or a pause still hands it on.
        if let Ok(text) = &outcome
            && let Err(err) = self.run.store.record_handoff(execution, number, text)
        {
            self.could_not("record the handoff", &err);
        }
        self.emit(Event::Handoff {
            phase_id: id,
            attempt,
            restart: number,
            written: outcome.is_ok(),
            detail: match &outcome {
                Ok(text) => format!(
                    "the stopped session wrote its handoff ({} characters)",
                    text.chars().count()
                ),
                Err(why) => why.clone(),
            },
            billed: report.snapshot.billed,
            cost_usd: cost,
        });
        Handoff { text: outcome.ok() }
    }

    /// Run the resumed session, serving requests (Ctrl-C stops it like any session).
    async fn run_handoff_session(
        &mut self,
        phase_id: &str,
        attempt: u32,
        restart: u32,
        stopped: &SessionReport,
        prompt: String,
    ) -> SessionReport {
        let log_path = handoff_log_path(&stopped.log_path);
        let mut spec = self.phase_session_spec(phase_id, attempt, restart, prompt, log_path);
        spec.resume = stopped
            .agent_session_id
            .clone()
            .map(|session_id| session::Resume {
                session_id,
                window: Some(stopped.snapshot.window.tokens),
            });
        spec.timeout = Some(self.run.config.handoff_timeout.duration());
        // Never stopped for its size; a compaction means the handoff would come from a
        // summary, so that ends it.
        spec.meter = spec.meter.observe_only();
        spec.meter.stop_on_compact = true;
        spec.compaction_guard = CompactionGuard::Block;
        let control = SessionControl::new();
        let (sender, mut receiver) = mpsc::unbounded_channel();
        let running = session::run(spec, sender, control.clone());
        tokio::pin!(running);
        loop {
            tokio::select! {
                report = &mut running => break report,
                Some(event) = receiver.recv() => match &event {
                    SessionEvent::Started { .. } => self.note_agent_group(phase_id, &event),
                    SessionEvent::Warning(warning) => {
                        self.warn(format!("phase {phase_id}: handoff session: {warning}"));
                    }
                    _ => {}
                },
                Some(request) = self.requests.recv() => self.handle_session_request(
                    request,
                    &control,
                    RestartRequest::Refuse("the stopped session is writing its handoff; the restart follows"),
                ),
            }
        }
    }

    fn record_handoff(
        &mut self,
        phase_id: &str,
        execution: i64,
        restart: u32,
        report: &SessionReport,
    ) {
        self.note_agent_end(phase_id);
        self.record_session(execution, restart, SessionKind::Handoff, report);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ASKABLE: Stopped = Stopped {
        has_session_id: true,
        compacted: false,
        tokens: 160_000,
        window: 200_000,
    };

    #[test]
    fn a_stopped_session_with_room_left_is_asked() {
        assert_eq!(
            skip_reason(HandoffMode::Agent, true, "claude", ASKABLE),
            None
        );
    }

    #[test]
    fn a_session_stopped_at_90_percent_is_asked() {
        let at_90 = Stopped {
            tokens: 180_000,
            ..ASKABLE
        };
        assert_eq!(skip_reason(HandoffMode::Agent, true, "claude", at_90), None);
        let full = Stopped {
            tokens: 200_000 - HANDOFF_ROOM + 1,
            ..ASKABLE
        };
        assert!(skip_reason(HandoffMode::Agent, true, "claude", full).is_some());
    }

    #[test]
    fn each_reason_to_skip_is_named() {
        let cases = [
            (HandoffMode::Mechanical, true, ASKABLE, "mechanical"),
            (HandoffMode::Agent, false, ASKABLE, "cannot resume"),
            (
                HandoffMode::Agent,
                true,
                Stopped {
                    has_session_id: false,
                    ..ASKABLE
                },
                "no session id",
            ),
            (
                HandoffMode::Agent,
                true,
                Stopped {
                    compacted: true,
                    ..ASKABLE
                },
                "already compacted",
            ),
            (
                HandoffMode::Agent,
                true,
                Stopped {
                    tokens: 195_000,
                    ..ASKABLE
                },
                "the stop left 5,000 of 200,000 tokens, fewer than the 9,000",
            ),
        ];
        for (mode, can_resume, stopped, words) in cases {
            let reason = skip_reason(mode, can_resume, "claude", stopped).expect(words);
            assert!(reason.contains(words), "{reason}");
        }
    }

    #[test]
    fn the_handoff_log_sits_beside_the_stopped_sessions() {
        assert_eq!(
            handoff_log_path(Path::new("/p/.debussy/runs/r/1/attempt-1-session-2.jsonl")),
            PathBuf::from("/p/.debussy/runs/r/1/attempt-1-session-2.handoff.jsonl")
        );
    }
}
