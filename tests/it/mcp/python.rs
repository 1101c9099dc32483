//! The Python `mcp` SDK (installed by `scripts/test-tools` into `.tools/venv`): its client
//! through the supervisor to its own server and to the rmcp server, across a restart.

use std::path::PathBuf;
use std::process::Command;

use serde_json::{Value, json};

use super::support::{Supervisor, debussy, error_message, events_of, root, test_server};
use crate::support::ports::Port;

/// The venv's Python with the `mcp` SDK; a missing SDK fails the test (such tests are
/// `#[ignore]`d and run with `--run-ignored all`). The SDK is found, not imported: an
/// import costs a second of CPU, which the test's own peers spend anyway.
pub(crate) fn python() -> PathBuf {
    let python = root().join(".tools/venv/bin/python");
    let ready = python.exists()
        && Command::new(&python)
            .args([
                "-c",
                "import importlib.util, sys; sys.exit(importlib.util.find_spec('mcp') is None)",
            ])
            .status()
            .is_ok_and(|s| s.success());
    if !ready {
        crate::support::cli::missing(
            "the Python MCP SDK",
            &format!("it is not installed at {}", python.display()),
        );
    }
    python
}

fn run_client(python: &PathBuf, server: &[String]) -> Value {
    let state = tempfile::tempdir().expect("tempdir");
    let seen = client_output(python, state.path(), server, &[]);
    assert_eq!(seen["tools_list_changed"], true, "{seen}");
    let tools = seen["tools"].as_array().expect("tools");
    assert!(tools.contains(&Value::from("restart_server")), "{seen}");
    assert_eq!(seen["restarted"]["restarted"], true, "{seen}");
    assert_ne!(seen["before"]["pid"], seen["after"]["pid"], "{seen}");
    assert_eq!(
        seen["after"]["pid"], seen["restarted"]["new"]["pid"],
        "{seen}"
    );
    assert_eq!(seen["echo"], "héllo ✓");
    assert_eq!(seen["heard_list_changed"], true, "{seen}");
    seen
}

#[test]
#[ignore = "needs the Python MCP SDK (scripts/test-tools)"]
fn python_client_and_python_server_survive_a_restart() {
    let python = python();
    let server = vec![
        python.display().to_string(),
        root()
            .join("tests/it/mcp/python/server.py")
            .display()
            .to_string(),
    ];
    let seen = run_client(&python, &server);
    assert_eq!(seen["after"]["generation"], "2", "{seen}");
}

#[test]
#[ignore = "needs the Python MCP SDK (scripts/test-tools)"]
fn python_client_and_rmcp_server_survive_a_restart() {
    let python = python();
    let seen = run_client(&python, &[test_server().display().to_string()]);
    assert_eq!(seen["after"]["generation"], 2, "{seen}");
}

/// The "first real run": a Python server under `--watch`, an edit with a syntax error.
/// The supervisor does not crash-loop; the client's next call fails with Python's own
/// `SyntaxError` in the message; fixing the file brings the server back.
#[test]
#[ignore = "needs the Python MCP SDK (scripts/test-tools)"]
fn a_python_syntax_error_under_watch_is_shown_to_the_client() {
    let python = python();
    let work = tempfile::tempdir().expect("tempdir");
    let src = work.path().join("src");
    std::fs::create_dir_all(&src).expect("mkdir");
    let good =
        std::fs::read_to_string(root().join("tests/it/mcp/python/server.py")).expect("server.py");
    let server = src.join("server.py");
    std::fs::write(&server, &good).expect("write");
    let src_arg = src.display().to_string();
    let mut s = Supervisor::start_command(
        &["--watch", &src_arg, "--debounce", "100"],
        &[python.display().to_string(), server.display().to_string()],
    );
    s.initialize();
    assert_eq!(s.tool_text("echo", json!({"text": "v1"})), "v1");

    let broken = good.replace("def echo(text: str) -> str:", "def echo(text: str) -> str");
    std::fs::write(&server, broken).expect("write");
    s.wait_stderr("waiting for the next change");
    let reply = s.call_tool("echo", json!({"text": "v2"}));
    let message = error_message(&reply);
    assert!(message.contains("SyntaxError"), "{reply}");
    let audit = s.audit();
    assert_eq!(events_of(&audit, "server_started").len(), 2, "{audit:?}");

    std::fs::write(&server, &good).expect("write");
    s.notification("notifications/tools/list_changed");
    assert_eq!(s.tool_text("echo", json!({"text": "v3"})), "v3");
}

