//! The MCP 2026-07-28 revision as the front keeps it: the client's per-request envelope
//! (the front's own requests carry the same), and the client's open
//! `subscriptions/listen` streams, each known by the client's own id whatever id the
//! current server was sent.
//!
//! Pure data and message rewriting, no I/O: which era a request belongs to, the
//! envelope, and putting the client's listen id back into `_meta` where a server quotes
//! the id it was sent.

use std::sync::LazyLock;

use memchr::memmem;
use serde_json::{Map, Value, json};

use crate::mcp::jsonrpc::message::{Message, RequestId};

/// The `_meta` key naming a request's protocol version (2026-07-28).
pub(crate) const PROTOCOL_VERSION_KEY: &str = "io.modelcontextprotocol/protocolVersion";
/// The `_meta` key a server stamps on every frame of a listen stream.
pub(crate) const SUBSCRIPTION_ID_KEY: &str = "io.modelcontextprotocol/subscriptionId";
/// The `_meta` keys of the per-request envelope the front copies onto its own requests.
const ENVELOPE_KEYS: [&str; 3] = [
    PROTOCOL_VERSION_KEY,
    "io.modelcontextprotocol/clientInfo",
    "io.modelcontextprotocol/clientCapabilities",
];

/// Whether a client request belongs to the 2026-07-28 revision: `server/discover`, or a
/// request whose `_meta` names its protocol version (as the peers' own SDKs decide).
pub(crate) fn is_stateless(method: &str, message: &Message) -> bool {
    method == "server/discover" || carries_envelope(message.bytes())
}

/// Whether the bytes mention the envelope's version key at all (a cheap test that
/// keeps the legacy era's hot path free of parsing).
fn carries_envelope(bytes: &[u8]) -> bool {
    static KEY: LazyLock<memmem::Finder<'static>> =
        LazyLock::new(|| memmem::Finder::new(PROTOCOL_VERSION_KEY));
    KEY.find(bytes).is_some()
}

/// An open listen stream of the client.
#[derive(Debug, Clone)]
pub(crate) struct Listen {
    /// The client's id, normalised.
    pub(crate) id: RequestId,
    /// The client's id exactly as it wrote it.
    pub(crate) raw_id: Vec<u8>,
    /// The request's `params`, sent again to every new server.
    pub(crate) params: Value,
    /// The front's id and generation of the request open on the current server.
    pub(crate) open: Option<(u64, u64)>,
    /// The client saw the acknowledgement: later ones are not passed on.
    pub(crate) acknowledged: bool,
}

impl Listen {
    /// Whether the client asked this stream for `notifications/{kind}/list_changed`
    /// (`kind`: `tools`, `prompts`, `resources`).
    pub(crate) fn wants(&self, kind: &str) -> bool {
        let key = format!("{kind}ListChanged");
        self.params
            .get("notifications")
            .and_then(|filter| filter.get(&key))
            .and_then(Value::as_bool)
            .unwrap_or(false)
    }
}

/// The client's 2026-07-28 state.
#[derive(Debug, Default)]
pub(crate) struct Stateless {
    /// The reserved keys of the client's latest envelope.
    envelope: Option<Map<String, Value>>,
    /// The `_meta` they were read from, as written: a request whose `_meta` is the
    /// same to the byte is not read again.
    last_meta: Vec<u8>,
    /// The client's open listen streams.
    pub(crate) listens: Vec<Listen>,
}

impl Stateless {
    /// Note the envelope of a stateless request from its `params._meta` as written
    /// (every request of the revision passes through here): a `_meta` the same to the
    /// byte as the last one is not read again.
    pub(crate) fn observe(&mut self, meta: Option<&str>) {
        let Some(raw) = meta else {
            return;
        };
        if self.envelope.is_some() && raw.as_bytes() == self.last_meta {
            return;
        }
        let Ok(meta) = serde_json::from_str::<Map<String, Value>>(raw) else {
            return;
        };
        let envelope: Map<String, Value> = ENVELOPE_KEYS
            .iter()
            .filter_map(|key| meta.get(*key).map(|v| ((*key).to_owned(), v.clone())))
            .collect();
        if envelope.contains_key(PROTOCOL_VERSION_KEY) {
            self.envelope = Some(envelope);
            self.last_meta.clear();
            self.last_meta.extend_from_slice(raw.as_bytes());
        }
    }

