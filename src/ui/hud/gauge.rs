//! The context gauge: the current session's tokens against its window, coloured green
//! below 50 %, yellow below the restart threshold and red at or above it, with a tick at
//! the threshold; and below it tokens, cost and tool calls for the session and the run.

use std::time::Instant;

use ratatui::Frame;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Padding, Paragraph};
use unicode_width::UnicodeWidthStr;

use super::Component;
use super::strings;
use crate::context::ContextLimit;
use crate::context::{Exactness, Snapshot};
use crate::events::Event;
use crate::words::thousands;

/// Below this percentage the gauge is green.
const GREEN_BELOW: f64 = 50.0;
/// A full window, in percent.
const FULL: f64 = 100.0;

/// Cell glyphs.
const FILLED: &str = "█";
const EMPTY: &str = "░";
const TICK: &str = "┃";

/// What the gauge knows.
#[derive(Debug, Default)]
pub(crate) struct Gauge {
    /// Where sessions are stopped for their context, if they are.
    threshold: ContextLimit,
    /// Why the current session will not be restarted for its context, if so.
    no_restart: Option<crate::events::NoRestart>,
    /// What the single gauge shows.
    shown: Shown,
    /// Sums over ended sessions.
    closed: Totals,
    /// The sessions running now, by phase, with their latest figures: one gauge line
    /// each when phases run side by side.
    running: std::collections::BTreeMap<String, Option<Snapshot>>,
}

/// What the gauge shows when one session (or none) runs.
#[derive(Debug, Default)]
enum Shown {
    /// A session started and has not reported yet (or none has started).
    #[default]
    Waiting,
    /// The running session's latest figures.
    Running(Snapshot),
    /// The figures a session ended with (counted in `closed`), while its phase goes on:
    /// gates, a restart, the next attempt.
    Ended(Snapshot),
    /// Between phases: no session runs, and the last one's figures belong to a phase
    /// that is over.
    Idle,
}

impl Shown {
    fn snapshot(&self) -> Option<&Snapshot> {
        match self {
            Shown::Running(snapshot) | Shown::Ended(snapshot) => Some(snapshot),
            Shown::Waiting | Shown::Idle => None,
        }
    }
}

/// Billed tokens, cost and tool calls summed over sessions.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
struct Totals {
    /// Tokens billed (every kind, every request): what the session used, not its context.
    tokens: u64,
    cost_usd: f64,
    tool_calls: u64,
}

impl Totals {
    fn add(&mut self, snapshot: &Snapshot) {
        self.tokens += snapshot.billed.total();
        self.cost_usd += snapshot.cost_usd.unwrap_or(0.0);
        self.tool_calls += u64::from(snapshot.tool_calls);
    }
}

/// The colour for a context percentage: red from the limit on (or a full window when
/// there is none).
pub(crate) fn level_color(percent: f64, limit: ContextLimit) -> Color {
    if percent >= limit.percent().unwrap_or(FULL) {
        Color::Red
    } else if percent < GREEN_BELOW {
        Color::Green
    } else {
        Color::Yellow
    }
}

impl Gauge {
    /// The run's totals: ended sessions plus the running ones.
    fn run_totals(&self) -> Totals {
        let mut totals = self.closed;
        for live in self.running.values().flatten() {
            totals.add(live);
        }
        totals
    }

    /// The phases whose session runs now, in id order.
    pub(crate) fn running_phases(&self) -> impl Iterator<Item = &str> {
        self.running.keys().map(String::as_str)
    }

    /// Whether more than one session runs now.
    pub(crate) fn side_by_side(&self) -> bool {
        self.running.len() > 1
    }

    /// Rows the gauge needs: a bar and the figures, or a bar per running session.
    pub(crate) fn height(&self) -> u16 {
        let bars = u16::try_from(self.running.len()).unwrap_or(u16::MAX).max(1);
        if bars == 1 { 4 } else { bars.saturating_add(3) }
    }

