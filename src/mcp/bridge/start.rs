//! Starting a bridge: [`bridge`] opens the state directory and audit log, builds the
//! dispatcher and runs it until the client goes away; [`BridgeShutdown`] stops it or
//! restarts the daemon from outside.

use std::time::Instant;

use serde_json::json;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc;

use super::dispatch::{Bridge, Event, Link};
use super::{BridgeOptions, daemon, http, learned};
use crate::mcp::framing::{self, LineReader};
use crate::mcp::{AuditEvent, AuditLog, McpError, say, stdio};
use crate::restart::RestartPolicy;

/// How a bridge ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BridgeOutcome {
    /// Why it ended.
    pub reason: String,
}

/// A handle to stop a running bridge, as SIGINT/SIGTERM do, or to restart its daemon, as
/// SIGHUP does.
#[derive(Debug, Clone)]
pub struct BridgeShutdown(mpsc::UnboundedSender<Event>);

impl BridgeShutdown {
    /// Ask the bridge to end (`signal` names the cause in logs). A second call ends it
    /// without waiting for the shutdown work.
    pub fn request(&self, signal: &'static str) {
        let _ = self.0.send(Event::Shutdown(signal));
    }

    /// Ask the bridge to restart the daemon, as `restart_server` does (`signal` names the
    /// cause in the audit log and logs).
    pub fn restart(&self, signal: &'static str) {
        let _ = self.0.send(Event::Restart(signal));
    }
}

/// Run the bridge with the process's own stdin and stdout as the client side, ending on
/// SIGINT or SIGTERM and restarting the daemon on SIGHUP.
///
/// # Errors
/// The state directory or the audit log cannot be created.
pub async fn bridge_stdio(opts: BridgeOptions) -> Result<BridgeOutcome, McpError> {
    bridge(opts, stdio::input(), stdio::output(), |shutdown| {
        tokio::spawn(crate::mcp::signals::forward(shutdown));
    })
    .await
}

impl crate::mcp::signals::SignalTarget for BridgeShutdown {
    fn stop(&self, signal: &'static str) {
        self.request(signal);
    }

    fn restart(&self, signal: &'static str) {
        BridgeShutdown::restart(self, signal);
    }
}

/// Run the bridge between `input`/`output` (the client side) and the daemon, until the
/// client closes `input` or a shutdown is requested through the handle given to
/// `on_start`.
///
/// # Errors
/// The state directory or the audit log cannot be created, or the HTTP client cannot be
/// built.
pub async fn bridge<R, W>(
    opts: BridgeOptions,
    input: R,
    output: W,
    on_start: impl FnOnce(BridgeShutdown),
) -> Result<BridgeOutcome, McpError>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    let state_error = |source| McpError::StateDir {
        path: opts.state_dir.clone(),
        source,
    };
    std::fs::create_dir_all(&opts.state_dir).map_err(state_error)?;
    let mut audit = AuditLog::open(&opts.state_dir).map_err(state_error)?;
    let endpoint =
        http::Endpoint::new(&opts.host, opts.port, &opts.path).map_err(McpError::HttpClient)?;
    let _ = audit.record(
        AuditEvent::SupervisorStarted,
        None,
        None,
        json!({
            "name": opts.name,
            "command": opts.command,
            "url": endpoint.url(),
            "bridge_pid": std::process::id(),
            "inject_tools": opts.inject_tools,
        }),
    );
    say(&format!(
        "bridging to {} (daemon `{}`, state in {})",
        endpoint.url(),
        opts.command.join(" "),
        opts.state_dir.display()
    ));

    let (events_tx, events_rx) = mpsc::unbounded_channel();
    let gone = events_tx.clone();
    let (out_tx, writer) = framing::spawn_client_writer(output, move |err| {
        let _ = gone.send(Event::ClientGone(err));
    });
    let daemon = daemon::Daemon {
        command: opts.command.clone(),
        state_dir: opts.state_dir.clone(),
        port: opts.port,
        endpoint,
        health: opts.health.clone(),
        shutdown_path: opts.shutdown_path.clone(),
        ready_timeout: opts.ready_timeout,
        term_grace: opts.limits.stop_term_grace,
        exits: {
            let (exits_tx, mut exits_rx) = mpsc::unbounded_channel();
            let events = events_tx.clone();
            tokio::spawn(async move {
                while let Some(exit) = exits_rx.recv().await {
                    let _ = events.send(Event::DaemonExited(exit));
                }
            });
            exits_tx
        },
    };
    let client = LineReader::new(input, opts.limits.max_line_length);
    let bridge = Bridge {
        learned: learned::Learned::load(&opts.state_dir),
        policy: RestartPolicy::new(opts.restart.clone()),
        opts,
        daemon,
        events: events_tx.clone(),
        to_client: out_tx,
        link: Link::Down,
        epoch: 0,
        client_init: None,
        client_initialized: false,
        waiting: std::collections::VecDeque::new(),
        in_flight: 0,
        connecting: false,
        connect_attempt: 0,
        reconnect_at: None,
        restart: None,
        audit: Some(audit),
        own_daemon: None,
        stopping: Vec::new(),
        listener: None,
        last_exit: None,
        started: Instant::now(),
        shutting_down: None,
        done: false,
    };
    on_start(BridgeShutdown(events_tx));
    let outcome = bridge.run(client, events_rx).await;
    writer.drain().await;
    Ok(outcome)
}
