//! Parser for the Gemini CLI's `--output-format stream-json` lines: `init`, `message`
//! (the user's prompt, the assistant's text in `delta` pieces), `tool_use`,
//! `tool_result`, `error` and the final `result` with `stats`.
//!
//! Tools map onto the common vocabulary so the tracker, the HUD, the checkpoint and
//! compliance read Gemini as they read Claude Code: `run_shell_command` is `Bash`
//! `{command}`, `write_file` `Write` and `replace` `Edit` (`file_path`), `read_file`
//! `Read`, `write_todos` the todo list (`TodoWrite`); others keep their names. The
//! Gemini CLI reports no usage until `result`, whose `stats` are summed over every model
//! request: billing, never a context figure. The context is estimated
//! ([`UsageReporting::Nothing`](crate::agent::UsageReporting::Nothing)).
//!
//! The assistant's streamed pieces of one message share an id ([`Parser`] counts the
//! messages), so they read as one message made of continuing text.

use std::sync::atomic::{AtomicU64, Ordering};

use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::agent::event::{
    AgentEvent, AssistantBlock, AssistantMessage, SessionInit, SessionResult, ToolResult,
    ToolResultContent, ToolUse, UserBlock, UserMessage,
};
use crate::agent::lenient::{RawError, lenient_bool, lenient_string, lenient_u64, read_json_line};
use crate::agent::usage::Usage;

/// Reads one session's lines, numbering the assistant's messages.
#[derive(Debug, Default)]
pub struct Parser {
    /// The current assistant message; a line of any other kind ends it.
    message: AtomicU64,
    /// Whether the last line was a piece of the current assistant message.
    in_message: std::sync::atomic::AtomicBool,
    /// Read the prompt (the user's `message`) too, for a transcript read on its own;
    /// live, the meter counts the prompt from what debussy sent.
    with_prompt: bool,
}

impl Parser {
    /// A parser that also reads the prompt, for `debussy replay`.
    #[must_use]
    pub fn with_prompt() -> Self {
        Parser {
            with_prompt: true,
            ..Parser::default()
        }
    }

    /// Parse one line into the events it carries. Never fails: a line that is not JSON
    /// becomes [`AgentEvent::Text`], an unknown type [`AgentEvent::Unknown`].
    pub fn parse_line(&self, line: &[u8]) -> Vec<AgentEvent> {
        read_json_line(line, |line, raw: Result<RawLine, _>| match raw {
            Ok(raw) => self.read(line, raw),
            Err(event) => vec![event],
        })
    }

