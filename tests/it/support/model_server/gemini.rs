//! Encodes a scripted [`Turn`] the way the Gemini API streams it
//! (`…:streamGenerateContent?alt=sse`), for the Gemini CLI: one SSE `data:` chunk holding
//! the whole candidate (text parts, thought parts, `functionCall` parts) and the
//! `usageMetadata`. A [`super::scenario::Pause::Hold`] is not available: the usage comes
//! with the content.

use serde_json::{Value, json};

use super::scenario::{ApiError, Block, Turn};
use super::sse::Encoded;

fn part(block: &Block) -> Value {
    match block {
        Block::Text(text) => json!({"text": text}),
        Block::Thinking(thinking) => json!({"text": thinking, "thought": true}),
        Block::ToolUse { id, name, input } => {
            json!({"functionCall": {"id": id, "name": name, "args": input}})
        }
    }
}

/// The response body for `turn` (one chunk of the stream, or the whole non-streamed
/// answer).
pub(super) fn response(turn: &Turn, model: &str) -> Value {
    let usage = turn.usage;
    let prompt = usage.context_tokens();
    json!({
        "candidates": [{
            "content": {"role": "model", "parts": turn.blocks.iter().map(part).collect::<Vec<_>>()},
            "finishReason": "STOP",
            "index": 0,
        }],
        "usageMetadata": {
            "promptTokenCount": prompt,
            "cachedContentTokenCount": usage.cache_read_input_tokens,
            "candidatesTokenCount": usage.output_tokens,
            "totalTokenCount": prompt + usage.output_tokens,
        },
        "modelVersion": model,
    })
}

/// The SSE stream for `turn`: everything in `head`.
pub(super) fn stream(turn: &Turn, model: &str) -> Encoded {
    Encoded {
        head: vec![format!("data: {}\r\n\r\n", response(turn, model))],
        tail: Vec::new(),
    }
}

/// The error body the Gemini API sends with a non-2xx status.
pub(super) fn error_body(status: u16, error: &ApiError) -> Value {
    json!({"error": {"code": status, "message": error.message, "status": error.error_type}})
}
