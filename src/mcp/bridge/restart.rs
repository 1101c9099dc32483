//! `restart_server` through the bridge: stop the daemon (frozen or not) and start a
//! fresh one under the restart lock, open a new session, answer the callers; and the
//! facts `server_status` and `verify_server_restarted` report.

use std::time::Instant;

use serde_json::{Value, json};

use super::daemon::{DaemonRecord, StartEntry, StopOutcome};
use super::dispatch::{Bridge, Event, Link, Restart, Restarted, millis};
use crate::mcp::message;
use crate::mcp::tools::{self, StartRecord};
use crate::mcp::{AuditEvent, RestartMarker, say};

impl Bridge {
    /// Begin a restart for the call `raw`, if a tool call asked (or join the one under
    /// way). `source` says who asked: `tool` or a signal's name.
    pub(super) fn start_restart(&mut self, raw: Option<Vec<u8>>, reason: String, source: &str) {
        if let Some(restart) = &mut self.restart {
            restart.waiters.extend(raw);
            return;
        }
        let old = DaemonRecord::load(&self.opts.state_dir).current().cloned();
        let (old_pid, old_generation) = (
            old.as_ref().map(|o| o.pid),
            old.as_ref().map(|o| o.generation),
        );
        say(&format!("restart requested: {reason}"));
        self.record_for(
            AuditEvent::RestartRequested,
            old_generation,
            old_pid,
            json!({"reason": reason, "source": source}),
        );
        match RestartMarker::now(old_pid, old_generation.unwrap_or(0), &reason)
            .write(&self.opts.state_dir)
        {
            Ok(path) => self.record(
                AuditEvent::MarkerWritten,
                json!({"path": path.display().to_string()}),
            ),
            Err(err) => say(&format!("cannot write the restart marker: {err}")),
        }
        self.record_for(
            AuditEvent::ServerExiting,
            old_generation,
            old_pid,
            json!({"why": "restart", "escalation": "SIGCONT, shutdown request, SIGTERM, SIGKILL"}),
        );
        self.sync_audit();
        self.policy.manual_restart();
        self.stopping.extend(self.own_daemon);
        self.restart = Some(Restart {
            waiters: raw.into_iter().collect(),
            reason: reason.clone(),
            requested: Instant::now(),
            old,
            done: None,
        });
        // New requests wait for the new daemon; those in flight fail as it stops.
        if let Link::Ready(_) = std::mem::replace(&mut self.link, Link::Down) {
            self.epoch += 1;
        }
        if let Some(listener) = self.listener.take() {
            listener.abort();
        }
        self.reconnect_at = None;
        self.connecting = false;
        self.connect_attempt += 1;
        let daemon = self.daemon.clone();
        let events = self.events.clone();
        tokio::spawn(async move {
            let result = async {
                let _lock = super::lock::acquire(
                    &daemon.state_dir,
                    daemon.ready_timeout + super::connect::LOCK_SLACK,
                )
                .await
                .map_err(|why| (why, None))?;
                let stop = daemon.stop().await;
                if !stop.stopped {
                    return Err((
                        format!("the old daemon could not be stopped: {}", stop.how),
                        Some(stop),
                    ));
                }
                let started = daemon
                    .spawn(&reason)
                    .map_err(|why| (why, Some(stop.clone())))?;
                let startup = daemon
                    .wait_ready(started.pid)
                    .await
                    .map_err(|why| (why, Some(stop.clone())))?;
                Ok(Restarted {
                    stop,
                    started,
                    startup,
                })
            }
            .await;
            let _ = events.send(Event::Restarted(result));
        });
    }

    pub(super) fn on_restarted(
        &mut self,
        result: Result<Restarted, (String, Option<StopOutcome>)>,
    ) {
        match result {
            Ok(done) => {
                say(&format!(
                    "old daemon stopped ({}); new daemon pid {} ready after {} ms",
                    done.stop.how,
                    done.started.pid,
                    done.startup.as_millis()
                ));
                self.record(
                    AuditEvent::ServerExited,
                    json!({"pids": done.stop.pids, "how": done.stop.how, "requested": true}),
                );
                self.connecting = false;
                if let Some(restart) = &mut self.restart {
                    restart.done = Some(Restarted {
                        stop: done.stop.clone(),
                        started: done.started.clone(),
                        startup: done.startup,
                    });
                }
                self.own_daemon = Some(done.started.pid);
                self.policy.child_started(Instant::now());
                self.record_for(
                    AuditEvent::ServerStarted,
                    Some(done.started.generation),
                    Some(done.started.pid),
                    json!({"command": self.opts.command, "reason": done.started.reason}),
                );
                self.record_for(
                    AuditEvent::ServerReady,
                    Some(done.started.generation),
                    Some(done.started.pid),
                    json!({"startup_ms": millis(done.startup)}),
                );
                self.connect("restart");
            }
            Err((why, stop)) => {
                say(&format!("restart failed: {why}"));
                self.record(AuditEvent::ReadinessTimeout, json!({"why": why}));
                if let Some(restart) = self.restart.take() {
                    self.fail_restart(restart, &why, stop.as_ref());
                }
                self.last_exit = Some(why.clone());
                let exit = crate::restart::ChildExit::Crashed(crate::process::ExitStatus::Unknown);
                self.decide_after_loss(exit, &why);
            }
        }
    }

