//! Starting, draining, stopping and restarting children (what follows an exit is
//! `exits.rs`). Part of the dispatcher: these are methods of
//! [`Proxy`], run on its task, and none of them waits.

use std::time::Instant;

use serde_json::{Value, json};

use super::audit::AuditEvent;
use super::child;
use super::coordinator::{Restart, Source, Waiter};
use super::marker::RestartMarker;
use super::message::{self, Message};
use super::proxy::{Idle, Phase, Proxy, Slot, StopWhy, SuperviseOutcome};
use super::say;
use super::tools::{self, StartRecord};
use crate::process::ExitStatus;

impl Proxy {
    /// Start the next generation. A failure to spawn counts as a crash.
    pub(crate) fn start_child(&mut self, reason: &str) -> Result<(), crate::process::ProcessError> {
        self.idle = Idle::No;
        self.restarts.generation += 1;
        let generation = self.restarts.generation;
        if generation > 1 {
            self.restarts.restarts += 1;
        }
        self.stderr_tail = super::stderr_tail::StderrTail::default();
        let for_change = self
            .restarts
            .restart
            .as_ref()
            .is_some_and(|restart| restart.source == Source::Watch);
        let now = Instant::now();
        self.restarts.policy.child_started(now);
        let unit = match child::spawn(&self.opts.command, generation, &self.opts.limits) {
            Ok((unit, events)) => {
                self.new_events = events.map(|events| (generation, events));
                unit
            }
            Err(err) => {
                say(&format!(
                    "cannot start the server (generation {generation}): {err}"
                ));
                self.record_for(
                    AuditEvent::ServerExited,
                    Some(generation),
                    None,
                    json!({"error": err.to_string(), "spawned": false}),
                );
                self.restarts.last_exit = Some(format!("failed to start: {err}"));
                return Err(err);
            }
        };
        let pid = unit.pid();
        say(&format!(
            "started the server (generation {generation}, pid {pid}): {reason}"
        ));
        self.restarts.history.push(StartRecord {
            generation,
            pid: Some(pid),
            started_at: jiff::Timestamp::now(),
            reason: reason.to_owned(),
        });
        let replay = self.handshake.has_baseline();
        let phase = if replay {
            Phase::Initializing {
                deadline: now + self.opts.limits.readiness_timeout,
                timeout: self.opts.limits.readiness_timeout,
                replayed: true,
            }
        } else {
            Phase::Open
        };
        self.slot = Some(Slot {
            unit,
            phase,
            spawned: now,
            ready_after: None,
            for_change,
        });
        self.record(
            AuditEvent::ServerStarted,
            json!({"command": self.opts.command, "reason": reason}),
        );
        if replay {
            let id = self.routing.proxy_id();
            if let Some(request) = self.handshake.initialize_request(id) {
                self.routing.inflight.insert(
                    id,
                    super::inflight::Entry {
                        generation,
                        origin: super::inflight::Origin::ReplayedInitialize,
                    },
                );
                self.send_to_current(request);
            }
        } else {
            // Nothing to replay (the client has not initialized yet): ready as it is.
            self.on_ready(now.elapsed());
        }
        Ok(())
    }

    /// Start a child after an exit or a backoff; a spawn failure is handled like a crash.
    pub(super) fn start_or_fail(&mut self, reason: &str) {
        if let Err(err) = self.start_child(reason) {
            let status = ExitStatus::Unknown;
            self.fail_restart_waiters(&format!("the new server could not be started: {err}"));
            self.after_crash(status, &format!("could not be started: {err}"));
        }
    }

    /// The answer to the replayed `initialize`: the new child is ready, or it refused.
    pub(crate) fn on_replayed_initialize(&mut self, message: &Message, is_error: bool) {
        let Some(slot) = &self.slot else { return };
        let generation = slot.unit.generation();
        if is_error {
            say(&format!(
                "the server (generation {generation}) refused the replayed initialize: {}",
                String::from_utf8_lossy(message.bytes())
            ));
            return self.begin_stop(StopWhy::ReadinessTimeout);
        }
        let result = message
            .to_value()
            .and_then(|mut v| v.get_mut("result").map(Value::take))
            .unwrap_or(Value::Null);
        for drift in self.handshake.drift(&result) {
            say(&format!(
                "the server (generation {generation}) changed its {} since the first start",
                drift.field
            ));
            self.record(
                AuditEvent::CapabilityDrift,
                json!({"field": drift.field, "before": drift.before, "after": drift.after}),
            );
        }
        let replay = self.handshake.replay(|| self.routing.proxy_id());
        let count = replay.len() + 1;
        for (id, bytes) in replay {
            if let Some(id) = id {
                self.routing.inflight.insert(
                    id,
                    super::inflight::Entry {
                        generation,
                        origin: super::inflight::Origin::Replay,
                    },
                );
            }
            self.send_to_current(bytes);
        }
        self.record(AuditEvent::HandshakeReplayed, json!({"messages": count}));
        self.mark_ready();
    }

