//! Plain records stored in and read from the state database.

use std::fmt;
use std::str::FromStr;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::agent::FailureKind;
use crate::context::cost::Billed;
use crate::process::RecordedGroup;

/// How a run stands: stored in the state database and reported in the run's summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RunStatus {
    /// In progress (or its process died without recording an end).
    #[default]
    Running,
    /// Every phase completed.
    Completed,
    /// A phase failed or was blocked.
    Failed,
    /// Interrupted; `debussy run --resume` continues it.
    Paused,
    /// Its process died without recording an end (killed, crashed, power lost);
    /// `debussy run --resume` continues it.
    Interrupted,
}

/// How one phase execution (an attempt) stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ExecutionStatus {
    /// The agent is working.
    Running,
    /// Gates are running.
    Validating,
    /// Done and validated.
    Completed,
    /// The attempt failed.
    Failed,
    /// Waiting on a human (the agent reported `blocked`, or a dependency did not complete).
    Blocked,
    /// Interrupted by the user.
    Paused,
    /// Skipped by the user.
    Skipped,
    /// Done and validated in its worktree; its branch is not merged into the run's
    /// branch yet (phases running side by side). `completed` once it is.
    Merging,
    /// Done and validated, but its branch could not be merged into the run's branch:
    /// a human finishes the merge (phases running side by side).
    AwaitingHuman,
    /// It was running when the debussy process running it died (a SIGKILL, a crash).
    Interrupted,
}

/// How the agent said a phase ended (`debussy done`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CompletionStatus {
    /// Finished.
    Completed,
    /// Needs a human.
    Blocked,
    /// Gave up.
    Failed,
}

macro_rules! text_enum {
    ($ty:ident { $($variant:ident => $text:literal),+ $(,)? }) => {
        impl $ty {
            /// The stored (and displayed) spelling.
            #[must_use]
            pub fn as_str(self) -> &'static str {
                match self { $($ty::$variant => $text),+ }
            }
        }
        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
        impl FromStr for $ty {
            type Err = String;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                match s {
                    $($text => Ok($ty::$variant),)+
                    other => Err(format!("unknown {} `{other}`", stringify!($ty))),
                }
            }
        }
    };
}

text_enum!(RunStatus {
    Running => "running",
    Completed => "completed",
    Failed => "failed",
    Paused => "paused",
    Interrupted => "interrupted",
});
text_enum!(ExecutionStatus {
    Running => "running",
    Validating => "validating",
    Completed => "completed",
    Failed => "failed",
    Blocked => "blocked",
    Paused => "paused",
    Skipped => "skipped",
    Merging => "merging",
    AwaitingHuman => "awaiting_human",
    Interrupted => "interrupted",
});
text_enum!(CompletionStatus { Completed => "completed", Blocked => "blocked", Failed => "failed" });

/// A run as stored.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunRecord {
    /// Run id (a UUID).
    pub id: String,
    /// The master plan, as an absolute path.
    pub plan_path: String,
    /// The plan's title.
    pub plan_title: String,
    /// Where it stands.
    pub status: RunStatus,
    /// The phase being worked on, or where it stopped.
    pub current_phase: Option<String>,
    /// Why it failed or paused.
    pub error: Option<String>,
    /// RFC 3339 start time.
    pub started_at: String,
    /// RFC 3339 end time.
    pub ended_at: Option<String>,
    /// The `debussy run` process that owns it (while running).
    pub owner_pid: Option<u32>,
    /// The owner's start time, to tell it from a later process given the same pid.
    pub owner_start: Option<u64>,
    /// The process groups of the agent sessions running now (or when the owner died),
    /// one per running phase.
    pub agent_groups: Vec<AgentGroup>,
    /// The plan's phase ids, in execution order (empty for runs recorded before this was kept).
    pub phase_ids: Vec<String>,
    /// The configuration flags and variables the run was started with.
    pub started_with: StartedWith,
    /// Where a pause left each paused phase's work, by phase id, when the run is paused.
    pub pauses: std::collections::BTreeMap<String, PauseRecord>,
    /// Seconds the run has been running, summed over the invocations that ended.
    pub active_secs: f64,
    /// The branch the run merges its phases into (`None` for runs recorded before it
    /// was kept, or without a branch).
    pub start_branch: Option<String>,
    /// The usage limits its phases wait for now, by phase id.
    pub limit_waits: BTreeMap<String, LimitWait>,
}

