//! The dispatcher: one task that owns every piece of the proxy's state and routes each
//! message between the client and the current child (see the theory of operation in
//! [`super`]).
//!
//! This file holds the state, the event loop and message routing; starting, stopping and
//! restarting children is in [`super::lifecycle`], the injected tools' answers in
//! [`super::status`].

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::audit::{AuditEvent, AuditLog};
use super::child::ChildUnit;
use super::framing::LineReader;
use super::handshake::Handshake;
use super::inflight::{Buffer, ClientRequest, Entry, Held, InFlight, Origin, ServerRequest};
use super::message::{self, Kind, Message, Parsed, RequestId};
use super::options::SuperviseOptions;
use super::tools::{self, InjectedCall, StartRecord};
use super::{framing::Frame, say};
use crate::process::{Events, ProcessEvent, Stream};

/// Something the dispatcher reacts to, other than client input and child events.
#[derive(Debug)]
pub(crate) enum Control {
    /// SIGINT or SIGTERM: stop the child gracefully and exit 0. A second one kills.
    Shutdown(&'static str),
    /// Watched files changed.
    FilesChanged(Vec<String>),
    /// The `--build` command finished.
    BuildDone {
        /// Whether it exited 0.
        ok: bool,
        /// How it ended, in words.
        detail: String,
    },
    /// Writing to the client failed: the client is gone.
    ClientGone(String),
}

/// Why a child is being stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StopWhy {
    /// A planned restart.
    Restart,
    /// It never answered `initialize` in time.
    ReadinessTimeout,
    /// The supervisor is exiting.
    Shutdown,
}

/// Where a child is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    /// No handshake to replay yet (the client has not initialized): messages pass
    /// straight through.
    Open,
    /// Waiting for the answer to `initialize` (`replayed`: sent by the proxy; otherwise
    /// the client's own first `initialize`).
    Initializing {
        /// When the child counts as never ready.
        deadline: Instant,
        /// Whether the proxy replayed it (the answer is not forwarded).
        replayed: bool,
    },
    /// Ready: requests are forwarded.
    Ready,
    /// A planned restart waits for requests in flight to finish.
    Draining {
        /// When the remaining ones are failed and the child is stopped anyway.
        deadline: Instant,
    },
    /// Being stopped; its late replies are dropped.
    Stopping(StopWhy),
}

/// The child the proxy routes to.
#[derive(Debug)]
pub(crate) struct Slot {
    pub(crate) unit: ChildUnit,
    pub(crate) phase: Phase,
    pub(crate) spawned: Instant,
    pub(crate) ready_after: Option<Duration>,
}

/// What the supervisor is doing when it has no child.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Idle {
    /// A child exists (or is about to).
    No,
    /// Waiting to start the next child after an exit.
    Backoff(Instant),
    /// Given up after too many failures: requests get errors until `restart_server`.
    Degraded(String),
}

/// Where a restart request came from (recorded as `source` in the audit log).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source {
    /// The `restart_server` tool.
    Tool,
    /// The server exited with code 42.
    Exit42,
    /// A watched file changed.
    Watch,
}

impl Source {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Source::Tool => "tool",
            Source::Exit42 => "exit42",
            Source::Watch => "watch",
        }
    }
}

/// A `restart_server` call waiting for the new child.
#[derive(Debug)]
pub(crate) struct Waiter {
    pub(crate) raw_id: Vec<u8>,
}

/// A restart in progress.
#[derive(Debug)]
pub(crate) struct Restart {
    pub(crate) reason: String,
    pub(crate) source: Source,
    pub(crate) requested: Instant,
    pub(crate) old_pid: Option<u32>,
    pub(crate) old_generation: u64,
    pub(crate) waiters: Vec<Waiter>,
}

/// How the supervisor ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SuperviseOutcome {
    /// The server exited 0 on its own: a clean shutdown.
    ServerExited,
    /// The client closed its end (EOF on stdin).
    ClientClosed,
    /// SIGINT or SIGTERM.
    Signalled(&'static str),
}

impl SuperviseOutcome {
    /// Why the supervisor ended, in words.
    #[must_use]
    pub fn describe(&self) -> String {
        match self {
            SuperviseOutcome::ServerExited => "the server shut down cleanly".to_owned(),
            SuperviseOutcome::ClientClosed => "the client closed the connection".to_owned(),
            SuperviseOutcome::Signalled(signal) => format!("{signal} received"),
        }
    }
}

