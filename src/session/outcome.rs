//! How a session ended, as the orchestrator acts on it: [`SessionOutcome`] and its
//! documented numeric [`code`](SessionOutcome::code).

use std::fmt;

use serde::Serialize;

use crate::agent::AgentFailure;
use crate::context::{Snapshot, StopReason};
use crate::process::{ExitStatus, ProcessError};

/// The outcome code of a session that completed successfully.
pub const CODE_SUCCESS: i32 = 0;
/// The outcome code of a session that ran out of time.
pub const CODE_TIMEOUT: i32 = -1;
/// The outcome code of a session stopped for a context restart (by the meter or by hand).
pub const CODE_CONTEXT_LIMIT: i32 = -2;
/// The outcome code of a session whose agent could not be started. (−3 is taken: it is
/// the outcome of an attempt whose restart budget ran out, `restart::MAX_RESTARTS_EXCEEDED`.)
pub const CODE_SPAWN_ERROR: i32 = -5;
/// The outcome code of a session stopped because the user interrupted the run.
pub const CODE_INTERRUPTED: i32 = -4;
/// The outcome code of a session whose agent reported a failure debussy recognises (a bad
/// key, no login, an unknown model, no network, a usage limit). (−6 is taken: an attempt
/// whose restarts made no progress, `restart::NO_PROGRESS`.)
pub const CODE_AGENT_FAILURE: i32 = -7;

/// How one agent session ended.
///
/// Codes ([`SessionOutcome::code`]) are debussy's own and recorded in the state store:
///
/// | outcome | code |
/// | --- | --- |
/// | `Completed`, subtype `success` and not `is_error` | 0 |
/// | `Completed`, anything else | 1 |
/// | `Timeout` | −1 |
/// | `ContextLimit` | −2 |
/// | `SpawnError` | −5 |
/// | `Interrupted` | −4 |
/// | `AgentFailure` | −7 |
/// | `Failed` | the exit code; 128 + N for signal N; 1 if the agent exited 0 |
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum SessionOutcome {
    /// The agent printed its final `result` line and ended by itself.
    ///
    /// Success means subtype `success` **and** not `is_error`: Claude Code reports a
    /// failed API call as subtype `success` with `is_error: true` (and exit code 1).
    Completed {
        /// The result's subtype (`success`, `error_max_turns`, `error_during_execution`…).
        subtype: String,
        /// Whether the agent flagged the session as failed.
        is_error: bool,
        /// The final text the agent reported.
        result: Option<String>,
        /// The agent's session id.
        session_id: Option<String>,
    },
    /// The session was stopped so that a fresh one can continue from a checkpoint: the
    /// context meter decided so, or the user asked for a restart.
    ContextLimit {
        /// Why it was stopped.
        reason: LimitReason,
        /// The meter's state when the stop was decided.
        snapshot: Snapshot,
    },
    /// The session ran longer than its timeout and was stopped.
    Timeout,
    /// The agent ended without a final `result` line (it crashed or was killed by
    /// something other than debussy).
    Failed {
        /// How the agent process ended.
        #[serde(serialize_with = "serialize_exit")]
        exit: ExitStatus,
    },
    /// The agent could not be started; nothing ran.
    SpawnError(SpawnFailure),
    /// The user interrupted the run (Ctrl-C) and the session was stopped.
    Interrupted,
    /// The agent could not work, for a reason it reported and debussy recognises: its
    /// credentials, its login, the model, the network, or a usage limit.
    AgentFailure(AgentFailure),
}

impl SessionOutcome {
    /// The documented numeric code (see the table on [`SessionOutcome`]).
    #[must_use]
    pub fn code(&self) -> i32 {
        match self {
            SessionOutcome::Completed { .. } if self.is_success() => CODE_SUCCESS,
            SessionOutcome::Completed { .. } => 1,
            SessionOutcome::ContextLimit { .. } => CODE_CONTEXT_LIMIT,
            SessionOutcome::Timeout => CODE_TIMEOUT,
            SessionOutcome::Failed { exit } => match *exit {
                ExitStatus::Code(code) if code != 0 => code,
                ExitStatus::Signal(signal) => 128 + signal,
                ExitStatus::Code(_) | ExitStatus::Unknown => 1,
            },
            SessionOutcome::SpawnError(_) => CODE_SPAWN_ERROR,
            SessionOutcome::Interrupted => CODE_INTERRUPTED,
            SessionOutcome::AgentFailure(_) => CODE_AGENT_FAILURE,
        }
    }

