//! What every agent backend provides ([`AgentBackend`]): the command for a prompt, the
//! events in each line it prints, and what it says about its usage and its failures.

use super::{
    AgentCommand, AgentError, AgentEvent, AgentFailure, ApiEndpoint, ApiRetry, LastWords,
    claude_failures, stream_json,
};

/// What usage information an agent reports, which decides how its context is measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UsageReporting {
    /// Every assistant message carries the API's token usage (Claude Code).
    PerMessage,
    /// Each model request's usage comes as a [`UsageReport`](super::UsageReport) of its
    /// own (Codex's rollout).
    PerRequest,
    /// No usage at all: the meter estimates everything it sees with the tokenizer.
    Nothing,
}

/// An agent backend: command construction and output parsing, no I/O beyond locating the
/// program.
pub trait AgentBackend: Send + Sync {
    /// Short name for logs and messages (`claude`, `sim`).
    fn name(&self) -> &'static str;

    /// The command that runs one session on `prompt` with `model`.
    ///
    /// # Errors
    /// When the agent program cannot be found, or the backend's inputs (a scenario file)
    /// are unusable; the error says what was looked for and how to fix it.
    fn command(&self, prompt: &str, model: &str) -> Result<AgentCommand, AgentError>;

    /// Turn one output line into the events it carries (zero or more). Never fails: lines
    /// the backend does not understand become [`AgentEvent::Unknown`] or
    /// [`AgentEvent::Text`]. By default the line is Claude Code's stream-json, which the
    /// sim agent speaks too.
    fn parse_line(&self, line: &[u8]) -> Vec<AgentEvent> {
        stream_json::parse_line(line).into_iter().collect()
    }

    /// Turn one line of the file the session follows
    /// ([`AgentHome::follow`](super::AgentHome::follow)) into the events it carries. By
    /// default the backend follows no file and this gives nothing.
    fn parse_followed_line(&self, line: &[u8]) -> Vec<AgentEvent> {
        let _ = line;
        Vec::new()
    }

    /// What usage information this agent reports; by default usage per model request,
    /// as stream-json carries it.
    fn usage_reporting(&self) -> UsageReporting {
        UsageReporting::PerMessage
    }

    /// Why a session failed, from what it left behind (its error result, its lines that
    /// were not JSON, its stderr), when the failure is one the backend recognises. `now`
    /// reads times the agent gave in local words (Codex's "try again at 3:15 PM"). By
    /// default Claude Code's words, as stream-json carries them.
    fn diagnose(&self, words: &LastWords, now: &jiff::Zoned) -> Option<AgentFailure> {
        let _ = now;
        claude_failures::diagnose(words)
    }

    /// One of the agent's own API retries announced on stderr (the Gemini CLI's "Attempt
    /// 2 failed. Retrying…"), if `line` is one. By default the agent announces none there.
    fn stderr_retry(&self, line: &str) -> Option<ApiRetry> {
        let _ = line;
        None
    }

    /// Where the agent sends its model requests, as its environment says, when debussy
    /// can tell: a wait for an API the agent could not reach watches it, to go on once
    /// it answers again. By default unknown.
    fn api_endpoint(&self) -> Option<ApiEndpoint> {
        None
    }

    /// Variables for asking the program its version (`PROGRAM --version`, in the checks
    /// before a run, `audit` and `doctor`) that spare it work the answer does not need.
    /// By default none.
    fn version_env(&self) -> &'static [(&'static str, &'static str)] {
        &[]
    }

    /// Whether [`resume_command`](Self::resume_command) can continue a stopped session, so
    /// the stopped agent can write its own handoff. By default it cannot.
    fn can_resume(&self) -> bool {
        false
    }

    /// The command that resumes a stopped session (same context) for one turn, with no
    /// tools allowed: the agent-written handoff. Only called when
    /// [`can_resume`](Self::can_resume) says so.
    ///
    /// # Errors
    /// As [`command`](Self::command); [`AgentError::CannotResume`] by default.
    fn resume_command(&self, resume: &ResumeRequest<'_>) -> Result<AgentCommand, AgentError> {
        let _ = resume;
        Err(AgentError::CannotResume { agent: self.name() })
    }
}

/// The most tokens an agent-written handoff may answer with: the room a stopped session
/// needs for its answer, beside the handoff prompt.
pub const HANDOFF_ANSWER_TOKENS: u64 = 8_000;

/// A stopped session resumed for one answer (the agent-written handoff).
#[derive(Debug, Clone, Copy)]
pub struct ResumeRequest<'a> {
    /// The agent's id of the stopped session.
    pub session_id: &'a str,
    /// What to ask.
    pub prompt: &'a str,
    /// The model.
    pub model: &'a str,
    /// The stopped session's context window in tokens, as debussy measured it: the
    /// answer must fit in what is left of it.
    pub window: Option<u64>,
}
