//! The activity log: what the agent says and does (assistant text, compact tool calls,
//! tool errors, subagent lines attributed to their agent) and the run's milestones
//! (sessions, restarts, gates, commits), newest at the bottom.
//!
//! Lines are kept in a ring buffer of [`CAPACITY`] entries, so a long run costs bounded
//! memory, and each is formatted once, when its event arrives; drawing only lays out the
//! rows that are visible. The view follows new lines (auto-scroll) until the user
//! scrolls up; it then stays put while lines arrive below it.

use std::cell::Cell;
use std::collections::VecDeque;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};
use unicode_width::UnicodeWidthStr;

use super::Component;
use super::compact::{self, clock, cut, one_line, wrap, wrap_words};
use super::strings::{self, lines};
use super::tone::Tone;
use crate::events::Event;
use crate::session::{ActivityKind, Thread};

/// Entries kept; older ones are dropped.
pub(crate) const CAPACITY: usize = 2_000;

#[path = "activity_events.rs"]
mod events;

/// Longest text kept for verbose mode, in bytes (a 1 MB tool input is not worth keeping).
const FULL_TEXT_LIMIT: usize = 8_000;

/// One line of the log, formatted when its event arrived.
#[derive(Debug, Clone)]
struct Entry {
    /// Time since the run started.
    at: Duration,
    /// The subagent that produced it, if not the main thread.
    who: Option<String>,
    tone: Tone,
    /// A bold lead word (the tool's name), if any.
    head: String,
    /// The compact text.
    text: String,
    /// The full text, for verbose mode, when it differs from `text`.
    full: Option<String>,
    /// The phase it is about, if any.
    phase: Option<String>,
    /// How it fits a row when not verbose.
    fit: Fit,
}

/// How an entry longer than its row is shown outside verbose mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fit {
    /// Cut with `…` (the agent's own text and tool calls: verbose shows them whole).
    Cut,
    /// Wrapped onto the rows it needs: debussy's own lines (a restart's or a handoff's
    /// reason, a limit, a failure) are read whole.
    Wrap,
}

/// The scrolling activity log.
#[derive(Debug)]
pub(crate) struct ActivityLog {
    entries: VecDeque<Entry>,
    capacity: usize,
    /// Entries hidden below the view; 0 shows the newest.
    offset: usize,
    follow: bool,
    verbose: bool,
    root: Option<PathBuf>,
    run_started: Option<Instant>,
    /// Rows the log had at the last draw, for paging.
    rows: Cell<u16>,
    /// The phase of the event being logged.
    phase: Option<String>,
    /// Phases whose agent session runs now.
    running: std::collections::BTreeSet<String>,
    /// Whether phases have run side by side: lines are then tagged with their phase.
    side_by_side: bool,
    /// Show only this phase's lines (and the run's own).
    focus: Option<String>,
}

impl ActivityLog {
    /// An empty log; tool paths under `root` are shown relative to it.
    pub(crate) fn new(root: Option<PathBuf>, capacity: usize) -> Self {
        ActivityLog {
            entries: VecDeque::with_capacity(capacity.min(256)),
            capacity: capacity.max(1),
            offset: 0,
            follow: true,
            verbose: false,
            root,
            run_started: None,
            rows: Cell::new(10),
            phase: None,
            running: std::collections::BTreeSet::new(),
            side_by_side: false,
            focus: None,
        }
    }

    /// Show only `phase`'s lines (and the run's own), or every line with `None`.
    pub(crate) fn set_focus(&mut self, phase: Option<String>) {
        self.focus = phase;
        self.offset = 0;
        self.follow = true;
    }

    fn shown(&self, entry: &Entry) -> bool {
        match (&self.focus, &entry.phase) {
            (Some(focus), Some(phase)) => focus == phase,
            _ => true,
        }
    }

    /// Whether new lines scroll into view.
    pub(crate) fn follows(&self) -> bool {
        self.follow
    }

    /// Whether tool inputs and texts are shown in full.
    pub(crate) fn is_verbose(&self) -> bool {
        self.verbose
    }

    /// Entries held.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// Switch verbose mode.
    pub(crate) fn toggle_verbose(&mut self) {
        self.verbose = !self.verbose;
    }

