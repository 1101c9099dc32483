//! What a run tells the outside world: [`Event`]s the orchestrator publishes on a channel
//! and sinks (the HUD, the plain console, the JSON log) consume.
//!
//! Events flow one way: sinks never call back into the run. Requests the other way
//! (pause, restart now, skip, quit) travel on their own channel as [`RunRequest`]s.
//! Every event serializes to one JSON object tagged by `event` (see `docs/events.md`).

use serde::Serialize;
use tokio::sync::mpsc;

use crate::agent::{ApiRetry, FailureKind};
use crate::compliance::VerdictKind;
use crate::context::cost::Billed;
use crate::context::{ContextLimit, Snapshot};
use crate::session::{Activity, OutcomeKind};

pub use crate::gates::GateVerdict;
pub use summary::{PhaseSummary, RefusedCall, RunSummary};

mod summary;

/// The sending half of the event channel.
pub type EventSender = mpsc::UnboundedSender<Event>;
/// The receiving half of the event channel.
pub type EventReceiver = mpsc::UnboundedReceiver<Event>;

/// A new event channel.
#[must_use]
pub fn channel() -> (EventSender, EventReceiver) {
    mpsc::unbounded_channel()
}

/// Something that happened in a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    /// The run began (or resumed).
    RunStarted {
        /// Run id.
        run_id: String,
        /// The plan's title.
        plan_title: String,
        /// The master plan.
        plan_path: String,
        /// Every phase in execution order, with where it stands.
        phases: Vec<PhaseInfo>,
        /// Agent backend (`claude`, `sim`).
        agent: String,
        /// Model name.
        model: String,
        /// Context threshold in percent (100: no context restarts).
        context_threshold: ContextLimit,
        /// Context restarts allowed per attempt.
        max_restarts: u32,
        /// Whether an earlier paused run is being continued.
        resumed: bool,
    },
    /// A phase will not run in this run.
    PhaseSkipped {
        /// The phase.
        phase_id: String,
        /// Why (`already completed`, `before --phase 3`, `skipped by user`).
        reason: String,
    },
    /// An attempt at a phase began.
    PhaseStarted {
        /// The phase.
        phase_id: String,
        /// Its title.
        title: String,
        /// 1-based position in the execution order.
        index: usize,
        /// Phases in the execution order.
        total: usize,
        /// 1-based attempt.
        attempt: u32,
        /// Attempts allowed (`max_retries + 1`).
        max_attempts: u32,
        /// What kind of attempt.
        kind: AttemptKind,
    },
    /// An agent session started.
    SessionStarted {
        /// The phase.
        phase_id: String,
        /// The attempt.
        attempt: u32,
        /// 0-based restart index within the attempt.
        restart: u32,
        /// Restarts allowed in this attempt (0 when restarts are off).
        max_restarts: u32,
        /// The agent running the session (`claude`, `codex`, `sim`).
        agent: String,
        /// The model it was asked to run; empty for the agent's own default.
        model: String,
        /// The agent's pid.
        pid: u32,
        /// The session's NDJSON log.
        log_path: String,
        /// Why this session will not be stopped for its context, when it will not be.
        #[serde(skip_serializing_if = "Option::is_none")]
        no_restart: Option<NoRestart>,
        /// The git worktree the agent works in, when the phase runs in one.
        #[serde(skip_serializing_if = "Option::is_none")]
        workdir: Option<String>,
    },
    /// A line for the activity log.
    Activity {
        /// The phase.
        phase_id: String,
        /// What the agent did.
        activity: Activity,
    },
    /// The context gauge moved.
    Context {
        /// The phase.
        phase_id: String,
        /// The meter's figures.
        snapshot: Snapshot,
    },
    /// A line the agent wrote on stderr.
    AgentStderr {
        /// The phase.
        phase_id: String,
        /// The line.
        line: String,
    },
    /// A session ended.
    SessionEnded {
        /// The phase.
        phase_id: String,
        /// The attempt.
        attempt: u32,
        /// 0-based restart index.
        restart: u32,
        /// How it ended (`completed`, `context_limit`, `timeout`, `failed`, …).
        outcome: OutcomeKind,
        /// Outcome code (0, −1, −2, exit code, …).
        code: i32,
        /// How it ended, in words.
        detail: String,
        /// The meter's final figures.
        snapshot: Snapshot,
        /// The agent's last words, if the session failed: error result, non-JSON lines, stderr.
        #[serde(skip_serializing_if = "Option::is_none")]
        last_words: Option<String>,
    },
    /// The agent retries a failed API request on its own (a warning: it may fail next).
    AgentRetry {
        /// The phase.
        phase_id: String,
        /// The retry, as the agent announced it.
        retry: ApiRetry,
    },
    /// A usage limit refused the agent's session, or its API could not be reached: the run
    /// waits, then the same attempt goes on (the session does not count as an attempt).
    WaitingForLimit {
        /// The phase.
        phase_id: String,
        /// What is waited for: `usage_limit`, or `unreachable` (the network).
        kind: FailureKind,
        /// The attempt that goes on after the wait.
        attempt: u32,
        /// When the wait ends (RFC 3339).
        until: String,
        /// Whether the agent said when the limit resets (else a backoff).
        reset_known: bool,
        /// How long the wait is, in seconds.
        wait_secs: u64,
        /// What the agent said.
        said: String,
    },
    /// The session was stopped before its context filled and a fresh one follows.
    Restart {
        /// The phase.
        phase_id: String,
        /// The attempt.
        attempt: u32,
        /// 1-based restart number.
        restart: u32,
        /// Restarts allowed.
        max_restarts: u32,
        /// Why, in words: the stop reason (`context at 176,000 of 200,000 tokens … reached
        /// the 80% threshold (160,000)`), `manual`, …
        reason: String,
        /// Context percent at the stop.
        context_percent: f64,
        /// The checkpoint commit, if one was made.
        commit: Option<String>,
        /// Seconds until the next session.
        delay_secs: u64,
    },
    /// A gate is about to run.
    GateStarted {
        /// The phase.
        phase_id: String,
        /// Gate name.
        name: String,
        /// Its command.
        command: String,
    },
    /// A gate finished.
    GateFinished {
        /// The phase.
        phase_id: String,
        /// Gate name.
        name: String,
        /// Its command.
        command: String,
        /// Whether it passed.
        passed: bool,
        /// `passed`, `failed (exit code 1)`, `timed out after 600s`, `could not start`.
        verdict: GateVerdict,
        /// How long it ran.
        duration_ms: u64,
    },
    /// The compliance check judged an attempt.
    Compliance {
        /// The phase.
        phase_id: String,
        /// The attempt.
        attempt: u32,
        /// `pass`, `accept_with_warnings`, `targeted_fix` or `full_retry`.
        verdict: VerdictKind,
        /// The findings, each as `[severity] problem`.
        findings: Vec<String>,
    },
    /// A phase's branch was merged into the run's branch (phases side by side).
    Merged {
        /// The phase.
        phase_id: String,
        /// The phase's branch.
        branch: String,
        /// The run branch's new tip.
        commit: String,
        /// Whether it was a fast-forward (no merge commit).
        fast_forward: bool,
    },
    /// Merging a phase's branch conflicted with the run's branch; a merge fix (a session
    /// of the phase's) resolves it in the phase's worktree.
    MergeConflict {
        /// The phase.
        phase_id: String,
        /// The phase's branch.
        branch: String,
        /// The files both sides changed.
        files: Vec<String>,
    },
    /// Work was committed.
    Committed {
        /// The phase.
        phase_id: String,
        /// The commit id.
        commit: String,
        /// Its message.
        message: String,
        /// Files in the commit.
        files_changed: usize,
    },
    /// An attempt ended without completing the phase.
    AttemptFailed {
        /// The phase.
        phase_id: String,
        /// The attempt.
        attempt: u32,
        /// Why.
        reason: String,
    },
    /// A phase reached its final state in this run.
    PhaseFinished {
        /// The phase.
        phase_id: String,
        /// `completed`, `failed`, `blocked`, `skipped` or `paused`.
        status: PhaseState,
        /// Attempts made.
        attempts: u32,
        /// Context restarts over all attempts.
        restarts: u32,
        /// Why it did not complete.
        error: Option<String>,
    },
    /// The run is paused between sessions, waiting for the user to resume.
    Paused {
        /// Where: the phase that continues on resume.
        phase_id: String,
    },
    /// After a context stop: the stopped session is resumed to write its handoff.
    HandoffRequested {
        /// The phase.
        phase_id: String,
        /// 1-based attempt.
        attempt: u32,
        /// The restart the handoff is for.
        restart: u32,
    },
    /// After a context stop: the stopped session's own handoff was written, or why the
    /// checkpoint goes without one.
    Handoff {
        /// The phase.
        phase_id: String,
        /// 1-based attempt.
        attempt: u32,
        /// The restart the handoff is for.
        restart: u32,
        /// Whether the stopped session wrote it (it heads the next checkpoint).
        written: bool,
        /// What happened, or why debussy's checkpoint is used alone.
        detail: String,
        /// Tokens the handoff request billed.
        billed: Billed,
        /// What it cost, in US dollars (counted in the run's totals).
        cost_usd: f64,
    },
    /// A spending or time limit was reached: the running session is stopped, its work
    /// committed, and the run pauses.
    LimitReached {
        /// The phase being worked on.
        phase_id: String,
        /// The configuration key of the limit (`max_cost_usd`, `max_phase_cost_usd`,
        /// `max_duration`, `limits.max_wait`).
        limit: String,
        /// What was reached, in words.
        detail: String,
        /// The flag that raises the limit on `--resume`, e.g. `--max-cost 10`.
        raise_with: String,
    },
    /// The run continues after a pause.
    Resumed {
        /// The phase.
        phase_id: String,
    },
    /// Something the user should know that does not stop the run.
    Warning {
        /// What.
        message: String,
    },
    /// The run ended. Always the last event.
    RunFinished {
        /// The summary shown in every output mode.
        summary: RunSummary,
    },
}

