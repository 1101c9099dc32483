//! Parser for Claude Code's `--output-format stream-json` lines.
//!
//! One line is one JSON object; [`parse_line`] turns it into at most one [`AgentEvent`]. The
//! parse is a single `serde_json::from_slice` pass into one flat struct that names only the
//! fields we use: everything else (notably `tool_use_result`, which repeats a tool result's
//! whole content, and image data) is skipped without being built into a `Value` tree, which
//! keeps big transcripts fast to read. Unknown types, subtypes and fields never fail: they
//! become [`AgentEvent::Unknown`]; a line that is not JSON becomes [`AgentEvent::Text`].
//!
//! The sim agent prints this same format, so both backends share this parser.

use std::collections::BTreeMap;
use std::fmt;
use std::marker::PhantomData;

use serde::Deserialize;
use serde::de::{self, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::event::{
    AgentEvent, AssistantBlock, AssistantMessage, CompactBoundary, DeniedCall, HookEvent,
    McpServerStatus, ModelUsage, PermissionDenied, RateLimitEvent, ResultBlock, SessionInit,
    SessionResult, StatusEvent, StreamEvent, ToolResult, ToolResultContent, ToolUse, UserBlock,
    UserMessage,
};
use super::failure::ApiRetry;
use super::lenient::{
    lenient_bool, lenient_f64, lenient_i64, lenient_servers, lenient_string, lenient_strings,
    lenient_u64, read_json_line,
};
use super::usage::Usage;

/// Parse one output line (without or with its line ending) into zero or one events.
///
/// Blank lines give no event. This never fails: see the module docs for what becomes
/// `Unknown` and `Text`.
#[must_use]
pub fn parse_line(line: &[u8]) -> Option<AgentEvent> {
    read_json_line(line, |line, raw: Result<RawLine, _>| {
        Some(raw.map_or_else(|event| event, |raw| raw.into_event(line)))
    })
}

/// Every field of every line type we read, all optional. Fields of other types are absent.
#[derive(Deserialize, Default)]
#[serde(default)]
struct RawLine {
    #[serde(rename = "type")]
    kind: Option<String>,
    #[serde(deserialize_with = "lenient_string")]
    subtype: Option<String>,
    #[serde(deserialize_with = "lenient_string")]
    session_id: Option<String>,
    #[serde(deserialize_with = "lenient_string")]
    parent_tool_use_id: Option<String>,
    /// An object on `assistant`/`user` lines, a string on `permission_denied`.
    message: Option<MessageField>,

    // system/init
    #[serde(deserialize_with = "lenient_string")]
    model: Option<String>,
    #[serde(deserialize_with = "lenient_strings")]
    tools: Option<Vec<String>>,
    #[serde(deserialize_with = "lenient_servers")]
    mcp_servers: Option<Vec<McpServerStatus>>,
    #[serde(deserialize_with = "lenient_string")]
    cwd: Option<String>,
    #[serde(deserialize_with = "lenient_string")]
    claude_code_version: Option<String>,
    #[serde(rename = "permissionMode")]
    #[serde(deserialize_with = "lenient_string")]
    permission_mode: Option<String>,

    // system/hook_*
    #[serde(deserialize_with = "lenient_string")]
    hook_id: Option<String>,
    #[serde(deserialize_with = "lenient_string")]
    hook_name: Option<String>,
    #[serde(deserialize_with = "lenient_string")]
    hook_event: Option<String>,
    #[serde(deserialize_with = "lenient_i64")]
    exit_code: Option<i64>,
    #[serde(deserialize_with = "lenient_string")]
    outcome: Option<String>,
    #[serde(deserialize_with = "lenient_string")]
    stdout: Option<String>,
    #[serde(deserialize_with = "lenient_string")]
    stderr: Option<String>,

    // system/compact_boundary
    compact_metadata: Option<RawCompactMetadata>,

    // system/status
    #[serde(deserialize_with = "lenient_string")]
    status: Option<String>,

    // system/permission_denied
    #[serde(deserialize_with = "lenient_string")]
    tool_name: Option<String>,
    #[serde(deserialize_with = "lenient_string")]
    tool_use_id: Option<String>,
    #[serde(deserialize_with = "lenient_string")]
    decision_reason: Option<String>,

    // result
    #[serde(deserialize_with = "lenient_bool")]
    is_error: Option<bool>,
    #[serde(deserialize_with = "lenient_string")]
    result: Option<String>,
    #[serde(deserialize_with = "lenient_f64")]
    total_cost_usd: Option<f64>,
    #[serde(deserialize_with = "lenient_u64")]
    num_turns: Option<u64>,
    #[serde(deserialize_with = "lenient_u64")]
    duration_ms: Option<u64>,
    usage: Option<Usage>,
    #[serde(rename = "modelUsage")]
    model_usage: Option<BTreeMap<String, ModelUsage>>,
    #[serde(deserialize_with = "lenient_strings")]
    errors: Option<Vec<String>>,
    // Kept as a value so an unexpected shape loses the denials, never the result line.
    permission_denials: Option<serde_json::Value>,

    // result: the API error that ended the session
    #[serde(deserialize_with = "lenient_u64")]
    api_error_status: Option<u64>,
    #[serde(deserialize_with = "lenient_string")]
    api_error_type: Option<String>,
    #[serde(deserialize_with = "lenient_string")]
    api_error: Option<String>,

    // system/api_retry (`error` is also on an API error's assistant line)
    #[serde(deserialize_with = "lenient_u64")]
    attempt: Option<u64>,
    #[serde(deserialize_with = "lenient_u64")]
    max_retries: Option<u64>,
    #[serde(deserialize_with = "lenient_u64")]
    retry_delay_ms: Option<u64>,
    #[serde(deserialize_with = "lenient_u64")]
    error_status: Option<u64>,
    #[serde(deserialize_with = "lenient_string")]
    error: Option<String>,

    // stream_event, rate_limit_event
    event: Option<serde_json::Value>,
    rate_limit_info: Option<serde_json::Value>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RawCompactMetadata {
    #[serde(deserialize_with = "lenient_string")]
    trigger: Option<String>,
    #[serde(deserialize_with = "lenient_u64")]
    pre_tokens: Option<u64>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RawMessage {
    #[serde(deserialize_with = "lenient_string")]
    id: Option<String>,
    #[serde(deserialize_with = "lenient_string")]
    model: Option<String>,
    usage: Option<Usage>,
    #[serde(deserialize_with = "lenient_string")]
    stop_reason: Option<String>,
    content: Option<TextOrBlocks<RawBlock>>,
}

/// `message` is an object on conversation lines and a string on `permission_denied`.
enum MessageField {
    Text(String),
    Message(RawMessage),
}

impl<'de> Deserialize<'de> for MessageField {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct MessageVisitor;
        impl<'de> Visitor<'de> for MessageVisitor {
            type Value = MessageField;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a message object or string")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(MessageField::Text(v.to_owned()))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(MessageField::Text(v))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                RawMessage::deserialize(de::value::MapAccessDeserializer::new(map))
                    .map(MessageField::Message)
            }
        }
        deserializer.deserialize_any(MessageVisitor)
    }
}

/// Message content or a tool result's content: a string (a plain prompt, a tool's
/// text) or a list of blocks.
enum TextOrBlocks<T> {
    Text(String),
    Blocks(Vec<T>),
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for TextOrBlocks<T> {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ContentVisitor<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for ContentVisitor<T> {
            type Value = TextOrBlocks<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string or a list of content blocks")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(TextOrBlocks::Text(v.to_owned()))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(TextOrBlocks::Text(v))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
                Vec::<T>::deserialize(de::value::SeqAccessDeserializer::new(seq))
                    .map(TextOrBlocks::Blocks)
            }
        }
        deserializer.deserialize_any(ContentVisitor(PhantomData))
    }
}