    /// Whether the client has spoken 2026-07-28.
    pub(crate) fn is_known(&self) -> bool {
        self.envelope.is_some()
    }

    /// `params` with the client's envelope in `_meta`, for a request of the front's own.
    pub(crate) fn stamp(&self, mut params: Value) -> Value {
        let Some(envelope) = &self.envelope else {
            return params;
        };
        if let Some(object) = params.as_object_mut() {
            let meta = object.entry("_meta").or_insert_with(|| json!({}));
            if let Some(meta) = meta.as_object_mut() {
                for (key, value) in envelope {
                    meta.insert(key.clone(), value.clone());
                }
            }
        }
        params
    }

    /// The listen whose request is open on a server under the front's id `proxy_id`.
    pub(crate) fn by_proxy_id(&mut self, proxy_id: u64) -> Option<&mut Listen> {
        self.listens
            .iter_mut()
            .find(|listen| listen.open.is_some_and(|(id, _)| id == proxy_id))
    }

    /// Forget the listen the client opened as `id`.
    pub(crate) fn remove(&mut self, id: &RequestId) -> Option<Listen> {
        let at = self.listens.iter().position(|listen| &listen.id == id)?;
        Some(self.listens.remove(at))
    }
}

/// The subscription id a server stamped on a frame, as the front's id, if it is one.
pub(crate) fn stamped_id(value: &Value) -> Option<u64> {
    let meta = value.get("params").or_else(|| value.get("result"))?;
    meta.get("_meta")?.get(SUBSCRIPTION_ID_KEY)?.as_u64()
}

/// The frame with the client's listen id in place of the front's wherever the server
/// quotes it: `_meta`'s subscription id, and the id of the final result.
pub(crate) fn restamp(mut value: Value, client_id: &RequestId) -> Vec<u8> {
    let client = client_id.to_value();
    for part in ["params", "result"] {
        if let Some(meta) = value
            .get_mut(part)
            .and_then(|p| p.get_mut("_meta"))
            .and_then(Value::as_object_mut)
            && meta.contains_key(SUBSCRIPTION_ID_KEY)
        {
            meta.insert(SUBSCRIPTION_ID_KEY.to_owned(), client.clone());
        }
    }
    if value.get("id").is_some() {
        value["id"] = client;
    }
    serde_json::to_vec(&value).unwrap_or_default()
}

/// `notifications/{kind}/list_changed` on the listen stream `listen`.
pub(crate) fn list_changed_on(listen: &Listen, kind: &str) -> Vec<u8> {
    let meta = json!({ SUBSCRIPTION_ID_KEY: listen.id.to_value() });
    crate::mcp::jsonrpc::message::notification(
        &format!("notifications/{kind}/list_changed"),
        Some(&json!({ "_meta": meta })),
    )
}

#[cfg(test)]
mod tests {
    use serde_json::value::RawValue;

    use super::*;
    use crate::mcp::jsonrpc::message::Parsed;

    fn message(text: &str) -> Message {
        match Message::parse(text.as_bytes().to_vec()) {
            Parsed::Message(m) => m,
            other => panic!("{other:?}"),
        }
    }

