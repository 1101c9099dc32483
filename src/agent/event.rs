//! The typed vocabulary of what an agent says: [`AgentEvent`] and the records it carries.
//!
//! Every backend turns its output lines into these events; the session, the context meter,
//! the orchestrator, the HUD and the checkpoint all consume them. The shapes follow Claude
//! Code's `stream-json` output, which is the richest format we read; other agents map onto
//! the subset they can fill. Nothing here parses or does I/O.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::failure::ApiRetry;
use super::usage::{Usage, UsageReport};

/// One thing an agent said, parsed from one output line.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum AgentEvent {
    /// The session started: `system`/`init`.
    Init(SessionInit),
    /// A hook ran or reported: `system`/`hook_started`, `hook_progress`, `hook_response`.
    Hook(HookEvent),
    /// The agent compacted its own context: `system`/`compact_boundary`.
    CompactBoundary(CompactBoundary),
    /// The agent's status changed (e.g. `compacting`): `system`/`status`.
    Status(StatusEvent),
    /// A tool call was refused by the permission system: `system`/`permission_denied`.
    PermissionDenied(PermissionDenied),
    /// One assistant line: a message (or one content block of it) with its usage.
    Assistant(AssistantMessage),
    /// One user line: tool results (or prompt text) going back to the model.
    User(UserMessage),
    /// The session's final summary: `result`.
    Result(SessionResult),
    /// A partial-message streaming event (`--include-partial-messages`): `stream_event`.
    Stream(StreamEvent),
    /// The agent's rate-limit state: `rate_limit_event`.
    RateLimit(RateLimitEvent),
    /// The agent retries a failed API request on its own: `system`/`api_retry`.
    ApiRetry(ApiRetry),
    /// Token usage reported apart from the messages (Codex's rollout file).
    UsageReport(UsageReport),
    /// Valid JSON of a type (or system subtype) this version does not know; kept verbatim.
    Unknown(UnknownLine),
    /// A line that is not JSON at all (a warning, a stack trace), kept as text.
    Text(TextLine),
}

impl AgentEvent {
    /// The JSON `line`, of a type (`line_type`, `subtype`) this version does not know.
    pub(crate) fn unknown(line: &[u8], line_type: Option<String>, subtype: Option<String>) -> Self {
        AgentEvent::Unknown(UnknownLine {
            line_type,
            subtype,
            raw: String::from_utf8_lossy(line).into_owned(),
        })
    }

    /// A line of text that is not JSON.
    pub(crate) fn text(line: String) -> Self {
        AgentEvent::Text(TextLine { line })
    }

    /// The tool-use id of the subagent call this event belongs to, if it belongs to one.
    ///
    /// Events without the notion (system lines, results) return `None`: they belong to the
    /// main thread.
    #[must_use]
    pub fn parent_tool_use_id(&self) -> Option<&str> {
        match self {
            AgentEvent::Assistant(m) => m.parent_tool_use_id.as_deref(),
            AgentEvent::User(m) => m.parent_tool_use_id.as_deref(),
            AgentEvent::Stream(s) => s.parent_tool_use_id.as_deref(),
            _ => None,
        }
    }

    /// Whether this event belongs to the main conversation rather than a subagent.
    #[must_use]
    pub fn is_main_thread(&self) -> bool {
        self.parent_tool_use_id().is_none()
    }
}

/// `system`/`init`: what the session runs with.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct SessionInit {
    /// The agent's session id.
    pub session_id: Option<String>,
    /// The model the main thread runs on.
    pub model: Option<String>,
    /// Names of the tools offered to the model.
    pub tools: Vec<String>,
    /// MCP servers and their connection status.
    pub mcp_servers: Vec<McpServerStatus>,
    /// The agent's working directory.
    pub cwd: Option<String>,
    /// The agent's own version (`claude_code_version`).
    pub version: Option<String>,
    /// The permission mode (`permissionMode`).
    pub permission_mode: Option<String>,
}

/// One MCP server as listed in `system`/`init`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpServerStatus {
    /// Server name.
    #[serde(default)]
    pub name: String,
    /// Connection status (`connected`, `failed`, `pending`, …).
    #[serde(default)]
    pub status: String,
}