    fn mark_ready(&mut self) {
        let Some(slot) = &mut self.slot else { return };
        slot.phase = Phase::Ready;
        let startup = slot.spawned.elapsed();
        slot.ready_after = Some(startup);
        self.record(
            AuditEvent::ServerReady,
            json!({"startup_ms": millis(startup)}),
        );
        let (generation, pid) = (
            slot_ids(self.slot.as_ref()).0,
            slot_ids(self.slot.as_ref()).1,
        );
        say(&format!(
            "server ready (generation {generation}, pid {pid}) after {} ms",
            startup.as_millis()
        ));
        self.on_ready(startup);
    }

    /// The current child accepts requests: answer waiting `restart_server` calls, tell
    /// the client, send what was held.
    fn on_ready(&mut self, startup: std::time::Duration) {
        let Some(slot) = &self.slot else { return };
        let (generation, pid) = (slot.unit.generation(), slot.unit.pid());
        if let Some(restart) = self.restarts.restart.take() {
            let took = restart.requested.elapsed();
            let result = json!({
                "restarted": true,
                "reason": restart.reason,
                "source": restart.source.as_str(),
                "old": {"pid": restart.old_pid, "generation": restart.old_generation},
                "new": {"pid": pid, "generation": generation},
                "took_ms": millis(took),
                "startup_ms": millis(startup),
            });
            for waiter in restart.waiters {
                self.reply_result(&waiter.raw_id, &tools::tool_result(&result, false));
            }
        }
        if generation > 1 {
            let text = format!(
                "the MCP server restarted (generation {generation}, pid {pid}); its tools may have changed"
            );
            for note in self.handshake.restart_notifications(&text) {
                self.send_client(note);
            }
        }
        self.flush_buffer();
        self.after_settled();
    }

    /// Once a restart or build is over, act on a change that arrived meanwhile.
    pub(super) fn after_settled(&mut self) {
        if self.restarts.change_pending
            && self.restarts.restart.is_none()
            && !self.restarts.build_running
        {
            self.restarts.change_pending = false;
            self.on_files_changed(&["(changed during the restart)".to_owned()]);
        }
    }

    /// Ask for a restart. A restart already under way absorbs it (a tool call waits for
    /// the same new child; a file change schedules exactly one more).
    pub(crate) fn request_restart(&mut self, reason: &str, source: Source, waiter: Option<Waiter>) {
        if self.shutdown.is_some() {
            if let Some(waiter) = waiter {
                self.reply_result(
                    &waiter.raw_id,
                    &tools::tool_error("the supervisor is shutting down; no restart"),
                );
            }
            return;
        }
        if let Some(restart) = &mut self.restarts.restart {
            if source == Source::Watch {
                self.restarts.change_pending = true;
            }
            if let Some(waiter) = waiter {
                restart.waiters.push(waiter);
            }
            return;
        }
        let (old_pid, old_generation) = match &self.slot {
            Some(slot) => (Some(slot.unit.pid()), slot.unit.generation()),
            None => (None, self.restarts.generation),
        };
        say(&format!(
            "restart requested ({}): {reason}",
            source.as_str()
        ));
        self.record(
            AuditEvent::RestartRequested,
            json!({"reason": reason, "source": source.as_str()}),
        );
        self.write_marker(old_pid, old_generation, reason);
        self.restarts.restart = Some(Restart {
            reason: reason.to_owned(),
            source,
            requested: Instant::now(),
            old_pid,
            old_generation,
            waiters: waiter.into_iter().collect(),
        });
        if self.slot.is_none() {
            // Backing off or degraded: start at once, with a clean slate.
            self.restarts.policy.manual_restart();
            return self.start_or_fail(reason);
        }
        let drain = Phase::Draining {
            deadline: Instant::now() + self.opts.limits.drain_grace,
        };
        if let Some(slot) = &mut self.slot {
            match slot.phase {
                Phase::Ready | Phase::Open => slot.phase = drain,
                Phase::Initializing { .. } => return self.begin_stop(StopWhy::Restart),
                Phase::Draining { .. } | Phase::Stopping(_) => {}
            }
        }
        self.check_drained();
    }

    pub(super) fn write_marker(&mut self, pid: Option<u32>, generation: u64, reason: &str) {
        let marker = RestartMarker::now(pid, generation, reason);
        match marker.write(&self.opts.state_dir) {
            Ok(path) => self.record(
                AuditEvent::MarkerWritten,
                json!({"path": path.display().to_string()}),
            ),
            Err(err) => say(&format!(
                "cannot write the restart marker in {}: {err}",
                self.opts.state_dir.display()
            )),
        }
    }

