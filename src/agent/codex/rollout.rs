//! Parser for Codex's rollout file (`$CODEX_HOME/sessions/YYYY/MM/DD/rollout-…-<thread
//! id>.jsonl`): one `{timestamp, type, payload}` record per line, flushed as Codex goes.
//!
//! It is where Codex's exact context figures are:
//! - `token_usage_record` (written as each model response completes, before its tool
//!   calls run): the response's `usage`; its input plus output is the context the next
//!   request starts from;
//! - `event_msg`/`token_count`: `info.last_token_usage` (the same figure, written once
//!   the tools ran), `info.total_token_usage` (cumulative) and
//!   `info.model_context_window`, the window as Codex counts it. Billing is taken from
//!   here, keyed by the cumulative total, so a repeated report counts once and older
//!   Codex versions without `token_usage_record` are billed too;
//! - `compacted` and `event_msg`/`context_compacted`: Codex compacted its history.
//!
//! [`Mode::Usage`] reads only those (and the session's id, version and model): live,
//! everything else comes from stdout ([`super::exec_json`]). [`Mode::Full`] also reads
//! the conversation (`response_item` messages, function calls and their outputs), for
//! `debussy replay` of a rollout alone.

use serde::Deserialize;
use serde_json::{Value, json};

use super::exec_json::RawTurnUsage;
use crate::agent::event::{
    AgentEvent, AssistantBlock, AssistantMessage, CompactBoundary, SessionInit, ToolResult,
    ToolResultContent, ToolUse, UserBlock, UserMessage,
};
use crate::agent::lenient::{lenient_string, lenient_u64, read_json_line};
use crate::agent::usage::UsageReport;

/// How much of a rollout to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Usage, compaction and the session's identity: beside the stdout stream.
    Usage,
    /// The conversation too: a rollout read on its own.
    Full,
}

