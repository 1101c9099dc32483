//! The yes/no question drawn over the dashboard before a key that cannot be undone
//! (`q` quit, `s` skip) takes effect.

use std::time::Instant;

use ratatui::Frame;
use ratatui::layout::{Alignment, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};

use super::Component;
use super::strings;
use crate::events::Event;

/// What is being asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Question {
    /// Stop the agent and pause the run.
    Quit,
    /// Skip this phase.
    Skip {
        /// The phase.
        phase_id: String,
        /// Its title.
        title: String,
    },
}

/// The open question, if any.
#[derive(Debug, Default)]
pub(crate) struct Confirm {
    open: Option<Question>,
}

impl Confirm {
    /// Ask `question` (replacing any open one).
    pub(crate) fn ask(&mut self, question: Question) {
        self.open = Some(question);
    }

    /// Close the question, returning it.
    pub(crate) fn take(&mut self) -> Option<Question> {
        self.open.take()
    }

    /// Whether a question is open.
    pub(crate) fn is_open(&self) -> bool {
        self.open.is_some()
    }
}

impl Component for Confirm {
    fn event(&mut self, event: &Event, _now: Instant) {
        // A skip question about a phase that has ended no longer makes sense.
        if let Some(Question::Skip { phase_id, .. }) = &self.open {
            let stale = match event {
                Event::PhaseFinished { phase_id: id, .. } => id == phase_id,
                Event::RunFinished { .. } => true,
                _ => false,
            };
            if stale {
                self.open = None;
            }
        }
    }

    fn draw(&self, frame: &mut Frame<'_>, area: Rect) {
        let Some(question) = &self.open else {
            return;
        };
        let (ask, detail) = match question {
            Question::Quit => (
                strings::CONFIRM_QUIT.to_owned(),
                strings::CONFIRM_QUIT_DETAIL,
            ),
            Question::Skip { phase_id, title } => (
                strings::confirm_skip(phase_id, title),
                strings::CONFIRM_SKIP_DETAIL,
            ),
        };
        let width = area.width.saturating_sub(4).min(64);
        let height = 7.min(area.height);
        let popup = Rect {
            x: area.x + (area.width.saturating_sub(width)) / 2,
            y: area.y + (area.height.saturating_sub(height)) / 2,
            width,
            height,
        };
        let key = Style::new()
            .fg(Color::Black)
            .bg(Color::Gray)
            .add_modifier(Modifier::BOLD);
        let text = vec![
            Line::from(Span::styled(ask, Style::new().add_modifier(Modifier::BOLD))),
            Line::from(Span::styled(detail, Style::new().fg(Color::Gray))),
            Line::from(vec![
                Span::styled(format!(" {} ", strings::HINT_YES.0), key),
                Span::raw(format!(" {}   ", strings::HINT_YES.1)),
                Span::styled(format!(" {} ", strings::HINT_NO.0), key),
                Span::raw(format!(" {}", strings::HINT_NO.1)),
            ])
            .alignment(Alignment::Center),
        ];
        let block = Block::new()
            .borders(Borders::ALL)
            .border_style(Style::new().fg(Color::Yellow))
            .title(strings::TITLE_CONFIRM);
        frame.render_widget(Clear, popup);
        frame.render_widget(
            Paragraph::new(text).block(block).wrap(Wrap { trim: true }),
            popup,
        );
    }
}
