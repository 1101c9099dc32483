//! What a running session reports as it goes: [`SessionEvent`]s for the orchestrator to
//! forward to the HUD, the plain console and the JSON log.
//!
//! Besides every parsed [`AgentEvent`], the session derives [`Activity`] lines (what an
//! activity log shows, with subagent lines attributed to their subagent) and sends a
//! fresh context [`Snapshot`] whenever the meter's figures change, so a gauge never has
//! to understand agent output.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;

use super::outcome::LimitReason;
use crate::agent::{AgentFailure, ApiRetry};
use crate::context::Snapshot;
use crate::process::{Leak, Stream};

/// Longest tool input shown by [`Activity`]'s `Display`, in characters.
const SHOWN_INPUT: usize = 200;

/// One thing that happened in a running session, in the order it happened.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum SessionEvent {
    /// The agent process started.
    Started {
        /// Its pid (also its process group id).
        pid: u32,
        /// Its start time in clock ticks after boot: with the pid, what tells it from a
        /// later process given the same number.
        start: u64,
        /// The command line, shell-quoted (the prompt goes on stdin and is not shown).
        command: String,
        /// Where its raw output is being saved.
        log_path: PathBuf,
    },
    /// A line for an activity log, derived from the agent's events.
    Activity(Activity),
    /// The agent started a subagent of a type it had not started before in this session
    /// (a Task/Agent call's `subagent_type`), what a phase's required agents are judged
    /// on. Sent once per type, never paced like activity lines.
    SubagentUsed {
        /// The subagent's type, e.g. `Explore`.
        agent: String,
    },
    /// The context meter's figures changed (also sent once at the start).
    Context(Snapshot),
    /// One line the agent wrote on stderr (lossily decoded).
    Stderr(String),
    /// The session decided to stop the agent, and why. Sent once per cause; an
    /// interrupt may follow a context stop, and a kill may follow either.
    Stopping {
        /// Why.
        cause: StopCause,
        /// True when the agent is being killed at once (SIGKILL) rather than walked
        /// down the stop ladder.
        immediate: bool,
    },
    /// Something went wrong that does not end the session.
    Warning(SessionWarning),
    /// The agent retries a failed API request on its own.
    ApiRetry(ApiRetry),
}

/// Why the session stopped (or is stopping) its agent: the session layer's word for
/// every stop it makes. A stop for a fresh session carries its [`LimitReason`] and ends as
/// [`SessionOutcome::ContextLimit`](super::SessionOutcome::ContextLimit).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "cause", rename_all = "snake_case")]
pub enum StopCause {
    /// A fresh session continues from a checkpoint: the meter or the user decided.
    ContextLimit(LimitReason),
    /// The session's timeout elapsed.
    Timeout {
        /// The timeout.
        after: Duration,
    },
    /// The user interrupted the run.
    Interrupt,
    /// The agent reported a failure no retry can fix (a bad key, no login, an unknown
    /// model): waiting for it to give up would only waste minutes.
    AgentFailure(AgentFailure),
}

impl fmt::Display for StopCause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StopCause::ContextLimit(LimitReason::Meter(reason)) => reason.fmt(f),
            StopCause::ContextLimit(LimitReason::Manual) => f.write_str("manual restart"),
            StopCause::ContextLimit(reason @ LimitReason::AgentCompactionBlocked) => reason.fmt(f),
            StopCause::Timeout { after } => write!(f, "timed out after {after:.0?}"),
            StopCause::Interrupt => f.write_str("interrupted"),
            StopCause::AgentFailure(failure) => failure.fmt(f),
        }
    }
}

/// A problem that does not end the session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "warning", rename_all = "snake_case")]
pub enum SessionWarning {
    /// The agent printed a line longer than the process layer's cap; it was skipped
    /// (and is missing from the session log).
    LineTooLong {
        /// The pipe.
        #[serde(serialize_with = "serialize_display")]
        stream: Stream,
        /// The cap, in bytes.
        limit: usize,
    },
    /// After the agent exited, processes it started were still running (they were
    /// killed) or held its output open.
    Leaked(#[serde(serialize_with = "serialize_leak")] Leak),
    /// The agent printed its final `result` but did not exit; it was stopped after
    /// waiting this long. The session still counts as completed.
    Lingered {
        /// How long it was given.
        after: Duration,
    },
    /// The agent printed a line that is not valid UTF-8; it was decoded lossily (the bad
    /// bytes became U+FFFD) and counted. Reported once per session.
    InvalidUtf8 {
        /// The 1-based stdout line number of the first such line.
        line: u64,
    },
    /// The session log could not be written.
    Log {
        /// The log file.
        path: PathBuf,
        /// What failed.
        message: String,
    },
    /// The compaction guard could not be set up: the agent may compact on its own.
    Guard {
        /// What failed.
        message: String,
    },
}

impl fmt::Display for SessionWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SessionWarning::LineTooLong { stream, limit } => write!(
                f,
                "the agent printed a line longer than {limit} bytes on {stream}; it was skipped"
            ),
            SessionWarning::Leaked(leak) => write!(f, "the agent left processes behind: {leak}"),
            SessionWarning::Lingered { after } => write!(
                f,
                "the agent printed its result but was still running {after:.0?} later; it was stopped"
            ),
            SessionWarning::InvalidUtf8 { line } => write!(
                f,
                "the agent printed invalid UTF-8 (first on stdout line {line}); such bytes are read as U+FFFD"
            ),
            SessionWarning::Log { path, message } => {
                write!(f, "session log {}: {message}", path.display())
            }
            SessionWarning::Guard { message } => write!(
                f,
                "the compaction guard could not be set up ({message}); the agent may compact its context on its own"
            ),
        }
    }
}

