//! The scenario DSL: what the scripted model answers, turn by turn.
//!
//! A [`Scenario`] holds one script for the main conversation, one per subagent
//! conversation (matched by a fragment of the subagent's prompt), and canned answers
//! for the requests nobody scripts: compaction summaries, side requests and
//! `count_tokens`. A [`Turn`] is one model response: content blocks (text, thinking,
//! `tool_use`), a stop reason, the exact usage numbers, and optional timing (a delay, a
//! stall, or a hold of the stream before it ends). This module is plain data; the
//! server in `mod.rs` plays it and `sse.rs` encodes it.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Value, json};

/// Token usage the scripted model reports for one turn, exactly as the Messages API
/// names the fields. Claude Code copies these numbers into the `message.usage` of
/// every stream-json `assistant` line it prints for that turn.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    /// Uncached input tokens.
    pub input_tokens: u64,
    /// Input tokens read from the prompt cache.
    pub cache_read_input_tokens: u64,
    /// Input tokens written to the prompt cache.
    pub cache_creation_input_tokens: u64,
    /// Output tokens of the turn.
    pub output_tokens: u64,
}

impl Usage {
    /// Usage with every field given, in the order input, cache read, cache creation,
    /// output.
    pub const fn new(
        input_tokens: u64,
        cache_read_input_tokens: u64,
        cache_creation_input_tokens: u64,
        output_tokens: u64,
    ) -> Self {
        Self {
            input_tokens,
            cache_read_input_tokens,
            cache_creation_input_tokens,
            output_tokens,
        }
    }

    /// The context this turn occupies: `input + cache_read + cache_creation`, the
    /// figure DESIGN.md's context meter reads.
    pub const fn context_tokens(&self) -> u64 {
        self.input_tokens + self.cache_read_input_tokens + self.cache_creation_input_tokens
    }

    /// The usage object as the Messages API sends it.
    pub fn to_json(self) -> Value {
        json!({
            "input_tokens": self.input_tokens,
            "cache_read_input_tokens": self.cache_read_input_tokens,
            "cache_creation_input_tokens": self.cache_creation_input_tokens,
            "output_tokens": self.output_tokens,
        })
    }

    /// Reads the four fields back from a `usage` object (a stream-json
    /// `message.usage`, say); a missing field reads as 0.
    pub fn from_json(value: &Value) -> Self {
        let field = |name: &str| value.get(name).and_then(Value::as_u64).unwrap_or(0);
        Self {
            input_tokens: field("input_tokens"),
            cache_read_input_tokens: field("cache_read_input_tokens"),
            cache_creation_input_tokens: field("cache_creation_input_tokens"),
            output_tokens: field("output_tokens"),
        }
    }
}

/// One content block of a scripted turn.
#[derive(Clone, Debug, PartialEq)]
pub enum Block {
    /// Visible text, streamed as `text_delta`s.
    Text(String),
    /// Extended thinking, streamed as `thinking_delta`s and a `signature_delta`.
    Thinking(String),
    /// A tool call, streamed as `input_json_delta`s; Claude Code runs the tool.
    ToolUse {
        /// The `tool_use` id; tool results and subagent lines refer to it.
        id: String,
        /// Tool name as the API sees it (`Write`, `Bash`, `Agent`, `mcp__srv__tool`).
        name: String,
        /// The tool's JSON input.
        input: Value,
    },
}

/// An Anthropic API error the scripted model answers with instead of a message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApiError {
    /// HTTP status, e.g. 400 or 529.
    pub status: u16,
    /// The `error.type`, e.g. `invalid_request_error`.
    pub error_type: String,
    /// The `error.message`.
    pub message: String,
}