    /// True only for a completed session whose result is `success` without `is_error`.
    #[must_use]
    pub fn is_success(&self) -> bool {
        matches!(self, SessionOutcome::Completed { subtype, is_error, .. }
            if subtype == "success" && !is_error)
    }

    /// True when the orchestrator should continue in a fresh session from a checkpoint.
    #[must_use]
    pub fn is_context_limit(&self) -> bool {
        matches!(self, SessionOutcome::ContextLimit { .. })
    }

    /// Which way it ended, without the details.
    #[must_use]
    pub fn kind(&self) -> OutcomeKind {
        match self {
            SessionOutcome::Completed { .. } => OutcomeKind::Completed,
            SessionOutcome::ContextLimit { .. } => OutcomeKind::ContextLimit,
            SessionOutcome::Timeout => OutcomeKind::Timeout,
            SessionOutcome::Failed { .. } => OutcomeKind::Failed,
            SessionOutcome::SpawnError(_) => OutcomeKind::SpawnError,
            SessionOutcome::Interrupted => OutcomeKind::Interrupted,
            SessionOutcome::AgentFailure(_) => OutcomeKind::AgentFailure,
        }
    }

    /// A short stable name for logs and the state store (`completed`, `context_limit`,
    /// `timeout`, `failed`, `spawn_error`, `interrupted`, `agent_failure`).
    #[must_use]
    pub fn name(&self) -> &'static str {
        self.kind().as_str()
    }
}

/// Which way a session ended: [`SessionOutcome`] without its details, as the run's
/// events carry it (the session layer owns both).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OutcomeKind {
    /// [`SessionOutcome::Completed`].
    Completed,
    /// [`SessionOutcome::ContextLimit`].
    ContextLimit,
    /// [`SessionOutcome::Timeout`].
    Timeout,
    /// [`SessionOutcome::Failed`].
    Failed,
    /// [`SessionOutcome::SpawnError`].
    SpawnError,
    /// [`SessionOutcome::Interrupted`].
    Interrupted,
    /// [`SessionOutcome::AgentFailure`].
    AgentFailure,
}

impl OutcomeKind {
    /// Its stable name, the same as its JSON spelling.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            OutcomeKind::Completed => "completed",
            OutcomeKind::ContextLimit => "context_limit",
            OutcomeKind::Timeout => "timeout",
            OutcomeKind::Failed => "failed",
            OutcomeKind::SpawnError => "spawn_error",
            OutcomeKind::Interrupted => "interrupted",
            OutcomeKind::AgentFailure => "agent_failure",
        }
    }
}

impl fmt::Display for OutcomeKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Display for SessionOutcome {
    /// One line for people: `completed (success)`, `context limit: context at …`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SessionOutcome::Completed {
                subtype, is_error, ..
            } => {
                write!(f, "completed ({subtype}")?;
                if *is_error {
                    f.write_str(", reported as an error")?;
                }
                f.write_str(")")
            }
            SessionOutcome::ContextLimit { reason, .. } => write!(f, "context limit: {reason}"),
            SessionOutcome::Timeout => f.write_str("timed out"),
            SessionOutcome::Failed {
                exit: ExitStatus::Code(0),
            } => f.write_str(
                "agent failed: it exited 0 without printing its final result line (did it crash or get cut off?)",
            ),
            SessionOutcome::Failed { exit } => {
                write!(f, "agent failed: {exit} before printing its final result line")
            }
            SessionOutcome::SpawnError(failure) => write!(f, "agent not started: {failure}"),
            SessionOutcome::Interrupted => f.write_str("interrupted"),
            SessionOutcome::AgentFailure(failure) => failure.fmt(f),
        }
    }
}

/// `{"code": 3}`, `{"signal": 9, "name": "SIGKILL"}` or `{"unknown": true}`.
fn serialize_exit<S: serde::Serializer>(
    exit: &ExitStatus,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    let mut map = serializer.serialize_map(None)?;
    match *exit {
        ExitStatus::Code(code) => map.serialize_entry("code", &code)?,
        ExitStatus::Signal(signal) => {
            map.serialize_entry("signal", &signal)?;
            if let Some(name) = exit.signal_name() {
                map.serialize_entry("name", name)?;
            }
        }
        ExitStatus::Unknown => map.serialize_entry("unknown", &true)?,
    }
    map.end()
}

