//! The header: plan name and run id with the run's elapsed time; the current phase
//! (`i/n` and title), what it is doing and its elapsed time; the agent, model, attempt
//! and restart counters.

use std::time::{Duration, Instant};

use ratatui::Frame;
use ratatui::layout::{Alignment, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Padding, Paragraph};

use super::Component;
use super::compact::{clock, cut};
use super::phases::{RowState, state_look};
use super::strings;
use crate::events::{AttemptKind, Event, PhaseState};
use crate::process::Busy;
use crate::state::RunStatus;

/// What the run is doing, as far as events tell.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Stage {
    /// Before the first phase starts.
    Starting,
    /// An agent session is working.
    Running,
    /// Between a context stop and the next session.
    Restarting { restart: u32, max: u32 },
    /// A gate is running.
    Gate(String),
    /// Gates done, compliance next.
    Checking,
    /// An attempt failed; the next one is coming.
    BetweenAttempts,
    /// Paused between sessions.
    Paused,
    /// Waiting for the agent's usage limit to reset: until `until` on the monotonic
    /// clock, `at` on the wall clock.
    WaitingForLimit {
        until: Instant,
        at: String,
        what: &'static str,
    },
    /// A phase reached a final state (`completed`, `failed`, `blocked`, …).
    PhaseDone(PhaseState),
    /// The run ended with this status.
    Finished(RunStatus),
}

/// What the user asked for that events have not confirmed yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Pending {
    /// Nothing.
    #[default]
    None,
    /// Pause after the current session.
    Pause,
    /// Skip the phase.
    Skip,
    /// Stop the agent and pause the run.
    Stop,
    /// Kill the agent.
    Kill,
}

/// The current phase.
#[derive(Debug, Clone)]
struct PhaseNow {
    id: String,
    title: String,
    index: usize,
    total: usize,
    attempt: u32,
    max_attempts: u32,
    kind: AttemptKind,
    started: Instant,
    ended: Option<Instant>,
}

/// The header's state.
#[derive(Debug)]
pub(crate) struct Header {
    plan_title: String,
    run_id: String,
    agent: String,
    model: String,
    phase: Option<PhaseNow>,
    /// Restart index of the current session and the restarts allowed.
    restart: Option<(u32, u32)>,
    stage: Stage,
    pending: Pending,
    /// What ran when the user last pressed Ctrl-C: what a stop or a kill reaches.
    stopping: Busy,
    run_started: Option<Instant>,
    run_ended: Option<Instant>,
    now: Instant,
    /// Phases started and not finished: several when phases run side by side.
    running: std::collections::BTreeSet<String>,
}

impl Header {
    /// A header before any event, with the clock at `now`.
    pub(crate) fn new(now: Instant) -> Self {
        Header {
            plan_title: String::new(),
            run_id: String::new(),
            agent: String::new(),
            model: String::new(),
            phase: None,
            restart: None,
            stage: Stage::Starting,
            pending: Pending::None,
            stopping: Busy::default(),
            run_started: None,
            run_ended: None,
            now,
            running: std::collections::BTreeSet::new(),
        }
    }

    /// Move the clock (elapsed times are drawn against it).
    pub(crate) fn set_now(&mut self, now: Instant) {
        self.now = now;
    }

    /// What the user asked for, until events show it happened.
    pub(crate) fn set_pending(&mut self, pending: Pending) {
        self.pending = pending;
    }

    /// A Ctrl-C asked for `pending` (a stop or a kill) while `busy` ran.
    pub(crate) fn set_interrupt(&mut self, pending: Pending, busy: Busy) {
        self.pending = pending;
        self.stopping = busy;
    }

    /// What the user asked for.
    pub(crate) fn pending(&self) -> Pending {
        self.pending
    }

    /// Whether the run is paused between sessions.
    pub(crate) fn is_paused(&self) -> bool {
        self.stage == Stage::Paused
    }

    /// The current phase's id and title.
    pub(crate) fn current_phase(&self) -> Option<(&str, &str)> {
        self.phase
            .as_ref()
            .filter(|p| p.ended.is_none())
            .map(|p| (p.id.as_str(), p.title.as_str()))
    }

