//! Notifications: a sink that turns the few run events a person wants to hear about
//! (run started, phase completed or failed, context restart, a phase that needs a human,
//! run finished) into short messages and delivers them through the configured provider:
//! an [ntfy](https://ntfy.sh) server ([`ntfy`]) or the desktop's notifier ([`desktop`]).
//!
//! # Theory of operation
//!
//! [`Notifier`] is a [`Sink`](crate::ui::Sink): `event` only decides whether an event is worth a
//! notification ([`notice_for`], pure) and hands it to a worker thread over a channel, so
//! a slow or dead server never slows the run. The worker delivers notices one at a time;
//! a failure is logged and the next notice is tried. [`Sink::close`](crate::ui::Sink::close) (the run ended)
//! closes the channel and waits, at most [`FLUSH_WAIT`], for the worker to send what is
//! queued, so the "run finished" notice goes out before debussy exits.

pub mod desktop;
mod notice;
mod notifier;
pub mod ntfy;
mod words;

pub use notice::{Deliver, FLUSH_WAIT, Notice, NotifyError, Priority};
pub use notifier::Notifier;
pub use words::{RunFacts, notice_for};

#[cfg(test)]
mod tests;
