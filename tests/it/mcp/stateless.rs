//! A raw MCP 2026-07-28 client through `debussy mcp supervise` and `debussy mcp bridge`
//! (the rmcp test server, which speaks both revisions): its listen stream keeps its own
//! id across restarts, hears what changed, sees one acknowledgement; `server/discover`
//! is served while the server restarts; a legacy-only server makes it fall back to
//! `initialize`, which is replayed; and a hundred restarts lose nothing.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::bridge::Stage;
use super::support::{Supervisor, WAIT};

const VERSION: &str = "2026-07-28";
const SUBSCRIPTION: &str = "io.modelcontextprotocol/subscriptionId";

fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": VERSION,
        "io.modelcontextprotocol/clientInfo": {"name": "debussy-tests", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    })
}

/// The supervised test server with `server_args`, ignoring SIGTERM and stdin's close:
/// each stop waits out both graces, shortened to two seconds in all, which is still
/// long enough to send requests while the server restarts.
fn slow_to_stop(server_args: &[&str]) -> Supervisor {
    let mut command = vec![
        super::support::test_server().display().to_string(),
        "--ignore-sigterm".to_owned(),
    ];
    command.extend(server_args.iter().map(|a| (*a).to_owned()));
    Supervisor::start_env(
        &[
            ("DEBUSSY_MCP__STOP_CLOSE_GRACE", "0.5"),
            ("DEBUSSY_MCP__STOP_TERM_GRACE", "1.5"),
        ],
        &[],
        &command,
    )
}

/// `params` with the 2026-07-28 envelope.
fn enveloped(mut params: Value) -> Value {
    params["_meta"] = meta();
    params
}

fn send(client: &mut Supervisor, id: &Value, method: &str, params: Value) {
    client
        .send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": enveloped(params)}));
}

fn call(client: &mut Supervisor, id: &str, method: &str, params: Value) -> Value {
    let id = json!(id);
    send(client, &id, method, params);
    client.response(&id)
}

