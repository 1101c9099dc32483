//! The 2026-07-28 revision through the front: `server/discover` forwarded, kept and
//! served while the server restarts; the readiness probe of a new server; and the
//! client's `subscriptions/listen` streams, which outlive every server: opened again on
//! each new one with the same filter, their frames carrying the client's own id, the
//! new server's acknowledgement and the old one's graceful end kept from the client.
//! Part of the front (methods of [`Front`]).

use serde_json::{Value, json};

use super::inflight::{Entry, Origin};
use super::learned::Discovery;
use super::state::{Front, Idle, Phase};
use super::stateless::{self, Listen};
use crate::mcp::backend::{Backend, StopWhy};
use crate::mcp::jsonrpc::message::{self, Cancelled, Message, RequestId};
use crate::mcp::say;

impl<B: Backend> Front<B> {
    /// A `subscriptions/listen` from the client: kept for the client's whole life, open
    /// on the current server when there is one.
    pub(crate) fn on_listen(&mut self, message: &Message, id: RequestId) {
        let raw_id = message.raw_id().unwrap_or(b"null").to_vec();
        if let Idle::Degraded(reason) = &self.idle {
            let text = format!(
                "the MCP server is down (degraded: {reason}); call the restart_server tool to try again"
            );
            return self.reply_error(Some(&raw_id), message::INTERNAL_ERROR, &text);
        }
        if self.shutdown.is_some() {
            let text = format!("the MCP {} is shutting down", self.opts.role);
            return self.reply_error(Some(&raw_id), message::INTERNAL_ERROR, &text);
        }
        self.stateless.remove(&id);
        self.stateless.listens.push(Listen {
            id,
            raw_id,
            params: message.params().unwrap_or_else(|| json!({})),
            open: None,
            acknowledged: false,
        });
        if self.can_forward() {
            self.open_listens();
        }
    }

    /// Open every listen not open on the current server.
    pub(crate) fn open_listens(&mut self) {
        let Some(generation) = self.slot.as_ref().map(|s| s.generation) else {
            return;
        };
        for at in 0..self.stateless.listens.len() {
            if self.stateless.listens[at].open.is_some() {
                continue;
            }
            let proxy_id = self.routing.proxy_id();
            let listen = &mut self.stateless.listens[at];
            listen.open = Some((proxy_id, generation));
            let bytes = message::request(proxy_id, "subscriptions/listen", Some(&listen.params));
            self.routing.inflight.insert(
                proxy_id,
                Entry {
                    generation,
                    origin: Origin::Listen(listen.id.clone()),
                },
            );
            self.backend.send(generation, bytes);
        }
    }

    /// Before a server is stopped, end the listens open on it, as the client would: a
    /// server holding a stream open may not exit when its input closes.
    pub(crate) fn close_listens(&mut self, generation: u64) {
        let open: Vec<u64> = self
            .stateless
            .listens
            .iter()
            .filter_map(|l| l.open.filter(|(_, g)| *g == generation).map(|(id, _)| id))
            .collect();
        for proxy_id in open {
            if !self.backend.cancel(generation, proxy_id) {
                self.backend.send(
                    generation,
                    message::notification(
                        "notifications/cancelled",
                        Some(&json!({"requestId": proxy_id, "reason": "the server is being stopped"})),
                    ),
                );
            }
        }
    }

    /// The server answered a listen: it ended the stream (gracefully, or refusing it).
    /// The client's subscription is over.
    pub(crate) fn on_listen_end(&mut self, client_id: &RequestId, message: &Message) {
        let Some(listen) = self.stateless.remove(client_id) else {
            return;
        };
        let Some(value) = message.to_value() else {
            return;
        };
        self.send_client(stateless::restamp(value, &listen.id));
    }

    /// A generation ended with the listen open on it: it is opened on the next one.
    pub(crate) fn listen_lost(&mut self, client_id: &RequestId) {
        if let Some(listen) = self
            .stateless
            .listens
            .iter_mut()
            .find(|l| &l.id == client_id)
        {
            listen.open = None;
        }
    }

    /// The client closed a listen. Returns whether `id` was one.
    pub(crate) fn cancel_listen(&mut self, id: &RequestId, cancelled: &Cancelled) -> bool {
        let Some(listen) = self.stateless.remove(id) else {
            return false;
        };
        let Some((proxy_id, generation)) = listen.open else {
            return true;
        };
        self.routing.inflight.take(proxy_id, generation);
        if self.is_current(generation) && !self.backend.cancel(generation, proxy_id) {
            self.backend
                .send(generation, cancelled.naming(json!(proxy_id)));
        }
        true
    }

    /// A notification the server stamped with a subscription id: passed on under the
    /// client's listen id; a second acknowledgement of the same stream (a listen opened
    /// again on a new server) is not. Returns whether it was one.
    pub(crate) fn on_stamped(&mut self, method: &str, message: &Message) -> bool {
        let key = stateless::SUBSCRIPTION_ID_KEY.as_bytes();
        if memchr::memmem::find(message.bytes(), key).is_none() {
            return false;
        }
        let Some(value) = message.to_value() else {
            return false;
        };
        let Some(proxy_id) = stateless::stamped_id(&value) else {
            return false;
        };
        let Some(listen) = self.stateless.by_proxy_id(proxy_id) else {
            tracing::debug!(
                proxy_id,
                method,
                "a frame of a listen that is closed; dropped"
            );
            return true;
        };
        if method == "notifications/subscriptions/acknowledged" {
            if listen.acknowledged {
                return true;
            }
            listen.acknowledged = true;
        }
        let id = listen.id.clone();
        self.send_client(stateless::restamp(value, &id));
        true
    }

