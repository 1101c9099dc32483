//! What one `debussy mcp bridge` is told: the daemon command and address, readiness and
//! shutdown paths, the state directory, and the proxy's limits and restart policy (shared
//! with the supervisor). Built by the command from its flags and the `mcp` section.

use std::path::PathBuf;
use std::time::Duration;

use crate::mcp::Limits;
use crate::restart::RestartConfig;

/// Everything a bridge needs to run.
#[derive(Debug, Clone)]
pub struct BridgeOptions {
    /// Name used in logs and the default state directory.
    pub name: String,
    /// The daemon program and its arguments.
    pub command: Vec<String>,
    /// The daemon's host (loopback by default).
    pub host: String,
    /// The daemon's port.
    pub port: u16,
    /// The MCP endpoint's path (default `/mcp`).
    pub path: String,
    /// A path that answers 2xx once the daemon is ready; without it, an `initialize`
    /// must succeed.
    pub health: Option<String>,
    /// A path that makes the daemon shut down when POSTed to, tried before SIGTERM.
    pub shutdown_path: Option<String>,
    /// How long a new daemon has to become ready.
    pub ready_timeout: Duration,
    /// Where the record, log, lock, learned lists, audit log and marker are kept.
    pub state_dir: PathBuf,
    /// Add `restart_server`, `verify_server_restarted` and `server_status`.
    pub inject_tools: bool,
    /// Stop the daemon when the bridge ends, if this bridge started it.
    pub stop_daemon_on_exit: bool,
    /// Timing and size limits (the buffer deadline, line length, SIGTERM grace).
    pub limits: Limits,
    /// When to start a daemon again after it went away, and when to give up.
    pub restart: RestartConfig,
}

impl BridgeOptions {
    /// Options for `command` on `port` with every default.
    #[must_use]
    pub fn new(name: String, command: Vec<String>, port: u16) -> Self {
        BridgeOptions {
            state_dir: PathBuf::from(".debussy").join("mcp").join(&name),
            name,
            command,
            host: "127.0.0.1".to_owned(),
            port,
            path: "/mcp".to_owned(),
            health: None,
            shutdown_path: None,
            ready_timeout: Duration::from_secs(6),
            inject_tools: true,
            stop_daemon_on_exit: false,
            limits: Limits::default(),
            restart: RestartConfig::default(),
        }
    }
}
