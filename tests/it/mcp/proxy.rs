//! The proxy itself: handshake, pass-through, injected tools, bad input, shutdown.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::support::{Supervisor, alive, error_message, event_types, initialize_params};

fn tool_names(list: &Value) -> Vec<String> {
    list["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| t["name"].as_str().expect("name").to_owned())
        .collect()
}

#[test]
fn the_first_initialize_declares_list_changed_and_tools_are_injected() {
    let mut s = Supervisor::start(&[]);
    let init = s.initialize();
    assert_eq!(init["capabilities"]["tools"]["listChanged"], true, "{init}");
    assert_eq!(init["serverInfo"]["name"], "rmcp");
    let names = tool_names(&s.call("tools/list", json!({})));
    for expected in [
        "echo",
        "whoami",
        "slow",
        "restart_server",
        "verify_server_restarted",
        "server_status",
    ] {
        assert!(
            names.contains(&expected.to_owned()),
            "{expected} missing from {names:?}"
        );
    }
    assert_eq!(
        s.tool_text("echo", json!({"text": "héllo → 世界"})),
        "héllo → 世界"
    );
    let status = s.tool_json("server_status", json!({}));
    assert_eq!(status["mode"], "running");
    assert_eq!(status["generation"], 1);
    assert_eq!(status["restart_count"], 0);
    assert!(s.close().success());
}

#[test]
fn no_inject_tools_leaves_the_list_alone() {
    let mut s = Supervisor::start_with(&["--no-inject-tools"], &[]);
    s.initialize();
    let names = tool_names(&s.call("tools/list", json!({})));
    assert!(!names.iter().any(|n| n == "restart_server"), "{names:?}");
    let reply = s.call_tool("restart_server", json!({}));
    // The child has no such tool: its own error comes back, untouched.
    assert!(
        reply.get("error").is_some() || reply["result"]["isError"] == true,
        "{reply}"
    );
}

#[test]
fn restart_via_tool_gives_a_different_pid_and_is_recorded() {
    let mut s = Supervisor::start(&[]);
    s.initialize();
    let before = jiff::Timestamp::now();
    let (pid1, gen1) = s.whoami();
    assert_eq!(gen1, 1);
    let started = Instant::now();
    let restarted = s.tool_json("restart_server", json!({"reason": "edited the server"}));
    let took = started.elapsed();
    assert_eq!(restarted["restarted"], true, "{restarted}");
    assert_eq!(restarted["old"]["pid"], pid1);
    assert_eq!(restarted["new"]["generation"], 2);
    assert!(took < Duration::from_secs(5), "restart took {took:?}");
    s.notification("notifications/tools/list_changed");
    let pid2 = s.assert_restarted(pid1, 2);
    assert_eq!(restarted["new"]["pid"], pid2);
    assert!(!alive(pid1), "the old server {pid1} is still running");

    let verify = s.tool_json(
        "verify_server_restarted",
        json!({"since_timestamp": before.to_string()}),
    );
    assert_eq!(verify["restarted"], true, "{verify}");
    assert_eq!(verify["current"]["pid"], pid2);
    assert_eq!(verify["previous"]["pid"], pid1);
    assert_eq!(verify["reason"], "edited the server");
    let later = jiff::Timestamp::now();
    let verify = s.tool_json(
        "verify_server_restarted",
        json!({"since_timestamp": later.as_second() + 1}),
    );
    assert_eq!(verify["restarted"], false, "{verify}");
    let status = s.tool_json("server_status", json!({}));
    assert_eq!(status["restart_count"], 1);
    assert_eq!(status["pid"], pid2);

    let marker: Value = serde_json::from_str(
        &std::fs::read_to_string(s.state_dir.join("restart_marker.json")).expect("marker"),
    )
    .expect("marker json");
    assert_eq!(marker["reason"], "edited the server");
    assert_eq!(marker["pid"], pid1);
    assert_eq!(marker["generation"], 1);
    assert!(
        marker["iso_time"]
            .as_str()
            .is_some_and(|t| t.ends_with('Z'))
    );
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(s.state_dir.join("restart_marker.json"))
            .expect("meta")
            .permissions(),
    );
    assert_eq!(mode & 0o777, 0o600);

    assert!(s.close().success());
    assert!(!alive(pid2));
    let events = event_types(&s.audit());
    let expected = [
        "supervisor_started",
        "server_started",
        "server_ready",
        "restart_requested",
        "marker_written",
        "server_exiting",
        "server_exited",
        "server_started",
        "handshake_replayed",
        "server_ready",
        "server_exiting",
        "server_exited",
        "supervisor_exiting",
    ];
    assert_eq!(events, expected);
    let audit = s.audit();
    assert_eq!(audit[3]["source"], "tool");
    assert_eq!(audit[3]["reason"], "edited the server");
    assert_eq!(audit[6]["requested"], true);
    for event in &audit {
        assert!(
            event["timestamp"]
                .as_str()
                .is_some_and(|t| t.ends_with('Z')),
            "{event}"
        );
        assert!(
            event.get("generation").is_some() && event.get("pid").is_some(),
            "{event}"
        );
    }
}