/// Why a session was stopped so that a fresh one continues from a checkpoint (the
/// session layer's; the meter's own reason is [`StopReason`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum LimitReason {
    /// The context meter decided: threshold, tool calls, or the agent compacted.
    Meter(StopReason),
    /// The user asked for a restart (the HUD's `r`).
    Manual,
    /// The agent was about to compact its own context and debussy's `PreCompact` hook
    /// blocked it (see [`super::guard`]).
    AgentCompactionBlocked,
}

impl fmt::Display for LimitReason {
    /// The meter's reason in words, or `manual`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LimitReason::Meter(reason) => reason.fmt(f),
            LimitReason::Manual => f.write_str("manual"),
            LimitReason::AgentCompactionBlocked => f.write_str(
                "agent_compaction_blocked: the agent was about to compact its context; debussy's PreCompact hook blocked it",
            ),
        }
    }
}

/// Why an agent could not be started, in words for people.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SpawnFailure {
    /// What failed, with its causes (`agent program `claude` not found (searched PATH=…)`).
    pub message: String,
    /// How to fix it, when known.
    pub help: Option<String>,
    /// Whether the agent or a full disk stood in the way.
    pub cause: SpawnCause,
}

/// What kept an agent from starting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SpawnCause {
    /// The agent's program or settings, or a session file's place: starting it again
    /// as it is will not help.
    Agent,
    /// The disk that holds the session's files is full (or the user's quota spent):
    /// neither the agent's fault nor the phase's, and room on the disk fixes it.
    DiskFull,
}

