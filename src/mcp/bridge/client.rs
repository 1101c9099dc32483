//! The client's messages: `initialize`, `ping` and the lists answered by the bridge
//! itself, the injected tools intercepted before any daemon check, everything else
//! forwarded (or held until there is a session).

use serde_json::{Value, json};

use super::dispatch::{Bridge, Link};
use crate::mcp::message::{self, Kind, Message, Parsed};
use crate::mcp::say;
use crate::mcp::tools::{self, InjectedCall};

impl Bridge {
    pub(super) fn on_client_line(&mut self, line: Vec<u8>) {
        let message = match Message::parse(line) {
            Parsed::Message(message) => message,
            Parsed::NotJson(why, _) => {
                say(&format!("dropped a client line that is not JSON: {why}"));
                return;
            }
            Parsed::Invalid(why, id) => {
                self.send_client(message::error_response(
                    id.as_deref(),
                    message::INVALID_REQUEST,
                    &why,
                ));
                return;
            }
        };
        match message.kind().clone() {
            Kind::Request { method, .. } => self.on_request(message, &method),
            Kind::Notification { method } => self.on_notification(message, &method),
            Kind::Response { .. } => {
                // The client's answer to a daemon's request; the daemon that asked is
                // gone when there is no session.
                if let Link::Ready(_) = self.link {
                    self.route(message);
                }
            }
        }
    }

    /// A request, whether it just arrived or waited for a session.
    pub(super) fn on_request(&mut self, message: Message, method: &str) {
        let raw = message.raw_id().unwrap_or(b"null").to_vec();
        match method {
            "initialize" => self.on_initialize(message),
            "ping" => self.send_client(message::result_response(&raw, &json!({}))),
            "tools/list" | "prompts/list" | "resources/list" | "resources/templates/list" => {
                match self.learned.list_result(method) {
                    Some(mut result) => {
                        if method == "tools/list" && self.opts.inject_tools {
                            let names = tools::listed_names(&result);
                            tools::append(&mut result, &names);
                        }
                        self.send_client(message::result_response(&raw, &result));
                    }
                    None => self.route(message),
                }
            }
            "tools/call" if self.opts.inject_tools => self.on_tool_call(message, raw),
            _ => self.route(message),
        }
    }

    fn on_initialize(&mut self, message: Message) {
        let params = message.params();
        let requested = params
            .as_ref()
            .and_then(|p| p.get("protocolVersion"))
            .cloned();
        self.client_init = params;
        let known = self.learned.initialize.as_ref().filter(|init| {
            init.get("protocolVersion") == requested.as_ref() || matches!(self.link, Link::Ready(_))
        });
        match known {
            Some(result) => {
                let raw = message.raw_id().unwrap_or(b"null");
                self.send_client(message::result_response(raw, result));
                if matches!(self.link, Link::Down) && self.restart.is_none() {
                    self.connect("initial start");
                }
            }
            None => self.route(message),
        }
    }

    fn on_notification(&mut self, message: Message, method: &str) {
        match method {
            // The bridge sends its own to every session it opens.
            "notifications/initialized" => self.client_initialized = true,
            "notifications/cancelled" => {
                let cancelled = message
                    .params()
                    .and_then(|p| p.get("requestId").cloned())
                    .map(|id| id.to_string().into_bytes());
                if let Some(cancelled) = cancelled {
                    self.waiting
                        .retain(|(held, _)| held.raw_id() != Some(cancelled.as_slice()));
                }
                if let Link::Ready(_) = self.link {
                    self.route(message);
                }
            }
            _ => {
                if let Link::Ready(_) = self.link {
                    self.route(message);
                }
            }
        }
    }

    fn on_tool_call(&mut self, message: Message, raw: Vec<u8>) {
        let params = message.params();
        let call = match tools::parse_call(params.as_ref()) {
            Ok(call) => call.or_else(|| configure_restart(params.as_ref())),
            Err(why) => {
                self.send_client(message::result_response(&raw, &tools::tool_error(&why)));
                return;
            }
        };
        match call {
            Some(InjectedCall::Restart { reason }) => self.start_restart(Some(raw), reason, "tool"),
            Some(InjectedCall::Verify { since }) => {
                let history = self.start_history();
                let result = tools::verify_result(&history, since, jiff::Timestamp::now());
                self.send_client(message::result_response(
                    &raw,
                    &tools::tool_result(&result, false),
                ));
            }
            Some(InjectedCall::Status) => {
                let status = self.status();
                self.send_client(message::result_response(
                    &raw,
                    &tools::tool_result(&status, false),
                ));
            }
            None => self.route(message),
        }
    }
}

/// `configure` with `action: "restart"`, the convention some servers use for the same
/// thing as `restart_server`.
fn configure_restart(params: Option<&Value>) -> Option<InjectedCall> {
    let params = params?;
    if params.get("name").and_then(Value::as_str) != Some("configure") {
        return None;
    }
    let arguments = params.get("arguments")?;
    if arguments.get("action").and_then(Value::as_str) != Some("restart") {
        return None;
    }
    let reason = arguments
        .get("reason")
        .and_then(Value::as_str)
        .filter(|r| !r.trim().is_empty())
        .unwrap_or("restart requested with configure(action: restart)");
    Some(InjectedCall::Restart {
        reason: reason.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configure_restart_is_recognised() {
        let call = configure_restart(Some(
            &json!({"name": "configure", "arguments": {"action": "restart"}}),
        ));
        assert!(
            matches!(call, Some(InjectedCall::Restart { .. })),
            "{call:?}"
        );
        let other = configure_restart(Some(
            &json!({"name": "configure", "arguments": {"action": "set", "key": "x"}}),
        ));
        assert_eq!(other, None);
        assert_eq!(configure_restart(Some(&json!({"name": "echo"}))), None);
    }
}
