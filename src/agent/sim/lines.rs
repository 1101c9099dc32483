//! Builders for the Claude Code `stream-json` lines the sim agent prints, and the writer
//! that prints them one per line, flushed.
//!
//! The shapes mirror what Claude Code prints (field names, nesting, `null`s), so whatever
//! reads the sim agent reads Claude Code the same way.

use std::io::{self, Write};

use serde_json::{Value, json};

use crate::agent::event::Usage;

/// Prints one JSON value per line and flushes after each, as an agent streaming live does.
pub(super) struct LineWriter<W: Write> {
    out: W,
    buf: Vec<u8>,
}

impl<W: Write> LineWriter<W> {
    pub(super) fn new(out: W) -> Self {
        LineWriter {
            out,
            buf: Vec::new(),
        }
    }

    pub(super) fn emit(&mut self, value: &Value) -> io::Result<()> {
        self.buf.clear();
        serde_json::to_writer(&mut self.buf, value)?;
        self.buf.push(b'\n');
        self.out.write_all(&self.buf)?;
        self.out.flush()
    }

    /// Print raw bytes as they are (used to simulate a line cut off by a crash).
    pub(super) fn raw(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.out.write_all(bytes)?;
        self.out.flush()
    }
}

/// The tools the sim agent says it has, in `system`/`init`.
pub(super) const TOOLS: &[&str] = &["Task", "Bash", "Read", "Write", "TodoWrite"];

/// Line builders for one session.
pub(super) struct Lines {
    pub(super) session_id: String,
    pub(super) model: String,
}

impl Lines {
    pub(super) fn init(&self, cwd: &str) -> Value {
        json!({
            "type": "system",
            "subtype": "init",
            "cwd": cwd,
            "session_id": self.session_id,
            "tools": TOOLS,
            "mcp_servers": [],
            "model": self.model,
            "permissionMode": "default",
            "slash_commands": [],
            "apiKeySource": "none",
            "claude_code_version": concat!("debussy-sim ", env!("CARGO_PKG_VERSION")),
            "output_style": "default",
            "agents": ["general-purpose"],
            "uuid": uuid(),
        })
    }

    pub(super) fn assistant(
        &self,
        message_id: &str,
        parent: Option<&str>,
        block: Value,
        usage: &Usage,
    ) -> Value {
        json!({
            "type": "assistant",
            "message": {
                "model": self.model,
                "id": message_id,
                "type": "message",
                "role": "assistant",
                "content": [block],
                "stop_reason": null,
                "stop_sequence": null,
                "usage": {
                    "input_tokens": usage.input_tokens,
                    "cache_creation_input_tokens": usage.cache_creation_input_tokens,
                    "cache_read_input_tokens": usage.cache_read_input_tokens,
                    "output_tokens": usage.output_tokens,
                    "service_tier": "standard",
                },
                "context_management": null,
            },
            "parent_tool_use_id": parent,
            "session_id": self.session_id,
            "uuid": uuid(),
        })
    }

    pub(super) fn user_text(&self, parent: Option<&str>, text: &str) -> Value {
        json!({
            "type": "user",
            "message": {"role": "user", "content": [{"type": "text", "text": text}]},
            "parent_tool_use_id": parent,
            "session_id": self.session_id,
            "uuid": uuid(),
        })
    }

    pub(super) fn tool_result(
        &self,
        parent: Option<&str>,
        tool_use_id: &str,
        content: Value,
        is_error: bool,
    ) -> Value {
        json!({
            "type": "user",
            "message": {
                "role": "user",
                "content": [{
                    "tool_use_id": tool_use_id,
                    "type": "tool_result",
                    "content": content,
                    "is_error": is_error,
                }],
            },
            "parent_tool_use_id": parent,
            "session_id": self.session_id,
            "uuid": uuid(),
        })
    }

    pub(super) fn compact_boundary(&self, trigger: &str, pre_tokens: u64) -> Value {
        json!({
            "type": "system",
            "subtype": "compact_boundary",
            "session_id": self.session_id,
            "uuid": uuid(),
            "compact_metadata": {"trigger": trigger, "pre_tokens": pre_tokens},
        })
    }

    pub(super) fn result(&self, end: &ResultLine<'_>) -> Value {
        let mut line = json!({
            "type": "result",
            "subtype": end.subtype,
            "is_error": end.is_error,
            "duration_ms": end.duration_ms,
            "duration_api_ms": end.duration_ms,
            "num_turns": end.num_turns,
            "result": end.text,
            "session_id": self.session_id,
            "total_cost_usd": end.cost_usd,
            "usage": {
                "input_tokens": end.totals.input_tokens,
                "cache_creation_input_tokens": end.totals.cache_creation_input_tokens,
                "cache_read_input_tokens": end.totals.cache_read_input_tokens,
                "output_tokens": end.totals.output_tokens,
                "service_tier": "standard",
            },
            "modelUsage": {
                self.model.clone(): {
                    "inputTokens": end.totals.input_tokens,
                    "outputTokens": end.totals.output_tokens,
                    "cacheReadInputTokens": end.totals.cache_read_input_tokens,
                    "cacheCreationInputTokens": end.totals.cache_creation_input_tokens,
                    "webSearchRequests": 0,
                    "costUSD": end.cost_usd,
                    "contextWindow": end.window,
                    "maxOutputTokens": 64000,
                },
            },
            "permission_denials": [],
            "uuid": uuid(),
        });
        if !end.errors.is_empty()
            && let Some(object) = line.as_object_mut()
        {
            object.insert("errors".to_owned(), json!(end.errors));
        }
        line
    }
}

/// What the final `result` line reports.
pub(super) struct ResultLine<'a> {
    pub(super) subtype: &'a str,
    pub(super) is_error: bool,
    pub(super) text: &'a str,
    pub(super) duration_ms: u64,
    pub(super) num_turns: u32,
    pub(super) cost_usd: f64,
    pub(super) totals: Usage,
    pub(super) window: u64,
    pub(super) errors: &'a [String],
}

fn uuid() -> String {
    uuid::Uuid::new_v4().to_string()
}