/// The dispatcher's state. Owned by one task; nothing here is shared.
pub(crate) struct Proxy {
    pub(crate) opts: SuperviseOptions,
    pub(crate) handshake: Handshake,
    pub(crate) audit: Option<AuditLog>,
    pub(crate) to_client: mpsc::UnboundedSender<Vec<u8>>,
    /// Events of a child just started, for the loop to read from.
    pub(crate) new_events: Option<(u64, Events)>,
    pub(crate) control_tx: mpsc::UnboundedSender<Control>,
    pub(crate) next_id: u64,
    pub(crate) next_server_id: u64,
    pub(crate) inflight: InFlight,
    pub(crate) buffer: Buffer,
    pub(crate) server_requests: HashMap<u64, ServerRequest>,
    pub(crate) slot: Option<Slot>,
    pub(crate) idle: Idle,
    pub(crate) generation: u64,
    pub(crate) history: Vec<StartRecord>,
    pub(crate) restarts: u64,
    pub(crate) crashes: u64,
    pub(crate) last_exit: Option<String>,
    pub(crate) restart: Option<Restart>,
    pub(crate) change_pending: bool,
    pub(crate) build_running: bool,
    pub(crate) pending_change_summary: Option<String>,
    pub(crate) pending_reason: Option<String>,
    pub(crate) policy: crate::restart::RestartPolicy,
    pub(crate) child_tools: Option<HashSet<String>>,
    pub(crate) listing: HashSet<String>,
    pub(crate) started: Instant,
    pub(crate) shutdown: Option<SuperviseOutcome>,
    pub(crate) done: Option<SuperviseOutcome>,
}

/// Methods whose requests are retried on the next child when theirs goes away: they
/// have no side effects (issue 6: `ping` and `*/list`), and `initialize` is the
/// handshake itself.
fn is_retryable(method: &str) -> bool {
    method == "ping" || method == "initialize" || method.ends_with("/list")
}

impl Proxy {
    /// Run until the supervisor should exit.
    pub(crate) async fn run<R: tokio::io::AsyncRead + Unpin>(
        mut self,
        mut client: LineReader<R>,
        mut control_rx: mpsc::UnboundedReceiver<Control>,
    ) -> SuperviseOutcome {
        let mut client_open = true;
        let mut child_events: Option<(u64, Events)> = None;
        loop {
            if let Some(events) = self.new_events.take() {
                child_events = Some(events);
            }
            if let Some(outcome) = self.done.take() {
                self.record(
                    AuditEvent::SupervisorExiting,
                    json!({"reason": outcome.describe(), "exit_code": 0}),
                );
                self.sync_audit();
                say(&format!("exiting: {}", outcome.describe()));
                return outcome;
            }
            let deadline = self.next_deadline();
            tokio::select! {
                biased;
                Some(control) = control_rx.recv() => self.on_control(control),
                (generation, event) = next_event(&mut child_events) => match event {
                    Some(ProcessEvent::Exited(report)) => {
                        child_events = None;
                        self.on_child_exit(generation, &report);
                    }
                    Some(event) => self.on_child(generation, event),
                    None => child_events = None,
                },
                frame = client.next(), if client_open => match frame {
                    Ok(Frame::Line(line)) => self.on_client_line(line),
                    Ok(Frame::Oversized(len)) => say(&format!(
                        "dropped a message from the client of {len} bytes: longer than the {} byte limit",
                        self.opts.limits.max_line_length
                    )),
                    Ok(Frame::Eof) => {
                        client_open = false;
                        self.begin_shutdown(SuperviseOutcome::ClientClosed);
                    }
                    Err(err) => {
                        say(&format!("reading from the client failed: {err}"));
                        client_open = false;
                        self.begin_shutdown(SuperviseOutcome::ClientClosed);
                    }
                },
                () = sleep_until(deadline) => self.on_timer(Instant::now()),
            }
        }
    }

    fn next_deadline(&self) -> Option<Instant> {
        let phase = self.slot.as_ref().and_then(|slot| match slot.phase {
            Phase::Initializing { deadline, .. } | Phase::Draining { deadline } => Some(deadline),
            _ => None,
        });
        let backoff = match self.idle {
            Idle::Backoff(until) => Some(until),
            _ => None,
        };
        let buffered = if self.buffer.is_empty() {
            None
        } else {
            self.buffer.next_deadline()
        };
        [phase, backoff, buffered].into_iter().flatten().min()
    }

