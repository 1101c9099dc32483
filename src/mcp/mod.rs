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
mod oversized;
mod proxy;
mod routing;
mod state_dir;
mod stderr_tail;
mod stdio;
pub(crate) mod tools;
mod watch;

use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::json;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc;

pub use audit::{AuditEvent, AuditLog};
pub use marker::RestartMarker;
pub use options::{Limits, SuperviseOptions, default_name};
pub use proxy::SuperviseOutcome;
pub use state_dir::StateDirError;
pub(crate) use state_dir::ignore_in_git;

use framing::LineReader;
use proxy::{Control, Idle, Proxy};

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
        tokio::spawn(forward_signals(shutdown));
    })
    .await
}

async fn forward_signals(shutdown: Shutdown) {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut interrupt), Ok(mut terminate), Ok(mut hangup)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
        signal(SignalKind::hangup()),
    ) else {
        say("cannot listen for SIGINT/SIGTERM/SIGHUP; stop the supervisor by closing its stdin");
        return;
    };
    loop {
        tokio::select! {
            _ = interrupt.recv() => shutdown.request("SIGINT"),
            _ = terminate.recv() => shutdown.request("SIGTERM"),
            _ = hangup.recv() => shutdown.restart("SIGHUP"),
        }
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
    let (out_tx, out_rx) = mpsc::unbounded_channel::<Vec<u8>>();

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
    let writer = tokio::spawn(async move {
        if let Err(err) = framing::write_lines(output, out_rx).await {
            let _ = gone.send(Control::ClientGone(err.to_string()));
        }
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
    if tokio::time::timeout(Duration::from_secs(5), writer)
        .await
        .is_err()
    {
        say("the client did not read the last messages within 5 s");
    }
    Ok(outcome)
}

/// Log one line for humans on stderr: `[<ISO-8601 UTC>] [SUPERVISOR] message`. Never
/// stdout, which belongs to the client.
pub(crate) fn say(text: &str) {
    let line = format!("[{}] [SUPERVISOR] {text}\n", iso_now());
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}

/// `ts` as ISO 8601 UTC with millisecond precision (`2025-01-31T12:00:00.123Z`).
pub(crate) fn iso(ts: jiff::Timestamp) -> String {
    format!("{ts:.3}")
}

/// Now, as ISO 8601 UTC with millisecond precision.
pub(crate) fn iso_now() -> String {
    iso(jiff::Timestamp::now())
}
