//! The end-of-run summary the outputs print and the JSON stream carries
//! (`run_finished`): the run's and each phase's figures.

use serde::Serialize;

use super::PhaseState;
use crate::context::cost::Billed;
use crate::state::RunStatus;

/// The end-of-run summary.
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct RunSummary {
    /// Run id.
    pub run_id: String,
    /// The master plan, as given on the command line.
    pub plan_path: String,
    /// `completed`, `failed` or `paused`.
    pub status: RunStatus,
    /// Each phase, in execution order.
    pub phases: Vec<PhaseSummary>,
    /// Context restarts over the run.
    pub restarts: u32,
    /// Sessions over the run.
    pub sessions: u32,
    /// Tokens billed over the run, by kind, summed over every request of every session
    /// (handoffs included): not a context figure.
    pub billed: Billed,
    /// Cost in US dollars, handoffs included.
    pub cost_usd: f64,
    /// Whether some of `cost_usd` is debussy's estimate (sessions stopped before the
    /// agent reported its cost) rather than the agent's own figure.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub cost_estimated: bool,
    /// Handoff requests made after context stops (see `docs/sessions.md`).
    #[serde(skip_serializing_if = "is_zero")]
    pub handoffs: u32,
    /// What the handoffs cost, in US dollars (part of `cost_usd`).
    #[serde(skip_serializing_if = "is_zero_f64")]
    pub handoff_cost_usd: f64,
    /// Wall time in seconds.
    pub duration_secs: f64,
    /// Commits made, oldest first.
    pub commits: Vec<String>,
    /// Why the run did not complete (for a paused run, why it paused).
    pub error: Option<String>,
    /// The limit that paused the run (`max_cost_usd`, `max_phase_cost_usd`,
    /// `max_duration`, `limits.max_wait`), when one did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<String>,
    /// The flag that raises that limit on `--resume`, e.g. `--max-cost 10`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub raise_with: Option<String>,
    /// The disk filled up and stopped the run; `--resume` goes on once there is room.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub disk_full: bool,
}

/// One phase's line in the summary.
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct PhaseSummary {
    /// Id.
    pub id: String,
    /// Title.
    pub title: String,
    /// Final status in this run.
    pub status: PhaseState,
    /// Attempts made.
    pub attempts: u32,
    /// Context restarts.
    pub restarts: u32,
    /// Sessions.
    pub sessions: u32,
    /// Tokens billed, by kind, summed over every request of the phase's sessions.
    pub billed: Billed,
    /// Cost in US dollars, handoffs included.
    pub cost_usd: f64,
    /// Whether some of `cost_usd` is debussy's estimate.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub cost_estimated: bool,
    /// Handoff requests made after the phase's context stops.
    #[serde(skip_serializing_if = "is_zero")]
    pub handoffs: u32,
    /// Wall time in seconds.
    pub duration_secs: f64,
    /// Tool calls the agent's permission system refused, with the rule that allows each.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub refused_calls: Vec<RefusedCall>,
}

/// A tool call the agent was refused, as the summary shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Default)]
pub struct RefusedCall {
    /// The call in a few words, e.g. `Bash: npm test`.
    pub call: String,
    /// The `agent.allowed_tools` rule that would allow it, e.g. `Bash(npm test:*)`.
    pub allow_with: String,
}

#[expect(
    clippy::trivially_copy_pass_by_ref,
    reason = "serde passes fields by reference"
)]
fn is_zero(value: &u32) -> bool {
    *value == 0
}

#[expect(
    clippy::trivially_copy_pass_by_ref,
    reason = "serde passes fields by reference"
)]
fn is_zero_f64(value: &f64) -> bool {
    *value == 0.0
}
