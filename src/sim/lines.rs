//! Builders for the Claude Code `stream-json` lines the sim agent prints, and the writer
//! that prints them one per line, flushed.
//!
//! The shapes mirror what Claude Code prints (field names and order, nesting, `null`s), so
//! whatever reads the sim agent reads Claude Code the same way, and saved session logs
//! look alike. Structs rather than `json!` keep the field order (`type` first).

use std::collections::BTreeMap;
use std::io::{self, Write};

use serde::Serialize;
use serde_json::Value;

use crate::sim::Usage;

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

    pub(super) fn emit(&mut self, line: &impl Serialize) -> io::Result<()> {
        self.buf.clear();
        serde_json::to_writer(&mut self.buf, line)?;
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

#[derive(Serialize)]
struct InitLine<'a> {
    r#type: &'static str,
    subtype: &'static str,
    cwd: &'a str,
    session_id: &'a str,
    tools: &'static [&'static str],
    mcp_servers: [(); 0],
    model: &'a str,
    #[serde(rename = "permissionMode")]
    permission_mode: &'static str,
    slash_commands: [(); 0],
    #[serde(rename = "apiKeySource")]
    api_key_source: &'static str,
    claude_code_version: &'static str,
    output_style: &'static str,
    agents: [&'static str; 1],
    uuid: String,
}

#[derive(Serialize)]
struct ConversationLine<'a, M: Serialize> {
    r#type: &'static str,
    message: M,
    parent_tool_use_id: Option<&'a str>,
    session_id: &'a str,
    uuid: String,
}

/// An assistant content block, serialized with its `type` first as Claude Code does.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum Block {
    Thinking {
        thinking: String,
        signature: &'static str,
    },
    Text {
        text: String,
    },
    ToolUse {
        id: String,
        name: &'static str,
        input: Value,
    },
}

impl Block {
    /// Roughly how many bytes the block adds to the conversation.
    pub(super) fn size(&self) -> usize {
        match self {
            Block::Thinking { thinking, .. } => thinking.len(),
            Block::Text { text } => text.len(),
            Block::ToolUse { name, input, .. } => name.len() + input.to_string().len(),
        }
    }
}

/// A tool result's content: a string, or text blocks (as the Task tool returns).
#[derive(Serialize)]
#[serde(untagged)]
pub(super) enum ResultContent {
    Text(String),
    Blocks(Vec<OwnedTextBlock>),
}

impl ResultContent {
    pub(super) fn size(&self) -> usize {
        match self {
            ResultContent::Text(text) => text.len(),
            ResultContent::Blocks(blocks) => blocks.iter().map(|block| block.text.len()).sum(),
        }
    }
}

#[derive(Serialize)]
pub(super) struct OwnedTextBlock {
    r#type: &'static str,
    pub(super) text: String,
}

impl OwnedTextBlock {
    pub(super) fn new(text: String) -> Self {
        OwnedTextBlock {
            r#type: "text",
            text,
        }
    }
}

#[derive(Serialize)]
struct AssistantBody<'a> {
    model: &'a str,
    id: &'a str,
    r#type: &'static str,
    role: &'static str,
    content: [&'a Block; 1],
    stop_reason: Option<&'static str>,
    stop_sequence: Option<&'static str>,
    usage: UsageBody,
    context_management: Option<()>,
}

#[derive(Serialize)]
struct UsageBody {
    input_tokens: u64,
    cache_creation_input_tokens: u64,
    cache_read_input_tokens: u64,
    output_tokens: u64,
    service_tier: &'static str,
}

impl From<&Usage> for UsageBody {
    fn from(usage: &Usage) -> Self {
        UsageBody {
            input_tokens: usage.input_tokens,
            cache_creation_input_tokens: usage.cache_creation_input_tokens,
            cache_read_input_tokens: usage.cache_read_input_tokens,
            output_tokens: usage.output_tokens,
            service_tier: "standard",
        }
    }
}

#[derive(Serialize)]
struct UserBody<B: Serialize> {
    role: &'static str,
    content: [B; 1],
}

#[derive(Serialize)]
struct TextBlock<'a> {
    r#type: &'static str,
    text: &'a str,
}

#[derive(Serialize)]
struct ToolResultBlock<'a> {
    tool_use_id: &'a str,
    r#type: &'static str,
    content: &'a ResultContent,
    is_error: bool,
}

#[derive(Serialize)]
struct CompactLine<'a> {
    r#type: &'static str,
    subtype: &'static str,
    session_id: &'a str,
    uuid: String,
    compact_metadata: CompactMetadata<'a>,
}

#[derive(Serialize)]
struct CompactMetadata<'a> {
    trigger: &'a str,
    pre_tokens: u64,
}

