//! `debussy mcp …`: the supervisor's and the bridge's arguments.

use std::path::PathBuf;

use clap::{Args, Subcommand};

/// `debussy mcp …`.
#[derive(Debug, Subcommand)]
pub enum McpCommand {
    /// Run a stdio MCP server behind a proxy that survives its restarts.
    Supervise(SuperviseArgs),
    /// Connect a stdio MCP client to a persistent streamable-HTTP MCP daemon, starting
    /// and restarting the daemon as needed.
    Bridge(BridgeArgs),
}

/// `debussy mcp bridge`.
#[derive(Debug, Args)]
pub struct BridgeArgs {
    /// The port the daemon listens on.
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..))]
    pub port: u16,

    /// The daemon's host.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,

    /// The path of the daemon's MCP endpoint.
    #[arg(long, default_value = "/mcp")]
    pub path: String,

    /// A path that answers 2xx once the daemon is ready (default: a successful `initialize`).
    #[arg(long, value_name = "PATH")]
    pub health: Option<String>,

    /// A path that shuts the daemon down when POSTed to, tried before SIGTERM on a restart.
    #[arg(long, value_name = "PATH")]
    pub shutdown_path: Option<String>,

    /// How long a newly started daemon has to become ready, e.g. 6s or 500ms.
    #[arg(long, value_name = "DURATION", default_value = "6s", value_parser = parse_timeout)]
    pub ready_timeout: std::time::Duration,

    /// Where the daemon's record, log and lock, the audit log and the marker are kept
    /// (default `.debussy/mcp/<name>/`). Bridges sharing a daemon must share it.
    #[arg(long, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,

    /// Name used in logs and for the default state directory (default: the program's
    /// name and the port).
    #[arg(long)]
    pub name: Option<String>,

    /// Stop the daemon when the bridge ends, if this bridge started it.
    #[arg(long)]
    pub stop_daemon_on_exit: bool,

    /// Do not add the `restart_server`, `verify_server_restarted` and `server_status` tools.
    #[arg(long)]
    pub no_inject_tools: bool,

    /// The daemon command and its arguments.
    #[arg(last = true, required = true, num_args = 1.., value_name = "DAEMON_CMD")]
    pub command: Vec<String>,
}

fn parse_timeout(text: &str) -> Result<std::time::Duration, String> {
    crate::config::RunDuration::parse(text).map(crate::config::RunDuration::get)
}

/// `debussy mcp supervise`.
#[derive(Debug, Args)]
pub struct SuperviseArgs {
    /// Name used in logs and for the default state directory.
    #[arg(long)]
    pub name: Option<String>,

    /// Restart the server when files under PATH change (repeatable).
    #[arg(long, value_name = "PATH")]
    pub watch: Vec<PathBuf>,

    /// Command run (with `sh -c`) after a change and before the restart; a failure keeps the old server.
    #[arg(long, value_name = "CMD")]
    pub build: Option<String>,

    /// Milliseconds of quiet before a burst of file changes triggers a restart.
    #[arg(long, value_name = "MS", default_value_t = 300)]
    pub debounce: u64,

    /// Where the audit log and restart marker are written (default `.debussy/mcp/<name>/`).
    #[arg(long, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,

    /// Do not add the `restart_server`, `verify_server_restarted` and `server_status` tools.
    #[arg(long)]
    pub no_inject_tools: bool,

    /// The server command and its arguments.
    #[arg(last = true, required = true, num_args = 1.., value_name = "CMD")]
    pub command: Vec<String>,
}