    /// The events of `raw`, numbering the assistant's messages.
    fn read(&self, line: &[u8], raw: RawLine) -> Vec<AgentEvent> {
        let piece =
            raw.kind.as_deref() == Some("message") && raw.role.as_deref() == Some("assistant");
        let continues = piece && self.in_message.swap(piece, Ordering::Relaxed);
        if !piece {
            self.in_message.store(false, Ordering::Relaxed);
        } else if !continues {
            self.message.fetch_add(1, Ordering::Relaxed);
        }
        let number = self.message.load(Ordering::Relaxed);
        raw.into_events(line, number, continues, self.with_prompt)
    }
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RawLine {
    #[serde(rename = "type", deserialize_with = "lenient_string")]
    kind: Option<String>,
    #[serde(deserialize_with = "lenient_string")]
    session_id: Option<String>,
    #[serde(deserialize_with = "lenient_string")]
    model: Option<String>,
    #[serde(deserialize_with = "lenient_string")]
    role: Option<String>,
    #[serde(deserialize_with = "lenient_string")]
    content: Option<String>,
    #[serde(deserialize_with = "lenient_bool")]
    delta: Option<bool>,
    #[serde(deserialize_with = "lenient_string")]
    tool_name: Option<String>,
    #[serde(deserialize_with = "lenient_string")]
    tool_id: Option<String>,
    parameters: Option<Map<String, Value>>,
    #[serde(deserialize_with = "lenient_string")]
    status: Option<String>,
    #[serde(deserialize_with = "lenient_string")]
    output: Option<String>,
    #[serde(deserialize_with = "lenient_string")]
    message: Option<String>,
    error: Option<RawError>,
    stats: Option<RawStats>,
}

/// `result.stats`: totals over the session's requests.
#[derive(Deserialize, Default)]
#[serde(default)]
struct RawStats {
    #[serde(deserialize_with = "lenient_u64")]
    input_tokens: Option<u64>,
    #[serde(deserialize_with = "lenient_u64")]
    output_tokens: Option<u64>,
    #[serde(deserialize_with = "lenient_u64")]
    cached: Option<u64>,
    #[serde(deserialize_with = "lenient_u64")]
    duration_ms: Option<u64>,
}

/// The common name and input of a Gemini CLI tool call.
fn common_tool(name: &str, parameters: Map<String, Value>) -> (String, Value) {
    let mut input = Value::Object(parameters);
    let renamed = match name {
        "run_shell_command" => "Bash",
        "write_file" => "Write",
        "replace" => "Edit",
        "read_file" => "Read",
        "write_todos" => {
            let todos: Vec<Value> = input
                .get("todos")
                .and_then(Value::as_array)
                .map(|todos| {
                    todos
                        .iter()
                        .map(|todo| {
                            let text = todo
                                .get("description")
                                .or_else(|| todo.get("content"))
                                .cloned()
                                .unwrap_or(Value::Null);
                            let status = todo.get("status").cloned().unwrap_or(Value::Null);
                            json!({ "content": text, "status": status })
                        })
                        .collect()
                })
                .unwrap_or_default();
            input = json!({ "todos": todos });
            "TodoWrite"
        }
        other => other,
    };
    (renamed.to_owned(), input)
}

impl RawLine {
    fn into_events(
        self,
        line: &[u8],
        message: u64,
        continues: bool,
        with_prompt: bool,
    ) -> Vec<AgentEvent> {
        match self.kind.as_deref().unwrap_or_default() {
            "init" => vec![AgentEvent::Init(SessionInit {
                session_id: self.session_id,
                model: self.model,
                ..SessionInit::default()
            })],
            // The prompt, which the meter counts from what debussy sent.
            "message" if self.role.as_deref() == Some("user") && !with_prompt => Vec::new(),
            "message" if self.role.as_deref() == Some("user") => {
                vec![AgentEvent::User(UserMessage {
                    parent_tool_use_id: None,
                    content: vec![UserBlock::Text {
                        text: self.content.unwrap_or_default(),
                    }],
                })]
            }
            "message" => {
                let text = self.content.unwrap_or_default();
                vec![AgentEvent::Assistant(AssistantMessage {
                    message_id: Some(format!("gemini-message-{message}")),
                    content: vec![AssistantBlock::Text { text }],
                    continues: continues && self.delta.unwrap_or(false),
                    ..AssistantMessage::default()
                })]
            }
            "tool_use" => {
                let id = self.tool_id.unwrap_or_default();
                let (name, input) = common_tool(
                    self.tool_name.as_deref().unwrap_or_default(),
                    self.parameters.unwrap_or_default(),
                );
                vec![AgentEvent::Assistant(AssistantMessage {
                    message_id: Some(id.clone()),
                    content: vec![AssistantBlock::ToolUse(ToolUse { id, name, input })],
                    ..AssistantMessage::default()
                })]
            }
            "tool_result" => {
                let is_error = self.status.as_deref().is_some_and(|s| s != "success");
                let text = self
                    .output
                    .or_else(|| self.error.and_then(|error| error.message))
                    .unwrap_or_default();
                vec![AgentEvent::User(UserMessage {
                    parent_tool_use_id: None,
                    content: vec![UserBlock::ToolResult(ToolResult {
                        tool_use_id: self.tool_id.unwrap_or_default(),
                        content: ToolResultContent::Text(text),
                        is_error,
                    })],
                })]
            }
            "error" => vec![AgentEvent::text(format!(
                "gemini: {}",
                self.message.unwrap_or_default()
            ))],
            "result" => {
                let success = self.status.as_deref() == Some("success");
                let error = self.error.and_then(|error| error.message);
                let stats = self.stats.unwrap_or_default();
                let cached = stats.cached.unwrap_or(0);
                vec![AgentEvent::Result(SessionResult {
                    subtype: if success {
                        "success"
                    } else {
                        "error_during_execution"
                    }
                    .to_owned(),
                    is_error: !success,
                    result: error.clone(),
                    duration_ms: stats.duration_ms,
                    usage: Some(Usage {
                        input_tokens: stats.input_tokens.unwrap_or(0).saturating_sub(cached),
                        cache_read_input_tokens: cached,
                        cache_creation_input_tokens: 0,
                        output_tokens: stats.output_tokens.unwrap_or(0),
                    }),
                    errors: error.into_iter().collect(),
                    ..SessionResult::default()
                })]
            }
            _ => vec![AgentEvent::unknown(line, self.kind, None)],
        }
    }
}

#[cfg(test)]
#[path = "stream_json_tests.rs"]
mod tests;