fn tool_names(reply: &Value) -> Vec<String> {
    reply["result"]["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|t| t["name"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

fn tool_json(client: &mut Supervisor, id: &str, name: &str) -> Value {
    let reply = call(
        client,
        id,
        "tools/call",
        json!({"name": name, "arguments": {}}),
    );
    assert_eq!(reply["result"]["resultType"], "complete", "{reply}");
    let text = reply["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("{name}: {reply}"));
    serde_json::from_str(text).unwrap_or_else(|err| panic!("{name} ({err}): {text}"))
}

/// Discover, listen (id `"watch:1"`), restart, and check what the client sees.
fn listen_across_a_restart(client: &mut Supervisor) {
    let discovered = call(client, "d1", "server/discover", json!({}));
    let versions = &discovered["result"]["supportedVersions"];
    assert!(
        versions
            .as_array()
            .is_some_and(|v| v.contains(&json!(VERSION))),
        "{discovered}"
    );
    assert_eq!(
        discovered["result"]["resultType"], "complete",
        "{discovered}"
    );
    send(
        client,
        &json!("watch:1"),
        "subscriptions/listen",
        json!({"notifications": {"toolsListChanged": true}}),
    );
    let ack = client.notification("notifications/subscriptions/acknowledged");
    assert_eq!(ack["params"]["_meta"][SUBSCRIPTION], "watch:1", "{ack}");
    let before = tool_names(&call(client, "l1", "tools/list", json!({})));
    assert!(before.contains(&"restart_server".to_owned()), "{before:?}");
    assert!(!before.contains(&"added_later".to_owned()), "{before:?}");

    let restarted = tool_json(client, "r1", "restart_server");
    assert_eq!(restarted["restarted"], true, "{restarted}");
    let changed = client.notification("notifications/tools/list_changed");
    assert_eq!(
        changed["params"]["_meta"][SUBSCRIPTION], "watch:1",
        "{changed}"
    );
    let after = tool_names(&call(client, "l2", "tools/list", json!({})));
    assert!(after.contains(&"added_later".to_owned()), "{after:?}");
    let added = call(
        client,
        "c1",
        "tools/call",
        json!({"name": "added_later", "arguments": {}}),
    );
    assert_eq!(added["result"]["content"][0]["text"], "new", "{added}");
    // One subscription to the client: the new server's acknowledgement is not passed on.
    let deadline = Instant::now() + Duration::from_millis(300);
    while let Some(message) = client.next(deadline.saturating_duration_since(Instant::now())) {
        assert_ne!(
            message["method"], "notifications/subscriptions/acknowledged",
            "a second acknowledgement: {message}"
        );
        assert!(
            message.get("id") != Some(&json!("watch:1")),
            "the listen ended: {message}"
        );
    }
}

#[test]
fn a_stateless_client_keeps_its_listen_across_a_restart_through_the_supervisor() {
    let mut client = Supervisor::start(&["--grow"]);
    listen_across_a_restart(&mut client);
    let status = tool_json(&mut client, "s1", "server_status");
    assert_eq!(status["protocol"], VERSION, "{status}");
    assert_eq!(
        status["listens"],
        json!([{"id": "watch:1", "open": true}]),
        "{status}"
    );
}

#[test]
fn a_stateless_client_keeps_its_listen_across_a_restart_through_the_bridge() {
    let stage = Stage::new();
    let mut client = stage.bridge(&["--stop-daemon-on-exit"], &["--grow"]);
    listen_across_a_restart(&mut client);
    let status = tool_json(&mut client, "s1", "server_status");
    assert_eq!(
        status["listens"],
        json!([{"id": "watch:1", "open": true}]),
        "{status}"
    );
}

/// While a slow stop holds the restart, `server/discover` is answered from what the
/// last server said.
#[test]
fn server_discover_is_answered_while_the_server_restarts() {
    let mut client = slow_to_stop(&[]);
    let first = call(&mut client, "d1", "server/discover", json!({}));
    assert!(first.get("result").is_some(), "{first}");
    let restarting = json!("r1");
    send(
        &mut client,
        &restarting,
        "tools/call",
        json!({"name": "restart_server", "arguments": {}}),
    );
    client.wait_stderr("restart requested");
    let asked = Instant::now();
    let again = call(&mut client, "d2", "server/discover", json!({}));
    assert!(
        asked.elapsed() < Duration::from_secs(1),
        "{:?}",
        asked.elapsed()
    );
    assert_eq!(
        again["result"]["supportedVersions"],
        first["result"]["supportedVersions"]
    );
    let restarted = client.response(&restarting);
    assert!(restarted.get("result").is_some(), "{restarted}");
}

/// A 2026-07-28 client in front of a server that does not speak it: `server/discover` is
/// refused as the server refuses it, the client falls back to `initialize`, and that
/// handshake is replayed after a restart.
fn falls_back_and_is_replayed(client: &mut Supervisor) {
    let refused = call(client, "d1", "server/discover", json!({}));
    assert_eq!(refused["error"]["code"], -32601, "{refused}");
    client.initialize();
    let (pid, generation) = client.whoami();
    let restarted = client.tool_json("restart_server", json!({}));
    assert_eq!(restarted["restarted"], true, "{restarted}");
    let (pid2, generation2) = client.whoami();
    assert_ne!(pid, pid2);
    assert_eq!(generation2, generation + 1);
}

#[test]
fn a_legacy_only_server_makes_a_stateless_client_fall_back_through_the_supervisor() {
    let mut client = slow_to_stop(&["--legacy-only"]);
    falls_back_and_is_replayed(&mut client);
    // While it restarts again (a slow stop), the refusal is what the client is told.
    let restarting = client.request(
        "tools/call",
        json!({"name": "restart_server", "arguments": {}}),
    );
    client.wait_stderr("restart requested");
    let again = call(&mut client, "d2", "server/discover", json!({}));
    assert_eq!(again["error"]["code"], -32601, "{again}");
    assert!(client.response(&restarting).get("result").is_some());
}

#[test]
fn a_legacy_only_daemon_makes_a_stateless_client_fall_back_through_the_bridge() {
    let stage = Stage::new();
    let mut client = stage.bridge(&["--stop-daemon-on-exit"], &["--legacy-only"]);
    falls_back_and_is_replayed(&mut client);
}

/// The server's revision changes across a restart. From legacy-only to both: the client
/// that fell back stays in its revision. From both to legacy-only: the client that speaks
/// 2026-07-28 is told the new server cannot serve it.
#[test]
fn a_restart_that_changes_the_servers_revision() {
    let mut legacy_first = Supervisor::start(&["--legacy-before-generation", "2"]);
    falls_back_and_is_replayed(&mut legacy_first);

    let mut modern_first = Supervisor::start(&["--legacy-from-generation", "2"]);
    assert!(
        call(&mut modern_first, "d1", "server/discover", json!({}))
            .get("result")
            .is_some()
    );
    let reply = call(
        &mut modern_first,
        "r1",
        "tools/call",
        json!({"name": "restart_server", "arguments": {}}),
    );
    assert_eq!(reply["result"]["isError"], true, "{reply}");
    let text = reply["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(text.contains("server/discover"), "{reply}");
    modern_first.wait_stderr("cannot serve this client's protocol revision");
}

/// A hundred restarts while stateless requests keep coming: each is answered exactly
/// once, and the listen stream is still open on the last server.
#[test]
fn a_hundred_restarts_under_stateless_traffic_lose_nothing_and_keep_the_listen() {
    let mut client = Supervisor::start(&[]);
    send(
        &mut client,
        &json!("watch:1"),
        "subscriptions/listen",
        json!({"notifications": {"toolsListChanged": true}}),
    );
    client.notification("notifications/subscriptions/acknowledged");
    let mut outstanding: HashSet<String> = HashSet::new();
    let mut restarts = 0;
    let mut next = 0u32;
    let started = Instant::now();
    let mut restart_pending: Option<String> = None;
    while restarts < 100 || !outstanding.is_empty() || restart_pending.is_some() {
        assert!(
            started.elapsed() < Duration::from_secs(300),
            "too slow: {restarts} restarts"
        );
        while outstanding.len() < 8 && restarts < 100 {
            next += 1;
            let id = format!("e{next}");
            send(
                &mut client,
                &json!(id),
                "tools/call",
                json!({"name": "echo", "arguments": {"text": id}}),
            );
            outstanding.insert(id);
        }
        if restart_pending.is_none() && restarts < 100 {
            next += 1;
            let id = format!("r{next}");
            send(
                &mut client,
                &json!(id),
                "tools/call",
                json!({"name": "restart_server", "arguments": {}}),
            );
            restart_pending = Some(id);
        }
        let message = client.next(WAIT).unwrap_or_else(|| {
            panic!(
                "nothing within {WAIT:?}; waiting for {outstanding:?}\n{}",
                client.stderr()
            )
        });
        assert_ne!(
            message["method"], "notifications/subscriptions/acknowledged",
            "a second acknowledgement: {message}"
        );
        let Some(id) = message["id"].as_str().map(str::to_owned) else {
            continue;
        };
        assert_ne!(id, "watch:1", "the listen ended: {message}");
        if restart_pending.as_deref() == Some(id.as_str()) {
            assert_eq!(message["result"]["isError"], false, "{message}");
            restart_pending = None;
            restarts += 1;
            continue;
        }
        assert!(
            outstanding.remove(&id),
            "answered twice or never asked: {message}"
        );
        // An echo lost to a restart is answered with an error saying so; none vanish.
        assert!(
            message.get("result").is_some() || message.get("error").is_some(),
            "{message}"
        );
    }
    let status = tool_json(&mut client, "s1", "server_status");
    assert_eq!(
        status["listens"],
        json!([{"id": "watch:1", "open": true}]),
        "{status}"
    );
}
