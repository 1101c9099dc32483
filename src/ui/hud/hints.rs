//! The key-hint bar at the bottom: which keys do what right now (it changes while a
//! question is open, while paused, and after Ctrl-C).

use std::time::Instant;

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::Component;
use super::strings;
use crate::events::Event;

/// What the hints depend on; the app keeps it current.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct HintState {
    /// A yes/no question is open.
    pub(crate) asking: bool,
    /// The run is paused.
    pub(crate) paused: bool,
    /// A pause after the session was asked for.
    pub(crate) pause_requested: bool,
    /// Verbose tool inputs are on.
    pub(crate) verbose: bool,
    /// The log follows new lines.
    pub(crate) follow: bool,
    /// Ctrl-C presses (or a confirmed quit) so far.
    pub(crate) interrupts: u8,
    /// An agent ran when the last key was pressed.
    pub(crate) agent_running: bool,
    /// A git hook, or a git command running hooks, ran when the last key was pressed.
    pub(crate) hook_running: bool,
    /// A gate ran when the last key was pressed.
    pub(crate) gate_running: bool,
    /// Several phases run side by side: one can be focused.
    pub(crate) side_by_side: bool,
}

/// The hint bar.
#[derive(Debug, Default)]
pub(crate) struct Hints {
    state: HintState,
}

impl Hints {
    /// Show hints for `state`.
    pub(crate) fn set(&mut self, state: HintState) {
        self.state = state;
    }

    /// Each key with what pressing it does now: actions, never states ("v hide
    /// details", not "v verbose on").
    fn pairs(&self) -> Vec<(&'static str, &'static str)> {
        let s = self.state;
        if s.asking {
            return vec![strings::HINT_YES, strings::HINT_NO];
        }
        if s.interrupts > 0 {
            return vec![crate::ui::interrupts::next_press(
                s.interrupts,
                s.agent_running,
                s.hook_running,
                s.gate_running,
            )];
        }
        let pause = if s.paused {
            strings::HINT_RESUME
        } else if s.pause_requested {
            strings::HINT_UNPAUSE
        } else {
            strings::HINT_PAUSE
        };
        // Quit first: on a narrow terminal the bar is cut at the right.
        let mut pairs = vec![
            strings::HINT_QUIT,
            pause,
            strings::HINT_RESTART,
            strings::HINT_SKIP,
        ];
        if s.side_by_side {
            pairs.push(strings::HINT_FOCUS);
        }
        pairs.extend([
            if s.verbose {
                strings::HINT_VERBOSE_OFF
            } else {
                strings::HINT_VERBOSE_ON
            },
            if s.follow {
                strings::HINT_FOLLOW_OFF
            } else {
                strings::HINT_FOLLOW_ON
            },
            strings::HINT_SCROLL,
        ]);
        pairs
    }
}

impl Component for Hints {
    fn event(&mut self, _event: &Event, _now: Instant) {}

    fn draw(&self, frame: &mut Frame<'_>, area: Rect) {
        let key = Style::new()
            .fg(Color::Black)
            .bg(Color::Gray)
            .add_modifier(Modifier::BOLD);
        let mut spans = vec![Span::raw(" ")];
        let mut first = true;
        for (label, what) in self.pairs() {
            if !first {
                spans.push(Span::raw(" "));
            }
            first = false;
            spans.push(Span::styled(format!(" {label} "), key));
            spans.push(Span::raw(format!(" {what}")));
        }
        frame.render_widget(Paragraph::new(Line::from(spans)), area);
    }
}
