//! Parser for what `codex exec --json` prints on stdout: one thread event per line
//! (`thread.started`, `turn.started`, `item.started/updated/completed`, `turn.completed`,
//! `turn.failed`, `error`).
//!
//! Items map onto the common vocabulary so the tracker, the HUD, the checkpoint and
//! compliance read Codex as they read Claude Code:
//!
//! | Codex item | events |
//! |---|---|
//! | `agent_message` | assistant text |
//! | `reasoning` | assistant thinking |
//! | `command_execution` | a `Bash` call `{command}` when it starts, its result (output, error when the exit code is not 0) when it completes |
//! | `file_change` | one `Edit` call `{file_path, kind}` per changed file, with its result |
//! | `mcp_tool_call` | a `mcp__SERVER__TOOL` call with the arguments, then its result |
//! | `web_search` | a `WebSearch` call `{query}` |
//! | `todo_list` | a `TodoWrite` call with the list, each item `completed` or `pending` |
//! | `error` | the agent's own retry (`Reconnecting... 1/5 (…)`, see [`super::failures`]), else a text line |
//!
//! `turn.completed` is the session's successful `result` (its usage is the turn's sum
//! over every model request, so it is billing, never a context figure); `turn.failed` is
//! an error `result`. Context figures come from the rollout file ([`super::rollout`]).

use serde::Deserialize;
use serde_json::{Value, json};

use crate::agent::event::{
    AgentEvent, AssistantBlock, AssistantMessage, SessionInit, SessionResult, ToolResult,
    ToolResultContent, ToolUse, UserBlock, UserMessage,
};
use crate::agent::lenient::{
    RawError, lenient_bool, lenient_i64, lenient_string, lenient_u64, read_json_line,
};

/// Parse one stdout line into the events it carries. Never fails: a line that is not
/// JSON becomes [`AgentEvent::Text`], an unknown type [`AgentEvent::Unknown`].
#[must_use]
pub fn parse_line(line: &[u8]) -> Vec<AgentEvent> {
    read_json_line(line, |line, raw: Result<RawEvent, _>| match raw {
        Ok(raw) => raw.into_events(line),
        Err(event) => vec![event],
    })
}

/// Every field of every event we read, all optional.
#[derive(Deserialize, Default)]
#[serde(default)]
struct RawEvent {
    #[serde(rename = "type", deserialize_with = "lenient_string")]
    kind: Option<String>,
    #[serde(deserialize_with = "lenient_string")]
    thread_id: Option<String>,
    #[serde(deserialize_with = "lenient_string")]
    message: Option<String>,
    error: Option<RawError>,
    usage: Option<RawTurnUsage>,
    item: Option<RawItem>,
}

/// `turn.completed.usage`: summed over the turn's requests.
#[derive(Deserialize, Default)]
#[serde(default)]
pub(super) struct RawTurnUsage {
    #[serde(deserialize_with = "lenient_u64")]
    pub(super) input_tokens: Option<u64>,
    #[serde(deserialize_with = "lenient_u64")]
    pub(super) cached_input_tokens: Option<u64>,
    #[serde(deserialize_with = "lenient_u64")]
    pub(super) cache_write_input_tokens: Option<u64>,
    #[serde(deserialize_with = "lenient_u64")]
    pub(super) output_tokens: Option<u64>,
    #[serde(deserialize_with = "lenient_u64")]
    pub(super) total_tokens: Option<u64>,
}

impl RawTurnUsage {
    /// In the Anthropic shape: OpenAI's `input_tokens` include the cached ones, which
    /// become cache reads (and cache writes, where reported).
    pub(super) fn to_usage(&self) -> crate::agent::Usage {
        let input = self.input_tokens.unwrap_or(0);
        let cached = self.cached_input_tokens.unwrap_or(0);
        let written = self.cache_write_input_tokens.unwrap_or(0);
        crate::agent::Usage {
            input_tokens: input.saturating_sub(cached).saturating_sub(written),
            cache_read_input_tokens: cached,
            cache_creation_input_tokens: written,
            output_tokens: self.output_tokens.unwrap_or(0),
        }
    }