#[derive(Serialize)]
struct ResultBody<'a> {
    r#type: &'static str,
    subtype: &'a str,
    is_error: bool,
    duration_ms: u64,
    duration_api_ms: u64,
    num_turns: u32,
    result: &'a str,
    session_id: &'a str,
    total_cost_usd: f64,
    usage: UsageBody,
    #[serde(rename = "modelUsage")]
    model_usage: BTreeMap<&'a str, ModelUsageBody>,
    permission_denials: [(); 0],
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    errors: &'a [String],
    uuid: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ModelUsageBody {
    input_tokens: u64,
    output_tokens: u64,
    cache_read_input_tokens: u64,
    cache_creation_input_tokens: u64,
    web_search_requests: u64,
    #[serde(rename = "costUSD")]
    cost_usd: f64,
    context_window: u64,
    max_output_tokens: u64,
}

impl Lines {
    pub(super) fn init<'a>(&'a self, cwd: &'a str) -> impl Serialize + 'a {
        InitLine {
            r#type: "system",
            subtype: "init",
            cwd,
            session_id: &self.session_id,
            tools: TOOLS,
            mcp_servers: [],
            model: &self.model,
            permission_mode: "default",
            slash_commands: [],
            api_key_source: "none",
            claude_code_version: concat!("debussy-sim ", env!("CARGO_PKG_VERSION")),
            output_style: "default",
            agents: ["general-purpose"],
            uuid: uuid(),
        }
    }

    pub(super) fn assistant<'a>(
        &'a self,
        message_id: &'a str,
        parent: Option<&'a str>,
        block: &'a Block,
        usage: &Usage,
    ) -> impl Serialize + 'a {
        ConversationLine {
            r#type: "assistant",
            message: AssistantBody {
                model: &self.model,
                id: message_id,
                r#type: "message",
                role: "assistant",
                content: [block],
                stop_reason: None,
                stop_sequence: None,
                usage: usage.into(),
                context_management: None,
            },
            parent_tool_use_id: parent,
            session_id: &self.session_id,
            uuid: uuid(),
        }
    }

    pub(super) fn user_text<'a>(
        &'a self,
        parent: Option<&'a str>,
        text: &'a str,
    ) -> impl Serialize + 'a {
        ConversationLine {
            r#type: "user",
            message: UserBody {
                role: "user",
                content: [TextBlock {
                    r#type: "text",
                    text,
                }],
            },
            parent_tool_use_id: parent,
            session_id: &self.session_id,
            uuid: uuid(),
        }
    }

    pub(super) fn tool_result<'a>(
        &'a self,
        parent: Option<&'a str>,
        tool_use_id: &'a str,
        content: &'a ResultContent,
        is_error: bool,
    ) -> impl Serialize + 'a {
        ConversationLine {
            r#type: "user",
            message: UserBody {
                role: "user",
                content: [ToolResultBlock {
                    tool_use_id,
                    r#type: "tool_result",
                    content,
                    is_error,
                }],
            },
            parent_tool_use_id: parent,
            session_id: &self.session_id,
            uuid: uuid(),
        }
    }

    pub(super) fn compact_boundary<'a>(
        &'a self,
        trigger: &'a str,
        pre_tokens: u64,
    ) -> impl Serialize + 'a {
        CompactLine {
            r#type: "system",
            subtype: "compact_boundary",
            session_id: &self.session_id,
            uuid: uuid(),
            compact_metadata: CompactMetadata {
                trigger,
                pre_tokens,
            },
        }
    }

    pub(super) fn result<'a>(&'a self, end: &ResultLine<'a>) -> impl Serialize + 'a {
        let totals = end.totals;
        ResultBody {
            r#type: "result",
            subtype: end.subtype,
            is_error: end.is_error,
            duration_ms: end.duration_ms,
            duration_api_ms: end.duration_ms,
            num_turns: end.num_turns,
            result: end.text,
            session_id: &self.session_id,
            total_cost_usd: end.cost_usd,
            usage: (&totals).into(),
            model_usage: [(
                self.model.as_str(),
                ModelUsageBody {
                    input_tokens: totals.input_tokens,
                    output_tokens: totals.output_tokens,
                    cache_read_input_tokens: totals.cache_read_input_tokens,
                    cache_creation_input_tokens: totals.cache_creation_input_tokens,
                    web_search_requests: 0,
                    cost_usd: end.cost_usd,
                    context_window: end.window,
                    max_output_tokens: 64_000,
                },
            )]
            .into(),
            permission_denials: [],
            errors: end.errors,
            uuid: uuid(),
        }
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
