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

    /// Start connecting (starting the daemon if nothing listens), unless already doing so.
    pub(super) fn connect(&mut self, start_reason: &str) {
        if self.connecting || self.shutting_down.is_some() {
            return;
        }
        self.connecting = true;
        self.connect_attempt += 1;
        let attempt = self.connect_attempt;
        self.reconnect_at = None;
        let daemon = self.daemon.clone();
        let params = self
            .client_init
            .clone()
            .unwrap_or_else(super::connect::default_initialize_params);
        let events = self.events.clone();
        let reason = start_reason.to_owned();
        tokio::spawn(async move {
            let result = super::connect::connect(&daemon, &params, &reason).await;
            let _ = events.send(Event::Connected { attempt, result });
        });
    }

    /// The session is gone (the daemon died, restarted or forgot it): hold new requests
    /// and connect again.
    pub(super) fn lose_link(&mut self, why: &str) {
        if let Link::Ready(session) = std::mem::replace(&mut self.link, Link::Down) {
            say(&format!("lost the session with the MCP daemon: {why}"));
            let endpoint = self.daemon.endpoint.clone();
            tokio::spawn(async move { endpoint.delete(&session).await });
        }
        self.epoch += 1;
        if let Some(listener) = self.listener.take() {
            listener.abort();
        }
        if self.restart.is_none() && !self.policy.is_degraded() && self.reconnect_at.is_none() {
            self.connect("the daemon went away");
        }
    }

    fn on_connected(&mut self, result: Result<Connection, ConnectError>) {
        self.connecting = false;
        if self.shutting_down.is_some() {
            if let Ok(connection) = result {
                let endpoint = self.daemon.endpoint.clone();
                tokio::spawn(async move { endpoint.delete(&connection.session).await });
            }
            return;
        }
        match result {
            Ok(connection) => self.on_link(connection),
            Err(err) => self.on_connect_failed(&err),
        }
    }

    fn on_link(&mut self, connection: Connection) {
        self.epoch += 1;
        self.daemon.endpoint = connection.endpoint.clone();
        if let Some((start, startup)) = &connection.started {
            self.on_daemon_started(start, *startup);
        }
        let generation = connection.daemon.as_ref().map(|d| d.generation);
        let pid = connection.daemon.as_ref().map(|d| d.pid);
        self.record(
            AuditEvent::SessionOpened,
            json!({"session_id": connection.session.id, "daemon_generation": generation, "daemon_pid": pid}),
        );
        let changed =
            self.learned.lists != connection.learned.lists && self.learned.initialize.is_some();
        let capabilities_changed = self.learned.initialize.is_some()
            && self
                .learned
                .initialize
                .as_ref()
                .and_then(|i| i.get("capabilities"))
                != connection
                    .learned
                    .initialize
                    .as_ref()
                    .and_then(|i| i.get("capabilities"));
        if capabilities_changed {
            self.record(
                AuditEvent::CapabilityDrift,
                json!({"new": connection.learned.initialize}),
            );
        }
        let previous = std::mem::replace(&mut self.learned, connection.learned);
        if let Err(err) = self.learned.save(&self.opts.state_dir) {
            say(&format!(
                "cannot save what was learned from the daemon: {err}"
            ));
        }
        self.link = Link::Ready(connection.session.clone());
        self.listener = Some(super::listen::spawn(
            self.daemon.endpoint.clone(),
            connection.session,
            self.epoch,
            self.events.clone(),
        ));
        self.answer_restart(connection.daemon.as_ref());
        self.flush_waiting();
        if changed && self.client_initialized {
            for (method, _) in super::learned::LISTS {
                if method != "resources/templates/list"
                    && previous.lists.get(method) != self.learned.lists.get(method)
                {
                    self.send_client(message::notification(&list_changed(method), None));
                }
            }
        }
    }

    fn on_daemon_started(&mut self, start: &StartEntry, startup: Duration) {
        self.own_daemon = Some(start.pid);
        self.policy.child_started(Instant::now());
        self.record_for(
            AuditEvent::ServerStarted,
            Some(start.generation),
            Some(start.pid),
            json!({"command": self.opts.command, "reason": start.reason}),
        );
        self.record_for(
            AuditEvent::ServerReady,
            Some(start.generation),
            Some(start.pid),
            json!({"startup_ms": millis(startup)}),
        );
        say(&format!(
            "daemon started (generation {}, pid {}) and ready after {} ms",
            start.generation,
            start.pid,
            startup.as_millis()
        ));
    }

    fn on_connect_failed(&mut self, err: &ConnectError) {
        let why = err.why.as_str();
        say(&format!("cannot reach the MCP daemon: {why}"));
        self.record(AuditEvent::ReadinessTimeout, json!({"why": why}));
        if let Some(restart) = self.restart.take() {
            self.fail_restart(restart, why, None);
        }
        if err.definite {
            // Those waiting learn why now rather than at their deadline.
            let message = format!("the MCP daemon is not available: {why}");
            while let Some((held, _)) = self.waiting.pop_front() {
                self.answer_error(&held, &message);
            }
        }
        self.last_exit = Some(why.to_owned());
        let exit = crate::restart::ChildExit::Crashed(crate::process::ExitStatus::Unknown);
        self.decide_after_loss(exit, why);
    }

    /// After the daemon went away on its own or could not be reached: back off, or give
    /// up until `restart_server`.
    pub(super) fn decide_after_loss(&mut self, exit: crate::restart::ChildExit, why: &str) {
        use crate::restart::RestartDecision;
        match self.policy.child_exited(exit, Instant::now()) {
            RestartDecision::Stop => self.schedule_reconnect(Duration::ZERO, why),
            RestartDecision::RestartAfter(delay) => self.schedule_reconnect(delay, why),
            RestartDecision::Degraded => {
                let crashes = self.policy.crashes_in_window(Instant::now());
                say(&format!(
                    "the MCP daemon failed {crashes} times within {} s; requests get errors until `restart_server` is called",
                    self.policy.config().crash_window.as_secs()
                ));
                self.record(
                    AuditEvent::Degraded,
                    json!({"crashes": crashes, "why": why}),
                );
                self.reconnect_at = None;
                while let Some((message, _)) = self.waiting.pop_front() {
                    self.answer_error(&message, &self.degraded_message());
                }
            }
        }
    }

    fn schedule_reconnect(&mut self, delay: Duration, why: &str) {
        if matches!(self.link, Link::Ready(_)) || self.connecting || self.restart.is_some() {
            return;
        }
        self.record(
            AuditEvent::CrashBackoff,
            json!({"delay_ms": millis(delay), "why": why}),
        );
        self.reconnect_at = Some(Instant::now() + delay);
    }

    pub(super) fn degraded_message(&self) -> String {
        format!(
            "the MCP daemon keeps failing ({}); call the `restart_server` tool to try again",
            self.last_exit.as_deref().unwrap_or("it does not come up")
        )
    }

    fn on_daemon_exited(&mut self, exit: DaemonExit) {
        let asked = self.stopping.contains(&exit.pid);
        self.stopping.retain(|pid| *pid != exit.pid);
        // Only the daemon this bridge started and connected to counts: one that died
        // while starting is reported by the connect attempt that started it.
        let current = self.own_daemon == Some(exit.pid);
        if current {
            self.own_daemon = None;
        }
        // Another bridge restarting the shared daemon holds the lock while it stops it.
        let planned = asked || (current && super::lock::held_elsewhere(&self.opts.state_dir));
        self.last_exit = Some(format!("pid {} exited: {}", exit.pid, exit.status));
        self.record_for(
            AuditEvent::ServerExited,
            None,
            Some(exit.pid),
            json!({"status": exit.status.to_string(), "requested": planned}),
        );
        if self.shutting_down.is_some() || !current {
            return;
        }
        if planned {
            if self.restart.is_none() && matches!(self.link, Link::Ready(_)) {
                self.lose_link("another bridge is restarting the daemon");
            }
            return;
        }
        say(&format!(
            "the MCP daemon (pid {}) exited: {}",
            exit.pid, exit.status
        ));
        if matches!(self.link, Link::Ready(_)) {
            self.link_lost_quietly();
        }
        let why = format!("the daemon exited: {}", exit.status);
        self.decide_after_loss(crate::restart::ChildExit::classify(exit.status), &why);
    }

    /// Drop the link without connecting again at once (the caller schedules it).
    fn link_lost_quietly(&mut self) {
        self.link = Link::Down;
        self.epoch += 1;
        if let Some(listener) = self.listener.take() {
            listener.abort();
        }
    }

    fn on_forwarded(&mut self, epoch: u64, message: Message, outcome: Result<(), PostError>) {
        let is_request = matches!(message.kind(), message::Kind::Request { .. });
        if is_request {
            self.in_flight = self.in_flight.saturating_sub(1);
        }
        let err = match outcome {
            Ok(()) => return,
            Err(err) => err,
        };
        match err {
            PostError::SessionGone | PostError::NotSent(_) => {
                // The daemon never handled it: send it again in the next session.
                if epoch == self.epoch {
                    self.lose_link(&err.to_string());
                }
                if is_request {
                    self.route(message);
                }
            }
            PostError::Lost(why) => {
                if epoch == self.epoch {
                    self.lose_link(&why);
                }
                if !is_request {
                    return;
                }
                if message.method().is_some_and(super::idempotent) {
                    self.route(message);
                } else {
                    self.record(
                        AuditEvent::RequestFailedByRestart,
                        json!({"method": message.method(), "request_id": raw_text(message.raw_id()), "why": why}),
                    );
                    self.answer_error(
                        &message,
                        "the MCP server restarted while this request was in flight; it may or may not have run, so check before retrying",
                    );
                }
            }
            PostError::Status { .. } => {
                if is_request {
                    self.answer_error(&message, &err.to_string());
                }
            }
        }
    }

    fn on_daemon_message(&mut self, epoch: u64, message: Value) {
        if epoch != self.epoch {
            return;
        }
        let method = message.get("method").and_then(Value::as_str).unwrap_or("");
        let relist = match method {
            "notifications/tools/list_changed" => vec!["tools/list"],
            "notifications/prompts/list_changed" => vec!["prompts/list"],
            "notifications/resources/list_changed" => {
                vec!["resources/list", "resources/templates/list"]
            }
            _ => Vec::new(),
        };
        if let Link::Ready(session) = &self.link
            && !relist.is_empty()
        {
            // The client hears of it once the new list is here to answer with.
            for list in relist {
                super::listen::relearn(
                    self.daemon.clone(),
                    session.clone(),
                    self.epoch,
                    list.to_owned(),
                    self.events.clone(),
                );
            }
            return;
        }
        self.send_client(serde_json::to_vec(&message).unwrap_or_default());
    }

    fn on_relearned(&mut self, epoch: u64, method: &str, items: Result<Vec<Value>, String>) {
        if epoch != self.epoch {
            return;
        }
        match items {
            Ok(items) => {
                self.learned.lists.insert(method.to_owned(), items);
                let _ = self.learned.save(&self.opts.state_dir);
            }
            Err(why) => {
                say(&format!("cannot read `{method}` again: {why}"));
                self.learned.lists.remove(method);
            }
        }
        if method != "resources/templates/list" {
            self.send_client(message::notification(&list_changed(method), None));
        }
    }

    /// Forward `message` now if there is a session, else hold it.
    pub(super) fn route(&mut self, message: Message) {
        match &self.link {
            Link::Ready(session) => {
                let session = session.clone();
                self.post(message, session);
            }
            Link::Down if self.policy.is_degraded() && self.restart.is_none() => {
                self.answer_error(&message, &self.degraded_message());
            }
            Link::Down => {
                let deadline = Instant::now() + self.opts.limits.buffer_deadline;
                self.waiting.push_back((message, deadline));
                if self.reconnect_at.is_none() && self.restart.is_none() {
                    self.connect("initial start");
                }
            }
        }
    }

    /// Send what waited for a session, in order, through the same rules as new requests
    /// (a held `tools/list` is answered from the lists just learned).
    fn flush_waiting(&mut self) {
        let held: Vec<(Message, Instant)> = self.waiting.drain(..).collect();
        for (message, _) in held {
            match message.kind().clone() {
                message::Kind::Request { method, .. } => self.on_request(message, &method),
                _ => self.route(message),
            }
        }
    }

    /// POST `message` in a task of its own; its response goes straight to the client.
    fn post(&mut self, message: Message, session: Session) {
        let id: Option<Value> = match message.kind() {
            message::Kind::Request { .. } => {
                self.in_flight += 1;
                message
                    .raw_id()
                    .and_then(|raw| serde_json::from_slice(raw).ok())
            }
            _ => None,
        };
        let endpoint = self.daemon.endpoint.clone();
        let events = self.events.clone();
        let to_client = self.to_client.clone();
        let epoch = self.epoch;
        let max = self.opts.limits.max_line_length;
        tokio::spawn(async move {
            let outcome = {
                let mut on_message = |reply: Value| {
                    if let Some(id) = id
                        .as_ref()
                        .filter(|id| super::http::is_response_to(&reply, id))
                    {
                        let line = serde_json::to_vec(&reply).unwrap_or_default();
                        let line = if line.len() > max {
                            too_long(id, line.len(), max)
                        } else {
                            line
                        };
                        let _ = to_client.send(line);
                    } else {
                        let _ = events.send(Event::FromDaemon {
                            epoch,
                            message: reply,
                        });
                    }
                };
                endpoint
                    .post(
                        &session,
                        message.bytes().to_vec(),
                        id.as_ref(),
                        &mut on_message,
                    )
                    .await
                    .map(|_| ())
            };
            let _ = events.send(Event::Forwarded {
                epoch,
                message,
                outcome,
            });
        });
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

    /// Delete the session and, with `--stop-daemon-on-exit`, stop the daemon this bridge
    /// started; then end.
    pub(super) fn begin_shutdown(&mut self, why: String) {
        if self.shutting_down.is_some() {
            return;
        }
        say(&format!("shutting down: {why}"));
        self.shutting_down = Some(why);
        self.reconnect_at = None;
        while let Some((message, _)) = self.waiting.pop_front() {
            self.answer_error(&message, "the bridge is shutting down");
        }
        if let Some(listener) = self.listener.take() {
            listener.abort();
        }
        let session = match std::mem::replace(&mut self.link, Link::Down) {
            Link::Ready(session) => Some(session),
            Link::Down => None,
        };
        let stop = self.opts.stop_daemon_on_exit && self.own_daemon.is_some();
        if stop {
            self.stopping.extend(self.own_daemon);
            self.record(
                AuditEvent::ServerExiting,
                json!({"why": "--stop-daemon-on-exit"}),
            );
            self.sync_audit();
        }
        let daemon = self.daemon.clone();
        let events = self.events.clone();
        tokio::spawn(async move {
            if let Some(session) = session {
                daemon.endpoint.delete(&session).await;
            }
            if stop {
                let lock =
                    super::lock::acquire(&daemon.state_dir, super::connect::LOCK_SLACK).await;
                let outcome = daemon.stop().await;
                drop(lock);
                say(&format!(
                    "daemon stopped ({}): {}",
                    outcome.how,
                    if outcome.stopped {
                        "the port is free"
                    } else {
                        "it is still there"
                    }
                ));
            }
            let _ = events.send(Event::ShutdownDone);
        });
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

/// The error sent instead of a response longer than the client side's line limit.
fn too_long(id: &Value, len: usize, max: usize) -> Vec<u8> {
    let raw = serde_json::to_vec(id).unwrap_or_default();
    message::error_response(
        Some(&raw),
        message::INTERNAL_ERROR,
        &format!(
            "the MCP daemon's response is {len} bytes, over the {max}-byte limit (`mcp.max_line_bytes`)"
        ),
    )
}

/// The notification saying the list of `method` changed.
fn list_changed(method: &str) -> String {
    format!(
        "notifications/{}/list_changed",
        method.trim_end_matches("/list")
    )
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