#[test]
fn session_state_is_replayed_to_the_new_server() {
    let mut s = Supervisor::start(&[]);
    s.initialize();
    // The test server has no logging capability: it refuses setLevel, which is fine; the
    // supervisor must still replay it, and must not pass the refusal to the client twice.
    let reply = s.call("logging/setLevel", json!({"level": "warning"}));
    assert!(reply.get("error").is_some() || reply.get("result").is_some());
    s.tool_json("restart_server", json!({}));
    let events = s.audit();
    let replayed = events
        .iter()
        .find(|e| e["event_type"] == "handshake_replayed")
        .expect("handshake_replayed");
    // initialize + initialized + setLevel.
    assert_eq!(replayed["messages"], 3, "{replayed}");
    // The replayed setLevel's answer went nowhere: the next message is ours.
    let (_, generation) = s.whoami();
    assert_eq!(generation, 2);
}

#[test]
fn garbage_on_the_servers_stdout_never_reaches_the_client() {
    let mut s = Supervisor::start(&["--garbage"]);
    s.initialize();
    assert_eq!(
        s.tool_text("echo", json!({"text": "still fine"})),
        "still fine"
    );
    // The reader thread already fails on any line that is not JSON; also, nothing but
    // answers to our requests arrived.
    assert!(s.next(Duration::from_millis(50)).is_none());
    let stderr = s.stderr();
    assert!(stderr.contains("not JSON-RPC"), "{stderr}");
    assert!(stderr.contains("[SUPERVISOR]"), "{stderr}");
}

#[test]
fn bad_client_input_is_answered_or_dropped_and_big_replies_arrive_whole() {
    let mut s = Supervisor::start(&[]);
    s.initialize();
    s.send_raw(b"this is not json\n");
    s.send_raw(b"{\"hello\": 1}\n");
    let invalid = s.wait_for("Invalid Request", super::support::WAIT, |m| {
        m["error"]["code"] == -32600
    });
    assert_eq!(invalid["id"], Value::Null);
    let big = s.tool_text("big_output", json!({"bytes": 3_000_000}));
    assert!(big.len() >= 3_000_000);
    assert!(big.starts_with("é→世é→世"));
    assert!(big.chars().all(|c| matches!(c, 'é' | '→' | '世')));
}

#[test]
fn requests_before_initialize_and_unknown_methods_pass_through() {
    let mut s = Supervisor::start(&[]);
    let reply = s.call("ping", json!({}));
    assert!(
        reply.get("result").is_some() || reply.get("error").is_some(),
        "{reply}"
    );
    s.initialize();
    let reply = s.call("no/such/method", json!({}));
    assert_eq!(reply["error"]["code"], -32601, "{reply}");
    // String ids come back as they were sent.
    s.send(&json!({"jsonrpc": "2.0", "id": "str-id-1", "method": "ping"}));
    let reply = s.response(&json!("str-id-1"));
    assert!(reply.get("result").is_some(), "{reply}");
}

#[test]
fn client_eof_stops_the_server_and_exits_0() {
    let mut s = Supervisor::start(&[]);
    s.initialize();
    let (pid, _) = s.whoami();
    assert!(s.close().success());
    assert!(!alive(pid));
    let events = event_types(&s.audit());
    assert_eq!(
        events.last().map(String::as_str),
        Some("supervisor_exiting")
    );
}

#[test]
fn sigterm_stops_a_server_that_ignores_sigterm_and_exits_0() {
    let mut s = Supervisor::start(&["--ignore-sigterm"]);
    s.initialize();
    let (pid, _) = s.whoami();
    s.signal(nix::sys::signal::Signal::SIGTERM);
    let status = s.wait_exit(super::support::WAIT).expect("exits");
    assert!(status.success(), "{status:?}");
    assert!(!alive(pid), "the server {pid} survived");
    let exited = s
        .audit()
        .into_iter()
        .find(|e| e["event_type"] == "server_exited")
        .expect("server_exited");
    assert_eq!(exited["signal"], "SIGKILL", "{exited}");
}