    fn on_control(&mut self, control: Control) {
        match control {
            Control::Shutdown(signal) => {
                if self.shutdown.is_some() {
                    say(&format!("{signal} again: killing the server now"));
                    if let Some(slot) = &self.slot {
                        slot.unit.kill();
                    }
                } else {
                    say(&format!("{signal} received: stopping the server"));
                    self.begin_shutdown(SuperviseOutcome::Signalled(signal));
                }
            }
            Control::FilesChanged(paths) => self.on_files_changed(&paths),
            Control::BuildDone { ok, detail } => self.on_build_done(ok, &detail),
            Control::ClientGone(err) => {
                say(&format!(
                    "writing to the client failed ({err}): shutting down"
                ));
                self.begin_shutdown(SuperviseOutcome::ClientClosed);
            }
        }
    }

    // ----- sending -----

    pub(crate) fn send_client(&self, line: Vec<u8>) {
        let _ = self.to_client.send(line);
    }

    pub(crate) fn reply_error(&self, raw_id: Option<&[u8]>, code: i64, text: &str) {
        self.send_client(message::error_response(raw_id, code, text));
    }

    pub(crate) fn reply_result(&self, raw_id: &[u8], result: &Value) {
        self.send_client(message::result_response(raw_id, result));
    }

    pub(crate) fn take_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    pub(crate) fn record(&mut self, event: AuditEvent, details: Value) {
        let (generation, pid) = match &self.slot {
            Some(slot) => (Some(slot.unit.generation()), Some(slot.unit.pid())),
            None => (Some(self.generation).filter(|g| *g > 0), None),
        };
        self.record_for(event, generation, pid, details);
    }

    /// Make every audit line written so far durable (a barrier before stopping a child).
    pub(crate) fn sync_audit(&mut self) {
        if let Some(audit) = &mut self.audit
            && let Err(err) = audit.sync()
        {
            say(&format!(
                "cannot sync the audit log {}: {err}",
                audit.path().display()
            ));
        }
    }

    pub(crate) fn record_for(
        &mut self,
        event: AuditEvent,
        generation: Option<u64>,
        pid: Option<u32>,
        details: Value,
    ) {
        if let Some(audit) = &mut self.audit
            && let Err(err) = audit.record(event, generation, pid, details)
        {
            say(&format!(
                "cannot write the audit log {}: {err}",
                audit.path().display()
            ));
        }
    }

    /// Whether client requests go straight to the child now.
    pub(crate) fn can_forward(&self) -> bool {
        self.slot
            .as_ref()
            .is_some_and(|slot| matches!(slot.phase, Phase::Open | Phase::Ready))
    }

    // ----- client → child -----

    fn on_client_line(&mut self, line: Vec<u8>) {
        match Message::parse(line) {
            Parsed::Message(message) => self.on_client_message(message),
            Parsed::NotJson(err, _) => {
                say(&format!(
                    "dropped a line from the client that is not JSON: {err}"
                ));
            }
            Parsed::Invalid(err, id) => {
                say(&format!(
                    "invalid JSON-RPC from the client ({err}): answered Invalid Request"
                ));
                self.reply_error(
                    id.as_deref(),
                    message::INVALID_REQUEST,
                    &format!("Invalid Request: {err}"),
                );
            }
        }
    }

    fn on_client_message(&mut self, message: Message) {
        tracing::trace!(kind = ?message.kind(), "client message");
        match message.kind().clone() {
            Kind::Request { id, method } => self.on_client_request(message, id, &method),
            Kind::Notification { method } => self.on_client_notification(message, &method),
            Kind::Response { id, .. } => self.on_client_response(&message, id.as_ref()),
        }
    }

