//! The project's run history in SQLite (`.debussy/state.db`): runs, phase executions,
//! sessions, restarts, gate results, the subagents an attempt used and the calls it was
//! refused, the agent's completion signals and progress log, and the context windows
//! learned per model.
//!
//! The database runs in WAL mode with a busy timeout, so a `debussy run` and the agent's
//! `debussy done` / `debussy progress` calls (or two runs) share it safely. Every call is
//! blocking and short: one statement or one small transaction. The run's owner task
//! calls it inline, in order, so what it records is never reordered; the one wait it can
//! meet is the busy timeout while another process writes, and the runtime keeps at least
//! two workers (`main.rs`) so that wait holds the run's task alone, never the session
//! readers. The running session's figures, written on every model request while that
//! task also serves the session, wait briefly instead (`store.rs`): the next replace
//! them. A run keeps some room on the disk for its last records (`reserve.rs`),
//! given back when the disk fills up. This module stores facts; it never decides what a
//! run does next.

mod error;
mod executions;
mod live;
mod lock_holder;
mod owner;
mod prompts;
mod records;
mod reserve;
mod runs;
mod schema;
mod signals;
mod store;
mod totals;
mod used;
mod windows;

pub use error::StateError;
pub use live::{LiveFigures, LiveSession};
pub use owner::Owner;
pub use prompts::PromptRecord;
pub use store::Store;
pub use totals::RunTotals;

pub use records::{
    AgentGroup, CompletionSignal, CompletionStatus, ExecutionEnd, ExecutionRecord, ExecutionStatus,
    GateRecord, LimitWait, PauseRecord, ProgressEntry, RestartRecord, RunRecord, RunStatus,
    SessionKind, SessionRecord, StartedWith, now,
};

/// The database file, relative to the project root.
pub const STATE_DB: &str = ".debussy/state.db";

/// Mode of `.debussy/`: run data (prompts, transcripts, state) is the user's alone.
pub const PRIVATE_DIR_MODE: u32 = 0o700;
/// Mode of the database and its `-wal`/`-shm` files.
pub const PRIVATE_FILE_MODE: u32 = 0o600;

#[cfg(test)]
mod test_store;
#[cfg(test)]
mod tests;
