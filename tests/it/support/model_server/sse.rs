//! Encodes a scripted [`Turn`] the way the Anthropic Messages API sends it: an SSE
//! event sequence for streaming requests, one JSON message otherwise, and the error
//! body for [`Turn::api_error`] turns.
//!
//! The event order is the API's: `message_start` (with the usage), then per block
//! `content_block_start`, one or more `content_block_delta`s (`text_delta`,
//! `thinking_delta` + `signature_delta`, `input_json_delta`) and `content_block_stop`,
//! then `message_delta` (stop reason, usage) and `message_stop`.

use serde_json::{Value, json};

use super::scenario::{ApiError, Block, Turn};

/// Longest delta the encoder sends; longer text is split (at char boundaries) so the
/// client really reassembles partial deltas.
const MAX_DELTA_BYTES: usize = 48;

/// The SSE events of one streamed turn, split where a [`super::scenario::Pause::Hold`]
/// waits: `head` is `message_start` and every content block, `tail` is
/// `message_delta` and `message_stop`.
#[derive(Debug)]
pub(super) struct Encoded {
    pub(super) head: Vec<String>,
    pub(super) tail: Vec<String>,
}

fn event(name: &str, data: &Value) -> String {
    format!("event: {name}\ndata: {data}\n\n")
}

/// Splits `text` into pieces of at most `max` bytes, never inside a character.
/// An empty text yields one empty piece.
fn pieces(text: &str, max: usize) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text;
    while rest.len() > max {
        let mut cut = max;
        while !rest.is_char_boundary(cut) {
            cut -= 1;
        }
        let (piece, tail) = rest.split_at(cut);
        out.push(piece);
        rest = tail;
    }
    out.push(rest);
    out
}

fn content_block_start(block: &Block) -> Value {
    match block {
        Block::Text(_) => json!({"type": "text", "text": ""}),
        Block::Thinking(_) => json!({"type": "thinking", "thinking": "", "signature": ""}),
        Block::ToolUse { id, name, .. } => {
            json!({"type": "tool_use", "id": id, "name": name, "input": {}})
        }
    }
}

fn deltas(block: &Block) -> Vec<Value> {
    match block {
        Block::Text(text) => pieces(text, MAX_DELTA_BYTES)
            .into_iter()
            .map(|piece| json!({"type": "text_delta", "text": piece}))
            .collect(),
        Block::Thinking(thinking) => {
            let mut out: Vec<Value> = pieces(thinking, MAX_DELTA_BYTES)
                .into_iter()
                .map(|piece| json!({"type": "thinking_delta", "thinking": piece}))
                .collect();
            out.push(json!({"type": "signature_delta", "signature": "c2NyaXB0ZWQtc2lnbmF0dXJl"}));
            out
        }
        Block::ToolUse { input, .. } => {
            let encoded = input.to_string();
            pieces(&encoded, MAX_DELTA_BYTES)
                .into_iter()
                .map(|piece| json!({"type": "input_json_delta", "partial_json": piece}))
                .collect()
        }
    }
}

/// The complete block, as a non-streaming message carries it.
fn block_json(block: &Block) -> Value {
    match block {
        Block::Text(text) => json!({"type": "text", "text": text}),
        Block::Thinking(thinking) => json!({
            "type": "thinking",
            "thinking": thinking,
            "signature": "c2NyaXB0ZWQtc2lnbmF0dXJl",
        }),
        Block::ToolUse { id, name, input } => {
            json!({"type": "tool_use", "id": id, "name": name, "input": input})
        }
    }
}

/// The SSE events for `turn`, answering a request for `model`.
pub(super) fn stream(turn: &Turn, model: &str, message_id: &str) -> Encoded {
    let usage = turn.usage.to_json();
    let mut head = vec![event(
        "message_start",
        &json!({
            "type": "message_start",
            "message": {
                "id": message_id,
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [],
                "stop_reason": null,
                "stop_sequence": null,
                "usage": usage,
            },
        }),
    )];
    for (index, block) in turn.blocks.iter().enumerate() {
        head.push(event(
            "content_block_start",
            &json!({
                "type": "content_block_start",
                "index": index,
                "content_block": content_block_start(block),
            }),
        ));
        for delta in deltas(block) {
            head.push(event(
                "content_block_delta",
                &json!({"type": "content_block_delta", "index": index, "delta": delta}),
            ));
        }
        head.push(event(
            "content_block_stop",
            &json!({"type": "content_block_stop", "index": index}),
        ));
    }
    let tail = vec![
        event(
            "message_delta",
            &json!({
                "type": "message_delta",
                "delta": {"stop_reason": turn.effective_stop_reason(), "stop_sequence": null},
                "usage": usage,
            }),
        ),
        event("message_stop", &json!({"type": "message_stop"})),
    ];
    Encoded { head, tail }
}

/// The non-streaming message for `turn`.
pub(super) fn message(turn: &Turn, model: &str, message_id: &str) -> Value {
    json!({
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": turn.blocks.iter().map(block_json).collect::<Vec<_>>(),
        "stop_reason": turn.effective_stop_reason(),
        "stop_sequence": null,
        "usage": turn.usage.to_json(),
    })
}

/// The error body the API sends with a non-2xx status.
pub(super) fn error_body(error: &ApiError) -> Value {
    json!({
        "type": "error",
        "error": {"type": error.error_type, "message": error.message},
    })
}
