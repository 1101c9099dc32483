//! The phase list: every phase of the run in execution order with a status icon, the
//! current one highlighted.

use std::time::Instant;

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};

use super::Component;
use super::compact::cut;
use super::strings;
use crate::events::Event;

/// A phase's icon and colour for a status word from the events.
pub(crate) fn status_look(status: &str) -> (&'static str, Style) {
    match status {
        "completed" => ("✓", Style::new().fg(Color::Green)),
        "running" => ("▶", Style::new().fg(Color::Cyan)),
        "restarting" => ("⟳", Style::new().fg(Color::Yellow)),
        "validating" => ("…", Style::new().fg(Color::Yellow)),
        "paused" => ("‖", Style::new().fg(Color::Yellow)),
        "failed" => ("✗", Style::new().fg(Color::Red)),
        strings::STATUS_NEEDS_HUMAN => ("⊘", Style::new().fg(Color::Red)),
        "skipped" => ("↷", Style::new().fg(Color::DarkGray)),
        "not run" => ("·", Style::new().fg(Color::DarkGray)),
        _ => ("○", Style::new().fg(Color::Gray)),
    }
}

/// One phase.
#[derive(Debug, Clone)]
struct Row {
    id: String,
    title: String,
    status: String,
}

/// The phase list's state.
#[derive(Debug, Default)]
pub(crate) struct PhaseList {
    rows: Vec<Row>,
    current: Option<String>,
}

impl PhaseList {
    fn set(&mut self, id: &str, status: &str) {
        if let Some(row) = self.rows.iter_mut().find(|r| r.id == id) {
            status.clone_into(&mut row.status);
        }
    }

    fn set_current(&mut self, status: &str) {
        if let Some(id) = self.current.clone() {
            self.set(&id, status);
        }
    }
}

impl Component for PhaseList {
    fn event(&mut self, event: &Event, _now: Instant) {
        match event {
            Event::RunStarted { phases, .. } => {
                self.rows = phases
                    .iter()
                    .map(|p| Row {
                        id: p.id.clone(),
                        title: p.title.clone(),
                        status: p.status.clone(),
                    })
                    .collect();
            }
            Event::PhaseSkipped { phase_id, .. } => self.set(phase_id, "skipped"),
            Event::PhaseStarted { phase_id, .. } => {
                self.current = Some(phase_id.clone());
                self.set(phase_id, "running");
            }
            Event::SessionStarted { .. } | Event::Resumed { .. } => self.set_current("running"),
            Event::Restart { .. } => self.set_current("restarting"),
            Event::GateStarted { .. } => self.set_current("validating"),
            Event::Paused { .. } => self.set_current("paused"),
            Event::PhaseFinished {
                phase_id, status, ..
            } => self.set(phase_id, status),
            Event::RunFinished { summary } => {
                for phase in &summary.phases {
                    // Phases skipped before the run keep the reason they showed.
                    if phase.status != "skipped" {
                        self.set(&phase.id, &phase.status);
                    }
                }
                self.current = None;
            }
            _ => {}
        }
    }

    fn draw(&self, frame: &mut Frame<'_>, area: Rect) {
        let block = Block::new()
            .borders(Borders::ALL)
            .title(strings::TITLE_PHASES);
        let inner = block.inner(area);
        frame.render_widget(block, area);
        let width = usize::from(inner.width);
        let height = usize::from(inner.height);
        if width == 0 || height == 0 {
            return;
        }
        // Keep the current phase in view when there are more phases than rows.
        let current = self
            .current
            .as_ref()
            .and_then(|id| self.rows.iter().position(|r| &r.id == id))
            .unwrap_or(0);
        let first = current
            .saturating_sub(height / 2)
            .min(self.rows.len().saturating_sub(height));
        let lines: Vec<Line<'_>> = self
            .rows
            .iter()
            .skip(first)
            .take(height)
            .map(|row| {
                let (icon, style) = status_look(&row.status);
                let is_current = self.current.as_deref() == Some(row.id.as_str());
                let text_style = if is_current {
                    Style::new().add_modifier(Modifier::BOLD)
                } else if matches!(row.status.as_str(), "completed" | "skipped" | "not run") {
                    Style::new().fg(Color::DarkGray)
                } else {
                    Style::new()
                };
                let label = format!("{} {}", row.id, row.title);
                Line::from(vec![
                    Span::styled(format!("{icon} "), style),
                    Span::styled(cut(&label, width.saturating_sub(2)), text_style),
                ])
            })
            .collect();
        frame.render_widget(Paragraph::new(lines), inner);
    }
}