/// What a turn waits for before its stream completes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Pause {
    /// Stream the whole response at once.
    #[default]
    None,
    /// Send nothing at all (not even headers) until [`super::ModelServer::release`]
    /// is called or the server is dropped: a model that never answers.
    Stall,
    /// Stream `message_start` and every content block, then keep the stream open
    /// before `message_delta`/`message_stop` until released or dropped. Claude Code
    /// prints each block's `assistant` line (with the usage) as soon as the block
    /// ends, so a test sees the turn's usage while the request is still in flight.
    Hold,
}

static NEXT_TOOL_ID: AtomicUsize = AtomicUsize::new(1);

/// One scripted model response.
///
/// Build it with [`Turn::new`] (or [`Turn::reply`]) and the chaining methods; the stop
/// reason defaults to `tool_use` when the turn has a tool call and `end_turn`
/// otherwise.
#[derive(Clone, Debug, PartialEq)]
pub struct Turn {
    pub(super) blocks: Vec<Block>,
    pub(super) stop_reason: Option<String>,
    pub(super) usage: Usage,
    pub(super) delay: Duration,
    pub(super) pause: Pause,
    pub(super) error: Option<ApiError>,
}

impl Default for Turn {
    fn default() -> Self {
        Self::new()
    }
}

impl Turn {
    /// An empty turn with small default usage (10 input, 5 output tokens).
    pub fn new() -> Self {
        Self {
            blocks: Vec::new(),
            stop_reason: None,
            usage: Usage::new(10, 0, 0, 5),
            delay: Duration::ZERO,
            pause: Pause::None,
            error: None,
        }
    }

    /// A final answer: one text block, `end_turn`.
    pub fn reply(text: impl Into<String>) -> Self {
        Self::new().text(text)
    }

    /// An API error instead of a message. Error turns are sticky: once a
    /// conversation's script reaches one, every later request of that conversation
    /// gets the same error (Claude Code retries some errors, and a retry must not
    /// consume the next turn).
    pub fn api_error(
        status: u16,
        error_type: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        let mut turn = Self::new();
        turn.error = Some(ApiError {
            status,
            error_type: error_type.into(),
            message: message.into(),
        });
        turn
    }

    /// Appends a text block.
    #[must_use]
    pub fn text(mut self, text: impl Into<String>) -> Self {
        self.blocks.push(Block::Text(text.into()));
        self
    }

    /// Appends a thinking block.
    #[must_use]
    pub fn thinking(mut self, thinking: impl Into<String>) -> Self {
        self.blocks.push(Block::Thinking(thinking.into()));
        self
    }

    /// Appends a tool call with a generated id (`toolu_scripted_NNNN`, unique in the
    /// test process).
    #[must_use]
    pub fn tool_use(self, name: impl Into<String>, input: Value) -> Self {
        let id = format!(
            "toolu_scripted_{:04}",
            NEXT_TOOL_ID.fetch_add(1, Ordering::Relaxed)
        );
        self.tool_use_id(id, name, input)
    }

    /// Appends a call of Claude Code's `Bash` tool running `command`.
    #[must_use]
    pub fn bash(self, command: impl Into<String>, description: &str) -> Self {
        let command = command.into();
        self.tool_use(
            "Bash",
            serde_json::json!({"command": command, "description": description}),
        )
    }

    /// A `Bash` call whose usage (190k of a 200k window) is past Claude Code's
    /// auto-compact threshold (window - 20k summary reserve - 13k buffer = 167k).
    pub fn past_the_auto_compact_threshold() -> Self {
        Self::new()
            .bash("echo step", "Print step")
            .usage(Usage::new(10, 190_000, 0, 20))
    }

    /// Appends a call, with id `id`, of Claude Code's `Agent` tool starting a
    /// general-purpose subagent on `prompt` in the foreground: the main thread waits
    /// for its report, so the request order is deterministic.
    #[must_use]
    pub fn subagent_call(self, id: &str, description: &str, prompt: &str) -> Self {
        self.tool_use_id(
            id,
            "Agent",
            serde_json::json!({
                "description": description,
                "prompt": prompt,
                "subagent_type": "general-purpose",
                "run_in_background": false,
            }),
        )
    }

