//! Forwarding: the client's messages to the daemon (one POST task each, the answer
//! straight to the client), what comes back when a POST fails, and the daemon's own
//! requests and notifications on their way to the client.

use std::time::Instant;

use serde_json::{Value, json};

use super::dispatch::{Bridge, Event, Link, raw_text};
use super::http::{PostError, Session};
use crate::mcp::message::{self, Message};
use crate::mcp::{AuditEvent, say};

impl Bridge {
    pub(super) fn on_forwarded(
        &mut self,
        epoch: u64,
        message: Message,
        outcome: Result<(), PostError>,
    ) {
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

    pub(super) fn on_daemon_message(&mut self, epoch: u64, message: Value) {
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

    pub(super) fn on_relearned(
        &mut self,
        epoch: u64,
        method: &str,
        items: Result<Vec<Value>, String>,
    ) {
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
    pub(super) fn flush_waiting(&mut self) {
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
pub(super) fn list_changed(method: &str) -> String {
    format!(
        "notifications/{}/list_changed",
        method.trim_end_matches("/list")
    )
}
