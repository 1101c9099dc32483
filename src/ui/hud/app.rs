//! The HUD's state: every component, updated from run events and keys, and the layout
//! that draws them. Pure: no terminal, no channels, no clock of its own (each update is
//! given `now`), so tests drive it with events exactly as a run does and draw it on a
//! test backend.

use std::path::PathBuf;
use std::time::Instant;

use crossterm::event::KeyEvent;
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};

use super::Component;
use super::activity::{self, ActivityLog};
use super::confirm::{Confirm, Question};
use super::gauge::Gauge;
use super::header::{Header, Pending};
use super::hints::{HintState, Hints};
use super::keys::{Action, KeyBindings};
use super::phases::PhaseList;
use crate::events::{Event, RunRequest, RunSummary};
use crate::process::Busy;

/// What a key asks of the loop around the app.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// Send this request to the run.
    Send(RunRequest),
    /// Third Ctrl-C: restore the terminal and exit at once.
    Abort,
}

/// The dashboard's state.
#[derive(Debug)]
pub struct App {
    keys: KeyBindings,
    header: Header,
    gauge: Gauge,
    activity: ActivityLog,
    phases: PhaseList,
    hints: Hints,
    confirm: Confirm,
    /// Ctrl-C presses so far (a confirmed quit counts as the first).
    interrupts: u8,
    summary: Option<RunSummary>,
    /// The running phase `s` and `r` aim at and whose log is shown alone, if any.
    focus: Option<String>,
    /// What runs now (an agent, git hooks), for the words of the next Ctrl-C.
    busy: Busy,
}

impl App {
    /// A dashboard before any event. Tool paths under `root` are shown relative to it;
    /// `now` starts the clock.
    #[must_use]
    pub fn new(root: Option<PathBuf>, now: Instant) -> Self {
        let mut app = App {
            keys: KeyBindings::default(),
            header: Header::new(now),
            gauge: Gauge::default(),
            activity: ActivityLog::new(root, activity::CAPACITY),
            phases: PhaseList::default(),
            hints: Hints::default(),
            confirm: Confirm::default(),
            interrupts: 0,
            summary: None,
            focus: None,
            busy: Busy::default(),
        };
        app.sync_hints();
        app
    }

    /// Follow one run event that arrived at `now`.
    pub fn event(&mut self, event: &Event, now: Instant) {
        self.header.set_now(now);
        self.header.event(event, now);
        self.gauge.event(event, now);
        self.activity.event(event, now);
        self.phases.event(event, now);
        self.confirm.event(event, now);
        if let Event::RunFinished { summary } = event {
            self.summary = Some(summary.clone());
        }
        // A focused phase that no longer runs gives the view back to every phase.
        if let (Event::SessionEnded { phase_id, .. }, Some(focus)) = (event, &self.focus)
            && phase_id == focus
        {
            self.focus = None;
            self.activity.set_focus(None);
        }
        self.sync_hints();
    }

    /// Move the clock without an event (elapsed times tick).
    pub fn tick(&mut self, now: Instant) {
        self.header.set_now(now);
    }

    /// The run's summary, once it has finished.
    #[must_use]
    pub fn summary(&self) -> Option<&RunSummary> {
        self.summary.as_ref()
    }

    /// What runs now: an agent, git hooks around a commit. A Ctrl-C then says what it
    /// reaches (the loop around the app asks the process registry before each key).
    pub fn set_busy(&mut self, busy: Busy) {
        self.busy = busy;
    }

    /// Handle a key; returns what the loop should do about it, if anything.
    pub fn key(&mut self, key: &KeyEvent) -> Option<Command> {
        let command = if self.confirm.is_open() {
            self.answer(key)
        } else {
            self.keys.action(key).and_then(|action| self.act(action))
        };
        self.sync_hints();
        command
    }

    fn answer(&mut self, key: &KeyEvent) -> Option<Command> {
        match self.keys.answer(key)? {
            Action::Yes => match self.confirm.take()? {
                Question::Quit => self.interrupt(),
                Question::Skip { .. } => {
                    self.header.set_pending(Pending::Skip);
                    Some(Command::Send(RunRequest::SkipPhase))
                }
            },
            Action::No => {
                self.confirm.take();
                None
            }
            Action::Interrupt => {
                self.confirm.take();
                self.interrupt()
            }
            _ => None,
        }
    }