/// A hook line: `hook_started`, `hook_progress` or `hook_response`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct HookEvent {
    /// The system subtype (`hook_started`, `hook_progress`, `hook_response`).
    pub subtype: String,
    /// Hook invocation id.
    pub hook_id: Option<String>,
    /// Hook name (`SessionStart:startup`).
    pub hook_name: Option<String>,
    /// Hook event (`SessionStart`, `PreToolUse`, …).
    pub hook_event: Option<String>,
    /// Exit code of the hook command, once it finished.
    pub exit_code: Option<i64>,
    /// `success`, `error` or `cancelled`, once it finished.
    pub outcome: Option<String>,
    /// What the hook printed on stdout.
    pub stdout: Option<String>,
    /// What the hook printed on stderr.
    pub stderr: Option<String>,
}

/// `system`/`compact_boundary`: the agent summarised and dropped earlier context.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct CompactBoundary {
    /// `auto` or `manual`.
    pub trigger: Option<String>,
    /// Context tokens just before compaction.
    pub pre_tokens: Option<u64>,
}

/// `system`/`status`: a transient agent state such as `compacting` (`None` clears it).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct StatusEvent {
    /// The status, or `None` when it was cleared.
    pub status: Option<String>,
}

/// `system`/`permission_denied`: a tool call the permission system refused.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct PermissionDenied {
    /// The refused tool.
    pub tool_name: Option<String>,
    /// The refused call.
    pub tool_use_id: Option<String>,
    /// Why it was refused.
    pub reason: Option<String>,
    /// The message shown to the model.
    pub message: Option<String>,
}

/// One `assistant` line. Claude Code prints one line per content block, each repeating the
/// message id and usage: consumers must not add usage up across lines of one message.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct AssistantMessage {
    /// The API message id; lines of one message share it.
    pub message_id: Option<String>,
    /// The model that produced it.
    pub model: Option<String>,
    /// The Task tool call this subagent message belongs to; `None` on the main thread.
    pub parent_tool_use_id: Option<String>,
    /// Token usage of the request that produced the message.
    pub usage: Option<Usage>,
    /// Why generation stopped, when known.
    pub stop_reason: Option<String>,
    /// The content blocks on this line.
    pub content: Vec<AssistantBlock>,
    /// The text continues the message's previous text without a break: a streamed
    /// piece (Gemini CLI's `delta` messages).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub continues: bool,
}

impl AssistantMessage {
    /// The tool calls on this line.
    pub fn tool_uses(&self) -> impl Iterator<Item = &ToolUse> {
        self.content.iter().filter_map(|block| match block {
            AssistantBlock::ToolUse(tool_use) => Some(tool_use),
            _ => None,
        })
    }
}

/// A content block of an assistant message.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AssistantBlock {
    /// Visible text.
    Text {
        /// The text.
        text: String,
    },
    /// Extended thinking.
    Thinking {
        /// The thinking text.
        thinking: String,
    },
    /// A tool call.
    ToolUse(ToolUse),
    /// A block type this version does not interpret (`redacted_thinking`, server tools…).
    Other {
        /// The block's `type`.
        block_type: String,
    },
}

/// A tool call made by the model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolUse {
    /// The call id, matched by the tool result's `tool_use_id`.
    pub id: String,
    /// Tool name (`Bash`, `Write`, `Task`, `mcp__server__tool`, …).
    pub name: String,
    /// The call's arguments.
    pub input: serde_json::Value,
}

/// One `user` line: results of tool calls, or text sent to the model.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct UserMessage {
    /// The Task tool call this subagent message belongs to; `None` on the main thread.
    pub parent_tool_use_id: Option<String>,
    /// The content blocks.
    pub content: Vec<UserBlock>,
}

impl UserMessage {
    /// The tool results on this line.
    pub fn tool_results(&self) -> impl Iterator<Item = &ToolResult> {
        self.content.iter().filter_map(|block| match block {
            UserBlock::ToolResult(result) => Some(result),
            _ => None,
        })
    }
}

/// A content block of a user message.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum UserBlock {
    /// The result of a tool call.
    ToolResult(ToolResult),
    /// Text (a prompt, a subagent's instructions).
    Text {
        /// The text.
        text: String,
    },
    /// A block type this version does not interpret (images…).
    Other {
        /// The block's `type`.
        block_type: String,
    },
}

