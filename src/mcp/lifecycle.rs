//! Starting, draining, stopping and restarting children, and what follows each exit
//! (issue 6, "Restarts and exit codes"). Part of the dispatcher: these are methods of
//! [`Proxy`], run on its task, and none of them waits.

use std::time::Instant;

use serde_json::{Value, json};

use super::audit::AuditEvent;
use super::child;
use super::marker::RestartMarker;
use super::message::{self, Message};
use super::proxy::{Idle, Phase, Proxy, Restart, Slot, Source, StopWhy, SuperviseOutcome, Waiter};
use super::say;
use super::tools::{self, StartRecord};
use crate::process::{ExitReport, ExitStatus};
use crate::restart::{ChildExit, RestartDecision};

impl Proxy {
    /// Start the next generation. A failure to spawn counts as a crash.
    pub(crate) fn start_child(&mut self, reason: &str) -> Result<(), crate::process::ProcessError> {
        self.idle = Idle::No;
        self.generation += 1;
        let generation = self.generation;
        if generation > 1 {
            self.restarts += 1;
        }
        self.stderr_tail = super::stderr_tail::StderrTail::default();
        let for_change = self
            .restart
            .as_ref()
            .is_some_and(|restart| restart.source == Source::Watch);
        let now = Instant::now();
        self.policy.child_started(now);
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
                self.last_exit = Some(format!("failed to start: {err}"));
                return Err(err);
            }
        };
        let pid = unit.pid();
        say(&format!(
            "started the server (generation {generation}, pid {pid}): {reason}"
        ));
        self.history.push(StartRecord {
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
            let id = self.take_id();
            if let Some(request) = self.handshake.initialize_request(id) {
                self.inflight.insert(
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
    fn start_or_fail(&mut self, reason: &str) {
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
        let replay = self.handshake.replay(|| {
            self.next_id += 1;
            self.next_id
        });
        let count = replay.len() + 1;
        for (id, bytes) in replay {
            if let Some(id) = id {
                self.inflight.insert(
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
        if let Some(restart) = self.restart.take() {
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
    fn after_settled(&mut self) {
        if self.change_pending && self.restart.is_none() && !self.build_running {
            self.change_pending = false;
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
        if let Some(restart) = &mut self.restart {
            if source == Source::Watch {
                self.change_pending = true;
            }
            if let Some(waiter) = waiter {
                restart.waiters.push(waiter);
            }
            return;
        }
        let (old_pid, old_generation) = match &self.slot {
            Some(slot) => (Some(slot.unit.pid()), slot.unit.generation()),
            None => (None, self.generation),
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
        self.restart = Some(Restart {
            reason: reason.to_owned(),
            source,
            requested: Instant::now(),
            old_pid,
            old_generation,
            waiters: waiter.into_iter().collect(),
        });
        if self.slot.is_none() {
            // Backing off or degraded: start at once, with a clean slate.
            self.policy.manual_restart();
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

    fn write_marker(&mut self, pid: Option<u32>, generation: u64, reason: &str) {
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
        if self.inflight.client_requests_to(slot.unit.generation()) == 0 {
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

    /// A child exited (asked to or not).
    pub(crate) fn on_child_exit(&mut self, generation: u64, report: &ExitReport) {
        let Some(slot) = self
            .slot
            .take_if(|slot| slot.unit.generation() == generation)
        else {
            return;
        };
        let pid = slot.unit.pid();
        let asked = match slot.phase {
            Phase::Stopping(why) => Some(why),
            _ => None,
        };
        let ready = slot.ready_after.is_some();
        let broken_by_change = slot.for_change && !ready;
        drop(slot);
        let status = report.status;
        let mut details = json!({
            "code": status.code(),
            "signal": status.signal_name().map_or_else(|| status.signal().map(|s| s.to_string()), |n| Some(n.to_owned())),
            "requested": asked.is_some(),
        });
        if asked.is_none() && !self.stderr_tail.is_empty() {
            details["stderr_tail"] = json!(self.stderr_tail.lines());
        }
        if let Some(stop) = &report.stop {
            details["stop_took_ms"] = json!(millis(stop.took));
            details["stop_actions"] = json!(
                stop.actions
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
            );
        }
        self.record_for(
            AuditEvent::ServerExited,
            Some(generation),
            Some(pid),
            details,
        );
        say(&format!(
            "the server (generation {generation}, pid {pid}) exited: {status}"
        ));
        self.last_exit = Some(status.to_string());
        let why_lost = if asked.is_some() {
            "restarted"
        } else {
            "exited or crashed"
        };
        self.fail_inflight(generation, why_lost);

        if self.shutdown.is_some() {
            self.finish();
            return;
        }
        match asked {
            Some(StopWhy::Restart) => {
                let reason = self
                    .restart
                    .as_ref()
                    .map_or_else(|| "restart".to_owned(), |r| r.reason.clone());
                self.start_or_fail(&reason);
            }
            Some(StopWhy::ReadinessTimeout) => {
                let what = "did not answer initialize in time";
                self.fail_restart_waiters(&format!(
                    "the new server {what}{}",
                    self.stderr_tail.excerpt(EXCERPT_LINES)
                ));
                if broken_by_change {
                    return self.wait_for_change(what);
                }
                self.after_crash(status, what);
            }
            Some(StopWhy::Shutdown) => self.finish(),
            None => self.after_unasked_exit(status, ready, broken_by_change),
        }
    }

    /// The server started for a file change failed before it was ready: the change
    /// broke it, and restarting the same files again would only fail again. Count the
    /// crash and wait (degraded) for the next change or a `restart_server` call.
    fn wait_for_change(&mut self, what: &str) {
        self.crashes += 1;
        let reason = format!(
            "the server {what} after the watched files changed; waiting for the next change (or call restart_server){}",
            self.stderr_tail.excerpt(EXCERPT_LINES)
        );
        say(&reason);
        self.record(
            AuditEvent::Degraded,
            json!({"reason": reason, "stderr_tail": self.stderr_tail.lines()}),
        );
        self.idle = Idle::Degraded(reason.clone());
        self.fail_buffered(&format!("the MCP server is down (degraded: {reason})"));
        self.after_settled();
    }

    fn after_unasked_exit(&mut self, status: ExitStatus, ready: bool, broken_by_change: bool) {
        if let Some(restart) = &self.restart {
            // It went while draining for a planned restart: carry on with the restart.
            let reason = restart.reason.clone();
            if ready || status.is_success() {
                return self.start_or_fail(&reason);
            }
        }
        let exit = ChildExit::classify(status);
        match exit {
            ChildExit::Clean if ready || self.restart.is_none() => {
                say("the server exited cleanly (code 0): the supervisor exits too");
                self.fail_buffered("the MCP server shut down");
                self.fail_restart_waiters("the MCP server shut down");
                self.shutdown = Some(SuperviseOutcome::ServerExited);
                self.finish();
            }
            // Exit 42 asks for a restart only from a server that became ready: before
            // that it is a failed start, which must meet the backoff and the crash limit
            // (otherwise a server that exits 42 at once restarts forever).
            ChildExit::RestartRequested if ready => {
                let decision = self.policy.child_exited(exit, Instant::now());
                let reason = "the server exited with code 42 (restart requested)";
                say(reason);
                self.record(
                    AuditEvent::RestartRequested,
                    json!({"reason": reason, "source": Source::Exit42.as_str()}),
                );
                let generation = self.generation;
                let pid = self.history.last().and_then(|h| h.pid);
                self.write_marker(pid, generation, reason);
                self.apply(decision, reason, false);
            }
            _ => {
                let what = describe(status, ready);
                self.fail_restart_waiters(&format!(
                    "the new server {what}{}",
                    self.stderr_tail.excerpt(EXCERPT_LINES)
                ));
                if broken_by_change {
                    return self.wait_for_change(&what);
                }
                self.after_crash(status, &what);
            }
        }
    }

    /// A crash (or a start that failed): back off, or give up and go degraded.
    fn after_crash(&mut self, status: ExitStatus, what: &str) {
        self.crashes += 1;
        let exit = match ChildExit::classify(status) {
            // A start that failed counts as a crash, whatever its code.
            ChildExit::Clean | ChildExit::RestartRequested => ChildExit::Crashed(status),
            crashed @ ChildExit::Crashed(_) => crashed,
        };
        let decision = self.policy.child_exited(exit, Instant::now());
        self.apply(decision, &format!("the server {what}"), true);
    }

    fn apply(&mut self, decision: RestartDecision, reason: &str, crash: bool) {
        match decision {
            RestartDecision::Stop => {
                self.shutdown = Some(SuperviseOutcome::ServerExited);
                self.finish();
            }
            RestartDecision::RestartAfter(delay) => {
                if crash {
                    say(&format!("{reason}: restarting in {} ms", delay.as_millis()));
                    self.record(
                        AuditEvent::CrashBackoff,
                        json!({"delay_ms": millis(delay), "reason": reason, "crash_streak": self.policy.crash_streak()}),
                    );
                }
                self.idle = Idle::Backoff(Instant::now() + delay);
                self.pending_reason = Some(reason.to_owned());
            }
            RestartDecision::Degraded => self.enter_degraded(reason),
        }
    }

    fn enter_degraded(&mut self, reason: &str) {
        let reason = format!("{reason}{}", self.stderr_tail.excerpt(EXCERPT_LINES));
        let reason = reason.as_str();
        let text = format!(
            "{reason}; {} crashes within {} s: not restarting on its own (degraded). Call restart_server to try again.",
            self.policy.crashes_in_window(Instant::now()),
            self.policy.config().crash_window.as_secs()
        );
        say(&text);
        self.record(
            AuditEvent::Degraded,
            json!({"reason": reason, "stderr_tail": self.stderr_tail.lines()}),
        );
        self.idle = Idle::Degraded(reason.to_owned());
        self.fail_buffered(&format!(
            "the MCP server is down (degraded: {reason}); call the restart_server tool to try again"
        ));
        self.fail_restart_waiters(&text);
        self.after_settled();
    }

    /// Tell `restart_server` callers waiting for a new child that it did not come up.
    pub(crate) fn fail_restart_waiters(&mut self, text: &str) {
        if let Some(restart) = self.restart.take() {
            for waiter in restart.waiters {
                self.reply_result(&waiter.raw_id, &tools::tool_error(text));
            }
        }
    }

    /// Deadlines: buffered requests, readiness, drain grace, backoff.
    pub(crate) fn on_timer(&mut self, now: Instant) {
        for held in self.buffer.take_expired(now) {
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

    fn finish(&mut self) {
        let outcome = self
            .shutdown
            .clone()
            .unwrap_or(SuperviseOutcome::ServerExited);
        self.done = Some(outcome);
    }
}

/// Lines of the server's stderr quoted in error messages (the audit log keeps them all).
const EXCERPT_LINES: usize = 5;

fn stop_why(why: StopWhy) -> &'static str {
    match why {
        StopWhy::Restart => "restart",
        StopWhy::ReadinessTimeout => "readiness timeout",
        StopWhy::Shutdown => "shutdown",
    }
}

fn describe(status: ExitStatus, ready: bool) -> String {
    match status {
        ExitStatus::Unknown => "could not be started".to_owned(),
        other if !ready && ChildExit::classify(other) == ChildExit::RestartRequested => {
            format!("failed to start ({other} before it answered initialize)")
        }
        other => format!("crashed ({other})"),
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

fn millis(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