    fn act(&mut self, action: Action) -> Option<Command> {
        let stopping = self.interrupts > 0 || self.summary.is_some();
        match action {
            Action::Interrupt => return self.interrupt(),
            Action::TogglePause if !stopping => {
                let pending = if self.header.is_paused() || self.header.pending() == Pending::Pause
                {
                    Pending::None
                } else {
                    Pending::Pause
                };
                self.header.set_pending(pending);
                return Some(Command::Send(RunRequest::TogglePause));
            }
            Action::RestartNow if !stopping => {
                return Some(Command::Send(RunRequest::RestartNow));
            }
            Action::Focus if !stopping => return self.focus_next(),
            Action::SkipPhase if !stopping => {
                if let Some(id) = &self.focus {
                    let question = Question::Skip {
                        phase_id: id.clone(),
                        title: self.phases.title(id).unwrap_or_default().to_owned(),
                    };
                    self.confirm.ask(question);
                } else if let Some((id, title)) = self.header.current_phase() {
                    let question = Question::Skip {
                        phase_id: id.to_owned(),
                        title: title.to_owned(),
                    };
                    self.confirm.ask(question);
                }
            }
            Action::Quit if !stopping => self.confirm.ask(Question::Quit),
            Action::ToggleVerbose => self.activity.toggle_verbose(),
            Action::ToggleFollow => self.activity.toggle_follow(),
            Action::ScrollUp => self.activity.scroll_up(1),
            Action::ScrollDown => self.activity.scroll_down(1),
            Action::PageUp => self.activity.scroll_up(self.activity.page()),
            Action::PageDown => self.activity.scroll_down(self.activity.page()),
            Action::Top => self.activity.top(),
            Action::Bottom => self.activity.bottom(),
            _ => {}
        }
        None
    }

    /// Focus the running phase after the focused one (in id order); past the last,
    /// none. Tells the run, so `s` and `r` reach that phase.
    fn focus_next(&mut self) -> Option<Command> {
        if !self.gauge.side_by_side() && self.focus.is_none() {
            return None;
        }
        let mut running = self.gauge.running_phases();
        let next = match &self.focus {
            None => running.next(),
            Some(focus) => running.skip_while(|id| id != focus).nth(1),
        }
        .map(str::to_owned);
        self.focus.clone_from(&next);
        self.activity.set_focus(next.clone());
        Some(Command::Send(RunRequest::Focus(next)))
    }

    /// Ctrl-C (or a confirmed quit): stop gracefully, then kill, then abort.
    fn interrupt(&mut self) -> Option<Command> {
        self.interrupts = self.interrupts.saturating_add(1);
        match self.interrupts {
            1 => {
                self.header.set_interrupt(Pending::Stop, self.busy.clone());
                Some(Command::Send(RunRequest::Interrupt))
            }
            2 => {
                self.header.set_interrupt(Pending::Kill, self.busy.clone());
                Some(Command::Send(RunRequest::Kill))
            }
            _ => Some(Command::Abort),
        }
    }

    fn sync_hints(&mut self) {
        self.hints.set(HintState {
            asking: self.confirm.is_open(),
            paused: self.header.is_paused(),
            pause_requested: self.header.pending() == Pending::Pause,
            verbose: self.activity.is_verbose(),
            follow: self.activity.follows(),
            interrupts: self.interrupts,
            agent_running: self.busy.agent,
            hook_running: self.busy.finishing(),
            gate_running: !self.busy.gates.is_empty(),
            side_by_side: self.focus.is_some() || self.gauge.side_by_side(),
        });
    }

    /// Draw the whole dashboard.
    pub fn draw(&self, frame: &mut Frame<'_>) {
        let area = frame.area();
        let [header, gauge, middle, hints] = Layout::vertical([
            Constraint::Length(4),
            Constraint::Length(self.gauge.height()),
            Constraint::Min(3),
            Constraint::Length(1),
        ])
        .areas(area);
        let phases_width = if area.width >= 70 {
            (area.width / 4).clamp(20, 36)
        } else {
            0
        };
        let [activity, phases] =
            Layout::horizontal([Constraint::Min(20), Constraint::Length(phases_width)])
                .areas(middle);
        self.header.draw(frame, header);
        self.gauge.draw(frame, gauge);
        self.activity.draw(frame, activity);
        if phases.width > 0 {
            self.phases.draw(frame, phases);
        }
        self.hints.draw(frame, hints);
        self.confirm.draw(frame, centre(area));
    }

    /// Entries in the activity log.
    #[cfg(test)]
    pub(crate) fn activity_len(&self) -> usize {
        self.activity.len()
    }
}

/// The area a question is centred in: the whole screen but the hint bar.
fn centre(area: Rect) -> Rect {
    Rect {
        height: area.height.saturating_sub(1),
        ..area
    }
}