impl SpawnFailure {
    /// A failure from an error, its source chain joined with `: `; a full disk when one
    /// of its causes says so.
    pub(crate) fn from_error(
        err: &(dyn std::error::Error + 'static),
        help: Option<String>,
    ) -> Self {
        let mut link = Some(err);
        let mut cause = SpawnCause::Agent;
        while let Some(error) = link {
            if error
                .downcast_ref::<std::io::Error>()
                .is_some_and(crate::files::is_out_of_space)
            {
                cause = SpawnCause::DiskFull;
            }
            link = error.source();
        }
        SpawnFailure {
            message: crate::error_chain::error_chain(err),
            help,
            cause,
        }
    }

    /// A failure to `doing` (make a session's directory or file), which the system
    /// refused with `err`; a full disk says so with how to make room, anything else
    /// gets `help`.
    pub(crate) fn making(doing: String, err: &std::io::Error, help: Option<&str>) -> Self {
        let (cause, help) = if crate::files::is_out_of_space(err) {
            (
                SpawnCause::DiskFull,
                Some("free space on the disk that holds it (`df -h` says how much is left)"),
            )
        } else {
            (SpawnCause::Agent, help)
        };
        SpawnFailure {
            message: format!("{doing}: {err}"),
            help: help.map(str::to_owned),
            cause,
        }
    }

    /// How to fix a failure to start the agent program, when the process layer's error
    /// says.
    pub(crate) fn help_for(err: &ProcessError) -> Option<String> {
        match err {
            ProcessError::ProgramNotFound { .. }
            | ProcessError::NotExecutable { .. }
            | ProcessError::InterpreterNotFound { .. } => Some(
                "check the agent's program, `agents.<kind>.command` (`debussy config` shows it)"
                    .to_owned(),
            ),
            ProcessError::MissingCwd { .. } => {
                Some("run debussy from the project, or create the directory".to_owned())
            }
            _ => None,
        }
    }
}

impl fmt::Display for SpawnFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)?;
        if let Some(help) = &self.help {
            write!(f, " (help: {help})")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::{Exactness, Window, WindowSource};

    fn completed(subtype: &str, is_error: bool) -> SessionOutcome {
        SessionOutcome::Completed {
            subtype: subtype.to_owned(),
            is_error,
            result: None,
            session_id: None,
        }
    }

    fn snapshot() -> Snapshot {
        Snapshot {
            tokens: 170_000,
            reported_tokens: 170_000,
            estimated_tokens: 0,
            exactness: Exactness::Exact,
            window: Window {
                tokens: 200_000,
                source: WindowSource::Default,
            },
            percent: 85.0,
            tool_calls: 3,
            turns: 3,
            cost_usd: None,
            cost_estimated: false,
            billed: crate::context::cost::Billed::default(),
            model: None,
            stop: None,
        }
    }

    #[test]
    fn codes_follow_the_documented_table() {
        assert_eq!(completed("success", false).code(), 0);
        assert_eq!(completed("success", true).code(), 1);
        assert_eq!(completed("error_max_turns", false).code(), 1);
        let limit = SessionOutcome::ContextLimit {
            reason: LimitReason::Manual,
            snapshot: snapshot(),
        };
        assert_eq!(limit.code(), -2);
        assert!(limit.is_context_limit());
        assert_eq!(SessionOutcome::Timeout.code(), -1);
        let failed = |exit| SessionOutcome::Failed { exit }.code();
        assert_eq!(failed(ExitStatus::Code(3)), 3);
        assert_eq!(failed(ExitStatus::Code(0)), 1);
        assert_eq!(failed(ExitStatus::Signal(9)), 137);
        assert_eq!(failed(ExitStatus::Unknown), 1);
        let spawn = SessionOutcome::SpawnError(SpawnFailure {
            message: "x".into(),
            help: None,
            cause: SpawnCause::Agent,
        });
        assert_eq!(spawn.code(), -5);
        assert_eq!(SessionOutcome::Interrupted.code(), -4);
    }

    #[test]
    fn only_a_clean_success_is_success() {
        assert!(completed("success", false).is_success());
        assert!(!completed("success", true).is_success());
        assert!(!SessionOutcome::Timeout.is_success());
    }

    #[test]
    fn names_and_display() {
        assert_eq!(completed("success", false).name(), "completed");
        assert_eq!(
            completed("success", true).to_string(),
            "completed (success, reported as an error)"
        );
        let limit = SessionOutcome::ContextLimit {
            reason: LimitReason::Manual,
            snapshot: snapshot(),
        };
        assert_eq!(limit.name(), "context_limit");
        assert_eq!(limit.to_string(), "context limit: manual");
        assert_eq!(
            SessionOutcome::Failed {
                exit: ExitStatus::Signal(9)
            }
            .to_string(),
            "agent failed: signal 9 (SIGKILL) before printing its final result line"
        );
        let quiet = SessionOutcome::Failed {
            exit: ExitStatus::Code(0),
        }
        .to_string();
        assert!(
            quiet.starts_with("agent failed: it exited 0 without printing its final result line"),
            "{quiet}"
        );
        assert!(!quiet.contains("exit code 0"), "{quiet}");
    }

    #[test]
    fn spawn_failures_keep_their_causes_once() {
        let err = std::io::Error::other("disk on fire");
        let failure = SpawnFailure::from_error(&err, Some("call someone".into()));
        assert_eq!(failure.message, "disk on fire");
        assert_eq!(failure.to_string(), "disk on fire (help: call someone)");
        assert_eq!(failure.cause, SpawnCause::Agent);
    }

    #[test]
    fn a_full_disk_under_a_session_file_is_no_fault_of_the_agent() {
        let full = std::io::Error::from(std::io::ErrorKind::StorageFull);
        let failure = SpawnFailure::making("create the session log /p/s.jsonl".into(), &full, None);
        assert_eq!(failure.cause, SpawnCause::DiskFull);
        assert!(
            failure
                .message
                .starts_with("create the session log /p/s.jsonl: "),
            "{failure}"
        );
        assert!(failure.help.is_some_and(|help| help.contains("df -h")));
        let denied = std::io::Error::from(std::io::ErrorKind::PermissionDenied);
        let failure = SpawnFailure::making("create x".into(), &denied, Some("check it"));
        assert_eq!(failure.cause, SpawnCause::Agent);
        assert_eq!(failure.help.as_deref(), Some("check it"));
        let spawn = ProcessError::Spawn {
            program: "claude".into(),
            source: std::io::Error::from(std::io::ErrorKind::QuotaExceeded),
        };
        let failure = SpawnFailure::from_error(&spawn, None);
        assert_eq!(failure.cause, SpawnCause::DiskFull, "{failure}");
    }
}