    /// Appends a tool call with the given id, for tests that assert on it (the
    /// `parent_tool_use_id` of a subagent's lines is the id of its `Agent` call).
    #[must_use]
    pub fn tool_use_id(
        mut self,
        id: impl Into<String>,
        name: impl Into<String>,
        input: Value,
    ) -> Self {
        self.blocks.push(Block::ToolUse {
            id: id.into(),
            name: name.into(),
            input,
        });
        self
    }

    /// Sets the usage the turn reports.
    #[must_use]
    pub const fn usage(mut self, usage: Usage) -> Self {
        self.usage = usage;
        self
    }

    /// Never answers until released; see [`Pause::Stall`].
    #[must_use]
    pub const fn stall(mut self) -> Self {
        self.pause = Pause::Stall;
        self
    }

    /// Streams the content, then holds the stream open until released; see
    /// [`Pause::Hold`].
    #[must_use]
    pub const fn hold(mut self) -> Self {
        self.pause = Pause::Hold;
        self
    }

    /// The stop reason the turn reports.
    pub fn effective_stop_reason(&self) -> &str {
        match &self.stop_reason {
            Some(reason) => reason,
            None if self.tool_use_ids().next().is_some() => "tool_use",
            None => "end_turn",
        }
    }

    /// The ids of the turn's tool calls, in order.
    pub fn tool_use_ids(&self) -> impl Iterator<Item = &str> {
        self.blocks.iter().filter_map(|block| match block {
            Block::ToolUse { id, .. } => Some(id.as_str()),
            _ => None,
        })
    }

    /// True for an [`Turn::api_error`] turn.
    pub const fn is_error(&self) -> bool {
        self.error.is_some()
    }
}

/// The script of one subagent conversation.
#[derive(Clone, Debug)]
pub(super) struct SubagentScript {
    /// A fragment of the subagent's prompt (the Agent tool's `prompt` input).
    pub(super) prompt_contains: String,
    pub(super) turns: Vec<Turn>,
}

/// Everything the scripted model will say during one test.
///
/// ```ignore
/// let scenario = Scenario::new()
///     .turn(Turn::new().tool_use("Write", json!({"file_path": path, "content": "hi\n"})))
///     .turn(Turn::reply("Wrote it.").usage(Usage::new(30, 2_000, 100, 12)));
/// ```
#[derive(Clone, Debug)]
pub struct Scenario {
    pub(super) main: Vec<Turn>,
    pub(super) subagents: Vec<SubagentScript>,
    pub(super) when_exhausted: Turn,
    pub(super) compact_summary: String,
    pub(super) handoff: Turn,
    pub(super) side_reply: String,
    pub(super) count_tokens: Option<u64>,
    pub(super) refusing: Option<super::refusal::Refusing>,
}

impl Default for Scenario {
    fn default() -> Self {
        Self::new()
    }
}

impl Scenario {
    /// An empty scenario: every main-thread request gets the exhausted answer.
    pub fn new() -> Self {
        Self {
            main: Vec::new(),
            subagents: Vec::new(),
            when_exhausted: Turn::reply("The scripted model has no more turns."),
            compact_summary: "Scripted summary of the conversation so far.".to_owned(),
            handoff: Turn::reply(
                "## Goal\nThe scripted phase.\n\n## Done\nWhat the transcript shows.\n\n## Next steps\nContinue.",
            )
            .usage(Usage::new(10, 0, 0, 60)),
            side_reply: "ok".to_owned(),
            count_tokens: None,
            refusing: None,
        }
    }

    /// The agent's first call, of Claude Code's `Bash` tool, kills it (the tool's shell
    /// is a direct child of the CLI); the reply after it is never reached.
    pub fn killing_the_agent() -> Self {
        Self::new()
            .turn(Turn::new().bash("kill -KILL $PPID", "Stop the agent"))
            .turn(Turn::reply("never reached"))
    }

