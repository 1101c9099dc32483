//! The MCP handshake and session state, remembered so that a new child can be brought to
//! the point the client believes the server is at. Pure: no I/O, no clock.
//!
//! A restarted server expects `initialize` again, but the client sent it once, to the first
//! child. So the proxy keeps the client's `initialize` and `notifications/initialized`, and
//! the session state the client set since (`logging/setLevel`, `resources/subscribe` minus
//! `resources/unsubscribe`), and replays them to every new child (issue 6, "Proxy").
//!
//! The first child's `initialize` result is the one the client sees; it is rewritten to
//! declare `listChanged` so that restarts can be announced, and kept as the baseline that
//! later children's results are compared with (protocol version and capabilities drift).
//!
//! This module owns what to send and what changed; the proxy owns ids, timing and pipes.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use crate::mcp::jsonrpc::message;

/// What the proxy remembers of the client's session.
#[derive(Debug, Default)]
pub(crate) struct Handshake {
    /// `params` of the client's latest `initialize` request.
    initialize: Option<Value>,
    /// Whether the client sent `notifications/initialized`.
    initialized: bool,
    /// The first child's protocol version and capabilities, before any rewriting.
    baseline: Option<Baseline>,
    /// What the client was told the server can do (after rewriting).
    announced: Announced,
    /// `params` of the client's latest `logging/setLevel`.
    log_level: Option<Value>,
    /// Resource URIs the client subscribed to and did not unsubscribe from.
    subscriptions: BTreeSet<String>,
}

#[derive(Debug, Clone, PartialEq)]
struct Baseline {
    protocol_version: Value,
    capabilities: Value,
}

/// Which change notifications the client can be sent, from the result it saw.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Announced {
    tools: bool,
    prompts: bool,
    resources: bool,
    logging: bool,
}

/// A difference between a new child's `initialize` result and the first child's.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Drift {
    /// Which part changed: `protocolVersion` or `capabilities`.
    pub(crate) field: &'static str,
    /// What the first child said.
    pub(crate) before: Value,
    /// What the new child says.
    pub(crate) after: Value,
}

/// MCP log levels, least severe first (RFC 5424 order, as the MCP spec lists them).
const LOG_LEVELS: [&str; 8] = [
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
];

impl Handshake {
    /// Note a request from the client that is part of the session state.
    pub(crate) fn observe_request(&mut self, method: &str, params: Option<&Value>) {
        match method {
            "initialize" => {
                self.initialize = Some(params.cloned().unwrap_or_else(|| json!({})));
            }
            "logging/setLevel" => self.log_level = params.cloned(),
            "resources/subscribe" => {
                if let Some(uri) = uri_of(params) {
                    self.subscriptions.insert(uri);
                }
            }
            "resources/unsubscribe" => {
                if let Some(uri) = uri_of(params) {
                    self.subscriptions.remove(&uri);
                }
            }
            _ => {}
        }
    }

    /// Note a notification from the client; returns whether it is `initialized`.
    pub(crate) fn observe_notification(&mut self, method: &str) -> bool {
        let is_initialized = method == "notifications/initialized";
        if is_initialized {
            self.initialized = true;
        }
        is_initialized
    }

    /// Whether the session state includes a method the proxy records.
    pub(crate) fn is_session_method(method: &str) -> bool {
        matches!(
            method,
            "initialize" | "logging/setLevel" | "resources/subscribe" | "resources/unsubscribe"
        )
    }

    /// Whether the client has sent `initialize`, so a new child can be handshaken.
    #[cfg(test)]
    pub(crate) fn has_initialize(&self) -> bool {
        self.initialize.is_some()
    }

    /// The client's `initialize` was refused: there is none to replay.
    pub(crate) fn forget_initialize(&mut self) {
        if self.baseline.is_none() {
            self.initialize = None;
        }
    }

