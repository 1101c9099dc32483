//! Tests of the scripted model server itself, spoken to over raw HTTP/1.1, so they
//! run (and catch regressions in the support code) even where the Claude Code CLI is
//! not installed.

use std::time::Duration;

use crate::support::model_server::{
    ModelServer, RecordedRequest, RequestKind, Scenario, Turn, Usage,
};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

pub(crate) const WAIT: Duration = Duration::from_secs(10);

/// A parsed HTTP response.
pub(crate) struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    fn json(&self) -> Value {
        serde_json::from_str(&self.body).expect("JSON body")
    }

    /// `(event name, data)` of each SSE event.
    fn events(&self) -> Vec<(String, Value)> {
        self.body
            .split("\n\n")
            .filter(|chunk| !chunk.trim().is_empty())
            .map(|chunk| {
                let mut name = String::new();
                let mut data = Value::Null;
                for line in chunk.lines() {
                    if let Some(rest) = line.strip_prefix("event: ") {
                        rest.clone_into(&mut name);
                    } else if let Some(rest) = line.strip_prefix("data: ") {
                        data = serde_json::from_str(rest).expect("SSE data is JSON");
                    }
                }
                (name, data)
            })
            .collect()
    }
}

pub(crate) fn request_bytes(method: &str, path: &str, body: Option<&Value>) -> Vec<u8> {
    let body = body.map(Value::to_string).unwrap_or_default();
    format!(
        "{method} {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
         X-Claude-Code-Session-Id: test-session\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

pub(crate) fn dechunk(mut raw: &str) -> String {
    let mut out = String::new();
    loop {
        let Some((size, rest)) = raw.split_once("\r\n") else {
            return out;
        };
        let size = usize::from_str_radix(size.trim(), 16).expect("chunk size");
        if size == 0 {
            return out;
        }
        out.push_str(&rest[..size]);
        raw = &rest[size + 2..];
    }
}

pub(crate) fn parse_reply(raw: &str) -> Reply {
    let (head, body) = raw.split_once("\r\n\r\n").expect("HTTP head");
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|line| line.split_whitespace().nth(1))
        .and_then(|code| code.parse().ok())
        .expect("status line");
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(": "))
        .map(|(key, value)| (key.to_owned(), value.to_owned()))
        .collect();
    let chunked = headers
        .iter()
        .any(|(key, value)| key.eq_ignore_ascii_case("transfer-encoding") && value == "chunked");
    let body = if chunked {
        dechunk(body)
    } else {
        body.to_owned()
    };
    Reply {
        status,
        headers,
        body,
    }
}

pub(crate) async fn send(
    server: &ModelServer,
    method: &str,
    path: &str,
    body: Option<&Value>,
) -> Reply {
    let mut stream = TcpStream::connect(server.addr()).await.expect("connect");
    stream
        .write_all(&request_bytes(method, path, body))
        .await
        .expect("write request");
    let mut raw = String::new();
    tokio::time::timeout(WAIT, stream.read_to_string(&mut raw))
        .await
        .expect("response within the timeout")
        .expect("read response");
    parse_reply(&raw)
}

/// The kind of each of `requests`, in order.
fn kinds(requests: Vec<RecordedRequest>) -> Vec<RequestKind> {
    requests.into_iter().map(|request| request.kind).collect()
}

/// A request body shaped like Claude Code's main-thread calls.
pub(crate) fn main_body(prompt: &str) -> Value {
    json!({
        "model": "claude-sonnet-4-5",
        "stream": true,
        "max_tokens": 32000,
        "system": [{"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1.330; cc_entrypoint=sdk-cli;"}],
        "tools": [{"name": "Bash", "input_schema": {"type": "object"}}],
        "messages": [{"role": "user", "content": [{"type": "text", "text": prompt}]}],
    })
}

pub(crate) fn subagent_body(prompt: &str) -> Value {
    let mut body = main_body(prompt);
    body["system"][0]["text"] =
        json!("x-anthropic-billing-header: cc_version=2.1.330; cc_is_subagent=true;");
    body
}

