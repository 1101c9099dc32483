//! The `server_status` answer: the front's view of the server, with what the back end
//! adds. Part of the front (methods of [`Front`]).

use serde_json::{Value, json};

use super::state::{Front, Idle};
use crate::mcp::backend::Backend;

impl<B: Backend> Front<B> {
    /// The `server_status` answer.
    pub(crate) fn status(&self) -> Value {
        let current = self.slot.as_ref();
        let mode = if self.shutdown.is_some() {
            "stopping"
        } else if matches!(self.idle, Idle::Degraded(_)) {
            "degraded"
        } else if self.restarts.restart.is_none() && self.can_forward() {
            "running"
        } else {
            "restarting"
        };
        let now = std::time::Instant::now();
        let mut status = json!({
            "name": self.opts.name,
            "mode": mode,
            "generation": current.map(super::state::Slot::number),
            "pid": current.and_then(super::state::Slot::pid),
            "uptime_seconds": current.map(|s| s.spawned.elapsed().as_secs_f64()),
            "restart_count": self.restarts.restarts,
            "crash_count": self.restarts.crashes,
            "crashes_in_window": self.restarts.policy.crashes_in_window(now),
            "last_exit": self.restarts.last_exit,
            "degraded_reason": match &self.idle { Idle::Degraded(r) => Some(r.clone()), _ => None },
            "watched_paths": self.opts.watch.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
            "command": self.opts.command,
            "supervisor_uptime_seconds": self.started.elapsed().as_secs_f64(),
            "requests_in_flight": self.routing.inflight.len(),
            "requests_buffered": self.routing.buffer.len(),
            "build_running": self.restarts.build_running,
            "change_pending": !self.restarts.pending_changes.is_empty(),
            "state_dir": self.opts.state_dir.display().to_string(),
            "last_stderr": self.stderr_tail.lines(),
            "protocol": if self.stateless_client() { "2026-07-28" } else if self.handshake.has_baseline() { "legacy" } else { "unknown" },
            "listens": self.stateless.listens.iter().map(|l| json!({
                "id": l.id.to_value(),
                "open": l.open.is_some_and(|(_, generation)| self.is_current(generation)),
            })).collect::<Vec<_>>(),
        });
        if let (Value::Object(status), Value::Object(more)) = (&mut status, self.backend.status()) {
            status.extend(more);
        }
        status
    }
}
