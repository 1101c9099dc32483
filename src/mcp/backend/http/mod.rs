//! The streamable-HTTP back end (`debussy mcp bridge`): each generation is a link to a
//! daemon on a TCP port, started detached when nothing answers there and shared by every
//! bridge of the state directory.
//!
//! [`HttpBackend`] owns the links; background tasks start and stop the daemon (under
//! the restart lock, `lock`), POST each message and read its answer (`client`, with
//! bounded SSE reading in `sse`), and hold the GET stream of a legacy session. They
//! report to the back end through one channel, which turns their reports into the
//! [`BackendEvent`](super::BackendEvent)s the front reads.

mod backend;
mod client;
mod daemon;
mod headers;
mod lock;
mod sse;
mod tasks;

pub(crate) use backend::{HttpBackend, HttpSettings};
pub(crate) use client::Endpoint;
pub(crate) use daemon::Daemon;
