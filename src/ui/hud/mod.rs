//! The interactive terminal dashboard (HUD) for `debussy run`: header, context gauge,
//! activity log, phase list and key hints, drawn with ratatui on crossterm.
//!
//! # Theory of operation
//!
//! The HUD is a sink (DESIGN.md, "events flow up"): it owns no process and never calls
//! into the run. One task, [`run`], owns the terminal and the [`App`] state and
//! `select!`s over three sources:
//!
//! - **run events** from the orchestrator's channel: each is applied to the app state,
//!   then every event already waiting is drained too, so a burst costs one frame;
//! - **terminal input** (crossterm's `EventStream`): keys become [`RunRequest`](crate::events::RunRequest)s sent
//!   back on the request channel (`p` pause/resume, `r` restart now, `s` skip, `q`
//!   quit; Ctrl-C, which raw mode delivers as a key, interrupts, then kills, then
//!   exits) or change only the view (`v`, `a`, scrolling);
//! - **a 100 ms tick**, which moves the clocks and lets a frame that the cap held back
//!   go out.
//!
//! Loop: take events → update state → draw, where drawing takes `&App` and happens at
//! most once per [`FRAME`] however fast events arrive. The terminal is set up by a
//! `terminal::TerminalGuard` only once the first event shows the run really started,
//! and restored when the guard drops: the run finished, the user quit, drawing failed
//! (the run then goes on with plain lines), or a panic (the guard's panic hook). After
//! the terminal is restored the run's summary is printed, so it stays on screen.
//!
//! Components (`header`, `gauge`, `activity`, `phases`, `hints`, `confirm`) each follow
//! the events they care about in `event(&mut self)` and draw themselves in
//! `draw(&self, frame, area)`; [`App`] routes events and keys and lays them out.

mod activity;
mod app;
mod compact;
mod confirm;
mod driver;
#[cfg(test)]
mod fit_tests;
mod gauge;
mod header;
mod hints;
#[cfg(test)]
mod key_tests;
mod keys;
mod phases;
mod strings;
mod terminal;
#[cfg(test)]
mod tests;
mod tone;

use std::time::{Duration, Instant};

use ratatui::Frame;
use ratatui::layout::Rect;

pub use app::{App, Command};
pub use driver::{FrameReport, Options, drive, no_input, restore_terminal, run};

use crate::events::Event;

/// Shortest time between two frames.
pub const FRAME: Duration = Duration::from_millis(100);

/// A piece of the dashboard.
trait Component {
    /// Follow a run event that arrived at `now`.
    fn event(&mut self, event: &Event, now: Instant);
    /// Draw into `area`.
    fn draw(&self, frame: &mut Frame<'_>, area: Rect);
}

/// How the HUD's own loop ended (the HUD owns it; it says nothing of how the run ended).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// The run finished (or its event channel closed); the terminal is restored and the
    /// summary printed.
    Closed,
    /// Ctrl-C a third time: the terminal is restored; the caller should kill the agent's
    /// process groups and exit at once.
    Abort,
}
