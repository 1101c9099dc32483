//! Agent backends: how to launch a headless coding agent and how to read what it prints.
//!
//! A backend is plain data plus two pure functions ([`AgentBackend`]): it describes the
//! command to run for a prompt ([`AgentCommand`], spawned by the `process` layer, which
//! this module never touches) and turns each line the agent prints into typed
//! [`AgentEvent`]s. It also says what usage information the agent reports
//! ([`UsageReporting`]), which tells the context meter whether to trust the agent's numbers
//! or estimate.
//!
//! Backends: [`claude::ClaudeBackend`] (Claude Code in `stream-json` mode),
//! [`codex::CodexBackend`] (`codex exec --json`, plus its rollout file),
//! [`gemini::GeminiBackend`] (the Gemini CLI's `stream-json`, estimated) and
//! [`sim::SimBackend`] (the built-in simulated agent, which prints Claude Code's format).
//!
//! A backend never does I/O beyond locating its program: what a session needs made on
//! disk (a private home directory for the agent, a file it writes to follow live) is
//! described in the [`AgentCommand`] and done by the session layer.

mod backend;
pub mod claude;
pub mod claude_failures;
pub mod codex;
mod command;
mod contract;
mod endpoint;
mod error;
mod event;
pub mod failure;
pub mod gemini;
pub mod known_windows;
pub mod last_words;
mod lenient;
mod program;
#[cfg(test)]
mod recordings;
mod settings;
pub mod sim;
pub mod stream_json;
mod usage;

pub use backend::{BackendContext, backend};
pub use command::{AgentCommand, AgentHome, Follow, LayeredSettings, OwnDir};
pub use contract::{AgentBackend, HANDOFF_ANSWER_TOKENS, ResumeRequest, UsageReporting};
pub use endpoint::ApiEndpoint;
pub use error::AgentError;
pub use event::{
    AgentEvent, AssistantBlock, AssistantMessage, CompactBoundary, DeniedCall, HookEvent,
    McpServerStatus, ModelUsage, PermissionDenied, RateLimitEvent, ResultBlock, SessionInit,
    SessionResult, StatusEvent, StreamEvent, TextLine, Todo, TodoStatus, ToolResult,
    ToolResultContent, ToolUse, UnknownLine, UserBlock, UserMessage,
};
pub use failure::{AgentFailure, ApiRetry, FailureKind};
pub use last_words::LastWords;

pub use settings::BackendSettings;
pub use usage::{Usage, UsageReport};

pub(crate) use crate::process::shell_quote;

#[cfg(test)]
mod tests;
