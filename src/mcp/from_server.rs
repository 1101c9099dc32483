//! Messages from the child: answers routed back to the client under its own ids (with
//! the first `initialize` and every `tools/list` rewritten), the child's own requests and
//! notifications relayed, lines that are not JSON-RPC kept from the client, and requests
//! lost with a child answered. Part of the dispatcher (methods of [`Proxy`]).

use serde_json::{Value, json};

use super::audit::AuditEvent;
use super::inflight::{ClientRequest, Held, Origin, ServerRequest};
use super::message::{self, Kind, Message, Parsed, RequestId};
use super::oversized;
use super::proxy::{Phase, Proxy};
use super::say;
use super::tools;
use crate::process::{ProcessEvent, Stream};

impl Proxy {
    pub(crate) fn on_child(&mut self, generation: u64, event: ProcessEvent) {
        match event {
            ProcessEvent::Line {
                stream: Stream::Stdout,
                line,
            } => self.on_child_line(generation, line),
            ProcessEvent::Line {
                stream: Stream::Stderr,
                line,
            } => {
                if generation == self.restarts.generation {
                    self.stderr_tail.push(&line);
                }
                let mut line = line;
                line.push(b'\n');
                let _ = std::io::Write::write_all(&mut std::io::stderr().lock(), &line);
            }
            ProcessEvent::LineTooLong {
                stream: Stream::Stdout,
                len,
                head,
                tail,
                ..
            } => self.on_child_oversized(generation, len, &head, &tail),
            ProcessEvent::LineTooLong {
                stream: Stream::Stderr,
                limit,
                len,
                head,
                ..
            } => {
                let mut line = head;
                line.extend_from_slice(
                    format!("… ({len} bytes, over the {limit}-byte limit)").as_bytes(),
                );
                if generation == self.restarts.generation {
                    self.stderr_tail.push(&line);
                }
                line.push(b'\n');
                let _ = std::io::Write::write_all(&mut std::io::stderr().lock(), &line);
            }
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

    /// A message from the child over the size limit was dropped: answer it, so that
    /// nothing waits for it. An id the proxy gave a request makes it that request's
    /// answer (the client gets an error under its own id); any other id makes it a
    /// request of the child's (the child gets the error).
    fn on_child_oversized(&mut self, generation: u64, len: usize, head: &[u8], tail: &[u8]) {
        let limit = self.opts.limits.max_line_length;
        let current = self.slot.as_ref().is_some_and(|slot| {
            slot.unit.generation() == generation && !matches!(slot.phase, Phase::Stopping(_))
        });
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
                    "the request is {len} bytes, over the {limit}-byte message limit of the MCP supervisor (mcp.max_line_bytes); it was not sent to the client"
                ),
            ));
        };
        say(&format!(
            "the server's (generation {generation}) answer is {len} bytes, over the {limit}-byte limit (mcp.max_line_bytes): the client gets an error instead"
        ));
        match entry.origin {
            Origin::Client(request) if !request.cancelled => self.reply_error(
                Some(&request.raw_id),
                message::INTERNAL_ERROR,
                &format!(
                    "the MCP server's answer is {len} bytes, over the {limit}-byte message limit of the supervisor (mcp.max_line_bytes); it was dropped"
                ),
            ),
            Origin::Client(_) | Origin::Replay => {}
            Origin::ReplayedInitialize => self.begin_stop(super::proxy::StopWhy::ReadinessTimeout),
        }
        self.check_drained();
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
            .routing
            .server_requests
            .iter()
            .find(|(_, r)| r.generation == generation && r.id == child_id)
            .map(|(id, _)| *id)
        else {
            return;
        };
        self.routing.server_requests.remove(&server_id);
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
        let Some(entry) = self.routing.inflight.take(proxy_id, generation) else {
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
        self.tools.listing.extend(names);
        let last_page = result.get("nextCursor").is_none_or(Value::is_null);
        if last_page {
            self.tools.child_tools = Some(std::mem::take(&mut self.tools.listing));
        }
        if !self.opts.inject_tools {
            return bytes.to_vec();
        }
        let child_names = self.tools.child_tools.clone().unwrap_or_default();
        if !tools::append(result, &child_names) {
            return bytes.to_vec();
        }
        serde_json::to_vec(&value).unwrap_or_else(|_| bytes.to_vec())
    }

    /// Answer a request lost with its child: retry it on the next child if it has no
    /// side effects, otherwise an error saying it was not retried.
    pub(crate) fn fail_inflight(&mut self, generation: u64, why: &str) {
        let mut retry = Vec::new();
        for (proxy_id, entry) in self.routing.inflight.take_generation(generation) {
            let Origin::Client(request) = entry.origin else {
                continue;
            };
            if request.cancelled {
                continue;
            }
            if let Some((message, deadline)) = request.retry {
                tracing::debug!(proxy_id, method = %request.method, "retrying on the next server");
                retry.push(Held { message, deadline });
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
            self.routing.buffer.push_front_all(retry);
        }
        // The child's own requests to the client can no longer be answered: tell the
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