/// The result of one tool call.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolResult {
    /// The call this answers.
    pub tool_use_id: String,
    /// What the tool returned.
    pub content: ToolResultContent,
    /// Whether the tool failed.
    pub is_error: bool,
}

/// A tool result's content: a plain string or a list of blocks.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum ToolResultContent {
    /// Plain text.
    Text(String),
    /// Content blocks (text and images), as MCP tools and the Task tool return them.
    Blocks(Vec<ResultBlock>),
}

impl ToolResultContent {
    /// Size in bytes of the text this content carries (images count zero).
    #[must_use]
    pub fn text_len(&self) -> usize {
        match self {
            ToolResultContent::Text(text) => text.len(),
            ToolResultContent::Blocks(blocks) => blocks
                .iter()
                .map(|block| match block {
                    ResultBlock::Text { text } => text.len(),
                    _ => 0,
                })
                .sum(),
        }
    }

    /// The text parts, in order.
    pub fn texts(&self) -> impl Iterator<Item = &str> {
        let (single, blocks): (Option<&str>, &[ResultBlock]) = match self {
            ToolResultContent::Text(text) => (Some(text.as_str()), &[]),
            ToolResultContent::Blocks(blocks) => (None, blocks.as_slice()),
        };
        single
            .into_iter()
            .chain(blocks.iter().filter_map(|block| match block {
                ResultBlock::Text { text } => Some(text.as_str()),
                _ => None,
            }))
    }

    /// Number of image blocks.
    #[must_use]
    pub fn image_count(&self) -> usize {
        match self {
            ToolResultContent::Text(_) => 0,
            ToolResultContent::Blocks(blocks) => blocks
                .iter()
                .filter(|block| matches!(block, ResultBlock::Image { .. }))
                .count(),
        }
    }
}

/// A block inside a tool result.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ResultBlock {
    /// Text.
    Text {
        /// The text.
        text: String,
    },
    /// An image; its data is not kept.
    Image {
        /// The image's media type, when given.
        media_type: Option<String>,
    },
    /// Another block type.
    Other {
        /// The block's `type`.
        block_type: String,
    },
}

/// `result`: how the session ended, with totals.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct SessionResult {
    /// `success`, `error_max_turns`, `error_during_execution`, …
    pub subtype: String,
    /// Whether the agent considers the session failed.
    pub is_error: bool,
    /// The final assistant text.
    pub result: Option<String>,
    /// Total cost in US dollars.
    pub total_cost_usd: Option<f64>,
    /// Number of model turns.
    pub num_turns: Option<u64>,
    /// Wall-clock duration in milliseconds.
    pub duration_ms: Option<u64>,
    /// Usage summed over the whole session. Cumulative: never a context size.
    pub usage: Option<Usage>,
    /// Per-model totals, including each model's context window.
    pub model_usage: BTreeMap<String, ModelUsage>,
    /// The agent's session id.
    pub session_id: Option<String>,
    /// Error messages of failed sessions.
    pub errors: Vec<String>,
    /// Tool calls the permission system refused during the session.
    pub permission_denials: Vec<DeniedCall>,
    /// The HTTP status of the API error that ended the session, when one did
    /// (`api_error_status`).
    pub api_error_status: Option<u16>,
    /// The agent's name for that error (`api_error`, else `api_error_type`:
    /// `usage_limit_reached`, `not_found_error`, `connection_failed`, …).
    pub api_error: Option<String>,
}

/// One refused tool call from `result.permission_denials`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct DeniedCall {
    /// The refused tool, e.g. `Bash`.
    #[serde(default)]
    pub tool_name: String,
    /// The refused call's id.
    #[serde(default)]
    pub tool_use_id: Option<String>,
    /// The call's input (for Bash, `command`).
    #[serde(default)]
    pub tool_input: serde_json::Value,
}

impl DeniedCall {
    /// The call in a few words: `Bash: npm test`, `Write: src/a.py`, or the tool name.
    #[must_use]
    pub fn describe(&self) -> String {
        let detail = ["command", "file_path", "path", "url", "pattern"]
            .iter()
            .find_map(|key| {
                self.tool_input
                    .get(*key)
                    .and_then(serde_json::Value::as_str)
            });
        match detail {
            Some(detail) => format!("{}: {}", self.tool_name, detail),
            None => self.tool_name.clone(),
        }
    }