/// An agent's process group as recorded (see [`RecordedGroup`]).
pub type AgentGroup = RecordedGroup;

/// A phase waiting for its agent's usage limit to reset, or for its API to be reachable.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LimitWait {
    /// What it waits for: [`FailureKind::UsageLimit`] or [`FailureKind::Unreachable`].
    pub kind: FailureKind,
    /// RFC 3339 time the wait ends.
    pub until: String,
    /// What the agent said, when it said something.
    pub said: Option<String>,
}

/// How a run was configured on its command line, so `--resume` can do the same.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct StartedWith {
    /// The configuration flags, as command-line words (`--agent`, `sim`, …).
    pub flags: Vec<String>,
    /// The `DEBUSSY_*` configuration variables (never ones that look like secrets).
    pub env: BTreeMap<String, String>,
}

/// What a pause recorded so that `--resume` continues the work.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct PauseRecord {
    /// The commit `HEAD` was at when the paused phase started.
    pub base: Option<String>,
    /// The checkpoint commit made at the pause (auto-commit on).
    pub commit: Option<String>,
    /// Files the paused work changed and left uncommitted; the resume accepts exactly these
    /// as a dirty tree.
    pub files: Vec<String>,
}

impl PauseRecord {
    /// Whether it records nothing at all.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.base.is_none() && self.commit.is_none() && self.files.is_empty()
    }
}

/// One attempt at a phase.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExecutionRecord {
    /// Row id.
    pub id: i64,
    /// The run it belongs to.
    pub run_id: String,
    /// The phase.
    pub phase_id: String,
    /// 1-based attempt number.
    pub attempt: u32,
    /// Whether this attempt was a remediation of a failed one.
    pub remediation: bool,
    /// Where it stands.
    pub status: ExecutionStatus,
    /// Context restarts taken.
    pub restarts: u32,
    /// The final session outcome code (0, −1 timeout, −2 context limit, −3 max restarts, or the exit code).
    pub outcome_code: Option<i64>,
    /// Tokens billed over all its sessions, handoffs included.
    pub billed: Billed,
    /// Cost of all its sessions, in US dollars.
    pub cost_usd: f64,
    /// Whether some of `cost_usd` is debussy's estimate from tokens and list prices.
    pub cost_estimated: bool,
    /// The commit that recorded its work.
    pub commit_id: Option<String>,
    /// Why it failed.
    pub error: Option<String>,
    /// RFC 3339 start time.
    pub started_at: String,
    /// RFC 3339 end time.
    pub ended_at: Option<String>,
    /// The git worktree it ran in, when not the project's own working tree.
    pub workdir: Option<String>,
    /// For a completed attempt in a worktree: the tip of the phase's branch to merge.
    pub branch_tip: Option<String>,
    /// The commit `HEAD` was at when its phase started (`None` in runs recorded before
    /// it was kept).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base: Option<String>,
}

/// How an execution ended.
#[derive(Debug, Clone, PartialEq)]
pub struct ExecutionEnd {
    /// Final status.
    pub status: ExecutionStatus,
    /// Context restarts taken.
    pub restarts: u32,
    /// Final outcome code.
    pub outcome_code: Option<i64>,
    /// Tokens billed over all its sessions, handoffs included.
    pub billed: Billed,
    /// Total cost.
    pub cost_usd: f64,
    /// Whether some of `cost_usd` is an estimate.
    pub cost_estimated: bool,
    /// The commit that recorded the work.
    pub commit_id: Option<String>,
    /// Why it failed.
    pub error: Option<String>,
}

