//! [`Tone`]: what kind of line an activity entry is, which decides its colour and marker.

use ratatui::style::{Color, Modifier, Style};

use super::strings;

/// What kind of line an entry is; decides its colour and marker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Tone {
    /// Assistant text.
    Text,
    /// A tool call.
    Tool,
    /// A failure: tool error, failed gate, failed attempt or phase.
    Error,
    /// A context restart.
    Restart,
    /// A success: gate passed, phase completed.
    Good,
    /// Something to notice: a warning, a pause, compliance findings.
    Warning,
    /// Commits.
    Commit,
    /// Phase and run milestones.
    Milestone,
    /// Background detail: sessions, gate commands, stderr, notices.
    Dim,
}

impl Tone {
    pub(super) fn mark(self) -> &'static str {
        match self {
            Tone::Tool => strings::MARK_TOOL,
            Tone::Error => strings::MARK_ERROR,
            Tone::Good => strings::MARK_OK,
            Tone::Restart => strings::MARK_RESTART,
            Tone::Warning => strings::MARK_WARNING,
            Tone::Commit => strings::MARK_COMMIT,
            Tone::Text | Tone::Milestone | Tone::Dim => "",
        }
    }

    pub(super) fn style(self) -> Style {
        match self {
            Tone::Text => Style::new(),
            Tone::Tool => Style::new().fg(Color::Cyan),
            Tone::Error => Style::new().fg(Color::Red).add_modifier(Modifier::BOLD),
            Tone::Restart => Style::new().fg(Color::Yellow).add_modifier(Modifier::BOLD),
            Tone::Good => Style::new().fg(Color::Green),
            Tone::Warning => Style::new().fg(Color::Yellow),
            Tone::Commit => Style::new().fg(Color::Blue),
            Tone::Milestone => Style::new().add_modifier(Modifier::BOLD),
            Tone::Dim => Style::new().fg(Color::DarkGray),
        }
    }
}
