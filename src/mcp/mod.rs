//! MCP servers that survive restarts: `debussy mcp supervise` (a stdio server behind a
//! restart-proof proxy, issue 6) and `debussy mcp bridge` (a stdio client in front of a
//! shared streamable-HTTP daemon), built as one client-facing front with two back ends.
//!
//! This module owns the front, the back ends, the audit trail, the restart marker and
//! file watching. Processes themselves (groups, pipes, the stop ladder) belong to
//! [`crate::process`]; what an exit means and when to restart belong to
//! [`crate::restart`].
//!
//! # Theory of operation
//!
//! ```text
//!  client (stdio) ──▶ jsonrpc::framing    ──▶ front ──▶ Backend ──▶ server
//!                 ◀── jsonrpc::line_writer ◀──────┘  ◀── BackendEvent ◀┘
//! ```
//!
//! One **front** task (`front/`: `state` holds the loop, `client` and `server` route,
//! `lifecycle` and `exits` start and stop servers) owns everything the client can
//! observe: the current server generation and its phase, the requests in flight to it,
//! the buffer of requests waiting for a ready server, the remembered handshake and what
//! was learned from the server, the restart policy. It `select!`s over four sources, in
//! this priority:
//!
//! 1. **control** (unbounded channel): SIGINT/SIGTERM, SIGHUP, debounced file changes
//!    from the watcher thread (`watch`), the `--build` result; then the client's writer,
//!    when lines wait for a client pipe that was full (or a failure waits to be said);
//! 2. **the back end's events** (`backend::BackendEvent`): a generation up, a message
//!    from the server, a request that could not be delivered, a generation gone;
//! 3. **the client's lines**, framed from stdin right in the loop; while the front is
//!    busy, the client is simply not read;
//! 4. **one timer**, set to the nearest deadline: a buffered request's 30 s, a new
//!    server's readiness timeout, the drain grace of a planned restart, a crash backoff.
//!
//! The front never waits on I/O: a line for the client is written at once when the pipe
//! takes it and queued, bounded, when it does not (`jsonrpc::line_writer`); a line for a
//! server goes to the back end, which writes it the same way to a child's stdin or sends
//! it in the background (one task per HTTP POST); a child's stdout is read by the
//! front's own polling of its events. Stopping a server only starts its stop, whose end
//! comes back as an event. A server that stops reading, or a client that stops reading,
//! can never stall routing for the other side.
//!
//! **Back ends.** A `backend::Backend` starts, feeds and stops one generation at a time
//! and knows nothing about ids or eras. `backend::stdio` spawns the server as a child in
//! its own process group (`DEBUSSY_MCP_GENERATION` in its environment). `backend::http`
//! reaches a daemon on a TCP port, starting it detached (recorded with its pid and start
//! time in `daemon.json`, shared by every bridge of the state directory, under a restart
//! lock) when nothing listens; each generation is a fresh link: POSTs with their answers
//! read as JSON or bounded SSE, and the GET stream of a legacy session. A link that
//! breaks because another bridge restarted the daemon ends as "replaced", which the
//! front follows at once without counting a crash.
//!
//! **Ids.** Every request the front sends a server carries an id from the front's own
//! counter; the client's id is kept in the in-flight table (`front::inflight`) and
//! spliced back into the reply's bytes (`jsonrpc::message`). The front's own requests
//! (the replayed `initialize`, replayed session state, lists it reads for itself) use
//! the same counter, so they can never collide with a client id, and a reply only
//! matches if it comes from the generation its request went to: late replies from an
//! old server are dropped. The server's requests to the client (sampling, roots,
//! elicitation) get ids from a second counter for the same reason.
//!
//! **Restarts.** A planned restart (the `restart_server` tool, SIGHUP, a file change)
//! writes the audit line and marker, holds new requests, lets a frozen server run again
//! and lets requests in flight finish for the drain grace, then stops the server. When a
//! generation ends, its remaining requests are answered at once: those without side
//! effects (`ping`, `*/list`, `resources/read`, `initialize`) go back to the front of
//! the buffer for the next generation, anything else gets a `-32603` error. The next
//! generation gets the client's `initialize` replayed under a front id, then
//! `notifications/initialized` and the session state, then the buffer in order, then the
//! client hears that lists may have changed: for each list when the front cannot know,
//! for each list that differs when it read them (`front::learning`, the bridge). An end
//! nobody asked for goes through the restart policy: 0 ends the supervisor (a daemon is
//! started again), 42 restarts (throttled), anything else is a crash (backoff, then
//! degraded mode). While a server starts or restarts, `ping`, an `initialize` like one
//! answered before and the lists learned are answered from memory at once.
//!
//! Every request is therefore, at every moment, in exactly one place — buffered, in
//! flight, or answered — which is what makes "answered exactly once" checkable.

pub(crate) mod backend;
mod bridge;
pub(crate) mod front;
pub(crate) mod jsonrpc;
pub mod options;
mod say;
mod signals;
mod state_dir;
pub(crate) mod stdio;
mod supervise;

pub use bridge::{BridgeOutcome, bridge, bridge_stdio};
pub use front::audit::{self, AuditEvent, AuditLog};
pub use front::marker::{self, RestartMarker};
pub use front::{ClientInput, ClientOutput, Shutdown, SuperviseOutcome};
pub use options::{BridgeOptions, Limits, SuperviseOptions, default_name};
pub use state_dir::StateDirError;
pub use supervise::{McpError, supervise, supervise_stdio};

/// The handle to stop a running bridge or restart its daemon: the same as the
/// supervisor's.
pub type BridgeShutdown = Shutdown;

pub(crate) use say::{iso, iso_now, say};
pub(crate) use state_dir::ignore_in_git;