    fn on_client_request(&mut self, message: Message, id: RequestId, method: &str) {
        if Handshake::is_session_method(method) {
            self.handshake
                .observe_request(method, message.params().as_ref());
        }
        if method == "tools/call" && self.opts.inject_tools {
            let params = message.params();
            let name = params
                .as_ref()
                .and_then(|p| p.get("name"))
                .and_then(Value::as_str);
            let childs_own = name.is_some_and(|name| {
                self.child_tools
                    .as_ref()
                    .is_some_and(|names| names.contains(name))
            });
            if !childs_own {
                match tools::parse_call(params.as_ref()) {
                    Ok(Some(call)) => return self.on_injected_call(&message, call),
                    Ok(None) => {}
                    Err(problem) => {
                        let raw = message.raw_id().unwrap_or(b"null").to_vec();
                        return self.reply_result(&raw, &tools::tool_error(&problem));
                    }
                }
            }
        }
        if let Idle::Degraded(reason) = &self.idle {
            let raw = message.raw_id().unwrap_or(b"null").to_vec();
            return match method {
                "ping" => self.reply_result(&raw, &json!({})),
                "tools/list" if self.opts.inject_tools => {
                    self.reply_result(&raw, &json!({ "tools": tools::definitions() }));
                }
                _ => {
                    let text = format!(
                        "the MCP server is down (degraded: {reason}); call the restart_server tool to try again"
                    );
                    self.reply_error(Some(&raw), message::INTERNAL_ERROR, &text);
                }
            };
        }
        if self.shutdown.is_some() {
            let raw = message.raw_id().unwrap_or(b"null").to_vec();
            return self.reply_error(
                Some(&raw),
                message::INTERNAL_ERROR,
                "the MCP supervisor is shutting down",
            );
        }
        if self.can_forward() {
            let deadline = Instant::now() + self.opts.limits.buffer_deadline;
            self.forward_request(message, id, method, deadline);
        } else {
            self.hold(message, true);
        }
    }

    /// Hold a client message until a child is ready; a full buffer answers requests with
    /// an error at once.
    pub(crate) fn hold(&mut self, message: Message, is_request: bool) {
        let deadline = is_request.then(|| Instant::now() + self.opts.limits.buffer_deadline);
        if let Err(held) = self.buffer.push(Held { message, deadline }) {
            if is_request {
                let raw = held.message.raw_id().unwrap_or(b"null").to_vec();
                self.reply_error(
                    Some(&raw),
                    message::INTERNAL_ERROR,
                    &format!(
                        "the MCP server is restarting and the supervisor's buffer is full ({} messages or {} bytes); try again shortly",
                        self.opts.limits.buffer_max_messages, self.opts.limits.buffer_max_bytes
                    ),
                );
            } else {
                say(
                    "dropped a notification from the client: the buffer is full while the server restarts",
                );
            }
        }
    }

    /// Send a client request to the current child under a fresh proxy id.
    pub(crate) fn forward_request(
        &mut self,
        message: Message,
        id: RequestId,
        method: &str,
        deadline: Instant,
    ) {
        let Some(slot) = &mut self.slot else {
            return self.hold(message, true);
        };
        let generation = slot.unit.generation();
        if method == "initialize" && !self.handshake.has_baseline() {
            // The client's own first handshake: its answer makes this child ready.
            slot.phase = Phase::Initializing {
                deadline: Instant::now() + self.opts.limits.readiness_timeout,
                replayed: false,
            };
        }
        self.next_id += 1;
        let proxy_id = self.next_id;
        let bytes = message.with_raw_id(proxy_id.to_string().as_bytes());
        let raw_id = message.raw_id().unwrap_or(b"null").to_vec();
        let retry = is_retryable(method).then_some((message, deadline));
        self.inflight.insert(
            proxy_id,
            Entry {
                generation,
                origin: Origin::Client(ClientRequest {
                    id,
                    raw_id,
                    method: method.to_owned(),
                    retry,
                    cancelled: false,
                }),
            },
        );
        if let Some(slot) = &self.slot {
            slot.unit.send(bytes);
        }
    }

    fn on_client_notification(&mut self, message: Message, method: &str) {
        if self.handshake.observe_notification(method) {
            // Sent to the child it is meant for; a restarting child gets it in the replay.
            if self.can_forward() {
                self.send_to_current(message.into_bytes());
            } else if !self.handshake.has_baseline() {
                self.hold(message, false);
            }
            return;
        }
        if method == "notifications/cancelled" {
            return self.on_client_cancel(&message);
        }
        if matches!(self.idle, Idle::Degraded(_)) || self.shutdown.is_some() {
            return;
        }
        if self.can_forward() {
            self.send_to_current(message.into_bytes());
        } else {
            self.hold(message, false);
        }
    }

