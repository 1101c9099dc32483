//! Messages from the server: answers routed back to the client under its own ids (with
//! the first `initialize` and every `tools/list` rewritten), the server's own requests
//! and notifications relayed, lines that are not JSON-RPC kept from the client, and
//! requests lost with a server answered. Part of the front (methods of [`Front`]).

use serde_json::{Value, json};

use super::audit::AuditEvent;
use super::inflight::{ClientRequest, Held, Origin, ServerRequest};
use super::state::{Front, Phase};
use super::tools;
use crate::mcp::backend::{Backend, Fate, StopWhy};
use crate::mcp::jsonrpc::message::{self, Cancelled, Kind, Message, Parsed, RequestId};
use crate::mcp::jsonrpc::oversized;
use crate::mcp::say;

impl<B: Backend> Front<B> {
    pub(crate) fn on_server_line(&mut self, generation: u64, line: Vec<u8>) {
        let Some(slot) = &self.slot else { return };
        if slot.generation != generation {
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
                        self.on_server_response(generation, &message, id.as_ref(), is_error);
                    }
                    Kind::Request { id, .. } => {
                        let server_id = self.routing.server_id();
                        let raw_id = message.raw_id().unwrap_or(b"null").to_vec();
                        self.routing.server_requests.insert(
                            server_id,
                            ServerRequest {
                                generation,
                                raw_id,
                                id,
                            },
                        );
                        self.send_client(
                            message.with_raw_id(itoa::Buffer::new().format(server_id).as_bytes()),
                        );
                    }
                    Kind::Notification { method } => {
                        if method == "notifications/cancelled" {
                            self.on_server_cancel(generation, &message);
                        } else {
                            self.on_server_notification(&method, message);
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

    /// A message from the server over the size limit was dropped: answer it, so that
    /// nothing waits for it. An id the proxy gave a request makes it that request's
    /// answer (the client gets an error under its own id); any other id makes it a
    /// request of the server's (the server gets the error).
    pub(crate) fn on_server_oversized(
        &mut self,
        generation: u64,
        len: usize,
        head: &[u8],
        tail: &[u8],
    ) {
        let limit = self.opts.limits.max_line_length;
        let role = self.opts.role;
        let current = self.is_current(generation);
        let Some(raw_id) = oversized::find_id(head, tail).filter(|_| current) else {
            say(&format!(
                "the server (generation {generation}) wrote a message of {len} bytes on stdout, over the {limit}-byte limit (mcp.max_line_bytes); dropped"
            ));
            return;
        };
        let proxy_id = std::str::from_utf8(&raw_id)
            .ok()
            .and_then(RequestId::from_raw)
            .and_then(|id| id.as_u64());
        let entry = proxy_id.and_then(|id| self.routing.inflight.take(id, generation));
        let Some(entry) = entry else {
            say(&format!(
                "a request from the server (generation {generation}) is {len} bytes, over the {limit}-byte limit (mcp.max_line_bytes): answered with an error"
            ));
            return self.send_to_current(message::error_response(
                Some(&raw_id),
                message::INVALID_REQUEST,
                &format!(
                    "the request is {len} bytes, over the {limit}-byte limit of the MCP {role} (mcp.max_line_bytes); it was not sent to the client"
                ),
            ));
        };
        say(&format!(
            "the server's (generation {generation}) answer is {len} bytes, over the {limit}-byte limit (mcp.max_line_bytes): the client gets an error instead"
        ));
        match entry.origin {
            Origin::Client(request) if !request.cancelled => self.reply_error(
                Some(request.raw_id()),
                message::INTERNAL_ERROR,
                &format!(
                    "the MCP server's answer is {len} bytes, over the {limit}-byte limit of the {role} (mcp.max_line_bytes); it was dropped"
                ),
            ),
            Origin::Client(_) | Origin::Replay => {}
            Origin::ReplayedInitialize | Origin::Probe => {
                self.begin_stop(StopWhy::ReadinessTimeout);
            }
            Origin::Listen(client_id) => self.listen_lost(&client_id),
            Origin::Learn(_) => self.list_read(),
        }
        self.check_drained();
    }

    fn on_server_cancel(&mut self, generation: u64, message: &Message) {
        let Some(cancelled) = Cancelled::read(message) else {
            return;
        };
        if let Some(proxy_id) = cancelled.request.as_u64()
            && self.on_listen_cancelled(proxy_id, &cancelled)
        {
            return;
        }
        let Some(server_id) = self
            .routing
            .server_requests
            .iter()
            .find(|(_, r)| r.generation == generation && r.id == cancelled.request)
            .map(|(id, _)| *id)
        else {
            return;
        };
        self.routing.server_requests.remove(&server_id);
        self.send_client(cancelled.naming(json!(server_id)));
    }

    fn on_server_response(
        &mut self,
        generation: u64,
        message: &Message,
        id: Option<&RequestId>,
        is_error: bool,
    ) {
        let Some(proxy_id) = id.and_then(RequestId::as_u64) else {
            say(&format!(
                "the server (generation {generation}) answered an id the {} never sent; dropped",
                self.opts.role
            ));
            return;
        };
        let Some(entry) = self.routing.inflight.take(proxy_id, generation) else {
            say(&format!(
                "the server (generation {generation}) answered id {proxy_id}, which no request in flight to it has; dropped"
            ));
            return;
        };
        match entry.origin {
            Origin::Client(request) => {
                self.on_client_reply(generation, message, request, is_error);
            }
            Origin::ReplayedInitialize => self.on_replayed_initialize(message, is_error),
            Origin::Learn(reading) => self.on_learned_page(reading, message),
            Origin::Listen(client_id) => self.on_listen_end(&client_id, message),
            Origin::Probe => self.on_probe_answer(message, is_error),
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
        if !is_error && super::learning::learns_from(&request.method) {
            let asked_a_page = request
                .message
                .params()
                .is_some_and(|p| p.get("cursor").is_some_and(|c| !c.is_null()));
            self.learn_from_answer(&request.method, asked_a_page, message.bytes());
        }
        let mut bytes = message.with_raw_id(request.raw_id());
        if is_error && request.method == "initialize" && !self.handshake.has_baseline() {
            // Refused (a server already serving 2026-07-28 says so): no handshake to
            // replay, and the server takes requests as before.
            self.handshake.forget_initialize();
            if let Some(slot) = &mut self.slot
                && matches!(
                    slot.phase,
                    Phase::Initializing {
                        replayed: false,
                        ..
                    }
                )
            {
                slot.phase = Phase::Open;
            }
            self.send_client(bytes);
            self.open_listens();
            self.flush_buffer();
            return;
        }
        if !is_error && request.method == "initialize" && !self.handshake.has_baseline() {
            bytes = self.rewrite_first_initialize(&bytes);
            if let Some(slot) = &mut self.slot {
                slot.phase = Phase::Ready;
                slot.ready_after = Some(slot.spawned.elapsed());
            }
            self.record(AuditEvent::ServerReady, json!({"handshake": "client"}));
            say(&format!("server ready (generation {generation})"));
            self.send_client(bytes);
            if self.opts.remember {
                self.read_lists(false);
            }
            self.flush_buffer();
            return;
        }
        if !is_error && request.method == "tools/list" {
            bytes = self.with_injected_tools(&bytes);
        }
        if request.method == "server/discover" {
            bytes = self.discovered(bytes);
        }
        self.send_client(bytes);
        self.relisted(&request.method);
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
        self.tools.listing.extend(names);
        let last_page = result.get("nextCursor").is_none_or(Value::is_null);
        if last_page {
            self.tools.server_tools = Some(std::mem::take(&mut self.tools.listing));
        }
        if !self.opts.inject_tools {
            return bytes.to_vec();
        }
        let server_names = self.tools.server_tools.clone().unwrap_or_default();
        if !tools::append(result, &server_names) {
            return bytes.to_vec();
        }
        serde_json::to_vec(&value).unwrap_or_else(|_| bytes.to_vec())
    }

    /// Answer a request lost with its server: retry it on the next server if it has no
    /// side effects, otherwise an error saying it was not retried.
    pub(crate) fn fail_inflight(&mut self, generation: u64, why: &str) {
        let mut retry = Vec::new();
        for (proxy_id, entry) in self.routing.inflight.take_generation(generation) {
            let request = match entry.origin {
                Origin::Client(request) => request,
                Origin::Listen(client_id) => {
                    self.listen_lost(&client_id);
                    continue;
                }
                _ => continue,
            };
            if request.cancelled {
                continue;
            }
            if request.retryable {
                tracing::debug!(proxy_id, method = %request.method, "retrying on the next server");
                retry.push(Held {
                    message: request.message,
                    deadline: request.deadline,
                });
                continue;
            }
            self.fail_lost(generation, &request, why);
        }
        if !retry.is_empty() {
            self.routing.buffer.push_front_all(retry);
        }
        // The server's own requests to the client can no longer be answered: tell the
        // client to stop working on them.
        let orphaned: Vec<u64> = self
            .routing
            .server_requests
            .iter()
            .filter(|(_, r)| r.generation == generation)
            .map(|(id, _)| *id)
            .collect();
        for server_id in orphaned {
            self.routing.server_requests.remove(&server_id);
            self.send_client(message::notification(
                "notifications/cancelled",
                Some(&json!({"requestId": server_id, "reason": format!("the MCP server {why}")})),
            ));
        }
    }

    /// A notification of the server's own: passed on; a list it says changed is read
    /// again when the front keeps its lists.
    fn on_server_notification(&mut self, method: &str, message: Message) {
        if self.on_stamped(method, &message) {
            return;
        }
        if self.opts.remember {
            let relist: &[&str] = match method {
                "notifications/tools/list_changed" => &["tools/list"],
                "notifications/prompts/list_changed" => &["prompts/list"],
                "notifications/resources/list_changed" => {
                    &["resources/list", "resources/templates/list"]
                }
                _ => &[],
            };
            self.read_some(relist, false);
        }
        self.send_client(message.into_bytes());
    }

    /// Client requests the server has not answered within the answer timeout: the
    /// client gets an error, the server a cancellation.
    pub(crate) fn fail_overdue(&mut self, now: std::time::Instant) {
        let timeout = self.opts.limits.answer_timeout;
        for (proxy_id, entry) in self.routing.inflight.take_overdue(now) {
            let Origin::Client(request) = entry.origin else {
                continue;
            };
            say(&format!(
                "the server (generation {}) did not answer {} within {} s; the client gets an error",
                entry.generation,
                request.method,
                timeout.as_secs_f64()
            ));
            self.reply_error(
                Some(request.raw_id()),
                message::INTERNAL_ERROR,
                &format!(
                    "the MCP server did not answer within {} s (mcp.answer_timeout); the request was cancelled",
                    timeout.as_secs_f64()
                ),
            );
            self.record_for(
                AuditEvent::RequestTimedOut,
                Some(entry.generation),
                None,
                json!({"method": request.method, "request_id": request.id.to_value(), "timeout_ms": timeout.as_millis()}),
            );
            if self.is_current(entry.generation) {
                self.send_to_current(message::notification(
                    "notifications/cancelled",
                    Some(&json!({"requestId": proxy_id, "reason": "no answer in time"})),
                ));
            }
        }
        self.check_drained();
    }

    /// Answer a request that reached a server which went away before answering: it may
    /// have run, so it is not sent again.
    pub(crate) fn fail_lost(&mut self, generation: u64, request: &ClientRequest, why: &str) {
        let text = format!(
            "the MCP server {why} while this request was in flight; the call was not retried (it may have had side effects, so check before retrying)"
        );
        self.reply_error(Some(request.raw_id()), message::INTERNAL_ERROR, &text);
        self.record_for(
            AuditEvent::RequestFailedByRestart,
            Some(generation),
            None,
            json!({"method": request.method, "request_id": request.id.to_value(), "why": why}),
        );
    }

    /// A request the back end could not deliver, or whose answer it lost. Sent again
    /// when the server never saw it (once the next generation is ready); answered with
    /// an error when it may have run or was refused.
    pub(crate) fn on_undelivered(&mut self, generation: u64, id: u64, fate: &Fate) {
        let Some(entry) = self.routing.inflight.take(id, generation) else {
            return;
        };
        match (entry.origin, fate) {
            (Origin::Client(request), _) if request.cancelled => {}
            (Origin::Client(request), Fate::NotSent(why)) => {
                tracing::debug!(id, why, "not delivered; sent again to the next server");
                self.routing.buffer.push_front_all(vec![Held {
                    message: request.message,
                    deadline: request.deadline,
                }]);
            }
            (Origin::Client(request), Fate::Lost(why)) if request.retryable => {
                tracing::debug!(id, why, "answer lost; asked again of the next server");
                self.routing.buffer.push_front_all(vec![Held {
                    message: request.message,
                    deadline: request.deadline,
                }]);
            }
            (Origin::Client(request), Fate::Lost(why)) => {
                let why = format!("went away ({why})");
                self.fail_lost(generation, &request, &why);
            }
            (Origin::Client(request), Fate::Refused(why))
                if request.method == "server/discover" =>
            {
                // A server that does not speak 2026-07-28 refuses it without a JSON-RPC
                // answer: tell the client as a stdio server would, so that it falls back
                // to `initialize`.
                let error = json!({
                    "code": message::METHOD_NOT_FOUND,
                    "message": format!("Method not found: the MCP server does not speak 2026-07-28 ({why})"),
                });
                self.learned.discover = Some(super::learned::Discovery::Refused(error.clone()));
                self.save_learned();
                self.send_client(message::error_value_response(request.raw_id(), &error));
            }
            (Origin::Client(request), Fate::Refused(why)) => {
                self.reply_error(Some(request.raw_id()), message::INTERNAL_ERROR, why);
                if request.method == "initialize" && !self.handshake.has_baseline() {
                    self.begin_stop(StopWhy::ReadinessTimeout);
                }
            }
            (Origin::Listen(client_id), Fate::Refused(why)) => {
                if let Some(listen) = self.stateless.remove(&client_id) {
                    self.reply_error(Some(&listen.raw_id), message::INTERNAL_ERROR, why);
                }
            }
            (Origin::Listen(client_id), _) => self.listen_lost(&client_id),
            (Origin::ReplayedInitialize | Origin::Probe, Fate::Refused(why)) => {
                say(&format!(
                    "the server (generation {generation}) refused the replayed initialize: {why}"
                ));
                self.begin_stop(StopWhy::ReadinessTimeout);
            }
            _ => {}
        }
        self.check_drained();
    }

    /// Answer held requests with an error (the server is not coming back soon).
    pub(crate) fn fail_buffered(&mut self, text: &str) {
        for held in self.routing.buffer.take_all() {
            if let Kind::Request { .. } = held.message.kind() {
                let raw = held.message.raw_id().unwrap_or(b"null").to_vec();
                self.reply_error(Some(&raw), message::INTERNAL_ERROR, text);
            }
        }
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
