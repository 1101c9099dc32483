//! Messages from the client: requests forwarded under the proxy's ids or held, session
//! state noted for replay, cancellations, answers to the server's own requests, and the
//! injected tools' calls. Part of the dispatcher (methods of [`Proxy`]).

use std::time::Instant;

use serde_json::{Value, json};

use super::coordinator::{Source, Waiter};
use super::handshake::Handshake;
use super::inflight::{ClientRequest, Entry, Held, Origin};
use super::message::{self, Kind, Message, Parsed, RequestId};
use super::oversized;
use super::proxy::{Idle, Phase, Proxy};
use super::say;
use super::tools::{self, InjectedCall};

/// Methods whose requests are retried on the next child when theirs goes away: they
/// have no side effects (issue 6: `ping` and `*/list`), and `initialize` is the
/// handshake itself.
fn is_retryable(method: &str) -> bool {
    method == "ping" || method == "initialize" || method.ends_with("/list")
}

impl Proxy {
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
    /// nothing waits for it. An id the supervisor gave one of the server's requests
    /// makes it the client's answer to that request (the server gets the error);
    /// any other id makes it a request (the client gets the error).
    pub(crate) fn on_client_oversized(&mut self, len: usize, head: &[u8], tail: &[u8]) {
        let limit = self.opts.limits.max_line_length;
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
            let current = self.slot.as_ref().is_some_and(|slot| {
                slot.unit.generation() == request.generation
                    && !matches!(slot.phase, Phase::Stopping(_))
            });
            if current {
                self.send_to_current(message::error_response(
                    Some(&request.raw_id),
                    message::INTERNAL_ERROR,
                    &format!(
                        "the client's answer is {len} bytes, over the {limit}-byte message limit of the MCP supervisor (mcp.max_line_bytes); it was dropped"
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
                "the request is {len} bytes, over the {limit}-byte message limit of the MCP supervisor (mcp.max_line_bytes); it was not sent to the server"
            ),
        );
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
                self.tools
                    .child_tools
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
        let first_initialize =
            message.method() == Some("initialize") && !self.handshake.has_baseline();
        let deadline = (is_request && !first_initialize)
            .then(|| Instant::now() + self.opts.limits.buffer_deadline);
        if let Err(held) = self.routing.buffer.push(Held { message, deadline }) {
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
        let first_initialize = method == "initialize" && !self.handshake.has_baseline();
        if first_initialize {
            // The client's own first handshake: its answer makes this child ready. No
            // server has started yet, so this may be a cold `npx`/`uv run`: the longer
            // first-start wait applies.
            let timeout = self.opts.limits.first_readiness_timeout;
            slot.phase = Phase::Initializing {
                deadline: Instant::now() + timeout,
                timeout,
                replayed: false,
            };
        }
        let proxy_id = self.routing.proxy_id();
        let bytes = message.with_raw_id(proxy_id.to_string().as_bytes());
        let raw_id = message.raw_id().unwrap_or(b"null").to_vec();
        // The client's first `initialize` waits for the first server that answers it (or
        // for degraded mode), never for the request deadline: the client cannot go on
        // without it, and failing it would end the session.
        let retry =
            is_retryable(method).then_some((message, (!first_initialize).then_some(deadline)));
        self.routing.inflight.insert(
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
        if self.routing.buffer.remove_request(&id).is_some() {
            // Never sent: removing it is the cancellation; the spec wants no answer.
            return;
        }
        let Some((proxy_id, generation)) = self.routing.inflight.find_client(&id) else {
            return;
        };
        self.routing.inflight.cancel(proxy_id);
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
        let Some(request) = self.routing.server_requests.remove(&server_id) else {
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

    /// Send held messages to the child while it accepts them, in their original order.
    pub(crate) fn flush_buffer(&mut self) {
        while self.can_forward() {
            let Some(held) = self.routing.buffer.pop_front() else {
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

    fn on_injected_call(&mut self, message: &Message, call: InjectedCall) {
        let raw_id = message.raw_id().unwrap_or(b"null").to_vec();
        match call {
            InjectedCall::Status => {
                let status = self.status();
                self.reply_result(&raw_id, &tools::tool_result(&status, false));
            }
            InjectedCall::Verify { since } => {
                let result =
                    tools::verify_result(&self.restarts.history, since, jiff::Timestamp::now());
                self.reply_result(&raw_id, &tools::tool_result(&result, false));
            }
            InjectedCall::Restart { reason } => {
                self.request_restart(&reason, Source::Tool, Some(Waiter { raw_id }));
            }
        }
    }

    /// The `server_status` answer.
    pub(crate) fn status(&self) -> Value {
        let current = self.slot.as_ref();
        let mode = if self.shutdown.is_some() {
            "stopping"
        } else if matches!(self.idle, Idle::Degraded(_)) {
            "degraded"
        } else if self.restarts.restart.is_none() && self.can_forward() {
            "running"
        } else {
            "restarting"
        };
        json!({
            "name": self.opts.name,
            "mode": mode,
            "generation": current.map(|s| s.unit.generation()),
            "pid": current.map(|s| s.unit.pid()),
            "uptime_seconds": current.map(|s| s.spawned.elapsed().as_secs_f64()),
            "restart_count": self.restarts.restarts,
            "crash_count": self.restarts.crashes,
            "last_exit": self.restarts.last_exit,
            "degraded_reason": match &self.idle { Idle::Degraded(r) => Some(r.clone()), _ => None },
            "watched_paths": self.opts.watch.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
            "command": self.opts.command,
            "supervisor_uptime_seconds": self.started.elapsed().as_secs_f64(),
            "requests_in_flight": self.routing.inflight.len(),
            "requests_buffered": self.routing.buffer.len(),
            "build_running": self.restarts.build_running,
            "change_pending": self.restarts.change_pending,
            "state_dir": self.opts.state_dir.display().to_string(),
            "last_stderr": self.stderr_tail.lines(),
        })
    }
}
