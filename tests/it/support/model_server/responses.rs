//! Encodes a scripted [`Turn`] the way the OpenAI Responses API streams it, for the Codex
//! CLI: `response.created`, one `response.output_item.done` per block (a `message` with
//! `output_text`, a `reasoning` summary, a `function_call` with JSON-encoded
//! `arguments`), then `response.completed` with the usage.
//!
//! The usage maps the Messages API fields onto OpenAI's: `input_tokens` is the whole
//! input (uncached + cache read + cache write) with the cache reads as
//! `input_tokens_details.cached_tokens`, so the context a turn occupies is the same
//! figure for either CLI. A [`super::scenario::Pause::Hold`] holds the stream before
//! `response.completed`.
//!
//! Codex (0.171) offers MCP tools only through its client-run tool search, each server's
//! tools in a namespace `mcp__SERVER`; so a tool call named `tool_search` streams as a
//! `tool_search_call` (its input the search's arguments), and one named
//! `mcp__SERVER__TOOL` (as Claude Code names MCP tools) as a call of `TOOL` in the
//! namespace `mcp__SERVER`.

use serde_json::{Value, json};

use super::scenario::{ApiError, Block, Turn};
use super::sse::Encoded;

fn event(data: &Value) -> String {
    let name = data
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("message");
    format!("event: {name}\ndata: {data}\n\n")
}

fn item(block: &Block, index: usize, response_id: &str) -> Value {
    match block {
        Block::Text(text) => json!({
            "type": "message",
            "id": format!("msg_{response_id}_{index}"),
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}],
        }),
        Block::Thinking(thinking) => json!({
            "type": "reasoning",
            "id": format!("rs_{response_id}_{index}"),
            "summary": [{"type": "summary_text", "text": thinking}],
        }),
        Block::ToolUse { id, name, input } if name == "tool_search" => json!({
            "type": "tool_search_call",
            "id": format!("tsc_{response_id}_{index}"),
            "call_id": id,
            "execution": "client",
            "arguments": input,
            "status": "completed",
        }),
        Block::ToolUse { id, name, input } => {
            let mut call = json!({
                "type": "function_call",
                "id": format!("fc_{response_id}_{index}"),
                "call_id": id,
                "name": name,
                "arguments": input.to_string(),
                "status": "completed",
            });
            if let Some((server, tool)) = mcp_tool(name) {
                call["namespace"] = json!(format!("mcp__{server}"));
                call["name"] = json!(tool);
            }
            call
        }
    }
}

/// The server and tool of an MCP tool named `mcp__SERVER__TOOL`.
fn mcp_tool(name: &str) -> Option<(&str, &str)> {
    name.strip_prefix("mcp__")?.split_once("__")
}

/// The usage object of a turn, in the Responses API's terms.
pub(super) fn usage(turn: &Turn) -> Value {
    let usage = turn.usage;
    let input = usage.context_tokens();
    json!({
        "input_tokens": input,
        "input_tokens_details": {"cached_tokens": usage.cache_read_input_tokens},
        "output_tokens": usage.output_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": input + usage.output_tokens,
    })
}

/// The SSE events for `turn`; `tail` is `response.completed`.
pub(super) fn stream(turn: &Turn, model: &str, response_id: &str) -> Encoded {
    let mut head = vec![event(&json!({
        "type": "response.created",
        "response": {"id": response_id, "model": model, "status": "in_progress"},
    }))];
    for (index, block) in turn.blocks.iter().enumerate() {
        head.push(event(&json!({
            "type": "response.output_item.done",
            "output_index": index,
            "item": item(block, index, response_id),
        })));
    }
    let tail = vec![event(&json!({
        "type": "response.completed",
        "response": {
            "id": response_id,
            "model": model,
            "status": "completed",
            "usage": usage(turn),
        },
    }))];
    Encoded { head, tail }
}

/// The error body the Responses API sends with a non-2xx status.
pub(super) fn error_body(error: &ApiError) -> Value {
    json!({"error": {"type": error.error_type, "message": error.message, "code": null}})
}
