//! The MCP bridge (`debussy mcp bridge`): a stdio MCP client in front of a persistent
//! streamable-HTTP MCP daemon, keeping the client's session alive across daemon restarts
//! and able to restart the daemon even when it is frozen.
//!
//! # Theory of operation
//!
//! One **dispatcher** task (`dispatch`, with `client`, `forward`, `lifecycle` and
//! `restart`) owns what the client can observe: the link (a session with the daemon, or none), the requests
//! waiting for one, the restart under way, the daemon's answers the bridge gives itself
//! (`learned`). It `select!`s over the client's lines, one channel of events and one
//! timer. Nothing in it waits on the network: every POST runs in a task of its own whose
//! answer goes straight to the client's writer, then reports how it went; connecting,
//! restarting and reading the GET stream (`listen`) are tasks too. So a frozen daemon can
//! hold up the requests sent to it, never the bridge: `initialize`, `ping`, the lists and
//! the injected tools are answered from the dispatcher at once.
//!
//! **Sessions.** The bridge opens sessions with the daemon itself (`connect`), with the
//! client's own `initialize` params, and never passes the client's `initialize` on: the
//! client has one session with the bridge for its whole life, the bridge as many with
//! daemons as it takes. Every change of link bumps an epoch; a result that comes back
//! from an older epoch is recognised and does not touch the current link.
//!
//! **When the daemon goes away** (its GET stream breaks, a POST cannot connect, or a
//! daemon this bridge started exits), the link drops and the bridge connects again,
//! starting a daemon if nothing listens, with the supervisor's backoff and degraded mode.
//! Requests the daemon never saw (connection refused, HTTP 404 for the session) are sent
//! again in the new session; requests it may have handled are answered with an error,
//! unless they are idempotent (`ping`, `*/list`), which are sent again.
//!
//! **Daemons are shared.** A daemon is started detached (`daemon`), outlives its bridge,
//! and is recorded in the state directory, where a file lock (`lock`) lets one bridge at
//! a time stop or start it. A bridge that finds the port answering uses what is there.

mod client;
mod connect;
mod daemon;
mod dispatch;
mod forward;
mod http;
mod learned;
mod lifecycle;
mod listen;
mod lock;
mod options;
mod restart;
mod start;

pub use options::BridgeOptions;
pub use start::{BridgeOutcome, BridgeShutdown, bridge, bridge_stdio};

/// Whether a request may be sent again after the daemon went away while handling it.
fn idempotent(method: &str) -> bool {
    method == "ping" || method.ends_with("/list") || method == "resources/read"
}