    /// A new session is open: answer the restart's callers, if one was under way.
    pub(super) fn answer_restart(&mut self, current: Option<&StartEntry>) {
        let Some(restart) = self.restart.take() else {
            return;
        };
        let Some(done) = &restart.done else {
            // A session opened before the restart's stop: keep waiting for it.
            self.restart = Some(restart);
            return;
        };
        let new = current.unwrap_or(&done.started);
        let old = restart.old.as_ref();
        let message = format!(
            "the MCP daemon restarted: pid {} → pid {} (generation {}), {}, ready after {} ms",
            old.map_or_else(|| "none".to_owned(), |o| o.pid.to_string()),
            new.pid,
            new.generation,
            if done.stop.pids.is_empty() {
                "nothing was running before".to_owned()
            } else {
                format!("the old one stopped by {}", done.stop.how)
            },
            done.startup.as_millis()
        );
        let result = json!({
            "status": "ok",
            "restarted": true,
            "message": message,
            "previous_stopped": done.stop.stopped,
            "stopped_by": done.stop.how,
            "reason": restart.reason,
            "old": old.map(|o| json!({"pid": o.pid, "generation": o.generation})),
            "new": {"pid": new.pid, "generation": new.generation},
            "took_ms": millis(restart.requested.elapsed()),
            "startup_ms": millis(done.startup),
        });
        for raw in &restart.waiters {
            self.send_client(message::result_response(
                raw,
                &tools::tool_result(&result, false),
            ));
        }
    }

    pub(super) fn fail_restart(&mut self, restart: Restart, why: &str, stop: Option<&StopOutcome>) {
        let result = json!({
            "status": "error",
            "restarted": false,
            "message": why,
            "previous_stopped": stop.is_some_and(|s| s.stopped),
            "reason": restart.reason,
        });
        for raw in &restart.waiters {
            self.send_client(message::result_response(
                raw,
                &tools::tool_result(&result, true),
            ));
        }
    }

    /// The daemon's starts as recorded in the state directory (by any bridge sharing it).
    pub(super) fn start_history(&self) -> Vec<StartRecord> {
        DaemonRecord::load(&self.opts.state_dir)
            .starts
            .into_iter()
            .filter_map(|start| {
                Some(StartRecord {
                    generation: start.generation,
                    pid: Some(start.pid),
                    started_at: start.started_at.parse().ok()?,
                    reason: start.reason,
                })
            })
            .collect()
    }

    /// The answer to `server_status`.
    pub(super) fn status(&self) -> Value {
        let record = DaemonRecord::load(&self.opts.state_dir);
        let current = record.current();
        let now = jiff::Timestamp::now();
        let mode = if self.restart.is_some() {
            "restarting"
        } else if self.policy.is_degraded() {
            "degraded"
        } else if matches!(self.link, Link::Ready(_)) {
            "running"
        } else {
            "connecting"
        };
        let session = match &self.link {
            Link::Ready(session) => session.id.clone(),
            Link::Down => None,
        };
        json!({
            "mode": mode,
            "url": self.daemon.endpoint.url(),
            "pid": current.map(|c| c.pid),
            "generation": current.map(|c| c.generation),
            "uptime_seconds": current
                .and_then(|c| c.started_at.parse::<jiff::Timestamp>().ok())
                .map(|at| tools::seconds_between(at, now)),
            "started_by_this_bridge": current.is_some_and(|c| Some(c.pid) == self.own_daemon),
            "session_id": session,
            "starts": record.starts.len(),
            "crashes_in_window": self.policy.crashes_in_window(Instant::now()),
            "last_exit": self.last_exit,
            "in_flight": self.in_flight,
            "waiting": self.waiting.len(),
            "bridge_pid": std::process::id(),
            "bridge_uptime_seconds": self.started.elapsed().as_secs_f64(),
            "state_dir": self.opts.state_dir.display().to_string(),
        })
    }
}
