//! The bridge's dispatcher: one task owning everything the client can observe (the link
//! to the daemon, the requests waiting for it, the restart in progress, what was learned)
//! and reacting to the client's lines, the daemon's messages, the results of background
//! work (connecting, restarting, forwarding) and one timer.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::AsyncRead;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};
use tokio::task::JoinHandle;

use super::connect::{ConnectError, Connection};
use super::daemon::{Daemon, DaemonExit, StartEntry, StopOutcome};
use super::http::{PostError, Session};
use super::learned::Learned;
use super::{BridgeOptions, BridgeOutcome};
use crate::mcp::framing::{Frame, LineReader};
use crate::mcp::message::{self, Message};
use crate::mcp::{AuditEvent, AuditLog, say};
use crate::restart::RestartPolicy;

/// What background work and the outside world tell the dispatcher.
#[derive(Debug)]
pub(crate) enum Event {
    /// A forwarded message's POST ended (its answer, if any, already went to the client).
    Forwarded {
        /// The link it went over.
        epoch: u64,
        /// The message.
        message: Message,
        /// How it went.
        outcome: Result<(), PostError>,
    },
    /// The daemon sent a request or notification of its own.
    FromDaemon {
        /// The link it came over.
        epoch: u64,
        /// The message.
        message: Value,
    },
    /// The GET stream of a link broke and the daemon is not answering.
    StreamEnded {
        /// The link.
        epoch: u64,
        /// Why.
        why: String,
    },
    /// A connect attempt ended.
    Connected {
        /// Which attempt: only the latest counts.
        attempt: u64,
        /// The session, or why there is none.
        result: Result<Connection, ConnectError>,
    },
    /// A list was read again after the daemon said it changed.
    Relearned {
        /// The link it was read over.
        epoch: u64,
        /// The listing method.
        method: String,
        /// Its items, or why they could not be read.
        items: Result<Vec<Value>, String>,
    },
    /// The daemon stop and start of a restart ended.
    Restarted(Result<Restarted, (String, Option<StopOutcome>)>),
    /// A daemon this bridge started exited.
    DaemonExited(DaemonExit),
    /// SIGINT/SIGTERM, or a [`super::BridgeShutdown`] request.
    Shutdown(&'static str),
    /// SIGHUP, or a [`super::BridgeShutdown::restart`] request.
    Restart(&'static str),
    /// Writing to the client failed.
    ClientGone(String),
    /// The shutdown work (session delete, daemon stop) is over.
    ShutdownDone,
}

/// A finished stop-and-start of the daemon.
#[derive(Debug)]
pub(crate) struct Restarted {
    /// How the old daemon was stopped.
    pub(crate) stop: StopOutcome,
    /// The new daemon.
    pub(crate) started: StartEntry,
    /// How long it took to become ready.
    pub(crate) startup: Duration,
}

/// Whether the bridge has a session with the daemon.
#[derive(Debug, Clone)]
pub(super) enum Link {
    /// No session: requests that need the daemon wait.
    Down,
    /// Messages go to the daemon in this session.
    Ready(Session),
}

/// A `restart_server` (or `configure` restart) being carried out.
#[derive(Debug)]
pub(super) struct Restart {
    /// The raw ids of the calls waiting for the answer.
    pub(super) waiters: Vec<Vec<u8>>,
    /// Why.
    pub(super) reason: String,
    /// When it was asked for.
    pub(super) requested: Instant,
    /// The daemon being replaced, as recorded.
    pub(super) old: Option<StartEntry>,
    /// The stop and start, once done.
    pub(super) done: Option<Restarted>,
}

/// The dispatcher's state.
pub(super) struct Bridge {
    pub(super) opts: BridgeOptions,
    pub(super) daemon: Daemon,
    pub(super) events: UnboundedSender<Event>,
    pub(super) to_client: UnboundedSender<Vec<u8>>,
    pub(super) link: Link,
    /// Bumped whenever the link changes; results of older links are recognised by it.
    pub(super) epoch: u64,
    pub(super) learned: Learned,
    /// The client's `initialize` params, replayed to every new session.
    pub(super) client_init: Option<Value>,
    pub(super) client_initialized: bool,
    /// Requests waiting for a link, with their deadlines.
    pub(super) waiting: VecDeque<(Message, Instant)>,
    /// Requests posted and not yet answered.
    pub(super) in_flight: usize,
    pub(super) connecting: bool,
    /// Counts connect attempts; a restart makes the one under way stale.
    pub(super) connect_attempt: u64,
    pub(super) reconnect_at: Option<Instant>,
    pub(super) restart: Option<Restart>,
    pub(super) policy: RestartPolicy,
    pub(super) audit: Option<AuditLog>,
    /// The daemon this bridge started last, if it is still running.
    pub(super) own_daemon: Option<u32>,
    /// Daemons being stopped on purpose: their exit is not a crash.
    pub(super) stopping: Vec<u32>,
    pub(super) listener: Option<JoinHandle<()>>,
    pub(super) last_exit: Option<String>,
    pub(super) started: Instant,
    pub(super) shutting_down: Option<String>,
    pub(super) done: bool,
}

impl Bridge {
    /// Run until the client goes away or a shutdown is asked for, and the shutdown work
    /// (deleting the session, stopping the daemon when asked to) is over.
    pub(super) async fn run<R: AsyncRead + Unpin>(
        mut self,
        mut client: LineReader<R>,
        mut events: UnboundedReceiver<Event>,
    ) -> BridgeOutcome {
        let mut client_open = true;
        while !self.done {
            let deadline = self.next_deadline();
            tokio::select! {
                biased;
                Some(event) = events.recv() => self.on_event(event),
                frame = client.next(), if client_open => match frame {
                    Ok(Frame::Line(line)) => self.on_client_line(line),
                    Ok(Frame::Oversized(dropped)) => self.on_oversized(&dropped),
                    Ok(Frame::Eof) => {
                        client_open = false;
                        self.begin_shutdown("the client closed stdin".to_owned());
                    }
                    Err(err) => {
                        client_open = false;
                        self.begin_shutdown(format!("reading the client failed: {err}"));
                    }
                },
                () = sleep_until(deadline), if deadline.is_some() => self.on_timer(),
            }
        }
        if let Some(listener) = self.listener.take() {
            listener.abort();
        }
        self.record(
            AuditEvent::SupervisorExiting,
            json!({"reason": self.shutting_down.clone().unwrap_or_default()}),
        );
        self.sync_audit();
        BridgeOutcome {
            reason: self.shutting_down.unwrap_or_default(),
        }
    }

    fn on_event(&mut self, event: Event) {
        match event {
            Event::Forwarded {
                epoch,
                message,
                outcome,
            } => self.on_forwarded(epoch, message, outcome),
            Event::FromDaemon { epoch, message } => self.on_daemon_message(epoch, message),
            Event::StreamEnded { epoch, why } => {
                if epoch == self.epoch && matches!(self.link, Link::Ready(_)) {
                    self.lose_link(&why);
                }
            }
            Event::Connected { attempt, result } => {
                if attempt == self.connect_attempt {
                    self.on_connected(result);
                } else if let Ok(stale) = result {
                    let endpoint = self.daemon.endpoint.clone();
                    tokio::spawn(async move { endpoint.delete(&stale.session).await });
                }
            }
            Event::Relearned {
                epoch,
                method,
                items,
            } => self.on_relearned(epoch, &method, items),
            Event::Restarted(result) => self.on_restarted(result),
            Event::DaemonExited(exit) => self.on_daemon_exited(exit),
            Event::Shutdown(signal) => {
                if self.shutting_down.is_some() {
                    self.done = true;
                } else {
                    self.begin_shutdown(format!("{signal} received"));
                }
            }
            Event::Restart(signal) => {
                self.start_restart(None, format!("restart requested with {signal}"), signal);
            }
            Event::ClientGone(why) => self.begin_shutdown(format!("the client is gone: {why}")),
            Event::ShutdownDone => self.done = true,
        }
    }

    /// The nearest of: a waiting request's deadline, a scheduled reconnect.
    fn next_deadline(&self) -> Option<Instant> {
        let waiting = self.waiting.iter().map(|(_, at)| *at).min();
        match (waiting, self.reconnect_at) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn on_timer(&mut self) {
        let now = Instant::now();
        if self.reconnect_at.is_some_and(|at| at <= now) {
            self.reconnect_at = None;
            self.connect("reconnect after the daemon went away");
        }
        while let Some(index) = self.waiting.iter().position(|(_, at)| *at <= now) {
            if let Some((message, _)) = self.waiting.remove(index) {
                let why = format!(
                    "the MCP daemon did not become ready within {} s ({})",
                    self.opts.limits.buffer_deadline.as_secs(),
                    self.daemon.endpoint.url()
                );
                self.answer_error(&message, &why);
            }
        }
    }

    pub(super) fn send_client(&self, line: Vec<u8>) {
        let _ = self.to_client.send(line);
    }

    pub(super) fn answer_error(&self, message: &Message, why: &str) {
        if let Some(raw) = message.raw_id() {
            self.send_client(message::error_response(
                Some(raw),
                message::INTERNAL_ERROR,
                why,
            ));
        }
    }

    pub(super) fn record(&mut self, event: AuditEvent, details: Value) {
        self.record_for(event, None, None, details);
    }

    pub(super) fn record_for(
        &mut self,
        event: AuditEvent,
        generation: Option<u64>,
        pid: Option<u32>,
        details: Value,
    ) {
        let failed = self
            .audit
            .as_mut()
            .is_some_and(|audit| audit.record(event, generation, pid, details).is_err());
        if failed {
            say("cannot write the audit log; carrying on without it");
            self.audit = None;
        }
    }

    pub(super) fn sync_audit(&mut self) {
        if let Some(audit) = self.audit.as_mut() {
            let _ = audit.sync();
        }
    }

    fn on_oversized(&mut self, dropped: &crate::mcp::framing::Dropped) {
        say(&format!(
            "dropped a client message of {} bytes, over the {}-byte limit",
            dropped.len, self.opts.limits.max_line_length
        ));
        if let Some(raw) = crate::mcp::oversized::find_id(&dropped.head, &dropped.tail) {
            self.send_client(message::error_response(
                Some(&raw),
                message::INVALID_REQUEST,
                &format!(
                    "the message is {} bytes, over the bridge's {}-byte limit",
                    dropped.len, self.opts.limits.max_line_length
                ),
            ));
        }
    }
}

/// Milliseconds, for audit details.
pub(super) fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

pub(super) fn raw_text(raw: Option<&[u8]>) -> Option<String> {
    raw.map(|raw| String::from_utf8_lossy(raw).into_owned())
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(at) => tokio::time::sleep_until(at.into()).await,
        None => std::future::pending().await,
    }
}
