//! One agent session: a process, an agent backend and a context meter, ending in a
//! [`SessionOutcome`].
//!
//! This module owns running one headless agent from prompt to exit: starting it through
//! the [`process`](crate::process) layer, saving its raw output, parsing it with the
//! [`agent`](crate::agent) backend, following its context with the
//! [`context`](crate::context) meter, stopping it when the meter (or the user, or the
//! clock) says so, and reporting what happened. It does not decide what to do next
//! (restart, retry, commit: the orchestrator), and it does not read configuration files
//! or the state store: the caller passes values in a [`SessionSpec`] and reads them back
//! from the [`SessionReport`].
//!
//! # Theory of operation
//!
//! [`run`] is one async function driving one task's worth of state — no shared mutable
//! state, no background tasks of its own. It builds the command with
//! [`AgentBackend::command`](crate::agent::AgentBackend::command) (the prompt goes on
//! stdin), creates the log, spawns the child with the agent stop ladder
//! (SIGCONT → SIGINT → SIGTERM → SIGKILL, `stop_grace` apart), then `select!`s over:
//!
//! - the child's output ([`crate::process::Events`]). Each stdout line is, in order,
//!   written to the log, parsed into [`AgentEvent`](crate::agent::AgentEvent)s, given
//!   to the tracker (todos, files, subagents, last text) and to the meter — and when the
//!   meter returns a stop reason, `request_stop` is called right there, before anything
//!   is sent to observers, so a slow observer never delays a stop. Then a subagent type
//!   first used goes out ([`SessionEvent::SubagentUsed`]), then the activity
//!   lines ([`SessionEvent::Activity`], paced by a token bucket so a flood of
//!   output cannot flood the run's event queue; the transcript keeps every line) and,
//!   at most every 50 ms when the figures changed, a [`SessionEvent::Context`] snapshot.
//!   stderr lines go to the session's `.stderr.log` and, paced the same way, out as
//!   events; over-long lines and leaks become warnings. The loop ends after the process
//!   layer's last event (`Exited`), so every line the agent printed has been seen;
//! - requests from the [`SessionControl`] (manual restart, interrupt, kill);
//! - the session timeout;
//! - after a `result` line, a linger timer that stops an agent which does not exit.
//!
//! - after a context stop decided while a main-thread tool call runs, that call's
//!   deadline (`agent.tool_grace`): the stop waits for the call's result, and goes ahead
//!   when the grace runs out (see `stop.rs`).
//!
//! Stops: the first cause wins (context, manual, timeout, a failure no retry can fix); an
//! interrupt replaces any earlier cause; a second interrupt kills at once. One of the
//! agent's own API retries that no retry can fix (a bad key, no login, an unknown model)
//! stops the session at once; those that cannot reach the API stop it once the agent has
//! been cut off for `agent.offline_grace` (see `outage.rs`). At the end, the backend
//! judges what the agent left behind (its error result, its lines that were not JSON, its
//! stderr tail) and names a failure it recognises ([`SessionOutcome::AgentFailure`]). A
//! session whose agent printed a successful `result` before any stop was decided is
//! `Completed`, whatever follows.
//!
//! The log ([`CONTEXT_LIMIT_MARKER`]) is written line by line as output arrives; at the
//! end of a context-limit session it is rewritten, atomically, to start with the
//! marker line.
//!
//! Events go on an unbounded channel: the session never waits for its observers.
//! Dropping the future returned by [`run`] kills the agent's process group at once.

mod control;
mod event;
mod finish;
pub mod guard;
pub mod home;
mod layered;
mod log;
mod outage;
mod outcome;
mod pacing;
mod report;
mod run;
mod spec;
mod state;
mod stop;
mod throttle;
mod tracker;

pub use control::SessionControl;
pub use event::{
    Activity, ActivityKind, SessionEvent, SessionWarning, StopCause, Subagent, Thread,
};
pub use log::{CONTEXT_LIMIT_MARKER, stderr_log_path};
pub use outcome::{
    CODE_AGENT_FAILURE, CODE_CONTEXT_LIMIT, CODE_INTERRUPTED, CODE_SPAWN_ERROR, CODE_SUCCESS,
    CODE_TIMEOUT, LimitReason, OutcomeKind, SessionOutcome, SpawnCause, SpawnFailure,
};
pub use report::{ReportedWindow, SessionReport, StopSummary};
pub use run::run;
pub use spec::{Resume, SessionSpec, backend_settings, default_backend_settings, meter_settings};

/// Errors of the session layer: preparing a session from the configuration.
///
/// Running a session never fails: how it ended is its [`SessionOutcome`].
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum SessionError {
    /// `agent.stop_grace` is not a usable number of seconds.
    #[error("use `agent.stop_grace` = {value}: it is not a number of seconds")]
    #[diagnostic(
        code(debussy::session::stop_grace),
        help("set `agent.stop_grace` to a number of seconds, 0 or more (default 2)")
    )]
    StopGrace {
        /// The configured value.
        value: f64,
    },
}