/// One agent session within an execution.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SessionRecord {
    /// 0-based index within the execution (= restart number; a handoff has the index
    /// of the session it speaks for).
    pub session_index: u32,
    /// A working session or the handoff after a context stop.
    pub kind: SessionKind,
    /// The agent's own session id.
    pub agent_session_id: Option<String>,
    /// The agent that ran the session (`claude`, `codex`, `gemini`, `sim`); `None` in
    /// runs recorded before it was.
    pub agent: Option<String>,
    /// The model the agent reported.
    pub model: Option<String>,
    /// Outcome name (`completed`, `context_limit`, `timeout`, `failed`, `spawn_error`).
    pub outcome: String,
    /// Outcome code.
    pub outcome_code: i64,
    /// Context tokens when it ended.
    pub context_tokens: u64,
    /// Context window used for the percentage.
    pub context_window: u64,
    /// Where that window figure came from (`config`, `agent`, `remembered`, `table`,
    /// `default`); `None` in runs recorded before it was kept.
    pub window_source: Option<String>,
    /// Context percent when it ended.
    pub context_percent: f64,
    /// Main-thread tool calls.
    pub tool_calls: u32,
    /// Cost: the agent's own figure, or debussy's estimate (`cost_estimated`).
    pub cost_usd: f64,
    /// Whether `cost_usd` is debussy's estimate from tokens and list prices.
    pub cost_estimated: bool,
    /// Tokens billed over its requests.
    pub billed: Billed,
    /// The saved NDJSON transcript.
    pub log_path: Option<String>,
    /// The agent's process group.
    pub agent_pgid: Option<i32>,
    /// RFC 3339 start time.
    pub started_at: String,
    /// RFC 3339 end time.
    pub ended_at: String,
}

/// What a recorded session was for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionKind {
    /// The agent working on the phase.
    #[default]
    Work,
    /// The stopped session resumed once to write its own handoff.
    Handoff,
}

impl SessionKind {
    /// The name stored in the database.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            SessionKind::Work => "work",
            SessionKind::Handoff => "handoff",
        }
    }

    /// The kind a stored name means (an unknown name is a working session).
    #[must_use]
    pub fn from_stored(name: &str) -> SessionKind {
        if name == "handoff" {
            SessionKind::Handoff
        } else {
            SessionKind::Work
        }
    }
}

/// A context restart.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RestartRecord {
    /// 1-based restart number within the execution.
    pub restart_number: u32,
    /// Why (`context 85.2% >= 80%`, `tool calls`, `compact boundary`, `manual`).
    pub reason: String,
    /// Context percent at the stop.
    pub context_percent: Option<f64>,
    /// The checkpoint commit.
    pub commit_id: Option<String>,
    /// RFC 3339 time.
    pub at: String,
}

/// A gate's result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GateRecord {
    /// Gate name.
    pub name: String,
    /// The command run.
    pub command: String,
    /// Whether it passed.
    pub passed: bool,
    /// Its exit code (none when killed or timed out).
    pub exit_code: Option<i32>,
    /// Whether it ran past the gate timeout.
    pub timed_out: bool,
    /// Captured stdout and stderr (tail).
    pub output: String,
    /// How long it ran.
    pub duration_ms: u64,
    /// RFC 3339 time.
    pub at: String,
}

/// What the agent reported with `debussy done`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CompletionSignal {
    /// Row id: increases with every signal, so a caller can tell a new one from an old.
    pub id: i64,
    /// The phase.
    pub phase_id: String,
    /// How it ended.
    pub status: CompletionStatus,
    /// Why.
    pub reason: Option<String>,
    /// RFC 3339 time.
    pub at: String,
}

/// A `debussy progress` entry.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProgressEntry {
    /// The phase.
    pub phase_id: String,
    /// What was done.
    pub step: String,
    /// RFC 3339 time.
    pub at: String,
}

/// The current time as RFC 3339 text, as stored.
#[must_use]
pub fn now() -> String {
    jiff::Timestamp::now().to_string()
}
