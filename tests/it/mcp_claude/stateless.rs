//! Claude Code, which speaks MCP 2026-07-28 first, as the client of a Python SDK
//! `MCPServer` (dual-era) through `debussy mcp supervise` (stdio) and through
//! `debussy mcp bridge` (streamable HTTP): it starts as fast as with the server run
//! directly, and after `restart_server` it calls a tool that only the new server has.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::{restart_turn, run_with_server_t, tool_result};
use crate::support::claude::{self, Sandbox};
use crate::support::model_server::{ModelServer, Scenario, Turn};
use crate::support::ports::Port;

/// The venv's Python with the `mcp` SDK.
fn python() -> PathBuf {
    crate::mcp::python()
}

fn server_script() -> String {
    crate::mcp::support::root()
        .join("tests/it/mcp/python/server.py")
        .display()
        .to_string()
}

/// Run Claude Code once with the MCP server `t` started as `command args`, answering
/// one plain reply; how long the whole run took.
async fn timed_run(cli: &claude::ClaudeCli, command: &str, args: &Value) -> Duration {
    let sandbox = Sandbox::new().expect("sandbox");
    let server = ModelServer::start(Scenario::new().turn(Turn::reply("Hello."))).expect("model");
    let started = Instant::now();
    run_with_server_t(cli, &sandbox, &server, command, args, "Say hello.").await;
    started.elapsed()
}

/// `debussy mcp supervise` arguments running the Python server with `server_args`, its
/// state under `state`.
fn supervise_args(state: &Path, server_args: &[&str]) -> Vec<String> {
    let state = state.join("s").display().to_string();
    let python = python().display().to_string();
    let mut args = strings(&["mcp", "supervise", "--state-dir", &state, "--", &python]);
    args.push(server_script());
    args.extend(strings(server_args));
    args
}

/// `debussy mcp bridge` arguments serving, on `port`, the Python server run with
/// `--http PORT` and `server_args`, its state under `state`.
fn bridge_args(state: &Path, port: &str, server_args: &[&str]) -> Vec<String> {
    let state = state.join("s").display().to_string();
    let python = python().display().to_string();
    let mut args = strings(&[
        "mcp",
        "bridge",
        "--port",
        port,
        "--state-dir",
        &state,
        "--stop-daemon-on-exit",
        "--ready-timeout",
        "20s",
        "--",
        &python,
    ]);
    args.push(server_script());
    args.extend(strings(&["--http", port]));
    args.extend(strings(server_args));
    args
}

/// Owned copies of `args`.
fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|arg| (*arg).to_owned()).collect()
}

#[tokio::test]
#[ignore = "needs the Python MCP SDK and the pinned Claude Code CLI (scripts/test-tools)"]
async fn claude_code_through_the_supervisor_starts_as_fast_as_with_the_server_alone() {
    let cli = claude::require();
    let state = tempfile::tempdir().expect("tempdir");
    let supervised = json!(supervise_args(state.path(), &[]));
    compare(&cli, &supervised, "the supervisor").await;
}

/// Claude Code started with the server run directly, then through `debussy ARGS`, back
/// to back, up to three times: through debussy is within 1 s of directly at least once.
/// The stall this guards against (a listen acknowledgement under an id the client never
/// sent) costs the client's whole timeout on every try; load from other processes on the
/// machine costs a second only now and then.
async fn compare(cli: &claude::ClaudeCli, args: &Value, via: &str) {
    let python = python().display().to_string();
    let mut tries = Vec::new();
    for _ in 0..3 {
        let direct = timed_run(cli, &python, &json!([server_script()])).await;
        let through = timed_run(cli, crate::support::DEBUSSY, args).await;
        if through < direct + Duration::from_secs(1) {
            return;
        }
        tries.push((through, direct));
    }
    panic!("through {via} against directly, each try: {tries:?}");
}

#[tokio::test]
#[ignore = "needs the Python MCP SDK and the pinned Claude Code CLI (scripts/test-tools)"]
async fn claude_code_through_the_bridge_starts_as_fast_as_with_the_server_alone() {
    let cli = claude::require();
    let state = tempfile::tempdir().expect("tempdir");
    let reserved = Port::reserve();
    let port = reserved.number().to_string();
    let bridged = json!(bridge_args(state.path(), &port, &[]));
    compare(&cli, &bridged, "the bridge").await;
}

/// Claude Code restarts the server `t` (started as `debussy ARGS`, a `--grow` Python
/// server whose second generation has the tool `added_later`), then calls that tool in
/// the same session.
async fn check_new_tool_after_restart(cli: &claude::ClaudeCli, args: &Value) {
    let sandbox = Sandbox::new().expect("sandbox");
    let server = ModelServer::start(
        Scenario::new()
            .turn(restart_turn("the agent added a tool"))
            .turn(Turn::new().tool_use_id("toolu_new", "mcp__t__added_later", json!({})))
            .turn(Turn::reply("Done.")),
    )
    .expect("model server");
    let transcript = run_with_server_t(
        cli,
        &sandbox,
        &server,
        crate::support::DEBUSSY,
        args,
        "Restart the server, then use its new tool.",
    )
    .await;
    let lines = transcript.json();
    let (restart, restart_error) = tool_result(&lines, "toolu_restart");
    assert!(!restart_error, "{restart}");
    let (added, added_error) = tool_result(&lines, "toolu_new");
    assert!(!added_error, "the new tool was not callable: {added}");
    assert!(added.contains("new"), "{added}");
}

#[tokio::test]
#[ignore = "needs the Python MCP SDK and the pinned Claude Code CLI (scripts/test-tools)"]
async fn claude_code_calls_a_tool_the_restarted_server_added_through_the_supervisor() {
    let cli = claude::require();
    let state = tempfile::tempdir().expect("tempdir");
    // Python takes seconds to import the SDK on a loaded machine: more than the default
    // restart readiness timeout.
    let config = state.path().join("config.yaml");
    std::fs::write(&config, "mcp:\n  readiness_timeout: 60\n").expect("config");
    let mut args = vec!["--config".to_owned(), config.display().to_string()];
    args.extend(supervise_args(state.path(), &["--grow"]));
    check_new_tool_after_restart(&cli, &json!(args)).await;
}

#[tokio::test]
#[ignore = "needs the Python MCP SDK and the pinned Claude Code CLI (scripts/test-tools)"]
async fn claude_code_calls_a_tool_the_restarted_daemon_added_through_the_bridge() {
    let cli = claude::require();
    let state = tempfile::tempdir().expect("tempdir");
    let reserved = Port::reserve();
    let port = reserved.number().to_string();
    let bridged = json!(bridge_args(state.path(), &port, &["--grow"]));
    check_new_tool_after_restart(&cli, &bridged).await;
}