#[tokio::test]
async fn a_streamed_turn_follows_the_messages_api_event_sequence() {
    let text = "Grüße aus dem Skript — long enough to be split into several deltas ✓";
    let input = json!({"file_path": "/tmp/x/notes.md", "content": "line one\nline two\n"});
    let server = ModelServer::start(
        Scenario::new().turn(
            Turn::new()
                .thinking("planning")
                .text(text)
                .tool_use_id("toolu_fixed", "Write", input.clone())
                .usage(Usage::new(12, 3_400, 560, 78)),
        ),
    )
    .expect("start server");

    let reply = send(
        &server,
        "POST",
        "/v1/messages?beta=true",
        Some(&main_body("go")),
    )
    .await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.header("content-type"), Some("text/event-stream"));
    let events = reply.events();
    let names: Vec<&str> = events.iter().map(|(name, _)| name.as_str()).collect();
    // Compare the order with repeated deltas collapsed.
    let mut collapsed: Vec<&str> = names.clone();
    collapsed.dedup();
    assert_eq!(
        collapsed,
        [
            "message_start",
            "content_block_start",
            "content_block_delta",
            "content_block_stop",
            "content_block_start",
            "content_block_delta",
            "content_block_stop",
            "content_block_start",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop",
        ]
    );
    assert!(
        names.len() >= collapsed.len() + 2,
        "long text and JSON are split into several deltas: {names:?}"
    );

    let usage = json!({
        "input_tokens": 12, "cache_read_input_tokens": 3400,
        "cache_creation_input_tokens": 560, "output_tokens": 78,
    });
    assert_eq!(events[0].1["message"]["usage"], usage);
    let (_, message_delta) = &events[events.len() - 2];
    assert_eq!(message_delta["delta"]["stop_reason"], "tool_use");
    assert_eq!(message_delta["usage"], usage);

    let mut thinking = String::new();
    let mut streamed_text = String::new();
    let mut partial_json = String::new();
    let mut signature = false;
    for (name, data) in &events {
        if name != "content_block_delta" {
            continue;
        }
        let delta = &data["delta"];
        match delta["type"].as_str() {
            Some("thinking_delta") => {
                thinking.push_str(delta["thinking"].as_str().unwrap_or_default());
            }
            Some("signature_delta") => signature = true,
            Some("text_delta") => {
                streamed_text.push_str(delta["text"].as_str().unwrap_or_default());
            }
            Some("input_json_delta") => {
                partial_json.push_str(delta["partial_json"].as_str().unwrap_or_default());
            }
            other => panic!("unexpected delta type {other:?}"),
        }
    }
    assert_eq!(thinking, "planning");
    assert!(signature, "thinking blocks end with a signature_delta");
    assert_eq!(streamed_text, text);
    assert_eq!(
        serde_json::from_str::<Value>(&partial_json).expect("tool input"),
        input
    );
    let tool_start = events
        .iter()
        .find(|(name, data)| {
            name == "content_block_start" && data["content_block"]["type"] == "tool_use"
        })
        .expect("tool_use block");
    assert_eq!(tool_start.1["content_block"]["id"], "toolu_fixed");
    assert_eq!(tool_start.1["content_block"]["name"], "Write");

    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].kind, RequestKind::Main { turn: 0 });
    assert!(requests[0].scripted);
    assert_eq!(requests[0].session_id(), Some("test-session"));
    assert_eq!(requests[0].query.as_deref(), Some("beta=true"));
    assert_eq!(requests[0].first_user_text(), "go");
    server.assert_all_scripted();
}