    fn elapsed(&self, from: Option<Instant>, to: Option<Instant>) -> Duration {
        from.map_or(Duration::ZERO, |from| {
            to.unwrap_or(self.now).saturating_duration_since(from)
        })
    }

    /// The stage in words and its colour.
    fn stage_look(&self) -> (String, Style) {
        let yellow = Style::new().fg(Color::Yellow).add_modifier(Modifier::BOLD);
        let red = Style::new().fg(Color::Red).add_modifier(Modifier::BOLD);
        match self.pending {
            Pending::Stop | Pending::Kill => {
                let press = if self.pending == Pending::Stop { 1 } else { 2 };
                let said = crate::ui::interrupts::stage(press, &self.stopping);
                return (said.unwrap_or_default(), red);
            }
            Pending::Skip => return (strings::STAGE_SKIPPING.into(), yellow),
            Pending::Pause if self.stage != Stage::Paused => {
                return (strings::STAGE_PAUSE_REQUESTED.into(), yellow);
            }
            Pending::Pause | Pending::None => {}
        }
        match &self.stage {
            Stage::Starting => (
                strings::STAGE_STARTING.into(),
                Style::new().fg(Color::DarkGray),
            ),
            Stage::Running => (
                strings::STAGE_RUNNING.into(),
                Style::new().fg(Color::Green).add_modifier(Modifier::BOLD),
            ),
            Stage::Restarting { restart, max } => (
                format!("{} ({restart}/{max})", strings::STAGE_RESTARTING),
                yellow,
            ),
            Stage::Gate(name) => (format!("{} {name}", strings::STAGE_GATE), yellow),
            Stage::Checking => (strings::STAGE_CHECKING.into(), yellow),
            Stage::BetweenAttempts => (strings::STAGE_BETWEEN.into(), red),
            Stage::Paused => (strings::STAGE_PAUSED.into(), yellow),
            Stage::WaitingForLimit { until, at, what } => {
                let left = until.saturating_duration_since(self.now);
                (
                    format!(
                        "{} {what} until {at} ({} left)",
                        strings::STAGE_WAITING_FOR,
                        clock(left)
                    ),
                    yellow,
                )
            }
            Stage::PhaseDone(PhaseState::Blocked) => (strings::STAGE_NEEDS_HUMAN.into(), red),
            Stage::PhaseDone(status) => {
                let (_, style) = state_look(RowState::Stands(*status));
                (status.to_string(), style.add_modifier(Modifier::BOLD))
            }
            Stage::Finished(status) => {
                let style = match status {
                    RunStatus::Completed => state_look(RowState::Stands(PhaseState::Completed)).1,
                    RunStatus::Failed => state_look(RowState::Stands(PhaseState::Failed)).1,
                    RunStatus::Paused => state_look(RowState::Stands(PhaseState::Paused)).1,
                    RunStatus::Running => state_look(RowState::Running).1,
                    RunStatus::Interrupted => state_look(RowState::Stands(PhaseState::Pending)).1,
                };
                (status.to_string(), style.add_modifier(Modifier::BOLD))
            }
        }
    }
}