    fn on_client_cancel(&mut self, message: &Message) {
        let params = message.params();
        let Some(id) = params
            .as_ref()
            .and_then(|p| p.get("requestId"))
            .and_then(RequestId::from_value)
        else {
            return;
        };
        if self.buffer.remove_request(&id).is_some() {
            // Never sent: removing it is the cancellation; the spec wants no answer.
            return;
        }
        let Some((proxy_id, generation)) = self.inflight.find_client(&id) else {
            return;
        };
        self.inflight.cancel(proxy_id);
        self.check_drained();
        let Some(slot) = &self.slot else { return };
        if slot.unit.generation() != generation || matches!(slot.phase, Phase::Stopping(_)) {
            return;
        }
        let mut params = params.unwrap_or_else(|| json!({}));
        params["requestId"] = json!(proxy_id);
        slot.unit.send(message::notification(
            "notifications/cancelled",
            Some(&params),
        ));
    }

    fn on_client_response(&mut self, message: &Message, id: Option<&RequestId>) {
        let Some(server_id) = id.and_then(RequestId::as_u64) else {
            say("dropped a response from the client to a request id the supervisor never sent");
            return;
        };
        let Some(request) = self.server_requests.remove(&server_id) else {
            tracing::debug!(
                server_id,
                "client answered a request of a previous server; dropped"
            );
            return;
        };
        match &self.slot {
            Some(slot)
                if slot.unit.generation() == request.generation
                    && !matches!(slot.phase, Phase::Stopping(_)) =>
            {
                slot.unit.send(message.with_raw_id(&request.raw_id));
            }
            _ => tracing::debug!(
                generation = request.generation,
                "client answered a request of a server that is gone; dropped"
            ),
        }
    }

    pub(crate) fn send_to_current(&self, line: Vec<u8>) {
        if let Some(slot) = &self.slot {
            slot.unit.send(line);
        }
    }

    /// Send held messages to the child while it accepts them, in their original order.
    pub(crate) fn flush_buffer(&mut self) {
        while self.can_forward() {
            let Some(held) = self.buffer.pop_front() else {
                break;
            };
            match held.message.kind().clone() {
                Kind::Request { id, method } => {
                    let deadline = held
                        .deadline
                        .unwrap_or_else(|| Instant::now() + self.opts.limits.buffer_deadline);
                    self.forward_request(held.message, id, &method, deadline);
                }
                _ => self.send_to_current(held.message.into_bytes()),
            }
        }
    }

    // ----- child → client -----

    fn on_child(&mut self, generation: u64, event: ProcessEvent) {
        match event {
            ProcessEvent::Line {
                stream: Stream::Stdout,
                line,
            } => self.on_child_line(generation, line),
            ProcessEvent::Line {
                stream: Stream::Stderr,
                line,
            } => {
                // Only if stderr were piped; it is inherited, but pass it on all the same.
                let mut line = line;
                line.push(b'\n');
                let _ = std::io::Write::write_all(&mut std::io::stderr().lock(), &line);
            }
            ProcessEvent::LineTooLong { limit, .. } => say(&format!(
                "the server (generation {generation}) wrote a line longer than {limit} bytes on stdout; dropped"
            )),
            ProcessEvent::Leaked(leak) => say(&format!(
                "the server (generation {generation}) left processes behind: {leak}"
            )),
            ProcessEvent::Exited(report) => self.on_child_exit(generation, &report),
        }
    }

