//! Messages from the client: requests forwarded under the front's ids, held, or answered
//! from memory while the server restarts; session state noted for replay; cancellations;
//! answers to the server's own requests; and the injected tools' calls. Part of the
//! front (methods of [`Front`]).

use std::borrow::Cow;
use std::time::Instant;

use serde_json::{Value, json};

use super::coordinator::{Source, Waiter};
use super::handshake::Handshake;
use super::inflight::{ClientRequest, Entry, Held, Origin};
use super::state::{Front, Idle, Phase};
use super::stateless;
use super::tools::{self, InjectedCall};
use crate::mcp::backend::Backend;
use crate::mcp::jsonrpc::message::{
    self, Cancelled, Kind, Message, Method, ParamsHead, Parsed, RequestId,
};
use crate::mcp::jsonrpc::oversized;
use crate::mcp::say;

/// Methods whose requests are retried on the next server when theirs goes away: they
/// have no side effects (issue 6: `ping` and `*/list`; `resources/read`), and
/// `initialize` is the handshake itself.
pub(crate) fn is_retryable(method: &str) -> bool {
    method == "ping"
        || method == "initialize"
        || method.ends_with("/list")
        || method == "resources/read"
}

impl<B: Backend> Front<B> {
    pub(crate) fn on_client_line(&mut self, line: Vec<u8>) {
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

    /// A message from the client over the size limit was dropped: answer it, so that
    /// nothing waits for it. An id the front gave one of the server's requests makes it
    /// the client's answer to that request (the server gets the error); any other id
    /// makes it a request (the client gets the error).
    pub(crate) fn on_client_oversized(&mut self, len: usize, head: &[u8], tail: &[u8]) {
        let limit = self.opts.limits.max_line_length;
        let role = self.opts.role;
        let Some(raw_id) = oversized::find_id(head, tail) else {
            say(&format!(
                "dropped a message from the client of {len} bytes, over the {limit}-byte limit (mcp.max_line_bytes); it has no id to answer"
            ));
            return;
        };
        let id = std::str::from_utf8(&raw_id)
            .ok()
            .and_then(RequestId::from_raw);
        let answered = id
            .as_ref()
            .and_then(RequestId::as_u64)
            .and_then(|server_id| self.routing.server_requests.remove(&server_id));
        if let Some(request) = answered {
            say(&format!(
                "the client's answer to a request of the server is {len} bytes, over the {limit}-byte limit (mcp.max_line_bytes): the server gets an error instead"
            ));
            if self.is_current(request.generation) {
                self.send_to_current(message::error_response(
                    Some(&request.raw_id),
                    message::INTERNAL_ERROR,
                    &format!(
                        "the client's answer is {len} bytes, over the {limit}-byte limit of the MCP {role} (mcp.max_line_bytes); it was dropped"
                    ),
                ));
            }
            return;
        }
        say(&format!(
            "a request from the client is {len} bytes, over the {limit}-byte limit (mcp.max_line_bytes): answered with an error"
        ));
        self.reply_error(
            Some(&raw_id),
            message::INVALID_REQUEST,
            &format!(
                "the request is {len} bytes, over the {limit}-byte limit of the MCP {role} (mcp.max_line_bytes); it was not sent to the server"
            ),
        );
    }

    /// Whether `generation` is the current server and not being stopped.
    pub(crate) fn is_current(&self, generation: u64) -> bool {
        self.slot.as_ref().is_some_and(|slot| {
            slot.generation == generation && !matches!(slot.phase, Phase::Stopping(_))
        })
    }

    fn on_client_message(&mut self, message: Message) {
        tracing::trace!(kind = ?message.kind(), "client message");
        match message.kind().clone() {
            Kind::Request { id, method } => self.on_client_request(message, id, method),
            Kind::Notification { method } => self.on_client_notification(message, &method),
            Kind::Response { id, .. } => self.on_client_response(&message, id.as_ref()),
        }
    }

    fn on_client_request(&mut self, message: Message, id: RequestId, method: Method) {
        let stateless = stateless::is_stateless(&method, &message);
        let calls_tool = method == "tools/call" && self.opts.inject_tools;
        let params = if stateless || calls_tool {
            message.params_head()
        } else {
            ParamsHead::default()
        };
        if stateless {
            self.stateless.observe(params.meta);
            if method == "subscriptions/listen" {
                return self.on_listen(&message, id);
            }
        } else if Handshake::is_session_method(&method) {
            self.handshake
                .observe_request(&method, message.params().as_ref());
        }
        if calls_tool && self.on_tool_call(&message, params.name, stateless) {
            return;
        }
        let raw = message.raw_id().unwrap_or(b"null");
        if method == "server/discover" && !self.can_forward() && self.discover_from_memory(raw) {
            return;
        }
        if let Idle::Degraded(reason) = &self.idle {
            let reason = reason.clone();
            return self.answer_degraded(raw, &method, &reason);
        }
        if self.shutdown.is_some() {
            let role = self.opts.role;
            return self.reply_error(
                Some(raw),
                message::INTERNAL_ERROR,
                &format!("the MCP {role} is shutting down"),
            );
        }
        if self.can_forward() {
            let now = Instant::now();
            let deadline = now + self.opts.limits.buffer_deadline;
            return self.forward_request(message, id, method, now, deadline);
        }
        if !stateless && self.answer_from_memory(&message, raw, &method) {
            return;
        }
        self.hold(message, true);
    }

    /// Calls of the injected tools (unless the server has a tool of the same name):
    /// answered by the front. Returns whether the call was one of them.
    fn on_tool_call(
        &mut self,
        message: &Message,
        name: Option<Cow<'_, str>>,
        stateless: bool,
    ) -> bool {
        let Some(name) = name else {
            return false;
        };
        if !tools::is_injected(&name) {
            return false;
        }
        let servers_own = self
            .tools
            .server_tools
            .as_ref()
            .is_some_and(|names| names.contains(name.as_ref()));
        if servers_own {
            return false;
        }
        let params = message.params();
        let raw = message.raw_id().unwrap_or(b"null").to_vec();
        let era = tools::Era::of(stateless);
        match tools::parse_call(params.as_ref()) {
            Ok(Some(call)) => {
                self.on_injected_call(raw, call, era);
                true
            }
            Ok(None) => false,
            Err(problem) => {
                self.reply_result(&raw, &era.result(tools::tool_error(&problem)));
                true
            }
        }
    }

    fn answer_degraded(&mut self, raw: &[u8], method: &str, reason: &str) {
        if method == "ping" {
            return self.reply_result(raw, &json!({}));
        }
        if let Some(result) = self.list_from_memory(method) {
            return self.reply_result(raw, &result);
        }
        if method == "tools/list" && self.opts.inject_tools {
            return self.reply_result(raw, &json!({ "tools": tools::definitions() }));
        }
        let text = format!(
            "the MCP server is down (degraded: {reason}); call the restart_server tool to try again"
        );
        self.reply_error(Some(raw), message::INTERNAL_ERROR, &text);
    }

    /// While the server starts or restarts, answer what the front remembers of it at
    /// once: `ping`, an `initialize` like the one it answered before, and its lists.
    /// Returns whether the request was answered.
    fn answer_from_memory(&mut self, message: &Message, raw: &[u8], method: &str) -> bool {
        if !self.restarting() {
            return false;
        }
        match method {
            "ping" if self.handshake.has_baseline() => {
                self.reply_result(raw, &json!({}));
                true
            }
            "initialize" => self.initialize_from_memory(message, raw),
            _ if message.params().is_none_or(|p| p.get("cursor").is_none()) => {
                match self.list_from_memory(method) {
                    Some(result) => {
                        self.reply_result(raw, &result);
                        self.relisted(method);
                        true
                    }
                    None => false,
                }
            }
            _ => false,
        }
    }

    /// A listing remembered from the server, with the injected tools in `tools/list`.
    fn list_from_memory(&self, method: &str) -> Option<Value> {
        let mut result = self.learned.list_result(method)?;
        if method == "tools/list" && self.opts.inject_tools {
            let names = tools::listed_names(&result);
            tools::append(&mut result, &names);
        }
        Some(result)
    }

    /// The client's `initialize` while no server can answer it: answered with what a
    /// server answered before for the same protocol version, if anything; the handshake
    /// is then replayed to the server once it is up.
    fn initialize_from_memory(&mut self, message: &Message, raw: &[u8]) -> bool {
        let params = message.params();
        let requested = params.as_ref().and_then(|p| p.get("protocolVersion"));
        let Some(mut result) = self
            .learned
            .initialize
            .clone()
            .filter(|init| init.get("protocolVersion") == requested)
        else {
            return false;
        };
        if !self.handshake.has_baseline() {
            self.handshake
                .first_result(&mut result, self.opts.inject_tools);
        } else {
            self.handshake.rewrite(&mut result, self.opts.inject_tools);
        }
        self.reply_result(raw, &result);
        true
    }

    /// Hold a client message until a server is ready; a full buffer answers requests
    /// with an error at once.
    pub(crate) fn hold(&mut self, message: Message, is_request: bool) {
        let first_initialize =
            message.method() == Some("initialize") && !self.handshake.has_baseline();
        let deadline = (is_request && !first_initialize)
            .then(|| Instant::now() + self.opts.limits.buffer_deadline);
        if let Err(held) = self.routing.buffer.push(Held { message, deadline }) {
            if is_request {
                let raw = held.message.raw_id().unwrap_or(b"null").to_vec();
                let role = self.opts.role;
                self.reply_error(
                    Some(&raw),
                    message::INTERNAL_ERROR,
                    &format!(
                        "the MCP server is restarting and the {role}'s buffer is full ({} messages or {} bytes); try again shortly",
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

    /// Send a client request to the current server under a fresh front id, at `now`.
    pub(crate) fn forward_request(
        &mut self,
        message: Message,
        id: RequestId,
        method: Method,
        now: Instant,
        deadline: Instant,
    ) {
        let Some(slot) = &mut self.slot else {
            return self.hold(message, true);
        };
        let limit = self.opts.limits.buffer_max_messages;
        if self.routing.inflight.len() >= limit {
            let raw = message.raw_id().unwrap_or(b"null").to_vec();
            say(&format!(
                "{limit} requests are in flight to the server (mcp.buffer_max_messages): {method} answered with an error"
            ));
            return self.reply_error(
                Some(&raw),
                message::INTERNAL_ERROR,
                &format!(
                    "the MCP server has {limit} requests in flight, the most the {} keeps (mcp.buffer_max_messages); try again once some are answered",
                    self.opts.role
                ),
            );
        }
        let generation = slot.generation;
        let first_initialize = method == "initialize" && !self.handshake.has_baseline();
        if first_initialize {
            // The client's own first handshake: its answer makes this server ready. No
            // server has answered one yet, so this may be a cold `npx`/`uv run`: the
            // longer first-start wait applies.
            let timeout = self.opts.limits.first_readiness_timeout;
            slot.phase = Phase::Initializing {
                deadline: now + timeout,
                timeout,
                replayed: false,
            };
        }
        let proxy_id = self.routing.proxy_id();
        let bytes = message.with_raw_id(itoa::Buffer::new().format(proxy_id).as_bytes());
        // The client's first `initialize` waits for the first server that answers it (or
        // for degraded mode), never for the request deadline: the client cannot go on
        // without it, and failing it would end the session.
        self.routing.inflight.insert(
            proxy_id,
            Entry {
                generation,
                origin: Origin::Client(ClientRequest {
                    id,
                    retryable: is_retryable(&method),
                    method,
                    message,
                    deadline: (!first_initialize).then_some(deadline),
                    cancelled: false,
                    answer_by: (!first_initialize).then(|| now + self.opts.limits.answer_timeout),
                }),
            },
        );
        self.backend.send(generation, bytes);
    }

    fn on_client_notification(&mut self, message: Message, method: &str) {
        if self.handshake.observe_notification(method) {
            // Sent to the server it is meant for; a restarting server gets it in the
            // replay.
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
        let Some(cancelled) = Cancelled::read(message) else {
            return;
        };
        let id = &cancelled.request;
        if self.routing.buffer.remove_request(id).is_some() {
            // Never sent: removing it is the cancellation; the spec wants no answer.
            return;
        }
        if self.cancel_listen(id, &cancelled) {
            return;
        }
        let Some((proxy_id, generation)) = self.routing.inflight.find_client(id) else {
            return;
        };
        self.routing.inflight.cancel(proxy_id);
        self.check_drained();
        if !self.is_current(generation) || self.backend.cancel(generation, proxy_id) {
            return;
        }
        self.backend
            .send(generation, cancelled.naming(json!(proxy_id)));
    }

    fn on_client_response(&mut self, message: &Message, id: Option<&RequestId>) {
        let role = self.opts.role;
        let Some(server_id) = id.and_then(RequestId::as_u64) else {
            say(&format!(
                "dropped a response from the client to a request id the {role} never sent"
            ));
            return;
        };
        let Some(request) = self.routing.server_requests.remove(&server_id) else {
            tracing::debug!(
                server_id,
                "client answered a request of a previous server; dropped"
            );
            return;
        };
        if self.is_current(request.generation) {
            self.backend
                .send(request.generation, message.with_raw_id(&request.raw_id));
        } else {
            tracing::debug!(
                generation = request.generation,
                "client answered a request of a server that is gone; dropped"
            );
        }
    }

    /// Send held messages to the server while it accepts them, in their original order.
    pub(crate) fn flush_buffer(&mut self) {
        while self.can_forward() {
            let Some(held) = self.routing.buffer.pop_front() else {
                break;
            };
            match held.message.kind().clone() {
                Kind::Request { id, method } => {
                    let now = Instant::now();
                    let deadline = held
                        .deadline
                        .unwrap_or_else(|| now + self.opts.limits.buffer_deadline);
                    self.forward_request(held.message, id, method, now, deadline);
                }
                _ => self.send_to_current(held.message.into_bytes()),
            }
        }
    }

    fn on_injected_call(&mut self, raw_id: Vec<u8>, call: InjectedCall, era: tools::Era) {
        match call {
            InjectedCall::Status => {
                let status = self.status();
                self.reply_result(&raw_id, &era.result(tools::tool_result(&status, false)));
            }
            InjectedCall::Verify { since } => {
                let history = self
                    .backend
                    .starts()
                    .unwrap_or_else(|| self.restarts.history.clone());
                let result = tools::verify_result(&history, since, jiff::Timestamp::now());
                self.reply_result(&raw_id, &era.result(tools::tool_result(&result, false)));
            }
            InjectedCall::Restart { reason } => {
                self.request_restart(&reason, Source::Tool, Some(Waiter { raw_id, era }));
            }
        }
    }
}