    /// One line per running session: its phase, bar and percentage.
    fn draw_each(&self, frame: &mut Frame<'_>, inner: Rect) {
        let dim = Style::new().fg(Color::DarkGray);
        for (row, (phase, live)) in (0..inner.height.saturating_sub(1)).zip(&self.running) {
            let label = format!("{phase:>4} ");
            let label_width = u16::try_from(label.width()).unwrap_or(u16::MAX);
            let (percent, figure) = match live {
                Some(live) => (
                    live.percent,
                    Span::styled(
                        format!(
                            " {:.1}% · {} / {}",
                            live.percent,
                            thousands(live.tokens),
                            thousands(live.window.tokens)
                        ),
                        Style::new().fg(level_color(live.percent, self.threshold)),
                    ),
                ),
                None => (
                    0.0,
                    Span::styled(format!(" {}", strings::GAUGE_WAITING), dim),
                ),
            };
            let figure_width = u16::try_from(figure.content.width()).unwrap_or(u16::MAX);
            let y = inner.y + row;
            frame.render_widget(
                Paragraph::new(Span::styled(label, Style::new().fg(Color::Cyan))),
                Rect {
                    y,
                    height: 1,
                    width: label_width.min(inner.width),
                    ..inner
                },
            );
            let bar = Rect {
                x: inner.x + label_width,
                y,
                width: inner
                    .width
                    .saturating_sub(label_width)
                    .saturating_sub(figure_width)
                    .max(inner.width / 5)
                    .min(inner.width.saturating_sub(label_width)),
                height: 1,
            };
            self.bar(frame.buffer_mut(), bar, percent);
            frame.render_widget(
                Paragraph::new(figure),
                Rect {
                    x: bar.x + bar.width,
                    y,
                    width: inner.width.saturating_sub(label_width + bar.width),
                    height: 1,
                },
            );
        }
    }

    /// The bar: `width` cells, filled to `percent`, with the threshold tick.
    fn bar(&self, buf: &mut Buffer, area: Rect, percent: f64) {
        let width = usize::from(area.width);
        if width == 0 {
            return;
        }
        let color = level_color(percent, self.threshold);
        let filled = cells(percent, width);
        let tick = self
            .threshold
            .percent()
            .map(|percent| cells(percent, width).min(width - 1));
        for (i, x) in (area.x..area.x + area.width).enumerate() {
            let (symbol, style) = if Some(i) == tick {
                let style = Style::new().fg(Color::White).add_modifier(Modifier::BOLD);
                let style = if i < filled { style.bg(color) } else { style };
                (TICK, style)
            } else if i < filled {
                (FILLED, Style::new().fg(color))
            } else {
                (EMPTY, Style::new().fg(Color::DarkGray))
            };
            if let Some(cell) = buf.cell_mut((x, area.y)) {
                cell.set_symbol(symbol).set_style(style);
            }
        }
    }
}

/// How many of `width` cells `percent` fills.
fn cells(percent: f64, width: usize) -> usize {
    let fraction = (percent / 100.0).clamp(0.0, 1.0);
    #[expect(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss,
        reason = "a terminal width and a clamped fraction"
    )]
    let n = (fraction * width as f64).round() as usize;
    n.min(width)
}

/// `label 12,345 billed · $0.12 · 7 tool calls`.
fn figures(label: &str, totals: &Totals) -> Vec<Span<'static>> {
    let dim = Style::new().fg(Color::DarkGray);
    let bold = Style::new().add_modifier(Modifier::BOLD);
    vec![
        Span::styled(format!("{label} "), dim),
        Span::styled(thousands(totals.tokens), bold),
        Span::raw(format!(" {} · ", strings::GAUGE_BILLED)),
        Span::styled(crate::words::dollars(totals.cost_usd, false), bold),
        Span::raw(" · "),
        Span::styled(totals.tool_calls.to_string(), bold),
        Span::raw(format!(
            " {}{}",
            strings::GAUGE_TOOL_CALLS,
            crate::words::plural(totals.tool_calls)
        )),
    ]
}

impl Component for Gauge {
    fn event(&mut self, event: &Event, _now: Instant) {
        match event {
            Event::RunStarted {
                context_threshold, ..
            } => self.threshold = *context_threshold,
            Event::SessionStarted {
                no_restart,
                phase_id,
                ..
            } => {
                self.shown = Shown::Waiting;
                self.no_restart = *no_restart;
                self.running.insert(phase_id.clone(), None);
            }
            Event::Context { snapshot, phase_id } => {
                if let Some(live) = self.running.get_mut(phase_id) {
                    *live = Some(snapshot.clone());
                }
                // A late reading of an ended session changes nothing.
                if matches!(self.shown, Shown::Waiting | Shown::Running(_)) {
                    self.shown = Shown::Running(snapshot.clone());
                }
            }
            Event::SessionEnded {
                snapshot, phase_id, ..
            } => {
                self.running.remove(phase_id);
                self.closed.add(snapshot);
                self.shown = Shown::Ended(snapshot.clone());
            }
            Event::PhaseFinished { .. } if self.running.is_empty() => {
                self.shown = Shown::Idle;
                self.no_restart = None;
            }
            // The summary's totals are the run's own accounts: show those at the end.
            Event::RunFinished { summary } => {
                self.running.clear();
                self.closed.tokens = summary.billed.total();
                self.closed.cost_usd = summary.cost_usd;
                if let Shown::Running(snapshot) = &self.shown {
                    self.shown = Shown::Ended(snapshot.clone());
                }
            }
            _ => {}
        }
    }