/// Run `client.py` with the state in `state` and the server (or daemon) command, and
/// the JSON it printed.
fn client_output(
    python: &PathBuf,
    state: &std::path::Path,
    server: &[String],
    envs: &[(&str, &str)],
) -> Value {
    let output = Command::new(python)
        .arg(root().join("tests/it/mcp/python/client.py"))
        .arg(debussy())
        .arg(state)
        .args(server)
        .envs(envs.iter().copied())
        .output()
        .expect("run the Python client");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the Python client failed: {}\nstdout:\n{stdout}\nstderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_str(stdout.trim()).expect("client output is JSON")
}

/// The Python client through `debussy mcp bridge --stop-daemon-on-exit` to a daemon on
/// `port`: across `restart_server`, the same client session reaches the new daemon.
fn run_bridge_client(
    python: &PathBuf,
    port: u16,
    daemon: &[String],
    list_changed_wait: &str,
) -> Value {
    let state = tempfile::tempdir().expect("tempdir");
    let port_text = port.to_string();
    let envs = [
        ("BRIDGE_PORT", port_text.as_str()),
        ("LIST_CHANGED_WAIT", list_changed_wait),
    ];
    let seen = client_output(python, state.path(), daemon, &envs);
    assert!(
        seen["tools"]
            .as_array()
            .is_some_and(|t| t.contains(&Value::from("restart_server"))),
        "{seen}"
    );
    assert_eq!(seen["restarted"]["status"], "ok", "{seen}");
    assert_ne!(seen["before"]["pid"], seen["after"]["pid"], "{seen}");
    assert_eq!(
        seen["after"]["pid"], seen["restarted"]["new"]["pid"],
        "{seen}"
    );
    assert_eq!(seen["echo"], "héllo ✓");
    assert!(
        !super::bridge::listening(port),
        "the daemon still listens on {port} after the bridge stopped it"
    );
    seen
}

#[test]
#[ignore = "needs the Python MCP SDK (scripts/test-tools)"]
fn python_client_through_the_bridge_to_a_python_daemon_survives_a_restart() {
    let python = python();
    let reserved = Port::reserve();
    let port = reserved.number();
    let daemon = vec![
        python.display().to_string(),
        root()
            .join("tests/it/mcp/python/server.py")
            .display()
            .to_string(),
        "--http".to_owned(),
        port.to_string(),
        "--grow".to_owned(),
    ];
    let seen = run_bridge_client(&python, port, &daemon, "10");
    assert_eq!(seen["after"]["generation"], "2", "{seen}");
    // The new daemon has one more tool: the client was told.
    assert_eq!(seen["heard_list_changed"], true, "{seen}");
}

#[test]
#[ignore = "needs the Python MCP SDK (scripts/test-tools)"]
fn python_client_through_the_bridge_to_an_rmcp_daemon_survives_a_restart() {
    let python = python();
    let reserved = Port::reserve();
    let port = reserved.number();
    let daemon = vec![
        test_server().display().to_string(),
        "--http".to_owned(),
        port.to_string(),
    ];
    let seen = run_bridge_client(&python, port, &daemon, "0.1");
    assert_eq!(seen["after"]["generation"], 2, "{seen}");
    // Same tools after the restart: no list_changed to send.
    assert_eq!(seen["heard_list_changed"], false, "{seen}");
}