    /// The context one request leaves: its input and what it generated.
    pub(super) fn context_tokens(&self) -> u64 {
        self.total_tokens.unwrap_or_else(|| {
            self.input_tokens
                .unwrap_or(0)
                .saturating_add(self.output_tokens.unwrap_or(0))
        })
    }
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RawItem {
    #[serde(deserialize_with = "lenient_string")]
    id: Option<String>,
    #[serde(rename = "type", deserialize_with = "lenient_string")]
    kind: Option<String>,
    #[serde(deserialize_with = "lenient_string")]
    text: Option<String>,
    #[serde(deserialize_with = "lenient_string")]
    message: Option<String>,
    #[serde(deserialize_with = "lenient_string")]
    command: Option<String>,
    #[serde(deserialize_with = "lenient_string")]
    aggregated_output: Option<String>,
    #[serde(deserialize_with = "lenient_i64")]
    exit_code: Option<i64>,
    #[serde(deserialize_with = "lenient_string")]
    status: Option<String>,
    changes: Option<Vec<RawChange>>,
    #[serde(deserialize_with = "lenient_string")]
    server: Option<String>,
    #[serde(deserialize_with = "lenient_string")]
    tool: Option<String>,
    arguments: Value,
    result: Option<RawMcpResult>,
    error: Option<RawError>,
    #[serde(deserialize_with = "lenient_string")]
    query: Option<String>,
    items: Option<Vec<RawTodo>>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RawChange {
    #[serde(deserialize_with = "lenient_string")]
    path: Option<String>,
    #[serde(deserialize_with = "lenient_string")]
    kind: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RawMcpResult {
    content: Vec<Value>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RawTodo {
    #[serde(deserialize_with = "lenient_string")]
    text: Option<String>,
    #[serde(deserialize_with = "lenient_bool")]
    completed: Option<bool>,
}

/// Which item event a line is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Phase {
    Started,
    Updated,
    Completed,
}

impl RawEvent {
    fn into_events(self, line: &[u8]) -> Vec<AgentEvent> {
        let kind = self.kind.as_deref().unwrap_or_default();
        let phase = match kind {
            "thread.started" => {
                return vec![AgentEvent::Init(SessionInit {
                    session_id: self.thread_id,
                    ..SessionInit::default()
                })];
            }
            "turn.started" => return Vec::new(),
            "turn.completed" => {
                return vec![AgentEvent::Result(SessionResult {
                    subtype: "success".to_owned(),
                    usage: self.usage.as_ref().map(RawTurnUsage::to_usage),
                    ..SessionResult::default()
                })];
            }
            "turn.failed" => {
                let message = self
                    .error
                    .and_then(|error| error.message)
                    .unwrap_or_else(|| "the turn failed".to_owned());
                return vec![AgentEvent::Result(SessionResult {
                    subtype: "error_during_execution".to_owned(),
                    is_error: true,
                    result: Some(message.clone()),
                    errors: vec![message],
                    ..SessionResult::default()
                })];
            }
            "error" => {
                let message = self.message.unwrap_or_default();
                if let Some(retry) = super::failures::retry(&message) {
                    return vec![AgentEvent::ApiRetry(retry)];
                }
                return vec![AgentEvent::text(format!("codex: {message}"))];
            }
            "item.started" => Phase::Started,
            "item.updated" => Phase::Updated,
            "item.completed" => Phase::Completed,
            _ => return vec![AgentEvent::unknown(line, self.kind, None)],
        };
        match self.item {
            Some(item) => item.into_events(phase, line),
            None => vec![AgentEvent::unknown(line, self.kind, None)],
        }
    }
}

fn assistant(id: &str, content: Vec<AssistantBlock>) -> AgentEvent {
    AgentEvent::Assistant(AssistantMessage {
        message_id: Some(id.to_owned()),
        content,
        ..AssistantMessage::default()
    })
}

fn call(id: &str, name: impl Into<String>, input: Value) -> AgentEvent {
    assistant(
        id,
        vec![AssistantBlock::ToolUse(ToolUse {
            id: id.to_owned(),
            name: name.into(),
            input,
        })],
    )
}

fn result(id: &str, text: String, is_error: bool) -> AgentEvent {
    AgentEvent::User(UserMessage {
        parent_tool_use_id: None,
        content: vec![UserBlock::ToolResult(ToolResult {
            tool_use_id: id.to_owned(),
            content: ToolResultContent::Text(text),
            is_error,
        })],
    })
}

impl RawItem {
    fn into_events(self, phase: Phase, line: &[u8]) -> Vec<AgentEvent> {
        let id = self.id.clone().unwrap_or_default();
        let failed = matches!(self.status.as_deref(), Some("failed" | "declined"));
        match self.kind.as_deref().unwrap_or_default() {
            "agent_message" if phase == Phase::Completed => {
                let text = self.text.unwrap_or_default();
                vec![assistant(&id, vec![AssistantBlock::Text { text }])]
            }
            "reasoning" if phase == Phase::Completed => {
                let thinking = self.text.unwrap_or_default();
                vec![assistant(&id, vec![AssistantBlock::Thinking { thinking }])]
            }
            "agent_message" | "reasoning" => Vec::new(),
            "command_execution" => {
                let command = self.command.unwrap_or_default();
                match phase {
                    Phase::Started => vec![call(&id, "Bash", json!({ "command": command }))],
                    Phase::Updated => Vec::new(),
                    Phase::Completed => {
                        let is_error = failed || self.exit_code.is_some_and(|code| code != 0);
                        vec![result(
                            &id,
                            self.aggregated_output.unwrap_or_default(),
                            is_error,
                        )]
                    }
                }
            }
            "file_change" if phase == Phase::Completed => {
                let mut events = Vec::new();
                for (n, change) in self.changes.unwrap_or_default().into_iter().enumerate() {
                    let call_id = format!("{id}#{n}");
                    let path = change.path.unwrap_or_default();
                    let kind = change.kind.unwrap_or_default();
                    events.push(call(
                        &call_id,
                        "Edit",
                        json!({ "file_path": path, "kind": kind }),
                    ));
                    let outcome = if failed { "not applied" } else { "applied" };
                    events.push(result(
                        &call_id,
                        format!("{kind} {path}: {outcome}"),
                        failed,
                    ));
                }
                events
            }
            "file_change" => Vec::new(),
            "mcp_tool_call" => {
                let name = format!(
                    "mcp__{}__{}",
                    self.server.unwrap_or_default(),
                    self.tool.unwrap_or_default()
                );
                match phase {
                    Phase::Started => vec![call(&id, name, self.arguments)],
                    Phase::Updated => Vec::new(),
                    Phase::Completed => {
                        let text = match (self.result, self.error) {
                            (_, Some(error)) => error.message.unwrap_or_default(),
                            (Some(result), None) => mcp_text(&result.content),
                            (None, None) => String::new(),
                        };
                        vec![result(&id, text, failed)]
                    }
                }
            }
            "web_search" => match phase {
                Phase::Started => vec![call(
                    &id,
                    "WebSearch",
                    json!({ "query": self.query.unwrap_or_default() }),
                )],
                Phase::Updated => Vec::new(),
                Phase::Completed => vec![result(&id, String::new(), false)],
            },
            "todo_list" => {
                let todos: Vec<Value> = self
                    .items
                    .unwrap_or_default()
                    .into_iter()
                    .map(|todo| {
                        let status = if todo.completed.unwrap_or(false) {
                            "completed"
                        } else {
                            "pending"
                        };
                        json!({ "content": todo.text.unwrap_or_default(), "status": status })
                    })
                    .collect();
                vec![call(
                    &format!("{id}@{}", phase_name(phase)),
                    "TodoWrite",
                    json!({ "todos": todos }),
                )]
            }
            "error" => vec![AgentEvent::text(format!(
                "codex: {}",
                self.message.unwrap_or_default()
            ))],
            _ => vec![AgentEvent::unknown(line, self.kind, None)],
        }
    }
}

fn phase_name(phase: Phase) -> &'static str {
    match phase {
        Phase::Started => "started",
        Phase::Updated => "updated",
        Phase::Completed => "completed",
    }
}

/// The text of an MCP result's content blocks.
fn mcp_text(content: &[Value]) -> String {
    content
        .iter()
        .filter_map(|block| block.get("text").and_then(Value::as_str))
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
#[path = "exec_json_tests.rs"]
mod tests;
