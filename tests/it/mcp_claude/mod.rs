//! The real Claude Code CLI as the MCP client of `debussy mcp supervise` and of
//! `debussy mcp bridge`, driven by a scripted model: across restarts of an rmcp server
//! (`restarts`) and of a Python SDK server speaking both protocol revisions
//! (`stateless`).

use std::path::PathBuf;
use std::process::Command as StdCommand;

use serde_json::Value;

mod restarts;
mod stateless;

/// The rmcp test server (`examples/mcp_test_server.rs`), built on demand.
pub(super) fn test_server() -> PathBuf {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let status = StdCommand::new(cargo)
        .args(["build", "--quiet", "--example", "mcp_test_server"])
        .current_dir(&root)
        .status()
        .expect("run cargo build --example mcp_test_server");
    assert!(status.success(), "building the test server failed");
    PathBuf::from(crate::support::DEBUSSY)
        .parent()
        .expect("target dir")
        .join("examples/mcp_test_server")
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