/// What kind of attempt a phase attempt is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AttemptKind {
    /// The first attempt.
    First,
    /// A redo after a failed attempt.
    Retry,
    /// A targeted fix of the previous attempt's findings (no context restarts).
    Remediation,
    /// The resolution of a completed phase's conflicting merge with the run's branch,
    /// in its worktree: not one of the phase's attempts at its work.
    MergeFix,
}

/// Where a phase stands in this run, as the outputs show it. The orchestrator owns it;
/// it is not the store's per-attempt [`ExecutionStatus`](crate::state::ExecutionStatus)
/// (which has `running` and `validating` but no `pending`), nor the status line of a
/// phase file ([`plan::PhaseStatus`](crate::plan::PhaseStatus)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PhaseState {
    /// To be run.
    #[default]
    Pending,
    /// Completed in this run.
    Completed,
    /// Failed in this run.
    Failed,
    /// Needs a human: the agent reported it blocked, or a dependency did not complete.
    Blocked,
    /// Interrupted; `--resume` continues it.
    Paused,
    /// Will not run: done already, before `--phase`, or skipped by the user.
    Skipped,
    /// Not reached: the run stopped before it.
    #[serde(rename = "not run")]
    NotRun,
    /// Done in its worktree, but its branch could not be merged: a human finishes the
    /// merge (phases running side by side).
    #[serde(rename = "awaiting_human")]
    AwaitingHuman,
}