    fn on_child_line(&mut self, generation: u64, line: Vec<u8>) {
        let Some(slot) = &self.slot else { return };
        if slot.unit.generation() != generation {
            return;
        }
        let stopping = matches!(slot.phase, Phase::Stopping(_));
        match Message::parse(line) {
            Parsed::Message(message) => {
                if stopping {
                    tracing::debug!(generation, "dropped a message from a server being stopped");
                    return;
                }
                match message.kind().clone() {
                    Kind::Response { id, is_error } => {
                        self.on_child_response(generation, &message, id.as_ref(), is_error);
                    }
                    Kind::Request { id, .. } => {
                        self.next_server_id += 1;
                        let server_id = self.next_server_id;
                        let raw_id = message.raw_id().unwrap_or(b"null").to_vec();
                        self.server_requests.insert(
                            server_id,
                            ServerRequest {
                                generation,
                                raw_id,
                                id,
                            },
                        );
                        self.send_client(message.with_raw_id(server_id.to_string().as_bytes()));
                    }
                    Kind::Notification { method } => {
                        if method == "notifications/cancelled" {
                            self.on_child_cancel(generation, &message);
                        } else {
                            self.send_client(message.into_bytes());
                        }
                    }
                }
            }
            Parsed::NotJson(_, line) => {
                say(&format!(
                    "the server (generation {generation}) wrote a line that is not JSON-RPC on stdout; not sent to the client: {}",
                    preview(&String::from_utf8_lossy(&line))
                ));
            }
            Parsed::Invalid(err, id) => {
                // Answered only when it has an id to answer: an error with a null id
                // makes strict servers (rmcp among them) abort their handshake, and
                // servers that log JSON lines on stdout would get one per log line.
                match id {
                    Some(id) if !stopping => {
                        say(&format!(
                            "the server (generation {generation}) sent an invalid JSON-RPC message ({err}); answered Invalid Request"
                        ));
                        self.send_to_current(message::error_response(
                            Some(&id),
                            message::INVALID_REQUEST,
                            &format!("Invalid Request: {err}"),
                        ));
                    }
                    _ => say(&format!(
                        "the server (generation {generation}) wrote JSON that is not JSON-RPC on stdout ({err}); not sent to the client"
                    )),
                }
            }
        }
    }

    fn on_child_cancel(&mut self, generation: u64, message: &Message) {
        let params = message.params();
        let Some(child_id) = params
            .as_ref()
            .and_then(|p| p.get("requestId"))
            .and_then(RequestId::from_value)
        else {
            return;
        };
        let Some(server_id) = self
            .server_requests
            .iter()
            .find(|(_, r)| r.generation == generation && r.id == child_id)
            .map(|(id, _)| *id)
        else {
            return;
        };
        self.server_requests.remove(&server_id);
        let mut params = params.unwrap_or_else(|| json!({}));
        params["requestId"] = json!(server_id);
        self.send_client(message::notification(
            "notifications/cancelled",
            Some(&params),
        ));
    }

    fn on_child_response(
        &mut self,
        generation: u64,
        message: &Message,
        id: Option<&RequestId>,
        is_error: bool,
    ) {
        let Some(proxy_id) = id.and_then(RequestId::as_u64) else {
            say(&format!(
                "the server (generation {generation}) answered an id the supervisor never sent; dropped"
            ));
            return;
        };
        let Some(entry) = self.inflight.take(proxy_id, generation) else {
            tracing::debug!(proxy_id, generation, "late or unknown reply dropped");
            return;
        };
        match entry.origin {
            Origin::Client(request) => {
                self.on_client_reply(generation, message, request, is_error);
            }
            Origin::ReplayedInitialize => self.on_replayed_initialize(message, is_error),
            Origin::Replay => {
                if is_error {
                    say(&format!(
                        "the server (generation {generation}) refused replayed session state: {}",
                        String::from_utf8_lossy(message.bytes())
                    ));
                }
            }
        }
        self.check_drained();
    }

    fn on_client_reply(
        &mut self,
        generation: u64,
        message: &Message,
        request: ClientRequest,
        is_error: bool,
    ) {
        if request.cancelled {
            return;
        }
        let mut bytes = message.with_raw_id(&request.raw_id);
        if !is_error && request.method == "initialize" && !self.handshake.has_baseline() {
            bytes = self.rewrite_first_initialize(&bytes);
            if let Some(slot) = &mut self.slot {
                slot.phase = Phase::Ready;
                slot.ready_after = Some(slot.spawned.elapsed());
            }
            self.record(AuditEvent::ServerReady, json!({"handshake": "client"}));
            say(&format!("server ready (generation {generation})"));
            self.send_client(bytes);
            self.flush_buffer();
            return;
        }
        if !is_error && request.method == "tools/list" {
            bytes = self.with_injected_tools(&bytes);
        }
        self.send_client(bytes);
    }

    fn rewrite_first_initialize(&mut self, bytes: &[u8]) -> Vec<u8> {
        let Ok(mut value) = serde_json::from_slice::<Value>(bytes) else {
            return bytes.to_vec();
        };
        if let Some(result) = value.get_mut("result") {
            self.handshake.first_result(result, self.opts.inject_tools);
        }
        serde_json::to_vec(&value).unwrap_or_else(|_| bytes.to_vec())
    }