#[test]
fn a_server_that_exits_0_ends_the_supervisor_with_0() {
    let mut s = Supervisor::start(&["--exit-at-start", "0"]);
    let status = s.wait_exit(super::support::WAIT).expect("exits");
    assert!(status.success(), "{status:?}");
    let events = event_types(&s.audit());
    assert!(events.contains(&"server_exited".to_owned()), "{events:?}");
}

#[test]
fn a_missing_server_command_is_a_clear_error() {
    let mut s = Supervisor::start_command(&[], &["/nonexistent/mcp-server".to_owned()]);
    let status = s.wait_exit(super::support::WAIT).expect("exits");
    assert_eq!(status.code(), Some(1), "{}", s.stderr());
    assert!(
        s.stderr().contains("/nonexistent/mcp-server"),
        "{}",
        s.stderr()
    );
}

#[test]
fn server_requests_reach_the_client_under_the_supervisors_ids() {
    let mut s = Supervisor::start(&[]);
    let reply = s.call(
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {"roots": {"listChanged": false}},
               "clientInfo": {"name": "t", "version": "1"}}),
    );
    assert!(reply.get("result").is_some(), "{reply}");
    s.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let call = s.request("tools/call", json!({"name": "list_roots", "arguments": {}}));
    let asked = s.wait_for("roots/list", super::support::WAIT, |m| {
        m["method"] == "roots/list"
    });
    let id = asked["id"].clone();
    s.send(&json!({"jsonrpc": "2.0", "id": id,
        "result": {"roots": [{"uri": "file:///work", "name": "work"}]}}));
    let reply = s.response(&call);
    let text = reply["result"]["content"][0]["text"]
        .as_str()
        .expect("text");
    let seen: Value = serde_json::from_str(text).expect("json");
    assert_eq!(seen, json!({"roots": 1, "first": "file:///work"}));

    // A server request still open when its server dies is cancelled for the client, and
    // a late answer to it goes nowhere.
    let call = s.request("tools/call", json!({"name": "list_roots", "arguments": {}}));
    let asked = s.wait_for("roots/list", super::support::WAIT, |m| {
        m["method"] == "roots/list"
    });
    assert_ne!(asked["id"], id, "ids of server requests are never reused");
    let (pid, _) = s.whoami();
    super::support::signal_pid(pid, nix::sys::signal::Signal::SIGKILL);
    let reply = s.response(&call);
    assert_eq!(reply["error"]["code"], -32603, "{reply}");
    let cancelled = s.notification("notifications/cancelled");
    assert_eq!(cancelled["params"]["requestId"], asked["id"], "{cancelled}");
    s.send(&json!({"jsonrpc": "2.0", "id": asked["id"], "result": {"roots": []}}));
    s.assert_restarted(pid, 2);
}

#[test]
fn the_mcp_configuration_section_tunes_the_supervisor() {
    let server = super::support::test_server().display().to_string();
    let command = [server, "--no-initialize".to_owned()];
    let mut s = Supervisor::start_env(
        &[
            ("DEBUSSY_MCP__FIRST_READINESS_TIMEOUT", "0.3"),
            ("DEBUSSY_MCP__MAX_CRASHES", "1"),
            ("DEBUSSY_MCP__STOP_CLOSE_GRACE", "0.2"),
        ],
        &[],
        &command,
    );
    let started = Instant::now();
    let reply = s.call("initialize", initialize_params("2025-06-18"));
    let message = error_message(&reply);
    assert!(message.contains("degraded"), "{reply}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    let readiness = s
        .audit()
        .into_iter()
        .find(|e| e["event_type"] == "readiness_timeout")
        .expect("readiness_timeout");
    assert_eq!(readiness["timeout_ms"], 300);
}

#[test]
fn a_bad_mcp_setting_is_a_usage_error() {
    let mut s = Supervisor::start_env(
        &[("DEBUSSY_MCP__DRAIN_GRACE", "-1")],
        &[],
        &[super::support::test_server().display().to_string()],
    );
    let status = s.wait_exit(super::support::WAIT).expect("exits");
    assert_eq!(status.code(), Some(2), "{}", s.stderr());
    assert!(s.stderr().contains("mcp.drain_grace"), "{}", s.stderr());
}

#[test]
fn requests_pending_at_client_eof_are_answered_before_the_exit() {
    // The server never answers, so the client's `initialize` is still in flight when
    // the client closes its side.
    let mut s = Supervisor::start(&["--no-initialize"]);
    let id = s.request("initialize", initialize_params("2025-06-18"));
    assert!(s.close().success());
    let reply = s.response(&id);
    assert!(error_message(&reply).contains("shutting down"), "{reply}");
}