    /// Whether the client sent `notifications/initialized`.
    pub(crate) fn client_initialized(&self) -> bool {
        self.initialized
    }

    /// Whether the first child has answered `initialize` (the client saw a result).
    pub(crate) fn has_baseline(&self) -> bool {
        self.baseline.is_some()
    }

    /// The `initialize` request to send a new child under the proxy's id `id`.
    pub(crate) fn initialize_request(&self, id: u64) -> Option<Vec<u8>> {
        self.initialize
            .as_ref()
            .map(|params| message::request(id, "initialize", Some(params)))
    }

    /// What to send a new child once it answered `initialize`, in order:
    /// `notifications/initialized` (if the client sent it), then the session state. Each
    /// request takes an id from `next_id`; notifications come with `None`.
    pub(crate) fn replay(&self, mut next_id: impl FnMut() -> u64) -> Vec<(Option<u64>, Vec<u8>)> {
        let mut out = Vec::new();
        if self.initialized {
            out.push((
                None,
                message::notification("notifications/initialized", None),
            ));
        }
        if let Some(level) = &self.log_level {
            let id = next_id();
            out.push((
                Some(id),
                message::request(id, "logging/setLevel", Some(level)),
            ));
        }
        for uri in &self.subscriptions {
            let id = next_id();
            out.push((
                Some(id),
                message::request(id, "resources/subscribe", Some(&json!({ "uri": uri }))),
            ));
        }
        out
    }

    /// Take the first child's `initialize` result: remember it as the baseline and rewrite
    /// it for the client so it declares `listChanged` (for tools always when `inject_tools`,
    /// otherwise where the child has the capability).
    pub(crate) fn first_result(&mut self, result: &mut Value, inject_tools: bool) {
        self.baseline = Some(Baseline {
            protocol_version: result
                .get("protocolVersion")
                .cloned()
                .unwrap_or(Value::Null),
            capabilities: result.get("capabilities").cloned().unwrap_or(Value::Null),
        });
        self.announced = rewrite(result, inject_tools);
    }

    /// Rewrite an `initialize` result the way the first one was, for a client asking
    /// again while no server can answer.
    pub(crate) fn rewrite(&self, result: &mut Value, inject_tools: bool) {
        rewrite(result, inject_tools);
    }

    /// Compare a new child's `initialize` result with the first child's.
    pub(crate) fn drift(&self, result: &Value) -> Vec<Drift> {
        let Some(baseline) = &self.baseline else {
            return Vec::new();
        };
        let mut out = Vec::new();
        let version = result
            .get("protocolVersion")
            .cloned()
            .unwrap_or(Value::Null);
        if version != baseline.protocol_version {
            out.push(Drift {
                field: "protocolVersion",
                before: baseline.protocol_version.clone(),
                after: version,
            });
        }
        let capabilities = result.get("capabilities").cloned().unwrap_or(Value::Null);
        if capabilities != baseline.capabilities {
            out.push(Drift {
                field: "capabilities",
                before: baseline.capabilities.clone(),
                after: capabilities,
            });
        }
        out
    }

    /// The notifications that tell the client a restart happened: `list_changed` for each
    /// list the client was told can change, and a log message at `info` if the server
    /// declared logging and the client's level lets `info` through.
    #[cfg(test)]
    pub(crate) fn restart_notifications(&self, text: &str) -> Vec<Vec<u8>> {
        let mut out = self.list_changed_notifications();
        out.extend(self.restart_log(text));
        out
    }