    /// Switch auto-scroll; turning it on jumps to the newest line.
    pub(crate) fn toggle_follow(&mut self) {
        self.follow = !self.follow;
        if self.follow {
            self.offset = 0;
        }
    }

    /// Scroll towards older lines by `n`; stops following.
    pub(crate) fn scroll_up(&mut self, n: usize) {
        let max = self.entries.len().saturating_sub(1);
        self.offset = (self.offset + n).min(max);
        if self.offset > 0 {
            self.follow = false;
        }
    }

    /// Scroll towards newer lines by `n`; reaching the bottom follows again.
    pub(crate) fn scroll_down(&mut self, n: usize) {
        self.offset = self.offset.saturating_sub(n);
        if self.offset == 0 {
            self.follow = true;
        }
    }

    /// Scroll to the oldest line kept.
    pub(crate) fn top(&mut self) {
        self.scroll_up(self.entries.len());
    }

    /// Scroll to the newest line and follow.
    pub(crate) fn bottom(&mut self) {
        self.offset = 0;
        self.follow = true;
    }

    /// Rows in a page, as last drawn.
    pub(crate) fn page(&self) -> usize {
        usize::from(self.rows.get().saturating_sub(1).max(1))
    }

    /// One of debussy's own lines: wrapped, never cut.
    fn push(&mut self, now: Instant, who: Option<String>, tone: Tone, head: String, text: String) {
        self.add(now, who, tone, head, text, None, Fit::Wrap);
    }

    /// One of debussy's own lines about the run, of no thread and with no head.
    fn note(&mut self, now: Instant, tone: Tone, text: String) {
        self.push(now, None, tone, String::new(), text);
    }

    /// A line of the agent's: one row, cut, unless verbose (then `full` when given).
    fn push_full(
        &mut self,
        now: Instant,
        who: Option<String>,
        tone: Tone,
        head: String,
        text: String,
        full: Option<String>,
    ) {
        self.add(now, who, tone, head, text, full, Fit::Cut);
    }

