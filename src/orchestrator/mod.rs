//! The run loop: plan → phases in dependency order → attempts → sessions, with gates,
//! compliance, checkpoint restarts, commits and state.
//!
//! # Theory of operation
//!
//! [`run()`] is one task that owns everything a run changes: the state store, the git
//! commits and the current session's control handle. It executes phases one at a time
//! in topological order ([`selection`]). Each phase gets `max_retries + 1` attempts
//! ([`phase`]); each attempt is a restart loop of agent sessions ([`attempt`]): when the
//! context meter stops a session, the work is committed as a checkpoint and a fresh
//! session starts with the checkpoint context ([`crate::checkpoint`]) in front of the
//! original prompt. After an attempt, gates run and compliance judges the result
//! (`validate.rs`). The run's state is one `Runner` (`runner.rs`) that every step borrows.
//!
//! While a session runs, the task `select!`s over the session's future, its events
//! (forwarded as [`Event`](crate::events::Event)s to whatever sinks listen) and [`RunRequest`](crate::events::RunRequest)s from the user
//! (Ctrl-C, HUD keys). Sinks never call back; requests never touch state directly.
//! The run stops at the first phase that fails or is blocked, and phases depending on it
//! are reported blocked; an interrupt pauses the run so `--resume` continues it.
//!
//! A run holds the project's run lock ([`lock`]) for its whole life and records its owner
//! process, so a run whose process died reads as interrupted; the next start kills the
//! agent it left behind, and `--resume` commits what its killed sessions left as a
//! `recovered (interrupted)` checkpoint (`recover.rs`). A pause commits (or records) the
//! work. Either way the resumed phase goes on where its attempt stood (`resume.rs`): the
//! next session after the restarts it had taken, with a checkpoint of the work and the
//! last handoff, or its gates again when its agent had said it was done. See
//! `docs/reliability.md`.

pub mod agents;
pub mod attempt;
mod checkout;
mod context;
mod drive;
mod ending;
mod error;
mod guards;
mod handoff;
mod integrate;
pub mod lock;
mod no_space;
mod parallel;
pub mod phase;
mod pool;
pub mod prompts;
mod reachable;
mod recover;
mod resume;
mod run;
mod runner;
mod schedule;
pub mod selection;
mod session;
mod unmerged;
mod usage_wait;
mod validate;

pub use error::RunError;
pub use parallel::side_by_side_ready;
pub use run::{RunOptions, RunSetup, completed_run, done_on_resume, resumable_run, run};