    /// The `agent.allowed_tools` rule that would allow this call: for Bash the command's
    /// first word as a prefix rule (`Bash(npm test:*)` keeps the first two words of
    /// multi-word tools such as `npm test`), else the tool name.
    #[must_use]
    pub fn suggested_rule(&self) -> String {
        let command = self
            .tool_input
            .get("command")
            .and_then(serde_json::Value::as_str);
        match (self.tool_name.as_str(), command) {
            ("Bash", Some(command)) => {
                let words: Vec<&str> = command.split_whitespace().collect();
                let takes_subcommand = matches!(
                    words.first().copied(),
                    Some(
                        "npm"
                            | "npx"
                            | "pnpm"
                            | "yarn"
                            | "cargo"
                            | "git"
                            | "go"
                            | "uv"
                            | "poetry"
                            | "make"
                            | "docker"
                            | "python"
                            | "python3"
                    )
                );
                let prefix = match words.as_slice() {
                    [] => return "Bash".to_owned(),
                    [first, second, ..] if takes_subcommand && !second.starts_with('-') => {
                        format!("{first} {second}")
                    }
                    [first, ..] => (*first).to_owned(),
                };
                format!("Bash({prefix}:*)")
            }
            _ => self.tool_name.clone(),
        }
    }
}

impl SessionResult {
    /// Whether the session succeeded: subtype `success` and no error flag.
    #[must_use]
    pub fn is_success(&self) -> bool {
        self.subtype == "success" && !self.is_error
    }
}

/// Per-model totals from `result.modelUsage`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelUsage {
    /// Uncached input tokens.
    #[serde(default)]
    pub input_tokens: Option<u64>,
    /// Output tokens.
    #[serde(default)]
    pub output_tokens: Option<u64>,
    /// Cache-read input tokens.
    #[serde(default)]
    pub cache_read_input_tokens: Option<u64>,
    /// Cache-creation input tokens.
    #[serde(default)]
    pub cache_creation_input_tokens: Option<u64>,
    /// Cost of this model's calls in US dollars.
    #[serde(default, rename = "costUSD")]
    pub cost_usd: Option<f64>,
    /// The model's context window in tokens, as the agent knows it.
    #[serde(default)]
    pub context_window: Option<u64>,
    /// The model's output limit in tokens.
    #[serde(default)]
    pub max_output_tokens: Option<u64>,
}

/// `stream_event`: one raw API streaming event (only with `--include-partial-messages`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StreamEvent {
    /// The Task tool call this belongs to; `None` on the main thread.
    pub parent_tool_use_id: Option<String>,
    /// The API event (`message_start`, `content_block_delta`, …) as JSON.
    pub event: serde_json::Value,
}

/// `rate_limit_event`: the account's rate-limit state.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RateLimitEvent {
    /// `allowed`, `allowed_warning`, `rejected`, …
    pub status: Option<String>,
    /// Which limit (`five_hour`, `seven_day`, …).
    pub rate_limit_type: Option<String>,
    /// When the limit resets, in seconds since the epoch.
    pub resets_at: Option<i64>,
    /// The whole `rate_limit_info` object.
    pub info: serde_json::Value,
}

/// A JSON line of an unknown type or system subtype, kept verbatim.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct UnknownLine {
    /// The line's `type`, when it had a string one.
    pub line_type: Option<String>,
    /// The line's `subtype`, when it had a string one.
    pub subtype: Option<String>,
    /// The line as received.
    pub raw: String,
}

/// A line that is not JSON.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct TextLine {
    /// The line, lossily decoded as UTF-8, without its line ending.
    pub line: String,
}

/// A todo item's state, as the agent's todo tool reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TodoStatus {
    /// Not started.
    Pending,
    /// Being worked on when the session stopped.
    InProgress,
    /// Finished.
    Completed,
}

/// One item of the agent's todo list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Todo {
    /// What the item says.
    pub content: String,
    /// Its state.
    pub status: TodoStatus,
}