    fn with_injected_tools(&mut self, bytes: &[u8]) -> Vec<u8> {
        let Ok(mut value) = serde_json::from_slice::<Value>(bytes) else {
            return bytes.to_vec();
        };
        let Some(result) = value.get_mut("result") else {
            return bytes.to_vec();
        };
        // A listing without a cursor starts over; pages add up until the last one.
        let names = tools::listed_names(result);
        self.listing.extend(names);
        let last_page = result.get("nextCursor").is_none_or(Value::is_null);
        if last_page {
            self.child_tools = Some(std::mem::take(&mut self.listing));
        }
        if !self.opts.inject_tools {
            return bytes.to_vec();
        }
        let child_names = self.child_tools.clone().unwrap_or_default();
        if !tools::append(result, &child_names) {
            return bytes.to_vec();
        }
        serde_json::to_vec(&value).unwrap_or_else(|_| bytes.to_vec())
    }

    /// Answer a request lost with its child: retry it on the next child if it has no
    /// side effects, otherwise an error saying it was not retried.
    pub(crate) fn fail_inflight(&mut self, generation: u64, why: &str) {
        let mut retry = Vec::new();
        for (proxy_id, entry) in self.inflight.take_generation(generation) {
            let Origin::Client(request) = entry.origin else {
                continue;
            };
            if request.cancelled {
                continue;
            }
            if let Some((message, deadline)) = request.retry {
                tracing::debug!(proxy_id, method = %request.method, "retrying on the next server");
                retry.push(Held {
                    message,
                    deadline: Some(deadline),
                });
                continue;
            }
            let text = format!(
                "the MCP server {why} while this request was in flight; the call was not retried (it may have had side effects)"
            );
            self.reply_error(Some(&request.raw_id), message::INTERNAL_ERROR, &text);
            self.record_for(
                AuditEvent::RequestFailedByRestart,
                Some(generation),
                None,
                json!({"method": request.method, "request_id": request.id.to_value(), "why": why}),
            );
        }
        if !retry.is_empty() {
            self.buffer.push_front_all(retry);
        }
        // The child's own requests to the client can no longer be answered: tell the
        // client to stop working on them.
        let orphaned: Vec<u64> = self
            .server_requests
            .iter()
            .filter(|(_, r)| r.generation == generation)
            .map(|(id, _)| *id)
            .collect();
        for server_id in orphaned {
            self.server_requests.remove(&server_id);
            self.send_client(message::notification(
                "notifications/cancelled",
                Some(&json!({"requestId": server_id, "reason": format!("the MCP server {why}")})),
            ));
        }
    }

    /// Answer held requests with an error (the server is not coming back soon).
    pub(crate) fn fail_buffered(&mut self, text: &str) {
        for held in self.buffer.take_all() {
            if let Kind::Request { .. } = held.message.kind() {
                let raw = held.message.raw_id().unwrap_or(b"null").to_vec();
                self.reply_error(Some(&raw), message::INTERNAL_ERROR, text);
            }
        }
    }

    fn on_injected_call(&mut self, message: &Message, call: InjectedCall) {
        let raw_id = message.raw_id().unwrap_or(b"null").to_vec();
        match call {
            InjectedCall::Status => {
                let status = self.status();
                self.reply_result(&raw_id, &tools::tool_result(&status, false));
            }
            InjectedCall::Verify { since } => {
                let result = tools::verify_result(&self.history, since, jiff::Timestamp::now());
                self.reply_result(&raw_id, &tools::tool_result(&result, false));
            }
            InjectedCall::Restart { reason } => {
                self.request_restart(&reason, Source::Tool, Some(Waiter { raw_id }));
            }
        }
    }
}

/// The next event of the current child; never resolves when there is none.
async fn next_event(events: &mut Option<(u64, Events)>) -> (u64, Option<ProcessEvent>) {
    match events {
        Some((generation, events)) => (*generation, events.recv().await),
        None => std::future::pending().await,
    }
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline.into()).await,
        None => std::future::pending().await,
    }
}

fn preview(text: &str) -> String {
    const MAX: usize = 200;
    if text.len() <= MAX {
        return text.to_owned();
    }
    let mut end = MAX;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} bytes)", &text[..end], text.len())
}