    #[expect(
        clippy::too_many_arguments,
        reason = "one entry's fields, named by its two callers"
    )]
    fn add(
        &mut self,
        now: Instant,
        who: Option<String>,
        tone: Tone,
        head: String,
        text: String,
        full: Option<String>,
        fit: Fit,
    ) {
        let at = self
            .run_started
            .map_or(Duration::ZERO, |start| now.saturating_duration_since(start));
        if self.entries.len() == self.capacity {
            self.entries.pop_front();
        }
        self.entries.push_back(Entry {
            at,
            who,
            tone,
            head,
            text,
            phase: self.phase.clone(),
            fit,
            full: full.map(|mut f| {
                if f.len() > FULL_TEXT_LIMIT {
                    let mut end = FULL_TEXT_LIMIT;
                    while !f.is_char_boundary(end) {
                        end -= 1;
                    }
                    f.truncate(end);
                    f.push('…');
                }
                f
            }),
        });
        if !self.follow {
            // Keep the lines in view where they are while new ones arrive below.
            self.offset = (self.offset + 1).min(self.entries.len().saturating_sub(1));
        }
    }

    fn activity(&mut self, now: Instant, thread: &Thread, kind: &ActivityKind) {
        let who = match thread {
            Thread::Main => None,
            Thread::Subagent(_) => Some(thread.to_string()),
        };
        match kind {
            ActivityKind::Text { text } => {
                let compact = one_line(text);
                let full = (compact != text.trim()).then(|| text.trim().to_owned());
                self.push_full(now, who, Tone::Text, String::new(), compact, full);
            }
            ActivityKind::ToolCall { name, input, .. } => {
                let (name, summary) = compact::tool_call(name, input, self.root.as_deref());
                let full = compact::full_input(input);
                self.push_full(now, who, Tone::Tool, name, summary, Some(full));
            }
            ActivityKind::ToolError { tool, message, .. } => {
                let (head, text) = lines::tool_failed(tool.as_deref(), &one_line(message));
                let full = lines::tool_failed(tool.as_deref(), message.trim()).1;
                self.push_full(now, who, Tone::Error, head, text, Some(full));
            }
            ActivityKind::Notice { text } => {
                self.push(now, who, Tone::Dim, String::new(), one_line(text));
            }
        }
    }

    /// The rows of `entry` at `width` columns: one when compact, as many as it wraps to
    /// when verbose.
    fn rows_of(&self, entry: &Entry, width: usize) -> Vec<Line<'_>> {
        let time = format!("{} ", clock(entry.at));
        let mut lead: Vec<Span<'_>> = vec![Span::styled(time, Style::new().fg(Color::DarkGray))];
        if let (true, Some(phase)) = (self.side_by_side, &entry.phase) {
            lead.push(Span::styled(
                format!("‹{phase}› "),
                Style::new().fg(Color::Cyan),
            ));
        }
        if let Some(who) = &entry.who {
            lead.push(Span::styled(
                format!("[{who}] "),
                Style::new().fg(Color::Magenta),
            ));
        }
        let mark = entry.tone.mark();
        if !mark.is_empty() {
            lead.push(Span::styled(mark, entry.tone.style()));
        }
        if !entry.head.is_empty() {
            lead.push(Span::styled(
                format!("{} ", entry.head),
                entry.tone.style().add_modifier(Modifier::BOLD),
            ));
        }
        let lead_width: usize = lead.iter().map(|s| s.content.width()).sum();
        let text_style = match entry.tone {
            Tone::Tool => Style::new(),
            tone => tone.style(),
        };
        let body = match (&entry.full, self.verbose) {
            (Some(full), true) => full.as_str(),
            _ => entry.text.as_str(),
        };
        let first = width.saturating_sub(lead_width);
        if !self.verbose && entry.fit == Fit::Cut {
            lead.push(Span::styled(cut(body, first), text_style));
            return vec![Line::from(lead)];
        }
        let indent = " ".repeat(6);
        let mut rows = Vec::new();
        let chunks = match entry.fit {
            Fit::Wrap => wrap_words(body, first, width.saturating_sub(6)),
            Fit::Cut => wrap(body, first, width.saturating_sub(6)),
        };
        for (i, chunk) in chunks.into_iter().enumerate() {
            if i == 0 {
                let mut spans = std::mem::take(&mut lead);
                spans.push(Span::styled(chunk, text_style));
                rows.push(Line::from(spans));
            } else {
                rows.push(Line::from(vec![
                    Span::raw(indent.clone()),
                    Span::styled(chunk, text_style),
                ]));
            }
        }
        rows
    }
}

impl Component for ActivityLog {
    fn event(&mut self, event: &Event, now: Instant) {
        self.on_event(event, now);
    }

    fn draw(&self, frame: &mut Frame<'_>, area: Rect) {
        let title = if !self.follow {
            strings::TITLE_ACTIVITY_PAUSED
        } else if self.verbose {
            strings::TITLE_ACTIVITY_VERBOSE
        } else {
            strings::TITLE_ACTIVITY
        };
        let block = Block::new().borders(Borders::ALL).title(title);
        let inner = block.inner(area);
        frame.render_widget(block, area);
        self.rows.set(inner.height);
        if inner.height == 0 || inner.width == 0 {
            return;
        }
        if self.entries.is_empty() {
            frame.render_widget(
                Paragraph::new(Span::styled(
                    strings::ACTIVITY_EMPTY,
                    Style::new().fg(Color::DarkGray),
                )),
                inner,
            );
            return;
        }
        let height = usize::from(inner.height);
        let width = usize::from(inner.width);
        let end = self.entries.len().saturating_sub(self.offset);
        // Walk back from the last visible entry until the rows are filled.
        let mut blocks: Vec<Vec<Line<'_>>> = Vec::new();
        let mut used = 0;
        for entry in self.entries.range(..end).rev().filter(|e| self.shown(e)) {
            if used >= height {
                break;
            }
            let rows = self.rows_of(entry, width);
            used += rows.len();
            blocks.push(rows);
        }
        let mut shown: Vec<Line<'_>> = blocks.into_iter().rev().flatten().collect();
        if shown.len() > height {
            // The oldest visible entry wrapped past the top: show its last rows.
            shown.drain(..shown.len() - height);
        }
        frame.render_widget(Paragraph::new(shown), inner);
    }
}