    /// Stop the draining child once nothing it was asked is still running.
    pub(crate) fn check_drained(&mut self) {
        let Some(slot) = &self.slot else { return };
        if !matches!(slot.phase, Phase::Draining { .. }) {
            return;
        }
        if self
            .routing
            .inflight
            .client_requests_to(slot.unit.generation())
            == 0
        {
            self.begin_stop(StopWhy::Restart);
        }
    }

    /// Stop the current child: audit first (durably), answer what is still in flight,
    /// then start the stop ladder. Its exit arrives as an event.
    pub(crate) fn begin_stop(&mut self, why: StopWhy) {
        let Some(slot) = &self.slot else { return };
        if matches!(slot.phase, Phase::Stopping(_)) {
            return;
        }
        let generation = slot.unit.generation();
        let how = format!(
            "close stdin, SIGTERM after {} ms, SIGKILL after {} ms more",
            self.opts.limits.stop_close_grace.as_millis(),
            self.opts.limits.stop_term_grace.as_millis()
        );
        self.record(
            AuditEvent::ServerExiting,
            json!({"why": stop_why(why), "how": how}),
        );
        let text = match why {
            StopWhy::Restart => "restarted",
            StopWhy::ReadinessTimeout => "failed to start",
            StopWhy::Shutdown => "was shut down",
        };
        self.fail_inflight(generation, text);
        // Issue 6: the audit lines are durable before the child is stopped.
        self.sync_audit();
        if let Some(slot) = &mut self.slot {
            slot.phase = Phase::Stopping(why);
            slot.unit.stop();
        }
    }

    /// Deadlines: buffered requests, readiness, drain grace, backoff.
    pub(crate) fn on_timer(&mut self, now: Instant) {
        for held in self.routing.buffer.take_expired(now) {
            let raw = held.message.raw_id().unwrap_or(b"null").to_vec();
            let method = held.message.method().unwrap_or("").to_owned();
            self.reply_error(
                Some(&raw),
                message::INTERNAL_ERROR,
                &format!(
                    "the MCP server was not ready within {} (it is restarting); the request was not sent",
                    human(self.opts.limits.buffer_deadline)
                ),
            );
            self.record(
                AuditEvent::RequestFailedByRestart,
                json!({"method": method, "why": "buffer deadline"}),
            );
        }
        if let Some(slot) = &self.slot {
            match slot.phase {
                Phase::Initializing {
                    deadline, timeout, ..
                } if deadline <= now => {
                    let generation = slot.unit.generation();
                    say(&format!(
                        "the server (generation {generation}) did not answer initialize within {} ms",
                        timeout.as_millis()
                    ));
                    self.record(
                        AuditEvent::ReadinessTimeout,
                        json!({"timeout_ms": millis(timeout)}),
                    );
                    self.begin_stop(StopWhy::ReadinessTimeout);
                }
                Phase::Draining { deadline } if deadline <= now => {
                    say("requests still running after the drain grace: stopping the server anyway");
                    self.begin_stop(StopWhy::Restart);
                }
                _ => {}
            }
        }
        if let Idle::Backoff(until) = self.idle
            && until <= now
        {
            let reason = self
                .restarts
                .pending_reason
                .take()
                .unwrap_or_else(|| "restart after backoff".to_owned());
            self.start_or_fail(&reason);
        }
    }

    /// SIGINT/SIGTERM or the client closing: stop the child gracefully, then exit 0.
    pub(crate) fn begin_shutdown(&mut self, outcome: SuperviseOutcome) {
        if self.shutdown.is_some() {
            return;
        }
        self.shutdown = Some(outcome);
        self.fail_buffered("the MCP supervisor is shutting down");
        self.fail_restart_waiters("the MCP supervisor is shutting down");
        if self.slot.is_some() {
            self.begin_stop(StopWhy::Shutdown);
        } else {
            self.finish();
        }
    }

    pub(super) fn finish(&mut self) {
        let outcome = self
            .shutdown
            .clone()
            .unwrap_or(SuperviseOutcome::ServerExited);
        self.done = Some(outcome);
    }
}

fn stop_why(why: StopWhy) -> &'static str {
    match why {
        StopWhy::Restart => "restart",
        StopWhy::ReadinessTimeout => "readiness timeout",
        StopWhy::Shutdown => "shutdown",
    }
}

fn slot_ids(slot: Option<&Slot>) -> (u64, u32) {
    slot.map_or((0, 0), |slot| (slot.unit.generation(), slot.unit.pid()))
}

/// A duration for people: `250 ms`, `30 s`, `1.5 s`.
fn human(d: std::time::Duration) -> String {
    if d < std::time::Duration::from_secs(1) {
        format!("{} ms", d.as_millis())
    } else if d.subsec_millis() == 0 {
        format!("{} s", d.as_secs())
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}

pub(super) fn millis(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
