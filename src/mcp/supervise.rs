//! Starting a supervisor: [`supervise`] takes the state directory, opens the audit log,
//! and runs the front with the stdio back end until it ends; [`Shutdown`] stops it or
//! restarts its server from outside.

use std::path::PathBuf;

use serde_json::json;

use super::backend::stdio::StdioBackend;
use super::front::settings::Settings;
use super::front::{self, ClientInput, ClientOutput, Shutdown};
use super::{
    AuditLog, StateDirError, SuperviseOptions, SuperviseOutcome, say, signals, state_dir, stdio,
};

/// Errors that keep the supervisor from starting. Once it runs, nothing is fatal: errors
/// become log lines and audit events.
#[derive(Debug, thiserror::Error)]
pub enum McpError {
    /// The state directory or the audit log in it cannot be created.
    #[error("create the state directory {}", path.display())]
    StateDir {
        /// The directory.
        path: PathBuf,
        /// What the OS said.
        #[source]
        source: std::io::Error,
    },
    /// The state directory is held by another live supervisor, or cannot be locked.
    #[error(transparent)]
    StateDirTaken(#[from] StateDirError),
    /// The server command could not be started the first time.
    #[error("start the MCP server")]
    Start(#[source] crate::process::ProcessError),
    /// A `--watch` path cannot be watched.
    #[error("{0}")]
    Watch(String),
    /// The bridge's HTTP client could not be built.
    #[error("{0}")]
    HttpClient(String),

    /// The supervisor's async runtime could not be built.
    #[error("start the async runtime")]
    Runtime(#[source] std::io::Error),
}

impl McpError {
    /// Whether the state directory could not be made for want of room (a full disk, a
    /// spent quota): no fault of the command line.
    #[must_use]
    pub fn is_out_of_space(&self) -> bool {
        match self {
            McpError::StateDir { source, .. }
            | McpError::StateDirTaken(StateDirError::Io { source, .. }) => {
                crate::files::is_out_of_space(source)
            }
            _ => false,
        }
    }
}

/// Run the supervisor with the process's own stdin and stdout as the client side,
/// stopping on SIGINT or SIGTERM and restarting the server on SIGHUP.
///
/// # Errors
/// The state directory cannot be created, a watch path cannot be watched, or the server
/// cannot be started the first time.
pub async fn supervise_stdio(opts: SuperviseOptions) -> Result<SuperviseOutcome, McpError> {
    supervise(
        opts,
        stdio::input(),
        stdio::output(),
        signals::forward_in_background,
    )
    .await
}

/// Run the supervisor between `input`/`output` (the client side) and the server
/// command, until the server exits 0, the client closes `input`, or a shutdown is
/// requested through the [`Shutdown`] handle given to `on_start`.
///
/// # Errors
/// The state directory cannot be created or another supervisor holds it, a watch path
/// cannot be watched, or the server cannot be started the first time.
pub async fn supervise(
    opts: SuperviseOptions,
    input: impl ClientInput,
    output: impl ClientOutput,
    on_start: impl FnOnce(Shutdown),
) -> Result<SuperviseOutcome, McpError> {
    // Held until the supervisor returns; the kernel releases it if the process dies.
    let _lock = state_dir::lock(&opts.state_dir)?;
    let mut audit = AuditLog::open(&opts.state_dir).map_err(|source| McpError::StateDir {
        path: opts.state_dir.clone(),
        source,
    })?;
    let _ = audit.record_started(json!({
        "name": opts.name,
        "command": opts.command,
        "supervisor_pid": std::process::id(),
        "watch": opts.watch.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
        "build": opts.build,
        "inject_tools": opts.inject_tools,
    }));
    say(&format!(
        "supervising `{}` (state in {})",
        opts.command.join(" "),
        opts.state_dir.display()
    ));
    let backend = StdioBackend::new(opts.command.clone(), opts.limits.clone());
    let settings = Settings {
        name: opts.name,
        role: "supervisor",
        command: opts.command,
        state_dir: opts.state_dir,
        inject_tools: opts.inject_tools,
        watch: opts.watch,
        build: opts.build,
        debounce: opts.debounce,
        limits: opts.limits,
        restart: opts.restart,
        remember: false,
    };
    front::serve(settings, backend, audit, input, output, on_start).await
}
