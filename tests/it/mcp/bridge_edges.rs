//! `debussy mcp bridge` at its edges: oversized and malformed traffic, a port held by
//! something else, SIGHUP, the lean binary, and a SIGKILLed bridge.

use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use serde_json::{Value, json};

use super::bridge::Stage;
use super::support::{WAIT, alive, error_message, events_of, initialize_params, test_server};
use crate::support::wait::wait_until;

#[test]
fn a_response_over_the_line_limit_is_answered_with_an_error() {
    let stage = Stage::new();
    let [flag, config] = stage.config("mcp:\n  max_line_bytes: 100000\n");
    let mut bridge = stage.bridge(&[&flag, &config], &[]);
    bridge.initialize();
    let reply = bridge.call_tool("big_output", json!({"bytes": 200_000}));
    let message = error_message(&reply);
    assert!(message.contains("over the 100000-byte limit"), "{reply}");
    assert_eq!(
        bridge.tool_text("echo", json!({"text": "still here"})),
        "still here"
    );
}

#[test]
fn a_port_held_by_something_that_is_not_mcp_is_reported_at_once() {
    let stage = Stage::new();
    let listener = std::net::TcpListener::bind(("127.0.0.1", stage.port)).expect("bind");
    // A web server of sorts: every request gets a 404.
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut buffer = [0u8; 4096];
            let _ = std::io::Read::read(&mut stream, &mut buffer);
            let _ = std::io::Write::write_all(
                &mut stream,
                b"HTTP/1.1 404 Not Found\r\ncontent-length: 9\r\nconnection: close\r\n\r\nnot found",
            );
        }
    });
    let mut bridge = stage.bridge(&[], &[]);
    let asked = Instant::now();
    let reply = bridge.call("initialize", initialize_params("2025-06-18"));
    let message = error_message(&reply);
    assert!(message.contains("refused an MCP session"), "{reply}");
    assert!(message.contains("404"), "{reply}");
    assert!(
        asked.elapsed() < Duration::from_secs(5),
        "{:?}",
        asked.elapsed()
    );
    assert!(
        stage.recorded_pids().is_empty(),
        "a daemon was started on a taken port"
    );
}

#[test]
fn sighup_restarts_the_daemon_as_the_supervisor_restarts_its_server() {
    let stage = Stage::new();
    let mut bridge = stage.ready_bridge();
    let (old, _) = bridge.whoami();
    bridge.signal(Signal::SIGHUP);
    let audit_of = || super::support::read_audit(&stage.state_dir);
    wait_until("a new daemon ready after SIGHUP", WAIT, || {
        events_of(&audit_of(), "server_ready").len() == 2
    });
    let audit = audit_of();
    let requested = events_of(&audit, "restart_requested");
    assert_eq!(requested.len(), 1, "{audit:?}");
    assert_eq!(requested[0]["source"], "signal", "{audit:?}");
    assert_eq!(requested[0]["signal"], "SIGHUP", "{audit:?}");
    bridge.assert_restarted(old, 2);
    assert!(!alive(old));
}

#[test]
fn mcp_commands_run_as_the_lean_binary_when_it_is_beside_debussy() {
    let stage = Stage::new();
    let bridge = stage.ready_bridge();
    let exe = std::fs::read_link(format!("/proc/{}/exe", bridge.pid())).expect("exe link");
    assert_eq!(
        exe.file_name().and_then(|n| n.to_str()),
        Some("debussy-mcp"),
        "{}",
        exe.display()
    );
}

#[test]
fn without_the_lean_binary_mcp_commands_run_in_debussy_itself() {
    use std::io::{BufRead, BufReader, Write};
    let stage = Stage::new();
    let alone = tempfile::tempdir().expect("tempdir");
    let copy = alone.path().join("debussy");
    std::fs::copy(super::support::debussy(), &copy).expect("copy debussy");
    let port = stage.port.to_string();
    let mut child = std::process::Command::new(&copy)
        .args([
            "mcp",
            "bridge",
            "--stop-daemon-on-exit",
            "--port",
            &port,
            "--state-dir",
        ])
        .arg(&stage.state_dir)
        .arg("--")
        .arg(test_server())
        .args(["--http", &port])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start the copied debussy");
    let mut stdin = child.stdin.take().expect("stdin");
    writeln!(
        stdin,
        "{}",
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": initialize_params("2025-06-18")})
    )
    .expect("write");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("read");
    let reply: Value = serde_json::from_str(&line).expect("JSON");
    assert_eq!(reply["result"]["serverInfo"]["name"], "rmcp", "{reply}");
    let exe = std::fs::read_link(format!("/proc/{}/exe", child.id())).expect("exe link");
    assert_eq!(exe, copy);
    drop(stdin);
    let deadline = Instant::now() + WAIT;
    while child.try_wait().expect("wait").is_none() {
        assert!(
            Instant::now() < deadline,
            "the bridge did not exit after stdin closed"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn bad_bytes_and_an_oversized_request_are_answered_and_the_bridge_carries_on() {
    let stage = Stage::new();
    let [flag, config] = stage.config("mcp:\n  max_line_bytes: 100000\n");
    let mut bridge = stage.bridge(&[&flag, &config], &[]);
    bridge.initialize();
    bridge.send_raw(b"\xff\xfe not json at all\n");
    bridge.send_raw(b"{\"jsonrpc\": \"2.0\", \"id\": 77}\n");
    let invalid = bridge.response(&json!(77));
    assert_eq!(invalid["error"]["code"], -32600, "{invalid}");
    let huge = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":78,\"method\":\"tools/call\",\"params\":{{\"name\":\"echo\",\"arguments\":{{\"text\":\"{}\"}}}}}}\n",
        "x".repeat(200_000)
    );
    bridge.send_raw(huge.as_bytes());
    let refused = bridge.response(&json!(78));
    let message = error_message(&refused);
    assert!(message.contains("100000-byte limit"), "{refused}");
    assert_eq!(
        bridge.tool_text("echo", json!({"text": "still here"})),
        "still here"
    );
}

#[test]
fn a_sigkilled_bridge_leaves_the_shared_daemon_to_the_next_bridge() {
    let stage = Stage::new();
    let mut first = stage.ready_bridge();
    let (pid, _) = first.whoami();
    first.signal(Signal::SIGKILL);
    assert!(
        first.wait_exit(WAIT).is_some(),
        "the bridge survived SIGKILL"
    );
    assert!(alive(pid), "the daemon died with its bridge");

    let mut second = stage.ready_bridge();
    let (again, generation) = second.whoami();
    assert_eq!(again, pid, "a second daemon was started");
    assert_eq!(generation, 1);
}
