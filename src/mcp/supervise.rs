//! Starting a supervisor: [`supervise`] opens the state directory and audit log, starts
//! the first server child and runs the dispatcher until it ends; [`Shutdown`] stops or
//! restarts it from outside.

use std::path::PathBuf;
use std::time::Instant;

use serde_json::json;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc;

use super::framing::{self, LineReader};
use super::proxy::{Control, Idle, Proxy};
use super::{
    AuditEvent, AuditLog, StateDirError, SuperviseOptions, SuperviseOutcome, coordinator,
    handshake, routing, say, state_dir, stderr_tail, stdio, tools, watch,
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

/// A handle to stop a running supervisor, as SIGINT/SIGTERM do, or to restart its
/// server, as SIGHUP does.
#[derive(Debug, Clone)]
pub struct Shutdown(mpsc::UnboundedSender<Control>);

impl Shutdown {
    /// Ask the supervisor to stop its server gracefully and return (`signal` names the
    /// cause in logs). A second call kills the server at once.
    pub fn request(&self, signal: &'static str) {
        let _ = self.0.send(Control::Shutdown(signal));
    }

    /// Ask the supervisor to restart its server, as SIGHUP does (`signal` names the cause
    /// in the audit log and logs).
    pub fn restart(&self, signal: &'static str) {
        let _ = self.0.send(Control::Restart(signal));
    }
}

/// Run the supervisor with the process's own stdin and stdout as the client side,
/// stopping on SIGINT or SIGTERM and restarting the server on SIGHUP.
///
/// # Errors
/// The state directory cannot be created, a watch path cannot be watched, or the server
/// cannot be started the first time.
pub async fn supervise_stdio(opts: SuperviseOptions) -> Result<SuperviseOutcome, McpError> {
    supervise(opts, stdio::input(), stdio::output(), |shutdown| {
        tokio::spawn(super::signals::forward(shutdown));
    })
    .await
}

impl super::signals::SignalTarget for Shutdown {
    fn stop(&self, signal: &'static str) {
        self.request(signal);
    }

    fn restart(&self, signal: &'static str) {
        Shutdown::restart(self, signal);
    }
}

/// Run the supervisor between `input`/`output` (the client side) and the server
/// command, until the server exits 0, the client closes `input`, or a shutdown is
/// requested through the [`Shutdown`] handle given to `on_start`.
///
/// # Errors
/// The state directory cannot be created or another supervisor holds it, a watch path
/// cannot be watched, or the server cannot be started the first time.
pub async fn supervise<R, W>(
    opts: SuperviseOptions,
    input: R,
    output: W,
    on_start: impl FnOnce(Shutdown),
) -> Result<SuperviseOutcome, McpError>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    // Held until the supervisor returns; the kernel releases it if the process dies.
    let _lock = state_dir::lock(&opts.state_dir)?;
    let mut audit = AuditLog::open(&opts.state_dir).map_err(|source| McpError::StateDir {
        path: opts.state_dir.clone(),
        source,
    })?;
    let _ = audit.record(
        AuditEvent::SupervisorStarted,
        None,
        None,
        json!({
            "name": opts.name,
            "command": opts.command,
            "supervisor_pid": std::process::id(),
            "watch": opts.watch.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
            "build": opts.build,
            "inject_tools": opts.inject_tools,
        }),
    );
    say(&format!(
        "supervising `{}` (state in {})",
        opts.command.join(" "),
        opts.state_dir.display()
    ));

    let (control_tx, control_rx) = mpsc::unbounded_channel();
    let _watcher = if opts.watch.is_empty() {
        None
    } else {
        Some(
            watch::spawn_watcher(&opts.watch, opts.debounce, control_tx.clone())
                .map_err(McpError::Watch)?,
        )
    };

    let client = LineReader::new(input, opts.limits.max_line_length);
    let gone = control_tx.clone();
    let (out_tx, writer) = framing::spawn_client_writer(output, move |err| {
        let _ = gone.send(Control::ClientGone(err));
    });

    let limits = &opts.limits;
    let mut proxy = Proxy {
        routing: routing::Routing::new(limits.buffer_max_messages, limits.buffer_max_bytes),
        restarts: coordinator::Restarts::new(crate::restart::RestartPolicy::new(
            opts.restart.clone(),
        )),
        tools: tools::ToolView::default(),
        opts,
        handshake: handshake::Handshake::default(),
        audit: Some(audit),
        to_client: out_tx,
        new_events: None,
        control_tx: control_tx.clone(),
        slot: None,
        idle: Idle::No,
        stderr_tail: stderr_tail::StderrTail::default(),
        started: Instant::now(),
        shutdown: None,
        done: None,
    };
    if let Err(err) = proxy.start_child("initial start") {
        proxy.record(
            AuditEvent::SupervisorExiting,
            json!({"reason": "the server could not be started"}),
        );
        proxy.sync_audit();
        return Err(McpError::Start(err));
    }
    on_start(Shutdown(control_tx));
    let outcome = proxy.run(client, control_rx).await;
    // Everything queued for the client goes out before the supervisor returns.
    writer.drain().await;
    Ok(outcome)
}