impl Component for Header {
    fn event(&mut self, event: &Event, now: Instant) {
        match event {
            Event::RunStarted {
                run_id,
                plan_title,
                agent,
                model,
                ..
            } => {
                self.run_id = run_id.clone();
                self.plan_title = plan_title.clone();
                self.agent = agent.clone();
                self.model = model.clone();
                self.run_started = Some(now);
            }
            Event::PhaseStarted {
                phase_id,
                title,
                index,
                total,
                attempt,
                max_attempts,
                kind,
            } => {
                let started = match &self.phase {
                    Some(p) if p.id == *phase_id && p.ended.is_none() => p.started,
                    _ => now,
                };
                self.phase = Some(PhaseNow {
                    id: phase_id.clone(),
                    title: title.clone(),
                    index: *index,
                    total: *total,
                    attempt: *attempt,
                    max_attempts: *max_attempts,
                    kind: *kind,
                    started,
                    ended: None,
                });
                self.restart = None;
                self.stage = Stage::Running;
                self.running.insert(phase_id.clone());
                if self.pending == Pending::Skip {
                    self.pending = Pending::None;
                }
            }
            Event::SessionStarted {
                restart,
                max_restarts,
                agent,
                model,
                ..
            } => {
                // A phase may name its own agent and model.
                agent.clone_into(&mut self.agent);
                model.clone_into(&mut self.model);
                self.restart = Some((*restart, *max_restarts));
                self.stage = Stage::Running;
            }
            Event::Restart {
                restart,
                max_restarts,
                ..
            } => {
                self.stage = Stage::Restarting {
                    restart: *restart,
                    max: *max_restarts,
                };
            }
            Event::GateStarted { name, .. } => self.stage = Stage::Gate(name.clone()),
            Event::GateFinished { .. } => self.stage = Stage::Checking,
            Event::AttemptFailed { .. } => self.stage = Stage::BetweenAttempts,
            Event::PhaseFinished {
                status, phase_id, ..
            } => {
                self.running.remove(phase_id);
                if let Some(phase) = &mut self.phase {
                    phase.ended = Some(now);
                }
                self.stage = Stage::PhaseDone(*status);
                if self.pending == Pending::Skip {
                    self.pending = Pending::None;
                }
            }
            Event::Paused { .. } => {
                self.stage = Stage::Paused;
                self.pending = Pending::None;
            }
            Event::WaitingForLimit {
                kind,
                until,
                wait_secs,
                ..
            } => {
                self.stage = Stage::WaitingForLimit {
                    until: now + Duration::from_secs(*wait_secs),
                    at: crate::words::local_time_of(until),
                    what: kind.waiting_for(),
                };
            }
            Event::Resumed { .. } => {
                self.stage = Stage::Running;
                self.pending = Pending::None;
            }
            Event::RunFinished { summary } => {
                self.run_ended = Some(now);
                if let Some(phase) = &mut self.phase
                    && phase.ended.is_none()
                {
                    phase.ended = Some(now);
                }
                self.stage = Stage::Finished(summary.status);
                self.pending = Pending::None;
            }
            _ => {}
        }
    }