    /// `list_changed` for each list the client was told can change.
    pub(crate) fn list_changed_notifications(&self) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        for (flag, method) in [
            (self.announced.tools, "notifications/tools/list_changed"),
            (self.announced.prompts, "notifications/prompts/list_changed"),
            (
                self.announced.resources,
                "notifications/resources/list_changed",
            ),
        ] {
            if flag {
                out.push(message::notification(method, None));
            }
        }
        out
    }

    /// A log message at `info` saying the server restarted, if the server declared
    /// logging and the client's level lets `info` through.
    pub(crate) fn restart_log(&self, text: &str) -> Option<Vec<u8>> {
        (self.announced.logging && self.accepts_log("info")).then(|| {
            message::notification(
                "notifications/message",
                Some(&json!({
                    "level": "info",
                    "logger": "debussy-supervisor",
                    "data": text,
                })),
            )
        })
    }

    fn accepts_log(&self, level: &str) -> bool {
        let threshold = self
            .log_level
            .as_ref()
            .and_then(|params| params.get("level"))
            .and_then(Value::as_str)
            .and_then(|name| LOG_LEVELS.iter().position(|l| *l == name))
            .unwrap_or(0);
        LOG_LEVELS
            .iter()
            .position(|l| *l == level)
            .is_some_and(|rank| rank >= threshold)
    }
}

/// Make an `initialize` result declare `listChanged` (for tools always when
/// `inject_tools`, otherwise where the server has the capability); what the client can
/// then be told.
fn rewrite(result: &mut Value, inject_tools: bool) -> Announced {
    let Some(object) = result.as_object_mut() else {
        return Announced::default();
    };
    let capabilities = object.entry("capabilities").or_insert_with(|| json!({}));
    if !capabilities.is_object() {
        *capabilities = json!({});
    }
    let Some(capabilities) = capabilities.as_object_mut() else {
        return Announced::default();
    };
    let mut announced = Announced {
        logging: capabilities.contains_key("logging"),
        ..Announced::default()
    };
    if inject_tools && !capabilities.contains_key("tools") {
        capabilities.insert("tools".to_owned(), json!({}));
    }
    for (name, flag) in [
        ("tools", &mut announced.tools),
        ("prompts", &mut announced.prompts),
        ("resources", &mut announced.resources),
    ] {
        if let Some(capability) = capabilities.get_mut(name) {
            if !capability.is_object() {
                *capability = json!({});
            }
            if let Some(capability) = capability.as_object_mut() {
                capability.insert("listChanged".to_owned(), Value::Bool(true));
                *flag = true;
            }
        }
    }
    announced
}