/// Any content block: assistant blocks (text, thinking, tool_use) and user blocks
/// (tool_result, text, image) flattened into one shape.
#[derive(Deserialize, Default)]
#[serde(default)]
struct RawBlock {
    #[serde(rename = "type")]
    kind: Option<String>,
    #[serde(deserialize_with = "lenient_string")]
    text: Option<String>,
    #[serde(deserialize_with = "lenient_string")]
    thinking: Option<String>,
    #[serde(deserialize_with = "lenient_string")]
    id: Option<String>,
    #[serde(deserialize_with = "lenient_string")]
    name: Option<String>,
    input: Option<serde_json::Value>,
    #[serde(deserialize_with = "lenient_string")]
    tool_use_id: Option<String>,
    content: Option<TextOrBlocks<RawResultBlock>>,
    #[serde(deserialize_with = "lenient_bool")]
    is_error: Option<bool>,
    source: Option<RawImageSource>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RawResultBlock {
    #[serde(rename = "type")]
    kind: Option<String>,
    #[serde(deserialize_with = "lenient_string")]
    text: Option<String>,
    source: Option<RawImageSource>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RawImageSource {
    #[serde(deserialize_with = "lenient_string")]
    media_type: Option<String>,
    #[serde(rename = "data")]
    _data: IgnoredAny,
}

impl RawLine {
    fn into_event(self, line: &[u8]) -> AgentEvent {
        match self.kind.as_deref() {
            Some("system") => self.into_system_event(line),
            Some("assistant") => self.into_assistant(line),
            Some("user") => self.into_user(line),
            Some("result") => self.into_result(),
            Some("stream_event") => AgentEvent::Stream(StreamEvent {
                parent_tool_use_id: self.parent_tool_use_id,
                event: self.event.unwrap_or(serde_json::Value::Null),
            }),
            Some("rate_limit_event") => {
                let info = self.rate_limit_info.unwrap_or(serde_json::Value::Null);
                let field = |key: &str| info.get(key).and_then(|v| v.as_str()).map(str::to_owned);
                AgentEvent::RateLimit(RateLimitEvent {
                    status: field("status"),
                    rate_limit_type: field("rateLimitType"),
                    resets_at: info.get("resetsAt").and_then(serde_json::Value::as_i64),
                    info,
                })
            }
            _ => AgentEvent::unknown(line, self.kind, self.subtype),
        }
    }

    fn into_system_event(self, line: &[u8]) -> AgentEvent {
        match self.subtype.as_deref() {
            Some("init") => AgentEvent::Init(SessionInit {
                session_id: self.session_id,
                model: self.model,
                tools: self.tools.unwrap_or_default(),
                mcp_servers: self.mcp_servers.unwrap_or_default(),
                cwd: self.cwd,
                version: self.claude_code_version,
                permission_mode: self.permission_mode,
            }),
            Some(subtype @ ("hook_started" | "hook_progress" | "hook_response")) => {
                AgentEvent::Hook(HookEvent {
                    subtype: subtype.to_owned(),
                    hook_id: self.hook_id,
                    hook_name: self.hook_name,
                    hook_event: self.hook_event,
                    exit_code: self.exit_code,
                    outcome: self.outcome,
                    stdout: self.stdout,
                    stderr: self.stderr,
                })
            }
            Some("compact_boundary") => {
                let meta = self.compact_metadata.unwrap_or_default();
                AgentEvent::CompactBoundary(CompactBoundary {
                    trigger: meta.trigger,
                    pre_tokens: meta.pre_tokens,
                })
            }
            Some("status") => AgentEvent::Status(StatusEvent {
                status: self.status,
            }),
            Some("api_retry") => {
                let status = self
                    .error_status
                    .and_then(|status| u16::try_from(status).ok());
                let error = self.error.unwrap_or_default();
                AgentEvent::ApiRetry(ApiRetry {
                    attempt: self.attempt.and_then(|n| u32::try_from(n).ok()),
                    max_retries: self.max_retries.and_then(|n| u32::try_from(n).ok()),
                    delay_ms: self.retry_delay_ms,
                    kind: super::claude_failures::retry_kind(status, &error),
                    status,
                    error,
                })
            }
            Some("permission_denied") => AgentEvent::PermissionDenied(PermissionDenied {
                tool_name: self.tool_name,
                tool_use_id: self.tool_use_id,
                reason: self.decision_reason,
                message: match self.message {
                    Some(MessageField::Text(text)) => Some(text),
                    _ => None,
                },
            }),
            _ => AgentEvent::unknown(line, self.kind, self.subtype),
        }
    }

    fn into_assistant(self, line: &[u8]) -> AgentEvent {
        let Some(MessageField::Message(message)) = self.message else {
            return AgentEvent::unknown(line, self.kind, self.subtype);
        };
        let content = match message.content {
            Some(TextOrBlocks::Blocks(blocks)) => blocks.into_iter().map(assistant_block).collect(),
            Some(TextOrBlocks::Text(text)) => vec![AssistantBlock::Text { text }],
            None => Vec::new(),
        };
        AgentEvent::Assistant(AssistantMessage {
            message_id: message.id,
            model: message.model,
            parent_tool_use_id: self.parent_tool_use_id,
            usage: message.usage,
            stop_reason: message.stop_reason,
            content,
            continues: false,
        })
    }

    fn into_user(self, line: &[u8]) -> AgentEvent {
        let Some(MessageField::Message(message)) = self.message else {
            return AgentEvent::unknown(line, self.kind, self.subtype);
        };
        let content = match message.content {
            Some(TextOrBlocks::Blocks(blocks)) => blocks.into_iter().map(user_block).collect(),
            Some(TextOrBlocks::Text(text)) => vec![UserBlock::Text { text }],
            None => Vec::new(),
        };
        AgentEvent::User(UserMessage {
            parent_tool_use_id: self.parent_tool_use_id,
            content,
        })
    }

    fn into_result(self) -> AgentEvent {
        AgentEvent::Result(SessionResult {
            subtype: self.subtype.unwrap_or_default(),
            is_error: self.is_error.unwrap_or(false),
            result: self.result,
            total_cost_usd: self.total_cost_usd,
            num_turns: self.num_turns,
            duration_ms: self.duration_ms,
            usage: self.usage,
            model_usage: self.model_usage.unwrap_or_default(),
            session_id: self.session_id,
            errors: self.errors.unwrap_or_default(),
            permission_denials: denied_calls(self.permission_denials),
            api_error_status: self
                .api_error_status
                .and_then(|status| u16::try_from(status).ok()),
            api_error: self.api_error.or(self.api_error_type),
        })
    }
}

/// The entries of `result.permission_denials` that have the documented shape.
fn denied_calls(value: Option<serde_json::Value>) -> Vec<DeniedCall> {
    match value {
        Some(serde_json::Value::Array(items)) => items
            .into_iter()
            .filter_map(|item| serde_json::from_value::<DeniedCall>(item).ok())
            .filter(|call| !call.tool_name.is_empty())
            .collect(),
        _ => Vec::new(),
    }
}

fn assistant_block(block: RawBlock) -> AssistantBlock {
    match block.kind.as_deref() {
        Some("text") => AssistantBlock::Text {
            text: block.text.unwrap_or_default(),
        },
        Some("thinking") => AssistantBlock::Thinking {
            thinking: block.thinking.unwrap_or_default(),
        },
        Some("tool_use") => AssistantBlock::ToolUse(ToolUse {
            id: block.id.unwrap_or_default(),
            name: block.name.unwrap_or_default(),
            input: block.input.unwrap_or(serde_json::Value::Null),
        }),
        _ => AssistantBlock::Other {
            block_type: block.kind.unwrap_or_default(),
        },
    }
}

fn user_block(block: RawBlock) -> UserBlock {
    match block.kind.as_deref() {
        Some("tool_result") => UserBlock::ToolResult(ToolResult {
            tool_use_id: block.tool_use_id.unwrap_or_default(),
            content: match block.content {
                Some(TextOrBlocks::Text(text)) => ToolResultContent::Text(text),
                Some(TextOrBlocks::Blocks(blocks)) => {
                    ToolResultContent::Blocks(blocks.into_iter().map(result_block).collect())
                }
                None => ToolResultContent::Text(String::new()),
            },
            is_error: block.is_error.unwrap_or(false),
        }),
        Some("text") => UserBlock::Text {
            text: block.text.unwrap_or_default(),
        },
        _ => UserBlock::Other {
            block_type: block.kind.unwrap_or_default(),
        },
    }
}

fn result_block(block: RawResultBlock) -> ResultBlock {
    match block.kind.as_deref() {
        Some("text") => ResultBlock::Text {
            text: block.text.unwrap_or_default(),
        },
        Some("image") => ResultBlock::Image {
            media_type: block.source.and_then(|source| source.media_type),
        },
        _ => ResultBlock::Other {
            block_type: block.kind.unwrap_or_default(),
        },
    }
}

#[cfg(test)]
#[path = "stream_json_tests.rs"]
mod tests;