/// Which conversation an activity line belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "thread", rename_all = "snake_case")]
pub enum Thread {
    /// The main conversation.
    Main,
    /// A subagent started by a Task/Agent tool call.
    Subagent(Subagent),
}

impl Thread {
    /// True for the main conversation.
    #[must_use]
    pub fn is_main(&self) -> bool {
        matches!(self, Thread::Main)
    }
}

impl fmt::Display for Thread {
    /// `main`, or the subagent's type (`general-purpose`), or its call id.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Thread::Main => f.write_str("main"),
            Thread::Subagent(subagent) => match &subagent.subagent_type {
                Some(kind) => f.write_str(kind),
                None => write!(f, "subagent {}", subagent.parent_tool_use_id),
            },
        }
    }
}

/// A subagent, as its Task/Agent tool call described it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Subagent {
    /// The id of the tool call that started it; its lines carry this as
    /// `parent_tool_use_id`.
    pub parent_tool_use_id: String,
    /// Its `subagent_type`, when the call named one (and the call was seen).
    pub subagent_type: Option<String>,
    /// The call's short `description`, when given.
    pub description: Option<String>,
}

/// One line of an activity log.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Activity {
    /// Whose line it is.
    pub thread: Thread,
    /// What happened.
    pub kind: ActivityKind,
}

/// What an [`Activity`] line says.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ActivityKind {
    /// The assistant wrote text.
    Text {
        /// The text.
        text: String,
    },
    /// The assistant called a tool.
    ToolCall {
        /// The call id.
        id: String,
        /// The tool (`Bash`, `Write`, `Agent`, `mcp__server__tool`…).
        name: String,
        /// Its arguments.
        input: serde_json::Value,
    },
    /// A tool call failed (its result was flagged as an error, or it was refused).
    ToolError {
        /// The call id, when known.
        tool_use_id: Option<String>,
        /// The tool, when the call was seen.
        tool: Option<String>,
        /// What the tool said.
        message: String,
    },
    /// Something else worth a line: the agent's status, a compaction, a non-JSON line.
    Notice {
        /// The line.
        text: String,
    },
}

impl fmt::Display for Activity {
    /// `[main] Bash {"command":"ls"}`, with long inputs cut.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{}] ", self.thread)?;
        match &self.kind {
            ActivityKind::Text { text } => f.write_str(text.trim()),
            ActivityKind::ToolCall { name, input, .. } => {
                write!(f, "{name} {}", cut(&input.to_string(), SHOWN_INPUT))
            }
            ActivityKind::ToolError { tool, message, .. } => {
                let tool = tool.as_deref().unwrap_or("tool");
                write!(f, "{tool} failed: {}", cut(message.trim(), SHOWN_INPUT))
            }
            ActivityKind::Notice { text } => f.write_str(text),
        }
    }
}

/// Serialize with `Display` (for process-layer types that are not `Serialize`).
pub(crate) fn serialize_display<T: fmt::Display, S: serde::Serializer>(
    value: &T,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.collect_str(value)
}

fn serialize_leak<S: serde::Serializer>(leak: &Leak, serializer: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeStruct;
    let pipes: Vec<String> = leak.open_pipes.iter().map(ToString::to_string).collect();
    let mut out = serializer.serialize_struct("Leak", 3)?;
    out.serialize_field("group_pids", &leak.group_pids)?;
    out.serialize_field("escaped_pids", &leak.escaped_pids)?;
    out.serialize_field("open_pipes", &pipes)?;
    out.end()
}

/// At most `max` characters of `text`, with `…` when cut.
fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn activity_lines_read_well() {
        let call = Activity {
            thread: Thread::Main,
            kind: ActivityKind::ToolCall {
                id: "t1".into(),
                name: "Bash".into(),
                input: serde_json::json!({"command": "ls"}),
            },
        };
        assert_eq!(call.to_string(), r#"[main] Bash {"command":"ls"}"#);
        let error = Activity {
            thread: Thread::Subagent(Subagent {
                parent_tool_use_id: "toolu_1".into(),
                subagent_type: Some("Explore".into()),
                description: None,
            }),
            kind: ActivityKind::ToolError {
                tool_use_id: Some("t2".into()),
                tool: Some("Read".into()),
                message: "x".repeat(300),
            },
        };
        let shown = error.to_string();
        assert!(shown.starts_with("[Explore] Read failed: xxx"), "{shown}");
        assert!(
            shown.ends_with('…') && shown.chars().count() < 240,
            "{shown}"
        );
        let unknown = Thread::Subagent(Subagent {
            parent_tool_use_id: "toolu_9".into(),
            subagent_type: None,
            description: None,
        });
        assert_eq!(unknown.to_string(), "subagent toolu_9");
    }

    #[test]
    fn causes_and_warnings_read_well() {
        assert_eq!(
            StopCause::Timeout {
                after: Duration::from_secs(5)
            }
            .to_string(),
            "timed out after 5s"
        );
        let warning = SessionWarning::LineTooLong {
            stream: Stream::Stdout,
            limit: 10,
        };
        assert_eq!(
            warning.to_string(),
            "the agent printed a line longer than 10 bytes on stdout; it was skipped"
        );
    }
}
