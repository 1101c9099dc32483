//! What the front is told: the names and limits it works with, whichever back end it
//! drives. Built by `supervise` and `bridge` from their options.

use std::path::PathBuf;
use std::time::Duration;

use crate::mcp::options::Limits;
use crate::restart::RestartConfig;

/// The front's settings.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    /// Name used in logs and the default state directory.
    pub(crate) name: String,
    /// What the front is called in messages to the client (`supervisor`, `bridge`).
    pub(crate) role: &'static str,
    /// The server command, for the audit log and `server_status`.
    pub(crate) command: Vec<String>,
    /// Where the audit log, the marker and what was learned are kept.
    pub(crate) state_dir: PathBuf,
    /// Add `restart_server`, `verify_server_restarted` and `server_status`.
    pub(crate) inject_tools: bool,
    /// Paths whose changes restart the server.
    pub(crate) watch: Vec<PathBuf>,
    /// Shell command run after a change, before the restart.
    pub(crate) build: Option<String>,
    /// Quiet time before a burst of changes counts as one.
    pub(crate) debounce: Duration,
    /// Timing and size limits.
    pub(crate) limits: Limits,
    /// When to restart a server that went away, and when to give up.
    pub(crate) restart: RestartConfig,
    /// Read the server's lists after each start, keep them in the state directory
    /// (`learned.json`), and tell the client of a list only when it changed. Without
    /// it, lists are learned from the answers that pass through, and every restart
    /// tells the client that each list may have changed.
    pub(crate) remember: bool,
}