    fn draw(&self, frame: &mut Frame<'_>, area: Rect) {
        let run_clock = clock(self.elapsed(self.run_started, self.run_ended));
        let short_id = self.run_id.get(..8).unwrap_or(&self.run_id);
        let block = Block::new()
            .borders(Borders::ALL)
            .padding(Padding::horizontal(1))
            .title(Span::styled(
                strings::TITLE_APP,
                Style::new().add_modifier(Modifier::BOLD),
            ))
            .title(
                Line::from(format!(" {} {short_id} · {run_clock} ", strings::RUN))
                    .alignment(Alignment::Right),
            );
        let inner = block.inner(area);
        frame.render_widget(block, area);
        if inner.height == 0 {
            return;
        }
        let dim = Style::new().fg(Color::DarkGray);
        let bold = Style::new().add_modifier(Modifier::BOLD);
        let width = usize::from(inner.width);

        // Line 1: plan, phase i/n and title; stage and phase time on the right.
        let (stage, stage_style) = self.stage_look();
        let right = match &self.phase {
            Some(p) => format!(
                "  {} {}",
                strings::PHASE,
                clock(self.elapsed(Some(p.started), p.ended))
            ),
            None => String::new(),
        };
        let mut left = vec![Span::styled(self.plan_title.clone(), bold)];
        match &self.phase {
            _ if self.running.len() > 1 => {
                left.push(Span::styled(format!("  {} ", strings::PHASES_RUNNING), dim));
                left.push(Span::raw(
                    self.running.iter().cloned().collect::<Vec<_>>().join(", "),
                ));
            }
            Some(p) => {
                left.push(Span::styled(
                    format!("  {} {}/{}  ", strings::PHASE, p.index, p.total),
                    dim,
                ));
                // Ids are often just the position; show them only when they say more.
                if p.id != p.index.to_string() {
                    left.push(Span::styled(format!("{} ", p.id), dim));
                }
                left.push(Span::raw(p.title.clone()));
            }
            None => left.push(Span::styled(format!("  {}", strings::NO_PHASE_YET), dim)),
        }
        let right_width = stage.chars().count() + right.chars().count() + 2;
        let left_room = width.saturating_sub(right_width);
        let left = fit_spans(left, left_room);
        let used: usize = left.iter().map(ratatui::prelude::Span::width).sum();
        let mut first = left;
        first.push(Span::raw(" ".repeat(left_room.saturating_sub(used))));
        first.push(Span::styled("● ", stage_style));
        first.push(Span::styled(stage, stage_style));
        first.push(Span::styled(right, dim));

        // Line 2: agent, model, attempt, restart.
        let mut second = vec![
            Span::styled(format!("{} ", strings::AGENT), dim),
            Span::raw(self.agent.clone()),
            Span::styled(format!(" · {} ", strings::MODEL), dim),
            Span::raw(if self.model.is_empty() {
                strings::AGENT_DEFAULT_MODEL.to_owned()
            } else {
                self.model.clone()
            }),
        ];
        if let Some(p) = &self.phase {
            if p.kind == AttemptKind::MergeFix {
                second.push(Span::styled(" · ", dim));
                second.push(Span::raw(strings::MERGE_FIX));
            } else {
                second.push(Span::styled(format!(" · {} ", strings::ATTEMPT), dim));
                second.push(Span::raw(format!("{}/{}", p.attempt, p.max_attempts)));
            }
            match p.kind {
                AttemptKind::First | AttemptKind::MergeFix => {}
                AttemptKind::Retry => {
                    second.push(Span::styled(format!(" ({})", strings::KIND_RETRY), dim));
                }
                AttemptKind::Remediation => second.push(Span::styled(
                    format!(" ({})", strings::KIND_REMEDIATION),
                    dim,
                )),
            }
        }
        match self.restart {
            Some((_, 0)) => second.push(Span::styled(format!(" · {}", strings::RESTARTS_OFF), dim)),
            Some((restart, max)) => {
                second.push(Span::styled(format!(" · {} ", strings::RESTART), dim));
                second.push(Span::raw(format!("{restart}/{max}")));
            }
            None => {}
        }
        let lines = vec![Line::from(first), Line::from(fit_spans(second, width))];
        frame.render_widget(Paragraph::new(lines), inner);
    }
}

/// Cut a row of spans to `width` columns, the last one that overflows ending in `…`.
fn fit_spans(spans: Vec<Span<'static>>, width: usize) -> Vec<Span<'static>> {
    let mut out = Vec::with_capacity(spans.len());
    let mut used = 0;
    for span in spans {
        let w = span.width();
        if used + w <= width {
            used += w;
            out.push(span);
        } else {
            let room = width - used;
            if room > 0 {
                out.push(Span::styled(cut(&span.content, room), span.style));
            }
            break;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wait_for_a_usage_limit_counts_down() {
        let start = Instant::now();
        let mut header = Header::new(start);
        header.event(
            &Event::WaitingForLimit {
                phase_id: "1".into(),
                kind: crate::agent::FailureKind::UsageLimit,
                attempt: 1,
                until: "soon".into(),
                reset_known: true,
                wait_secs: 300,
                said: "You've hit your limit".into(),
            },
            start,
        );
        header.set_now(start + Duration::from_secs(60));
        assert_eq!(
            header.stage_look().0,
            "waiting for the usage limit until soon (04:00 left)"
        );
        header.event(
            &Event::SessionStarted {
                phase_id: "1".into(),
                attempt: 1,
                restart: 0,
                max_restarts: 3,
                agent: "claude".into(),
                model: "opus".into(),
                pid: 1,
                log_path: String::new(),
                no_restart: None,
                workdir: None,
            },
            start,
        );
        assert_eq!(header.stage_look().0, strings::STAGE_RUNNING);
    }
}