    fn draw(&self, frame: &mut Frame<'_>, area: Rect) {
        let block = Block::new()
            .borders(Borders::ALL)
            .padding(Padding::horizontal(1))
            .title(strings::TITLE_CONTEXT);
        let inner = block.inner(area);
        frame.render_widget(block, area);
        if inner.height == 0 || inner.width < 10 {
            return;
        }
        let dim = Style::new().fg(Color::DarkGray);
        if self.running.len() > 1 {
            self.draw_each(frame, inner);
            let figures = Line::from(figures(strings::GAUGE_RUN, &self.run_totals()));
            let last = Rect {
                y: inner.y + inner.height.saturating_sub(1),
                height: 1,
                ..inner
            };
            frame.render_widget(Paragraph::new(figures), last);
            return;
        }
        let (percent, label) = match self.shown.snapshot() {
            Some(live) if live.tokens > 0 || live.exactness == Exactness::Exact => {
                let mut spans = vec![
                    Span::raw(format!(
                        " {} / {} {} ",
                        thousands(live.tokens),
                        thousands(live.window.tokens),
                        strings::GAUGE_TOKENS
                    )),
                    Span::styled(format!("({}) ", live.window.source), dim),
                    Span::raw(" "),
                    Span::styled(
                        format!("{:.1}%", live.percent),
                        Style::new()
                            .fg(level_color(live.percent, self.threshold))
                            .add_modifier(Modifier::BOLD),
                    ),
                ];
                if live.exactness == Exactness::Estimated {
                    spans.push(Span::styled(format!(" {}", strings::GAUGE_ESTIMATED), dim));
                }
                (live.percent, spans)
            }
            _ => {
                let words = if matches!(self.shown, Shown::Idle) {
                    strings::GAUGE_IDLE
                } else {
                    strings::GAUGE_WAITING
                };
                (0.0, vec![Span::styled(format!(" {words}"), dim)])
            }
        };
        let mut label = label;
        if let Some(why) = self.no_restart {
            label.push(Span::styled(format!(" · {why}"), dim));
        } else if let Some(percent) = self.threshold.percent() {
            label.push(Span::styled(
                format!(" · {} {percent}%", strings::GAUGE_RESTART_AT),
                dim,
            ));
        }
        let label_width: u16 = label
            .iter()
            .map(|s| u16::try_from(s.content.width()).unwrap_or(u16::MAX))
            .fold(0, u16::saturating_add);
        let bar_width = inner.width.saturating_sub(label_width).max(inner.width / 5);
        let bar_area = Rect {
            width: bar_width.min(inner.width),
            height: 1,
            ..inner
        };
        self.bar(frame.buffer_mut(), bar_area, percent);
        let label_area = Rect {
            x: inner.x + bar_area.width,
            width: inner.width - bar_area.width,
            height: 1,
            ..inner
        };
        frame.render_widget(Paragraph::new(Line::from(label)), label_area);

        if inner.height < 2 {
            return;
        }
        let session = self.shown.snapshot();
        let mut session_totals = Totals::default();
        if let Some(session) = session {
            session_totals.add(session);
        }
        let mut spans = figures(strings::GAUGE_SESSION, &session_totals);
        spans.push(Span::raw("    "));
        spans.extend(figures(strings::GAUGE_RUN, &self.run_totals()));
        let figures = Line::from(spans);
        let figures_area = Rect {
            y: inner.y + 1,
            height: 1,
            ..inner
        };
        frame.render_widget(Paragraph::new(figures), figures_area);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colours_follow_the_threshold() {
        assert_eq!(level_color(10.0, ContextLimit::At(80.0)), Color::Green);
        assert_eq!(level_color(50.0, ContextLimit::At(80.0)), Color::Yellow);
        assert_eq!(level_color(79.9, ContextLimit::At(80.0)), Color::Yellow);
        assert_eq!(level_color(80.0, ContextLimit::At(80.0)), Color::Red);
        assert_eq!(level_color(45.0, ContextLimit::At(40.0)), Color::Red);
    }

    #[test]
    fn cells_round_and_clamp() {
        assert_eq!(cells(0.0, 40), 0);
        assert_eq!(cells(50.0, 40), 20);
        assert_eq!(cells(150.0, 40), 40);
        assert_eq!(cells(-3.0, 40), 0);
    }
}
