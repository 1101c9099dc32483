//! Pure restart policy: what an exit means and when to start the child again.
//!
//! Two users. The MCP supervisor asks [`RestartPolicy`] after every server exit: exit 0
//! is a clean shutdown, exit 42 a requested restart (throttled), anything else a crash
//! (restart with backoff, until too many crashes in a window leave it degraded). The
//! orchestrator asks [`RestartBudget`] before each context restart of an agent session
//! (`max_restarts` per attempt) and [`ProgressWatch`] after each context stop (an attempt
//! whose restarts make no progress fails early).
//!
//! No I/O and no clock: every method takes the current [`Instant`](std::time::Instant)
//! from the caller, so tests drive time by hand (issue 6, "crash and backoff timing with
//! an injected clock").

mod budget;
mod exit;
mod policy;
mod progress;

pub use budget::{BudgetDecision, MAX_RESTARTS_EXCEEDED, RestartBudget};
pub use exit::{ChildExit, RESTART_EXIT_CODE};
pub use policy::{Backoff, BackoffTier, RestartConfig, RestartDecision, RestartPolicy};
pub use progress::{NO_PROGRESS, ProgressWatch, SessionProgress};
