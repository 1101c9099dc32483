//! Claude Code keeps its MCP session while the rmcp test server behind the supervisor,
//! or the daemon behind the bridge, restarts: it calls `whoami`, then `restart_server`,
//! then `whoami` again, and both `whoami` calls succeed with different server pids.

use serde_json::{Value, json};

use super::{restart_turn, run_with_server_t, test_server, tool_result};
use crate::support::claude::{self, Sandbox};
use crate::support::model_server::{ModelServer, Scenario, Turn};
use crate::support::ports::Port;

#[tokio::test]
#[ignore = "needs the pinned Claude Code CLI (scripts/test-tools)"]
async fn claude_code_keeps_its_mcp_session_across_restart_server() {
    let cli = claude::require();
    let sandbox = Sandbox::new().expect("sandbox");
    let state = sandbox.cwd().join("mcp-state");
    let args = json!([
        "mcp",
        "supervise",
        "--name",
        "t",
        "--state-dir",
        state,
        "--",
        test_server()
    ]);
    check_restart_through(&cli, &sandbox, &args).await;
}

#[tokio::test]
#[ignore = "needs the pinned Claude Code CLI (scripts/test-tools)"]
async fn claude_code_keeps_its_mcp_session_across_a_bridged_daemon_restart() {
    let cli = claude::require();
    let sandbox = Sandbox::new().expect("sandbox");
    let state = sandbox.cwd().join("mcp-state");
    let reserved = Port::reserve();
    let port = reserved.number();
    let args = json!([
        "mcp",
        "bridge",
        "--port",
        port.to_string(),
        "--state-dir",
        state,
        "--stop-daemon-on-exit",
        "--",
        test_server(),
        "--http",
        port.to_string()
    ]);
    check_restart_through(&cli, &sandbox, &args).await;
    let record: Value =
        serde_json::from_slice(&std::fs::read(state.join("daemon.json")).expect("daemon.json"))
            .expect("daemon.json is JSON");
    let pids: Vec<u64> = record["starts"]
        .as_array()
        .expect("starts")
        .iter()
        .filter_map(|s| s["pid"].as_u64())
        .collect();
    assert_eq!(pids.len(), 2, "{record}");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let running = || {
        pids.iter()
            .filter(|pid| std::path::Path::new(&format!("/proc/{pid}")).exists())
            .filter(|pid| {
                std::fs::read_to_string(format!("/proc/{pid}/stat"))
                    .is_ok_and(|stat| !stat.contains(") Z"))
            })
            .count()
    };
    while running() > 0 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let left = running();
    for pid in &pids {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(i32::try_from(*pid).expect("pid fits")),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    assert_eq!(
        left, 0,
        "a daemon outlived Claude Code and its bridge: {pids:?}"
    );
}

/// Claude Code with the MCP server `t` started as `debussy ARGS`: whoami, restart,
/// whoami, all answered, the second by a new server process.
async fn check_restart_through(cli: &claude::ClaudeCli, sandbox: &Sandbox, args: &Value) {
    let server = ModelServer::start(
        Scenario::new()
            .turn(Turn::new().tool_use_id("toolu_whoami_1", "mcp__t__whoami", json!({})))
            .turn(restart_turn("the agent edited the server"))
            .turn(Turn::new().tool_use_id("toolu_whoami_2", "mcp__t__whoami", json!({})))
            .turn(Turn::reply("Restarted.")),
    )
    .expect("model server");

    let transcript = run_with_server_t(
        cli,
        sandbox,
        &server,
        crate::support::DEBUSSY,
        args,
        "Check the server, restart it, check again.",
    )
    .await;
    let lines = transcript.json();
    let (first, first_error) = tool_result(&lines, "toolu_whoami_1");
    let (restart, restart_error) = tool_result(&lines, "toolu_restart");
    let (second, second_error) = tool_result(&lines, "toolu_whoami_2");
    assert!(
        !first_error && !restart_error && !second_error,
        "{first}\n{restart}\n{second}"
    );
    let first: Value = serde_json::from_str(&first).expect("whoami is JSON");
    let second: Value = serde_json::from_str(&second).expect("whoami is JSON");
    let restart: Value = serde_json::from_str(&restart).expect("restart_server is JSON");
    assert_eq!(restart["restarted"], true, "{restart}");
    assert_ne!(first["pid"], second["pid"], "the server was not restarted");
    assert_eq!(first["generation"], 1);
    assert_eq!(second["generation"], 2);
    assert_eq!(restart["new"]["pid"], second["pid"]);
    server.assert_all_scripted();
}
