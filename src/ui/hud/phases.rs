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
use crate::events::{Event, PhaseState};

/// What the phase list shows for a phase: where it stands, or what its session is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RowState {
    /// Where it stands in the run.
    Stands(PhaseState),
    /// Its agent session is working.
    Running,
    /// Between a context stop and the next session.
    Restarting,
    /// Its gates are running.
    Validating,
}

/// A phase's icon and colour.
pub(crate) fn state_look(state: RowState) -> (&'static str, Style) {
    match state {
        RowState::Stands(PhaseState::Completed) => ("✓", Style::new().fg(Color::Green)),
        RowState::Running => ("▶", Style::new().fg(Color::Cyan)),
        RowState::Restarting => ("⟳", Style::new().fg(Color::Yellow)),
        RowState::Validating => ("…", Style::new().fg(Color::Yellow)),
        RowState::Stands(PhaseState::Paused) => ("‖", Style::new().fg(Color::Yellow)),
        RowState::Stands(PhaseState::Failed) => ("✗", Style::new().fg(Color::Red)),
        RowState::Stands(PhaseState::Blocked) => ("⊘", Style::new().fg(Color::Red)),
        RowState::Stands(PhaseState::AwaitingHuman) => ("⚑", Style::new().fg(Color::Magenta)),
        RowState::Stands(PhaseState::Skipped) => ("↷", Style::new().fg(Color::DarkGray)),
        RowState::Stands(PhaseState::NotRun) => ("·", Style::new().fg(Color::DarkGray)),
        RowState::Stands(PhaseState::Pending) => ("○", Style::new().fg(Color::Gray)),
    }
}

/// One phase.
#[derive(Debug, Clone)]
struct Row {
    id: String,
    title: String,
    state: RowState,
}

/// The phase list's state.
#[derive(Debug, Default)]
pub(crate) struct PhaseList {
    rows: Vec<Row>,
    current: Option<String>,
}

impl PhaseList {
    fn set(&mut self, id: &str, state: RowState) {
        if let Some(row) = self.rows.iter_mut().find(|r| r.id == id) {
            row.state = state;
        }
    }

    /// The title of phase `id`.
    pub(crate) fn title(&self, id: &str) -> Option<&str> {
        self.rows
            .iter()
            .find(|r| r.id == id)
            .map(|r| r.title.as_str())
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
                        state: RowState::Stands(p.status),
                    })
                    .collect();
            }
            Event::PhaseSkipped { phase_id, .. } => {
                self.set(phase_id, RowState::Stands(PhaseState::Skipped));
            }
            Event::PhaseStarted { phase_id, .. } => {
                self.current = Some(phase_id.clone());
                self.set(phase_id, RowState::Running);
            }
            // Each about its own phase: several run at once when phases run side by side.
            Event::SessionStarted { phase_id, .. } | Event::Resumed { phase_id } => {
                self.set(phase_id, RowState::Running);
            }
            Event::Restart { phase_id, .. } => self.set(phase_id, RowState::Restarting),
            Event::GateStarted { phase_id, .. } => self.set(phase_id, RowState::Validating),
            Event::Paused { phase_id } => self.set(phase_id, RowState::Stands(PhaseState::Paused)),
            Event::PhaseFinished {
                phase_id, status, ..
            } => self.set(phase_id, RowState::Stands(*status)),
            Event::RunFinished { summary } => {
                for phase in &summary.phases {
                    // Phases skipped before the run keep the reason they showed.
                    if phase.status != PhaseState::Skipped {
                        self.set(&phase.id, RowState::Stands(phase.status));
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
                let (icon, style) = state_look(row.state);
                let is_current = self.current.as_deref() == Some(row.id.as_str());
                let text_style = if is_current {
                    Style::new().add_modifier(Modifier::BOLD)
                } else if matches!(
                    row.state,
                    RowState::Stands(
                        PhaseState::Completed | PhaseState::Skipped | PhaseState::NotRun
                    )
                ) {
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