fn uri_of(params: Option<&Value>) -> Option<String> {
    params?.get("uri")?.as_str().map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(bytes: &[u8]) -> Value {
        serde_json::from_slice(bytes).expect("json")
    }

    fn init_params() -> Value {
        json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}})
    }

    #[test]
    fn nothing_to_replay_before_initialize() {
        let h = Handshake::default();
        assert!(!h.has_initialize());
        assert!(h.initialize_request(1).is_none());
        assert!(h.replay(|| 1).is_empty());
    }

    #[test]
    fn initialize_is_replayed_under_the_proxy_id_with_the_clients_params() {
        let mut h = Handshake::default();
        h.observe_request("initialize", Some(&init_params()));
        let sent = parse(&h.initialize_request(900).expect("request"));
        assert_eq!(sent["id"], 900);
        assert_eq!(sent["method"], "initialize");
        assert_eq!(sent["params"], init_params());
    }

    #[test]
    fn session_state_is_replayed_in_order_after_initialized() {
        let mut h = Handshake::default();
        h.observe_request("initialize", Some(&init_params()));
        assert!(!h.observe_notification("notifications/progress"));
        assert!(h.observe_notification("notifications/initialized"));
        h.observe_request("logging/setLevel", Some(&json!({"level": "debug"})));
        h.observe_request("logging/setLevel", Some(&json!({"level": "warning"})));
        h.observe_request("resources/subscribe", Some(&json!({"uri": "file:///b"})));
        h.observe_request("resources/subscribe", Some(&json!({"uri": "file:///a"})));
        h.observe_request("resources/subscribe", Some(&json!({"uri": "file:///c"})));
        h.observe_request("resources/unsubscribe", Some(&json!({"uri": "file:///c"})));
        let mut next = 10;
        let replay = h.replay(|| {
            next += 1;
            next
        });
        let methods: Vec<_> = replay
            .iter()
            .map(|(id, bytes)| (*id, parse(bytes)["method"].as_str().map(str::to_owned)))
            .collect();
        assert_eq!(
            methods,
            vec![
                (None, Some("notifications/initialized".to_owned())),
                (Some(11), Some("logging/setLevel".to_owned())),
                (Some(12), Some("resources/subscribe".to_owned())),
                (Some(13), Some("resources/subscribe".to_owned())),
            ]
        );
        assert_eq!(parse(&replay[1].1)["params"]["level"], "warning");
        assert_eq!(parse(&replay[2].1)["params"]["uri"], "file:///a");
        assert_eq!(parse(&replay[3].1)["params"]["uri"], "file:///b");
    }

    #[test]
    fn first_result_declares_list_changed() {
        let mut h = Handshake::default();
        let mut result = json!({
            "protocolVersion": "2025-06-18",
            "capabilities": {"tools": {}, "prompts": {"listChanged": false}, "logging": {}},
            "serverInfo": {"name": "s", "version": "1"}
        });
        h.first_result(&mut result, true);
        assert_eq!(result["capabilities"]["tools"]["listChanged"], true);
        assert_eq!(result["capabilities"]["prompts"]["listChanged"], true);
        assert!(result["capabilities"].get("resources").is_none());
        assert_eq!(result["serverInfo"]["name"], "s");
        let notes: Vec<_> = h
            .restart_notifications("restarted")
            .iter()
            .map(|b| parse(b)["method"].as_str().map(str::to_owned))
            .collect();
        assert_eq!(
            notes,
            vec![
                Some("notifications/tools/list_changed".to_owned()),
                Some("notifications/prompts/list_changed".to_owned()),
                Some("notifications/message".to_owned()),
            ]
        );
    }

    #[test]
    fn tools_capability_is_added_only_when_tools_are_injected() {
        let mut h = Handshake::default();
        let mut result = json!({"protocolVersion": "x", "capabilities": {"resources": {}}});
        h.first_result(&mut result, false);
        assert!(result["capabilities"].get("tools").is_none());
        assert_eq!(result["capabilities"]["resources"]["listChanged"], true);
        let mut h = Handshake::default();
        let mut result = json!({"protocolVersion": "x"});
        h.first_result(&mut result, true);
        assert_eq!(result["capabilities"]["tools"]["listChanged"], true);
    }

    #[test]
    fn log_message_respects_the_clients_level() {
        let mut h = Handshake::default();
        let mut result = json!({"capabilities": {"logging": {}}});
        h.first_result(&mut result, false);
        assert_eq!(h.restart_notifications("r").len(), 1);
        h.observe_request("logging/setLevel", Some(&json!({"level": "error"})));
        assert!(h.restart_notifications("r").is_empty());
        h.observe_request("logging/setLevel", Some(&json!({"level": "info"})));
        let message = parse(&h.restart_notifications("why")[0]);
        assert_eq!(message["params"]["level"], "info");
        assert_eq!(message["params"]["data"], "why");
    }

    #[test]
    fn drift_compares_with_the_first_child_before_rewriting() {
        let mut h = Handshake::default();
        let first = json!({"protocolVersion": "2025-06-18", "capabilities": {"tools": {}}});
        let mut seen = first.clone();
        h.first_result(&mut seen, true);
        assert!(h.drift(&first).is_empty());
        let changed =
            json!({"protocolVersion": "2025-03-26", "capabilities": {"tools": {}, "prompts": {}}});
        let drift = h.drift(&changed);
        assert_eq!(drift.len(), 2);
        assert_eq!(drift[0].field, "protocolVersion");
        assert_eq!(drift[0].before, "2025-06-18");
        assert_eq!(drift[1].field, "capabilities");
    }
}