    /// The server cancelled a listen (its way of ending the stream): the client hears it
    /// under its own id. Returns whether `server_id` was one.
    pub(crate) fn on_listen_cancelled(&mut self, server_id: u64, cancelled: &Cancelled) -> bool {
        let Some(client_id) = self.stateless.by_proxy_id(server_id).map(|l| l.id.clone()) else {
            return false;
        };
        self.stateless.remove(&client_id);
        self.send_client(cancelled.naming(client_id.to_value()));
        true
    }

    /// Whether the client speaks 2026-07-28 (and did not fall back to `initialize`).
    pub(crate) fn stateless_client(&self) -> bool {
        self.stateless.is_known() && !self.handshake.has_baseline()
    }

    /// Ask a new server `server/discover` in the client's envelope: its answer makes it
    /// ready (a stateless server has no handshake and no `ping`).
    pub(crate) fn probe(&mut self, generation: u64) {
        let id = self.routing.proxy_id();
        let params = self.stateless.stamp(json!({}));
        self.routing.inflight.insert(
            id,
            Entry {
                generation,
                origin: Origin::Probe,
            },
        );
        self.backend.send(
            generation,
            message::request(id, "server/discover", Some(&params)),
        );
    }

    /// The answer to the readiness probe.
    pub(crate) fn on_probe_answer(&mut self, message: &Message, is_error: bool) {
        let value = message.to_value().unwrap_or(Value::Null);
        let number = self.slot.as_ref().map_or(0, super::state::Slot::number);
        if is_error {
            say(&format!(
                "the server (generation {number}) does not answer server/discover, so it cannot serve this client's protocol revision (2026-07-28): {}",
                value["error"]
            ));
            return self.begin_stop(StopWhy::ReadinessTimeout);
        }
        let result = value.get("result").cloned().unwrap_or(Value::Null);
        if let Some(Discovery::Answered(before)) = self.learned.discover.clone() {
            for field in ["supportedVersions", "capabilities"] {
                if before.get(field) != result.get(field) {
                    say(&format!(
                        "the server (generation {number}) changed its {field} since it was last discovered"
                    ));
                    self.record(
                        super::audit::AuditEvent::CapabilityDrift,
                        json!({"field": field, "before": before.get(field), "after": result.get(field)}),
                    );
                }
            }
        }
        self.learned.discover = Some(Discovery::Answered(result));
        self.save_learned();
        self.mark_ready();
    }

    /// Keep the answer to the client's `server/discover` (the result, or the refusal a
    /// server that does not speak 2026-07-28 gives), and declare `listChanged` in it as
    /// the first `initialize` is rewritten.
    pub(crate) fn discovered(&mut self, bytes: Vec<u8>) -> Vec<u8> {
        let Ok(mut value) = serde_json::from_slice::<Value>(&bytes) else {
            return bytes;
        };
        if let Some(error) = value.get("error") {
            self.learned.discover = Some(Discovery::Refused(error.clone()));
            self.save_learned();
            return bytes;
        }
        let Some(result) = value.get_mut("result") else {
            return bytes;
        };
        self.learned.discover = Some(Discovery::Answered(result.clone()));
        self.save_learned();
        self.handshake.rewrite(result, self.opts.inject_tools);
        serde_json::to_vec(&value).unwrap_or(bytes)
    }

    /// `server/discover` while no server can answer it: what the last one answered.
    /// Returns whether it was answered.
    pub(crate) fn discover_from_memory(&mut self, raw: &[u8]) -> bool {
        match self.learned.discover.clone() {
            Some(Discovery::Answered(mut result)) => {
                self.handshake.rewrite(&mut result, self.opts.inject_tools);
                self.reply_result(raw, &result);
                true
            }
            Some(Discovery::Refused(error)) => {
                self.send_client(message::error_value_response(raw, &error));
                true
            }
            None => false,
        }
    }

    /// After a restart, each list that differs goes to every open listen that asked for
    /// its kind; whether any listen heard it.
    pub(crate) fn notify_listens(&mut self, kind: &str) -> bool {
        let mut told = false;
        for listen in &self.stateless.listens {
            if listen.acknowledged && listen.wants(kind) {
                self.to_client
                    .send(stateless::list_changed_on(listen, kind));
                told = true;
            }
        }
        told
    }

    /// Whether a new server of this generation should be probed rather than handshaken.
    pub(crate) fn wants_probe(&self) -> bool {
        // As the handshake is replayed only once a server answered it: the client's own
        // `server/discover` meets the first server.
        self.stateless_client()
            && matches!(self.learned.discover, Some(Discovery::Answered(_)))
            && self
                .slot
                .as_ref()
                .is_some_and(|slot| matches!(slot.phase, Phase::Starting))
    }
}
