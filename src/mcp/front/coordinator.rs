//! [`Restarts`]: the restart coordinator's state. The restart under way and who waits
//! for it, a source change waiting for its build, the restart policy, and the counters
//! `status` reports.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::audit::millis;
use super::changed_files::ChangedFiles;
use super::tools::StartRecord;
use crate::mcp::backend::Stopped;

/// Where a restart request came from (recorded as `source` in the audit log).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source {
    /// The `restart_server` tool.
    Tool,
    /// The server exited with code 42.
    Exit42,
    /// A watched file changed.
    Watch,
    /// A signal to the supervisor or bridge (SIGHUP), by name.
    Signal(&'static str),
}

impl Source {
    /// The `source` recorded in the audit log.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Source::Tool => "tool",
            Source::Exit42 => "exit42",
            Source::Watch => "watch",
            Source::Signal(_) => "signal",
        }
    }
}

/// A `restart_server` call waiting for the new server.
#[derive(Debug)]
pub(crate) struct Waiter {
    /// The call's id as the client wrote it.
    pub(crate) raw_id: Vec<u8>,
    /// The caller's protocol revision.
    pub(crate) era: super::tools::Era,
}

/// A restart in progress.
#[derive(Debug)]
pub(crate) struct Restart {
    pub(crate) reason: String,
    pub(crate) source: Source,
    pub(crate) requested: Instant,
    pub(crate) old_pid: Option<u32>,
    pub(crate) old_generation: u64,
    /// How the old server was stopped, once it is.
    pub(crate) stopped: Option<Stopped>,
    pub(crate) waiters: Vec<Waiter>,
}

impl Restart {
    /// The `restart_server` answer once the new server (`number`, `pid`) is ready.
    pub(crate) fn answer(&self, number: u64, pid: Option<u32>, startup: Duration) -> Value {
        let (stopped_by, previous_stopped) = match &self.stopped {
            Some(stopped) => (stopped.how.clone(), stopped.gone),
            None => ("nothing was running".to_owned(), true),
        };
        let pid_text = |pid: Option<u32>| pid.map_or_else(|| "none".to_owned(), |p| p.to_string());
        // A daemon another bridge already replaced, or one that had died, took no step.
        let old_one = match &self.stopped {
            Some(stopped) if !stopped.actions.is_empty() => {
                format!("the old one stopped by {stopped_by}")
            }
            _ => "the old one was no longer running".to_owned(),
        };
        let message = format!(
            "the MCP server restarted: pid {} → pid {} (generation {number}), {old_one}, ready after {} ms",
            pid_text(self.old_pid),
            pid_text(pid),
            startup.as_millis()
        );
        json!({
            "status": "ok",
            "restarted": true,
            "message": message,
            "reason": self.reason,
            "source": self.source.as_str(),
            "old": {"pid": self.old_pid, "generation": self.old_generation},
            "new": {"pid": pid, "generation": number},
            "previous_stopped": previous_stopped,
            "stopped_by": stopped_by,
            "took_ms": millis(self.requested.elapsed()),
            "startup_ms": millis(startup),
        })
    }

    /// The `restart_server` answer when the new server did not come up.
    pub(crate) fn failure(&self, why: &str) -> Value {
        json!({
            "status": "error",
            "restarted": false,
            "message": why,
            "reason": self.reason,
            "previous_stopped": self.stopped.as_ref().is_some_and(|s| s.gone),
        })
    }
}

/// Everything about restarting the server child, apart from the child itself.
#[derive(Debug)]
pub(crate) struct Restarts {
    /// The restart under way, if any.
    pub(crate) restart: Option<Restart>,
    /// Watched files that changed while a build or restart ran: one more round follows
    /// it for all of them.
    pub(crate) pending_changes: ChangedFiles,
    /// The build command is running.
    pub(crate) build_running: bool,
    /// The changed files the running build is for, for its restart's reason.
    pub(crate) building_changes: ChangedFiles,
    /// Why the pending restart is wanted.
    pub(crate) pending_reason: Option<String>,
    /// Why the server being started was started (recorded once it is up).
    pub(crate) pending_start_reason: Option<String>,
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
            pending_changes: ChangedFiles::default(),
            build_running: false,
            building_changes: ChangedFiles::default(),
            pending_reason: None,
            pending_start_reason: None,
            policy,
            generation: 0,
            history: Vec::new(),
            restarts: 0,
            crashes: 0,
            last_exit: None,
        }
    }
}
