//! The HTTP headers a 2026-07-28 request carries beside its body (the revision's
//! streamable HTTP transport, "Per-request headers"): `MCP-Protocol-Version` from the
//! request's `_meta`, `Mcp-Method`, `Mcp-Name` for the methods that name a tool, prompt
//! or resource, and one `Mcp-Param-<token>` for each argument a tool's input schema
//! marks with `x-mcp-header`. Servers check each against the body, so the values are
//! the body's own, base64-wrapped (`=?base64?…?=`) when they would not survive as a
//! header.
//!
//! Pure: the tools' input schemas come from the `tools/list` answers the bridge relays.

use std::collections::HashMap;

use base64::Engine as _;
use reqwest::header::{HeaderName, HeaderValue};
use serde_json::Value;

use super::client::{Headers, PROTOCOL_HEADER};
use crate::mcp::front::stateless::PROTOCOL_VERSION_KEY;

/// The methods whose `params` name a tool, prompt or resource, and the key naming it.
const NAME_BEARING: [(&str, &str); 3] = [
    ("tools/call", "name"),
    ("prompts/get", "name"),
    ("resources/read", "uri"),
];

/// The `Mcp-Param-*` headers each tool declares: argument path → header token.
#[derive(Debug, Default, Clone)]
pub(crate) struct ParamHeaders {
    tools: HashMap<String, Vec<(Vec<String>, String)>>,
}

impl ParamHeaders {
    /// Learn the declarations of the tools in a `tools/list` answer (raw JSON), if it is
    /// one.
    pub(crate) fn learn(&mut self, line: &[u8]) {
        const NEEDLE: &[u8] = b"inputSchema";
        if !line.windows(NEEDLE.len()).any(|w| w == NEEDLE) {
            return;
        }
        let Ok(value) = serde_json::from_slice::<Value>(line) else {
            return;
        };
        let Some(tools) = value
            .get("result")
            .and_then(|r| r.get("tools"))
            .and_then(Value::as_array)
        else {
            return;
        };
        for tool in tools {
            let Some(name) = tool.get("name").and_then(Value::as_str) else {
                continue;
            };
            let declared = tool
                .get("inputSchema")
                .map(declarations)
                .unwrap_or_default();
            if declared.is_empty() {
                self.tools.remove(name);
            } else {
                self.tools.insert(name.to_owned(), declared);
            }
        }
    }

    fn for_call(&self, params: &Value) -> Vec<(String, String)> {
        let Some(declared) = params
            .get("name")
            .and_then(Value::as_str)
            .and_then(|name| self.tools.get(name))
        else {
            return Vec::new();
        };
        let arguments = params.get("arguments");
        declared
            .iter()
            .filter_map(|(path, token)| {
                let mut value = arguments?;
                for key in path {
                    value = value.get(key)?;
                }
                let rendered = match value {
                    Value::Bool(b) => b.to_string(),
                    Value::String(s) => s.clone(),
                    Value::Number(n) => n.to_string(),
                    _ => return None,
                };
                Some((
                    format!("mcp-param-{}", token.to_ascii_lowercase()),
                    rendered,
                ))
            })
            .collect()
    }
}

/// The headers of a request in the 2026-07-28 revision, or `None` when `message` does
/// not carry its protocol version in `_meta` (a legacy request, sent in the session).
pub(crate) fn stateless(message: &Value, params: &ParamHeaders) -> Option<Headers> {
    let method = message.get("method")?.as_str()?;
    let request_params = message.get("params");
    let version = request_params?
        .get("_meta")?
        .get(PROTOCOL_VERSION_KEY)?
        .as_str()?;
    let mut pairs = vec![
        (PROTOCOL_HEADER.to_owned(), version.to_owned()),
        ("mcp-method".to_owned(), method.to_owned()),
    ];
    if let Some((_, key)) = NAME_BEARING.iter().find(|(m, _)| *m == method)
        && let Some(name) = request_params
            .and_then(|p| p.get(*key))
            .and_then(Value::as_str)
    {
        pairs.push(("mcp-name".to_owned(), name.to_owned()));
    }
    if method == "tools/call"
        && let Some(request_params) = request_params
    {
        pairs.extend(params.for_call(request_params));
    }
    Some(
        pairs
            .into_iter()
            .filter_map(|(name, value)| {
                let name = HeaderName::from_bytes(name.as_bytes()).ok()?;
                let value = HeaderValue::from_str(&encode(&value)).ok()?;
                Some((name, value))
            })
            .collect(),
    )
}