impl PhaseState {
    /// The word shown for it (the same as its JSON spelling).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            PhaseState::Pending => "pending",
            PhaseState::Completed => "completed",
            PhaseState::Failed => "failed",
            PhaseState::Blocked => "blocked",
            PhaseState::Paused => "paused",
            PhaseState::Skipped => "skipped",
            PhaseState::NotRun => "not run",
            PhaseState::AwaitingHuman => "awaiting_human",
        }
    }
}

impl std::fmt::Display for PhaseState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A phase as listed at the start of a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PhaseInfo {
    /// Id.
    pub id: String,
    /// Title.
    pub title: String,
    /// `pending`, or why it will not run (`completed`, `skipped`).
    pub status: PhaseState,
}

/// Why a session runs without context restarts (the orchestrator decides; the outputs
/// say so, so a gauge over the threshold is not a surprise).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NoRestart {
    /// A remediation ("fix the findings") session: restarting would lose the findings it
    /// is fixing (`restart_in_fix_sessions` turns restarts on).
    FixSession,
    /// `context_threshold` is 100.
    ThresholdOff,
    /// `max_restarts` is 0.
    NoRestartsAllowed,
}

impl std::fmt::Display for NoRestart {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            NoRestart::FixSession => "no restart in fix sessions",
            NoRestart::ThresholdOff => "no restart: context_threshold is 100",
            NoRestart::NoRestartsAllowed => "no restart: max_restarts is 0",
        })
    }
}

impl Event {
    /// The phase the event is about, if it is about one.
    #[must_use]
    pub fn phase_id(&self) -> Option<&str> {
        match self {
            Event::PhaseSkipped { phase_id, .. }
            | Event::PhaseStarted { phase_id, .. }
            | Event::SessionStarted { phase_id, .. }
            | Event::Activity { phase_id, .. }
            | Event::Context { phase_id, .. }
            | Event::AgentStderr { phase_id, .. }
            | Event::SessionEnded { phase_id, .. }
            | Event::AgentRetry { phase_id, .. }
            | Event::WaitingForLimit { phase_id, .. }
            | Event::Restart { phase_id, .. }
            | Event::GateStarted { phase_id, .. }
            | Event::GateFinished { phase_id, .. }
            | Event::Compliance { phase_id, .. }
            | Event::Merged { phase_id, .. }
            | Event::MergeConflict { phase_id, .. }
            | Event::Committed { phase_id, .. }
            | Event::AttemptFailed { phase_id, .. }
            | Event::PhaseFinished { phase_id, .. }
            | Event::Paused { phase_id, .. }
            | Event::HandoffRequested { phase_id, .. }
            | Event::Handoff { phase_id, .. }
            | Event::LimitReached { phase_id, .. }
            | Event::Resumed { phase_id, .. } => Some(phase_id),
            Event::RunStarted { .. } | Event::Warning { .. } | Event::RunFinished { .. } => None,
        }
    }
}

/// What the user (HUD keys, signals) asks of a running run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunRequest {
    /// Stop the current session gracefully and pause the run (Ctrl-C, `q`).
    Interrupt,
    /// Kill the current session now (second Ctrl-C).
    Kill,
    /// Stop the current session for a manual checkpoint restart (`r`).
    RestartNow,
    /// Pause after the current session ends, or resume a paused run (`p`).
    TogglePause,
    /// Stop the current phase and move on to the next (`s`).
    SkipPhase,
    /// Aim `s` and `r` at this running phase (`None`: the first one started), when phases
    /// run side by side (the HUD's focus key).
    Focus(Option<String>),
}

/// The sending half of the request channel.
pub type RequestSender = mpsc::UnboundedSender<RunRequest>;
/// The receiving half of the request channel.
pub type RequestReceiver = mpsc::UnboundedReceiver<RunRequest>;