#[tokio::test]
async fn conversations_advance_their_own_scripts() {
    let server = ModelServer::start(
        Scenario::new()
            .turn(Turn::reply("main one"))
            .turn(Turn::reply("main two"))
            .subagent(
                "SUBTASK-7",
                [Turn::reply("sub one"), Turn::reply("sub two")],
            )
            .compact_summary("what happened so far")
            .side_reply("A title"),
    )
    .expect("start server");

    let text_of = |reply: &Reply| {
        reply
            .events()
            .iter()
            .filter(|(name, data)| {
                name == "content_block_delta" && data["delta"]["type"] == "text_delta"
            })
            .map(|(_, data)| {
                data["delta"]["text"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned()
            })
            .collect::<String>()
    };

    let path = "/v1/messages?beta=true";
    assert_eq!(
        text_of(&send(&server, "POST", path, Some(&main_body("do it"))).await),
        "main one"
    );
    // Matched by the marker and the prompt fragment.
    assert_eq!(
        text_of(
            &send(
                &server,
                "POST",
                path,
                Some(&subagent_body("SUBTASK-7: look"))
            )
            .await
        ),
        "sub one"
    );
    // Matched by the prompt fragment alone.
    assert_eq!(
        text_of(&send(&server, "POST", path, Some(&main_body("again SUBTASK-7"))).await),
        "sub two"
    );
    // A subagent nobody scripted gets the fallback and is flagged.
    let unmatched = send(
        &server,
        "POST",
        path,
        Some(&subagent_body("something else")),
    )
    .await;
    assert_eq!(text_of(&unmatched), "The scripted model has no more turns.");

    let mut compact = main_body("do it");
    compact["messages"]
        .as_array_mut()
        .expect("messages")
        .push(json!({
            "role": "user",
            "content": "Your task is to create a detailed summary of the conversation so far."
        }));
    let summary = text_of(&send(&server, "POST", path, Some(&compact)).await);
    assert!(
        summary.contains("<summary>\nwhat happened so far\n</summary>"),
        "{summary}"
    );

    let mut side = main_body("title this");
    side["stream"] = json!(false);
    let side_reply = send(&server, "POST", path, Some(&side)).await;
    assert_eq!(side_reply.json()["content"][0]["text"], "A title");
    assert_eq!(side_reply.json()["type"], "message");

    let mut toolless = main_body("summarise");
    toolless["tools"] = json!([]);
    assert_eq!(
        text_of(&send(&server, "POST", path, Some(&toolless)).await),
        "A title"
    );

    // The main script was not consumed by any of the above.
    assert_eq!(
        text_of(&send(&server, "POST", path, Some(&main_body("do it"))).await),
        "main two"
    );
    // Past its end: the fallback, flagged.
    send(&server, "POST", path, Some(&main_body("do it"))).await;

    let kinds = kinds(server.requests());
    assert_eq!(
        kinds,
        [
            RequestKind::Main { turn: 0 },
            RequestKind::Subagent {
                key: Some("SUBTASK-7".to_owned()),
                turn: 0
            },
            RequestKind::Subagent {
                key: Some("SUBTASK-7".to_owned()),
                turn: 1
            },
            RequestKind::Subagent { key: None, turn: 0 },
            RequestKind::Compact,
            RequestKind::Side,
            RequestKind::Side,
            RequestKind::Main { turn: 1 },
            RequestKind::Main { turn: 2 },
        ]
    );
    let unexpected: Vec<usize> = server
        .unexpected()
        .iter()
        .map(|request| request.index)
        .collect();
    assert_eq!(unexpected, [3, 8]);
    assert_eq!(server.main_requests().len(), 3);
    assert_eq!(server.subagent_requests().len(), 3);
    assert_eq!(server.requests_of(&RequestKind::Compact).len(), 1);
    assert_eq!(server.session_ids(), ["test-session"]);
}

#[tokio::test]
async fn other_routes_are_answered_and_recorded() {
    let server = ModelServer::start(Scenario::new().count_tokens(4321)).expect("start server");

    let count = send(
        &server,
        "POST",
        "/v1/messages/count_tokens?beta=true",
        Some(&main_body("x")),
    )
    .await;
    assert_eq!(count.status, 200);
    assert_eq!(count.json(), json!({"input_tokens": 4321}));

    let hello = send(&server, "HEAD", "/api/hello", None).await;
    assert_eq!(hello.status, 200);

    let unknown = send(&server, "GET", "/v1/models", None).await;
    assert_eq!(unknown.status, 404);
    assert_eq!(unknown.json()["error"]["type"], "not_found_error");

    let not_json = send(&server, "POST", "/v1/messages", None).await;
    assert_eq!(not_json.status, 400);

    let kinds = kinds(server.requests());
    assert_eq!(
        kinds,
        [
            RequestKind::CountTokens,
            RequestKind::Hello,
            RequestKind::Unknown,
            RequestKind::Unknown
        ]
    );
    assert_eq!(server.unexpected().len(), 2);

    let dir = tempfile::tempdir().expect("temp dir");
    let saved = dir.path().join("requests.jsonl");
    server.save_requests(&saved).expect("save requests");
    let lines: Vec<Value> = std::fs::read_to_string(&saved)
        .expect("read requests")
        .lines()
        .map(|line| serde_json::from_str(line).expect("JSON line"))
        .collect();
    assert_eq!(lines.len(), 4);
    assert_eq!(lines[2]["path"], "/v1/models");
    assert_eq!(lines[2]["kind"], "unknown route");
}

#[tokio::test]
async fn error_turns_are_sticky() {
    let server = ModelServer::start(
        Scenario::new()
            .turn(Turn::reply("fine"))
            .turn(Turn::api_error(
                400,
                "invalid_request_error",
                "scripted failure",
            ))
            .turn(Turn::reply("never reached")),
    )
    .expect("start server");
    let path = "/v1/messages";
    assert_eq!(
        send(&server, "POST", path, Some(&main_body("a")))
            .await
            .status,
        200
    );
    for _retry in 0..3 {
        let reply = send(&server, "POST", path, Some(&main_body("a"))).await;
        assert_eq!(reply.status, 400);
        assert_eq!(reply.header("x-should-retry"), Some("false"));
        assert_eq!(reply.json()["error"]["message"], "scripted failure");
    }
    let turns = kinds(server.main_requests());
    assert_eq!(
        turns,
        [
            RequestKind::Main { turn: 0 },
            RequestKind::Main { turn: 1 },
            RequestKind::Main { turn: 1 },
            RequestKind::Main { turn: 1 }
        ]
    );
}