/// Parse one rollout line. Never fails: lines of other types give no event, a line that
/// is not JSON a [`AgentEvent::Text`].
#[must_use]
pub fn parse_line(line: &[u8], mode: Mode) -> Vec<AgentEvent> {
    read_json_line(line, |_, raw: Result<RawLine, _>| match raw {
        Ok(raw) => raw.into_events(mode),
        Err(AgentEvent::Unknown(_)) => Vec::new(),
        Err(event) => vec![event],
    })
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RawLine {
    #[serde(rename = "type", deserialize_with = "lenient_string")]
    kind: Option<String>,
    payload: RawPayload,
}

/// Every payload field we read, of every record type.
#[derive(Deserialize, Default)]
#[serde(default)]
struct RawPayload {
    #[serde(rename = "type", deserialize_with = "lenient_string")]
    kind: Option<String>,
    #[serde(deserialize_with = "lenient_string")]
    id: Option<String>,
    #[serde(deserialize_with = "lenient_string")]
    cwd: Option<String>,
    #[serde(deserialize_with = "lenient_string")]
    cli_version: Option<String>,
    #[serde(deserialize_with = "lenient_string")]
    model: Option<String>,
    usage: Option<RawTurnUsage>,
    info: Option<RawInfo>,
    // Conversation records (`Mode::Full`).
    #[serde(deserialize_with = "lenient_string")]
    role: Option<String>,
    content: Option<Vec<RawContent>>,
    #[serde(deserialize_with = "lenient_string")]
    name: Option<String>,
    #[serde(deserialize_with = "lenient_string")]
    arguments: Option<String>,
    #[serde(deserialize_with = "lenient_string")]
    call_id: Option<String>,
    output: Option<RawOutput>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RawInfo {
    last_token_usage: Option<RawTurnUsage>,
    total_token_usage: Option<RawTurnUsage>,
    #[serde(deserialize_with = "lenient_u64")]
    model_context_window: Option<u64>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RawContent {
    #[serde(deserialize_with = "lenient_string")]
    text: Option<String>,
}

/// A function call's output: a string, or (newer versions) an object with `content`.
#[derive(Deserialize)]
#[serde(untagged)]
enum RawOutput {
    Text(String),
    Other(Value),
}

impl RawOutput {
    fn into_text(self) -> String {
        match self {
            RawOutput::Text(text) => text,
            RawOutput::Other(value) => value
                .get("content")
                .and_then(Value::as_str)
                .map_or_else(|| value.to_string(), str::to_owned),
        }
    }
}

impl RawLine {
    fn into_events(self, mode: Mode) -> Vec<AgentEvent> {
        let payload = self.payload;
        match self.kind.as_deref().unwrap_or_default() {
            "session_meta" => vec![AgentEvent::Init(SessionInit {
                session_id: payload.id,
                cwd: payload.cwd,
                version: payload.cli_version,
                ..SessionInit::default()
            })],
            "turn_context" if payload.model.is_some() => vec![AgentEvent::Init(SessionInit {
                model: payload.model,
                ..SessionInit::default()
            })],
            "token_usage_record" => payload
                .usage
                .map(|usage| {
                    AgentEvent::UsageReport(UsageReport {
                        context_tokens: Some(usage.context_tokens()),
                        ..UsageReport::default()
                    })
                })
                .into_iter()
                .collect(),
            "compacted" => vec![compacted()],
            "event_msg" => match payload.kind.as_deref().unwrap_or_default() {
                "token_count" => payload.info.map(token_count).into_iter().collect(),
                "context_compacted" => vec![compacted()],
                _ => Vec::new(),
            },
            "response_item" if mode == Mode::Full => conversation(payload),
            _ => Vec::new(),
        }
    }
}

fn compacted() -> AgentEvent {
    AgentEvent::CompactBoundary(CompactBoundary {
        trigger: Some("auto".to_owned()),
        pre_tokens: None,
    })
}

fn token_count(info: RawInfo) -> AgentEvent {
    let key = info
        .total_token_usage
        .as_ref()
        .map(|total| format!("codex-total-{}", total.context_tokens()));
    let last = info.last_token_usage;
    AgentEvent::UsageReport(UsageReport {
        usage: key
            .is_some()
            .then(|| last.as_ref().map(RawTurnUsage::to_usage))
            .flatten(),
        request_id: key,
        context_tokens: last.as_ref().map(RawTurnUsage::context_tokens),
        context_window: info.model_context_window,
    })
}

/// A `response_item` as conversation events (`Mode::Full`).
fn conversation(payload: RawPayload) -> Vec<AgentEvent> {
    let texts = |content: Option<Vec<RawContent>>| -> Vec<String> {
        content
            .unwrap_or_default()
            .into_iter()
            .filter_map(|block| block.text)
            .collect()
    };
    match payload.kind.as_deref().unwrap_or_default() {
        "message" if payload.role.as_deref() == Some("assistant") => {
            let content = texts(payload.content)
                .into_iter()
                .map(|text| AssistantBlock::Text { text })
                .collect();
            vec![AgentEvent::Assistant(AssistantMessage {
                message_id: payload.id,
                content,
                ..AssistantMessage::default()
            })]
        }
        "message" => {
            let content = texts(payload.content)
                .into_iter()
                .map(|text| UserBlock::Text { text })
                .collect();
            vec![AgentEvent::User(UserMessage {
                parent_tool_use_id: None,
                content,
            })]
        }
        "function_call" | "custom_tool_call" | "local_shell_call" => {
            let id = payload.call_id.or(payload.id).unwrap_or_default();
            let input = payload
                .arguments
                .as_deref()
                .and_then(|text| serde_json::from_str(text).ok())
                .unwrap_or_else(|| json!({}));
            vec![AgentEvent::Assistant(AssistantMessage {
                message_id: Some(id.clone()),
                content: vec![AssistantBlock::ToolUse(ToolUse {
                    id,
                    name: payload.name.unwrap_or_default(),
                    input,
                })],
                ..AssistantMessage::default()
            })]
        }
        "function_call_output" | "custom_tool_call_output" => {
            vec![AgentEvent::User(UserMessage {
                parent_tool_use_id: None,
                content: vec![UserBlock::ToolResult(ToolResult {
                    tool_use_id: payload.call_id.unwrap_or_default(),
                    content: ToolResultContent::Text(
                        payload.output.map(RawOutput::into_text).unwrap_or_default(),
                    ),
                    is_error: false,
                })],
            })]
        }
        _ => Vec::new(),
    }
}

#[cfg(test)]
#[path = "rollout_tests.rs"]
mod tests;
