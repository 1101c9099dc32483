//! The real Claude Code CLI as the MCP client of `debussy mcp supervise` and of
//! `debussy mcp bridge`, driven by a scripted model: across restarts of an rmcp server
//! (`restarts`) and of a Python SDK server speaking both protocol revisions
//! (`stateless`).

use std::path::PathBuf;

use serde_json::{Value, json};

use crate::support::claude::{self, ClaudeCli, RUN_TIMEOUT, Sandbox, Transcript};
use crate::support::model_server::{ModelServer, Turn};

mod restarts;
mod stateless;

/// The model's turn that has Claude Code call the injected `restart_server` of server `t`
/// (tool-use id `toolu_restart`), giving `reason`.
pub(super) fn restart_turn(reason: &str) -> Turn {
    Turn::new().tool_use_id(
        "toolu_restart",
        "mcp__t__restart_server",
        json!({ "reason": reason }),
    )
}

/// The rmcp test server (`examples/mcp_test_server.rs`), built once per test run.
pub(super) fn test_server() -> PathBuf {
    crate::support::example_build::mcp_test_server()
}

/// The text of every tool result Claude Code fed back to the model, by tool_use id.
pub(super) fn tool_results(lines: &[Value]) -> Vec<(String, String, bool)> {
    let mut out = Vec::new();
    for line in lines.iter().filter(|l| l["type"] == "user") {
        let Some(blocks) = line["message"]["content"].as_array() else {
            continue;
        };
        for block in blocks.iter().filter(|b| b["type"] == "tool_result") {
            let text = match &block["content"] {
                Value::String(text) => text.clone(),
                Value::Array(parts) => parts
                    .iter()
                    .filter_map(|p| p["text"].as_str())
                    .collect::<Vec<_>>()
                    .join(""),
                _ => String::new(),
            };
            out.push((
                block["tool_use_id"].as_str().unwrap_or_default().to_owned(),
                text,
                block["is_error"] == true,
            ));
        }
    }
    out
}

/// The result of the tool call `id` in Claude Code's transcript: its text and whether it
/// was an error.
pub(super) fn tool_result(lines: &[Value], id: &str) -> (String, bool) {
    let results = tool_results(lines);
    results
        .iter()
        .find(|(tool_use_id, _, _)| tool_use_id == id)
        .map(|(_, text, error)| (text.clone(), *error))
        .unwrap_or_else(|| panic!("no result for {id}: {results:#?}"))
}

/// Write `mcp.json` in the sandbox: the MCP server `t`, started as `command ARGS`.
fn write_config(sandbox: &Sandbox, command: &str, args: &Value) -> PathBuf {
    let config = sandbox.cwd().join("mcp.json");
    let body = json!({"mcpServers": {"t": {"command": command, "args": args}}});
    std::fs::write(&config, serde_json::to_vec_pretty(&body).expect("json"))
        .expect("write the MCP config");
    config
}

/// Claude Code with the MCP server `t` started as `program ARGS` (its tools allowed),
/// talking to `server`, given `prompt`: its transcript, once the run ended in success
/// with `t` connected.
pub(super) async fn run_with_server_t(
    cli: &ClaudeCli,
    sandbox: &Sandbox,
    server: &ModelServer,
    program: &str,
    args: &Value,
    prompt: &str,
) -> Transcript {
    let config = write_config(sandbox, program, args);
    let mut command = sandbox.command(cli, server, claude::DEFAULT_MODEL);
    command
        .arg("--mcp-config")
        .arg(config)
        .args(["--allowedTools", "mcp__t"]);
    let transcript = claude::run(command, prompt, RUN_TIMEOUT)
        .await
        .expect("claude run");
    let result = transcript.result().unwrap_or_else(|| {
        panic!(
            "no result line; stderr: {}\nstdout: {:#?}",
            transcript.stderr, transcript.lines
        )
    });
    assert_eq!(result["subtype"], "success", "{result}");
    let init = transcript.system("init");
    let servers = &init.first().expect("init line")["mcp_servers"];
    assert!(
        servers.as_array().is_some_and(|s| s
            .iter()
            .any(|s| s["name"] == "t" && s["status"] == "connected")),
        "{servers}"
    );
    transcript
}
