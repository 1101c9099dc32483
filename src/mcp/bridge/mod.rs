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
mod restart;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::json;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc;

use super::framing::{self, LineReader};
use super::{AuditEvent, AuditLog, Limits, McpError, say, stdio};
use crate::restart::{RestartConfig, RestartPolicy};
use dispatch::{Bridge, Event, Link};

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

/// Whether a request may be sent again after the daemon went away while handling it.
fn idempotent(method: &str) -> bool {
    method == "ping" || method.ends_with("/list") || method == "resources/read"
}

/// Run the bridge with the process's own stdin and stdout as the client side, ending on
/// SIGINT or SIGTERM and restarting the daemon on SIGHUP.
///
/// # Errors
/// The state directory or the audit log cannot be created.
pub async fn bridge_stdio(opts: BridgeOptions) -> Result<BridgeOutcome, McpError> {
    bridge(opts, stdio::input(), stdio::output(), |shutdown| {
        tokio::spawn(super::signals::forward(shutdown));
    })
    .await
}

impl super::signals::SignalTarget for BridgeShutdown {
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
    let endpoint = http::Endpoint::new(&opts.host, opts.port, &opts.path).map_err(|why| {
        McpError::StateDir {
            path: opts.state_dir.clone(),
            source: std::io::Error::other(why),
        }
    })?;
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
    let (out_tx, out_rx) = mpsc::unbounded_channel::<Vec<u8>>();
    let gone = events_tx.clone();
    let writer = tokio::spawn(async move {
        if let Err(err) = framing::write_lines(output, out_rx).await {
            let _ = gone.send(Event::ClientGone(err.to_string()));
        }
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
    if tokio::time::timeout(Duration::from_secs(5), writer)
        .await
        .is_err()
    {
        say("the client did not read the last messages within 5 s");
    }
    Ok(outcome)
}
