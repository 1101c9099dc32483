//! Messages over the size limit (`mcp.max_line_bytes`, 16 MiB by default, 4000 bytes
//! here) are answered at once with an error naming the limit, whichever side sent them,
//! and whatever the order of their fields: nothing stays in flight.

use serde_json::{Value, json};

use super::support::{Supervisor, error_message, test_server};

const LIMIT: &str = "4000";

fn start() -> Supervisor {
    let mut s = Supervisor::start_env(
        &[("DEBUSSY_MCP__MAX_LINE_BYTES", LIMIT)],
        &[],
        &[test_server().display().to_string()],
    );
    s.initialize();
    s
}

fn assert_names_the_limit(reply: &Value) {
    let message = error_message(reply);
    assert!(message.contains("4000-byte"), "{reply}");
    assert!(message.contains("mcp.max_line_bytes"), "{reply}");
}

#[test]
fn an_oversized_request_from_the_client_is_answered_with_an_error() {
    let mut s = start();
    let text = "x".repeat(10_000);
    // The id before the big params (Python SDK, rmcp) and after them (TypeScript SDK).
    let id_first = format!(
        r#"{{"jsonrpc":"2.0","id":"first","method":"tools/call","params":{{"name":"echo","arguments":{{"text":"{text}"}}}}}}"#
    );
    let id_last = format!(
        r#"{{"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"{text}","id":99}}}},"jsonrpc":"2.0","id":7}}"#
    );
    s.send_raw(format!("{id_first}\n{id_last}\n").as_bytes());
    let reply = s.response(&json!("first"));
    assert_eq!(reply["error"]["code"], -32600, "{reply}");
    assert_names_the_limit(&reply);
    let reply = s.response(&json!(7));
    assert_eq!(reply["error"]["code"], -32600, "{reply}");
    assert_names_the_limit(&reply);
    assert_eq!(s.tool_text("echo", json!({"text": "small"})), "small");
}

#[test]
fn an_oversized_response_from_the_server_is_answered_with_an_error() {
    let mut s = start();
    let id = s.request(
        "tools/call",
        json!({"name": "big_output", "arguments": {"bytes": 10_000}}),
    );
    let reply = s.response(&id);
    assert_eq!(reply["error"]["code"], -32603, "{reply}");
    assert_names_the_limit(&reply);
    assert_eq!(s.tool_text("echo", json!({"text": "small"})), "small");
    let status = s.tool_json("server_status", json!({}));
    assert_eq!(status["requests_in_flight"], 0, "{status}");
    assert_eq!(status["generation"], 1, "{status}");
}

/// The client's answer to the server's own request (`roots/list`) is too big: the
/// server gets an error for it instead of waiting forever.
#[test]
fn an_oversized_answer_from_the_client_is_answered_to_the_server() {
    let mut s = start();
    let call = s.request("tools/call", json!({"name": "list_roots", "arguments": {}}));
    let request = s.wait_for("roots/list", super::support::WAIT, |m| {
        m["method"] == "roots/list"
    });
    let roots: Vec<Value> = (0..200)
        .map(|n| json!({"uri": format!("file:///root/{n}"), "name": format!("root {n}")}))
        .collect();
    s.send(&json!({"jsonrpc": "2.0", "id": request["id"], "result": {"roots": roots}}));
    let reply = s.response(&call);
    let text = reply["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(text.starts_with("error:"), "{reply}");
    assert!(text.contains("mcp.max_line_bytes"), "{reply}");
}
