//! The MCP supervisor: a JSON-RPC proxy that keeps a stdio MCP client connected across
//! server restarts (`debussy mcp supervise`, issue 6).
//!
//! This module owns the proxy, the handshake replay, the injected tools, the audit trail,
//! the restart marker and file watching. Processes themselves (groups, pipes, the stop
//! ladder) belong to [`crate::process`]; what an exit means and when to restart belong to
//! [`crate::restart`].
//!
//! # Theory of operation
//!
//! One **dispatcher** task (`proxy`, with `from_client`, `from_server` and `lifecycle`)
//! owns all the state the client can observe: the current child and its phase, the
//! requests in flight to it, the buffer of requests waiting for a ready child, the
//! remembered handshake, the restart policy. It `select!`s over four sources, in this
//! priority:
//!
//! 1. **control** (unbounded channel): SIGINT/SIGTERM, debounced file changes from the
//!    watcher thread (`watch`), the `--build` result, a failed write to the client;
//! 2. **the current child's events**: its stdout lines and, last, its exit, read
//!    directly from [`crate::process::Events`] (one child at a time: the next one is
//!    started only after the previous one exited);
//! 3. **the client's lines**, framed from the supervisor's stdin (`framing`) right in
//!    the loop; while the dispatcher is busy, the client is simply not read;
//! 4. **one timer**, set to the nearest deadline: a buffered request's 30 s, a new
//!    child's readiness timeout, the drain grace of a planned restart, a crash backoff.
//!
//! The dispatcher never waits on I/O: lines for the client go to a writer task through an
//! unbounded channel (flushed once per burst), lines for a child to that child's stdin
//! writer task, and stopping a child only starts its stop ladder — the exit comes back as
//! an event. So a child that stops reading, or a client that stops reading, can never
//! stall routing for the other side, and nothing waits without a deadline. The audit
//! log is the one synchronous write: a line per event, fsynced in the background and,
//! before a child is stopped, at once.
//!
//! **Ids.** Every request the proxy sends a child carries an id from the proxy's own
//! counter; the client's id is kept in the in-flight table (`inflight`) and spliced back
//! into the reply's bytes (`message`). The proxy's own requests (the replayed
//! `initialize`, replayed session state) use the same counter, so they can never collide
//! with a client id, and a reply only matches if it comes from the generation its request
//! went to: late replies from an old child are dropped. The child's requests to the client
//! (sampling, roots, elicitation) get ids from a second counter for the same reason.
//!
//! **Restarts.** A planned restart (the `restart_server` tool, a file change) writes the
//! audit line and marker, holds new requests, lets requests in flight finish for the
//! drain grace, then stops the child (close stdin, SIGTERM, SIGKILL, each after SIGCONT).
//! When any child exits, its remaining requests are answered at once: `ping`, `*/list`
//! and `initialize` go back to the front of the buffer for the next child, anything else
//! gets a `-32603` error (it may have had side effects). The next child is started after
//! the exit; it gets the client's `initialize` replayed under a proxy id (`handshake`),
//! and once it answers, `notifications/initialized` and the session state, then the
//! buffer in order, then `list_changed` notifications to the client. An exit nobody asked
//! for goes through the restart policy: 0 ends the supervisor, 42 restarts (throttled),
//! anything else is a crash (backoff, then degraded mode).
//!
//! Every request is therefore, at every moment, in exactly one place — buffered, in
//! flight, or answered — which is what makes "answered exactly once" checkable.

pub mod audit;
pub mod bridge;
mod child;
mod coordinator;
mod exits;
pub(crate) mod framing;
mod from_client;
mod from_server;
pub(crate) mod handshake;
pub(crate) mod inflight;
mod lifecycle;
pub mod marker;
pub(crate) mod message;
pub mod options;
pub(crate) mod oversized;
mod proxy;
mod routing;
mod say;
mod signals;
mod state_dir;
mod stderr_tail;
pub(crate) mod stdio;
mod supervise;
pub(crate) mod tools;
mod watch;

pub use audit::{AuditEvent, AuditLog};
pub use bridge::{BridgeOptions, BridgeOutcome, bridge, bridge_stdio};
pub use marker::RestartMarker;
pub use options::{Limits, SuperviseOptions, default_name};
pub use proxy::SuperviseOutcome;
pub use state_dir::StateDirError;
pub use supervise::{McpError, Shutdown, supervise, supervise_stdio};

pub(crate) use say::{iso, iso_now, say};
pub(crate) use state_dir::ignore_in_git;