    fn observe(state: &mut Stateless, params: &str) {
        let request = message(&format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{params}}}"#
        ));
        state.observe(request.params_meta().map(RawValue::get));
    }

    #[test]
    fn the_era_is_read_from_the_envelope_or_the_method() {
        let modern = message(
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#,
        );
        assert!(is_stateless("tools/list", &modern));
        let legacy = message(
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"progressToken":1}}}"#,
        );
        assert!(!is_stateless("tools/list", &legacy));
        let discover = message(r#"{"jsonrpc":"2.0","id":1,"method":"server/discover"}"#);
        assert!(is_stateless("server/discover", &discover));
    }

    #[test]
    fn a_changed_envelope_replaces_the_last_and_a_bare_meta_keeps_it() {
        let mut state = Stateless::default();
        let meta = |version: &str| {
            json!({"_meta": {PROTOCOL_VERSION_KEY: version}, "name": "t"}).to_string()
        };
        observe(&mut state, &meta("2026-07-28"));
        observe(&mut state, &meta("2026-07-28"));
        assert_eq!(
            state.stamp(json!({}))["_meta"][PROTOCOL_VERSION_KEY],
            "2026-07-28"
        );
        observe(&mut state, &meta("2027-01-01"));
        assert_eq!(
            state.stamp(json!({}))["_meta"][PROTOCOL_VERSION_KEY],
            "2027-01-01"
        );
        observe(
            &mut state,
            &json!({"_meta": {"progressToken": 1}}).to_string(),
        );
        assert_eq!(
            state.stamp(json!({}))["_meta"][PROTOCOL_VERSION_KEY],
            "2027-01-01"
        );
    }

    #[test]
    fn the_envelope_is_copied_onto_the_fronts_requests() {
        let mut state = Stateless::default();
        assert_eq!(state.stamp(json!({"cursor": "2"})), json!({"cursor": "2"}));
        let params = json!({"_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"roots": {}},
            "progressToken": 7
        }, "arguments": {"text": "large"}});
        observe(&mut state, &params.to_string());
        assert!(state.is_known());
        let stamped = state.stamp(json!({}));
        assert_eq!(stamped["_meta"][PROTOCOL_VERSION_KEY], "2026-07-28");
        assert_eq!(
            stamped["_meta"]["io.modelcontextprotocol/clientCapabilities"],
            json!({"roots": {}})
        );
        assert!(stamped["_meta"].get("progressToken").is_none());
    }

    #[test]
    fn the_clients_listen_id_replaces_the_fronts_where_the_server_quotes_it() {
        let client = RequestId::from_raw("\"listen:0\"").expect("id");
        let ack = json!({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
            "params": {"_meta": {SUBSCRIPTION_ID_KEY: 12}, "notifications": {"toolsListChanged": true}}});
        assert_eq!(stamped_id(&ack), Some(12));
        let out: Value = serde_json::from_slice(&restamp(ack, &client)).expect("json");
        assert_eq!(out["params"]["_meta"][SUBSCRIPTION_ID_KEY], "listen:0");
        assert!(out.get("id").is_none());
        let end =
            json!({"jsonrpc": "2.0", "id": 12, "result": {"_meta": {SUBSCRIPTION_ID_KEY: 12}}});
        let out: Value = serde_json::from_slice(&restamp(end, &client)).expect("json");
        assert_eq!(out["id"], "listen:0");
        assert_eq!(out["result"]["_meta"][SUBSCRIPTION_ID_KEY], "listen:0");
    }

    #[test]
    fn a_listen_says_which_lists_it_asked_for() {
        let listen = Listen {
            id: RequestId::from_raw("7").expect("id"),
            raw_id: b"7".to_vec(),
            params: json!({"notifications": {"toolsListChanged": true, "promptsListChanged": false}}),
            open: None,
            acknowledged: true,
        };
        assert!(listen.wants("tools"));
        assert!(!listen.wants("prompts"));
        assert!(!listen.wants("resources"));
        let note: Value = serde_json::from_slice(&list_changed_on(&listen, "tools")).expect("json");
        assert_eq!(note["method"], "notifications/tools/list_changed");
        assert_eq!(note["params"]["_meta"][SUBSCRIPTION_ID_KEY], 7);
    }
}