    /// The main thread hands counting the files to a subagent (tool call `toolu_task_1`,
    /// its prompt holding `SUBTASK-ALPHA`) that runs `ls -a` and reports the directory
    /// empty; the main thread then finishes. `main` and `sub` are each thread's usage,
    /// turn by turn.
    pub fn delegating_to_a_subagent(main: [Usage; 2], sub: [Usage; 2]) -> Self {
        Self::new()
            .turn(
                Turn::new()
                    .subagent_call(
                        "toolu_task_1",
                        "Count the files",
                        "SUBTASK-ALPHA: count the files in the working directory",
                    )
                    .usage(main[0]),
            )
            .subagent(
                "SUBTASK-ALPHA",
                [
                    Turn::new().bash("ls -a", "List files").usage(sub[0]),
                    Turn::reply("Report: the directory is empty.").usage(sub[1]),
                ],
            )
            .turn(Turn::reply("The subagent finished.").usage(main[1]))
    }

    /// Appends the next turn of the main conversation. The main conversation is one
    /// script across every Claude Code process that talks to this server, so a
    /// restarted session continues where the previous one stopped.
    #[must_use]
    pub fn turn(mut self, turn: Turn) -> Self {
        self.main.push(turn);
        self
    }

    /// Appends several main-conversation turns.
    #[must_use]
    pub fn turns(mut self, turns: impl IntoIterator<Item = Turn>) -> Self {
        self.main.extend(turns);
        self
    }

    /// Scripts the subagent whose prompt contains `prompt_contains`. Subagent
    /// requests are told apart from the main thread by the `cc_is_subagent=true`
    /// marker Claude Code puts in their system prompt, or by the fragment appearing in
    /// their first user message; use a fragment that the main prompt does not contain.
    #[must_use]
    pub fn subagent(
        mut self,
        prompt_contains: impl Into<String>,
        turns: impl IntoIterator<Item = Turn>,
    ) -> Self {
        self.subagents.push(SubagentScript {
            prompt_contains: prompt_contains.into(),
            turns: turns.into_iter().collect(),
        });
        self
    }

    /// The answer for any conversation whose script has run out (default: a short
    /// final text). Such requests are recorded as unscripted.
    #[must_use]
    pub fn when_exhausted(mut self, turn: Turn) -> Self {
        self.when_exhausted = turn;
        self
    }

    /// The summary text the model returns when Claude Code compacts (wrapped in
    /// `<summary>` tags, as Claude Code expects).
    #[must_use]
    pub fn compact_summary(mut self, summary: impl Into<String>) -> Self {
        self.compact_summary = summary.into();
        self
    }

    /// The answer to debussy's handoff request (default: a short three-section handoff).
    /// Error turns answer every handoff request.
    #[must_use]
    pub fn handoff(mut self, turn: Turn) -> Self {
        self.handoff = turn;
        self
    }

    /// The text answer to side requests (titles, summaries, other small-model calls).
    #[must_use]
    pub fn side_reply(mut self, text: impl Into<String>) -> Self {
        self.side_reply = text.into();
        self
    }

    /// Refuses every model request with `refusal` for `duration` after the server
    /// starts (`None`: for ever), as the real API does (see
    /// [`super::refusal::Refusal`]); then the scripts play. Refused requests are
    /// recorded as [`super::RequestKind::Refused`] and advance no script.
    #[must_use]
    pub const fn refuse(
        mut self,
        refusal: super::refusal::Refusal,
        duration: Option<Duration>,
    ) -> Self {
        self.refusing = Some(super::refusal::Refusing {
            refusal,
            until: duration,
        });
        self
    }

    /// The `input_tokens` that `/v1/messages/count_tokens` answers (default: the
    /// request body's length / 4).
    #[must_use]
    pub const fn count_tokens(mut self, tokens: u64) -> Self {
        self.count_tokens = Some(tokens);
        self
    }
}