/// The property paths under `properties` chains that carry an `x-mcp-header` token.
fn declarations(schema: &Value) -> Vec<(Vec<String>, String)> {
    let mut out = Vec::new();
    let mut stack: Vec<(Vec<String>, &Value)> = vec![(Vec::new(), schema)];
    while let Some((path, node)) = stack.pop() {
        if let (false, Some(token)) = (
            path.is_empty(),
            node.get("x-mcp-header").and_then(Value::as_str),
        ) {
            out.push((path.clone(), token.to_owned()));
        }
        if let Some(properties) = node.get("properties").and_then(Value::as_object) {
            for (key, child) in properties {
                let mut child_path = path.clone();
                child_path.push(key.clone());
                stack.push((child_path, child));
            }
        }
    }
    out
}

/// A header value as the revision writes it: as it is when it is plain printable ASCII
/// without edge whitespace, else `=?base64?<the UTF-8 bytes>?=`.
fn encode(value: &str) -> String {
    let plain = value.bytes().all(|b| (0x20..=0x7e).contains(&b))
        && value.trim() == value
        && !(value.starts_with("=?base64?") && value.ends_with("?="));
    if plain {
        value.to_owned()
    } else {
        format!(
            "=?base64?{}?=",
            base64::engine::general_purpose::STANDARD.encode(value.as_bytes())
        )
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn header<'a>(headers: &'a Headers, name: &str) -> Option<&'a str> {
        headers
            .iter()
            .find(|(n, _)| n.as_str() == name)
            .and_then(|(_, v)| v.to_str().ok())
    }

    #[test]
    fn a_stateless_request_names_its_version_method_and_target() {
        let message = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "echo", "arguments": {"text": "héllo"},
            "_meta": {PROTOCOL_VERSION_KEY: "2026-07-28"}}});
        let headers = stateless(&message, &ParamHeaders::default()).expect("stateless");
        assert_eq!(header(&headers, "mcp-protocol-version"), Some("2026-07-28"));
        assert_eq!(header(&headers, "mcp-method"), Some("tools/call"));
        assert_eq!(header(&headers, "mcp-name"), Some("echo"));
        let legacy = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}});
        assert!(stateless(&legacy, &ParamHeaders::default()).is_none());
    }

    #[test]
    fn declared_arguments_become_param_headers() {
        let mut params = ParamHeaders::default();
        let list = json!({"jsonrpc": "2.0", "id": 2, "result": {"tools": [{"name": "route",
            "inputSchema": {"type": "object", "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"},
                "opts": {"type": "object", "properties": {"fast": {"type": "boolean", "x-mcp-header": "Fast"}}},
                "count": {"type": "integer", "x-mcp-header": "Count"}}}}]}});
        params.learn(list.to_string().as_bytes());
        let call = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
            "name": "route", "arguments": {"region": " eu west", "opts": {"fast": true}, "count": 4},
            "_meta": {PROTOCOL_VERSION_KEY: "2026-07-28"}}});
        let headers = stateless(&call, &params).expect("stateless");
        assert_eq!(header(&headers, "mcp-param-fast"), Some("true"));
        assert_eq!(header(&headers, "mcp-param-count"), Some("4"));
        assert_eq!(
            header(&headers, "mcp-param-region"),
            Some("=?base64?IGV1IHdlc3Q=?=")
        );
    }
}
