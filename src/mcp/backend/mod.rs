//! The server side of the MCP front: a [`Backend`] starts, feeds and stops one server
//! generation at a time and reports what happens to it as [`BackendEvent`]s.
//!
//! Two back ends exist: [`stdio`] (`debussy mcp supervise`: a child process speaking
//! newline-delimited JSON-RPC on its stdin and stdout) and [`http`] (`debussy mcp
//! bridge`: a streamable-HTTP daemon, started detached and shared). A back end knows
//! nothing about ids, eras, buffering or restarts: the front decides all of that, and a
//! back end only moves messages and processes.

pub(crate) mod http;
pub(crate) mod stdio;

mod event;

use serde_json::Value;

pub(crate) use event::{BackendEvent, EndCause, Fate, ServerInfo, StopWhy, Stopped};

/// One way of reaching MCP servers, driven by the front.
///
/// Every call returns at once: starting, stopping and delivering happen in the
/// background and come back as events. Messages for a generation other than the
/// current one are dropped.
pub(crate) trait Backend {
    /// Whether a server that exits with code 0 on its own ends the front too: a stdio
    /// server closing is the end of the session; a daemon exiting is not.
    const CLEAN_EXIT_ENDS: bool;

    /// Start generation `generation`. A server that takes messages at once (a stdio
    /// child) is returned; otherwise [`BackendEvent::Up`] follows once it does, or
    /// [`BackendEvent::Down`] if it never does.
    ///
    /// # Errors
    /// The server could not be started at all (the stdio child cannot be spawned).
    fn start(
        &mut self,
        generation: u64,
        reason: &str,
    ) -> Result<Option<ServerInfo>, crate::process::ProcessError>;

    /// Deliver one message (a line without its newline) to `generation`'s server.
    fn send(&mut self, generation: u64, line: Vec<u8>);

    /// Let a frozen server run again (SIGCONT), so requests in flight can finish.
    fn resume(&mut self, generation: u64);

    /// Stop `generation`'s server; its [`BackendEvent::Down`] follows.
    fn stop(&mut self, generation: u64, why: StopWhy);

    /// How a stop for `why` goes, in words (for the audit log).
    fn stop_plan(&self, why: StopWhy) -> String;

    /// Kill `generation`'s server now, cutting any stop short.
    fn kill(&mut self, generation: u64);

    /// Cancel a request in flight in a way the server understands, when sending
    /// `notifications/cancelled` is not it (streamable HTTP at 2026-07-28: close the
    /// request's response stream). Returns whether the back end did so.
    fn cancel(&mut self, generation: u64, id: u64) -> bool;

    /// The next event. Cancel-safe; pends while there is nothing to report.
    fn next_event(&mut self) -> impl Future<Output = BackendEvent>;

    /// What `server_status` adds for this back end.
    fn status(&self) -> Value;

    /// The server's starts, when the back end keeps them (a shared daemon's record);
    /// `None`: the front's own history is the whole story.
    fn starts(&self) -> Option<Vec<crate::mcp::front::tools::StartRecord>>;
}
