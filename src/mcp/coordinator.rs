//! [`Restarts`]: the restart coordinator's state. The restart under way and who waits
//! for it, a source change waiting for its build, the restart policy, and the counters
//! `status` reports.

use std::time::Instant;

use super::tools::StartRecord;

/// Where a restart request came from (recorded as `source` in the audit log).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source {
    /// The `restart_server` tool.
    Tool,
    /// The server exited with code 42.
    Exit42,
    /// A watched file changed.
    Watch,
    /// A signal to the supervisor (SIGHUP).
    Signal,
}

impl Source {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Source::Tool => "tool",
            Source::Exit42 => "exit42",
            Source::Watch => "watch",
            Source::Signal => "signal",
        }
    }
}

/// A `restart_server` call waiting for the new child.
#[derive(Debug)]
pub(crate) struct Waiter {
    pub(crate) raw_id: Vec<u8>,
}

/// A restart in progress.
#[derive(Debug)]
pub(crate) struct Restart {
    pub(crate) reason: String,
    pub(crate) source: Source,
    pub(crate) requested: Instant,
    pub(crate) old_pid: Option<u32>,
    pub(crate) old_generation: u64,
    pub(crate) waiters: Vec<Waiter>,
}

/// Everything about restarting the server child, apart from the child itself.
#[derive(Debug)]
pub(crate) struct Restarts {
    /// The restart under way, if any.
    pub(crate) restart: Option<Restart>,
    /// A watched file changed and the restart waits for the build to finish.
    pub(crate) change_pending: bool,
    /// The build command is running.
    pub(crate) build_running: bool,
    /// What changed, for the restart's audit record.
    pub(crate) pending_change_summary: Option<String>,
    /// Why the pending restart is wanted.
    pub(crate) pending_reason: Option<String>,
    /// Backoff and degraded-mode decisions.
    pub(crate) policy: crate::restart::RestartPolicy,
    /// Children started so far (the current one's generation).
    pub(crate) generation: u64,
    /// Every start, for `status`.
    pub(crate) history: Vec<StartRecord>,
    /// Restarts made.
    pub(crate) restarts: u64,
    /// Unplanned exits.
    pub(crate) crashes: u64,
    /// How the last child ended, in words.
    pub(crate) last_exit: Option<String>,
}

impl Restarts {
    /// No restart yet, under `policy`.
    pub(crate) fn new(policy: crate::restart::RestartPolicy) -> Self {
        Restarts {
            restart: None,
            change_pending: false,
            build_running: false,
            pending_change_summary: None,
            pending_reason: None,
            policy,
            generation: 0,
            history: Vec::new(),
            restarts: 0,
            crashes: 0,
            last_exit: None,
        }
    }
}
