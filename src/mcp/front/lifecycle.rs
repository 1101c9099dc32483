//! Starting, draining, stopping and restarting servers (what follows a server's end is
//! `exits.rs`). Part of the front: these are methods of [`Front`], run on its task,
//! and none of them waits.

use std::time::Instant;

use serde_json::{Value, json};

use super::audit::{AuditEvent, millis};
use super::coordinator::{Restart, Source, Waiter};
use super::marker::RestartMarker;
use super::state::{Front, Idle, Phase, Slot, SuperviseOutcome};
use super::tools::{self, StartRecord};
use crate::mcp::backend::{Backend, ServerInfo, StopWhy};
use crate::mcp::jsonrpc::message::{self, Message};
use crate::mcp::say;
use crate::process::ExitStatus;

impl<B: Backend> Front<B> {
    /// Start the next generation. A failure to start counts as a crash.
    pub(crate) fn start_server(
        &mut self,
        reason: &str,
    ) -> Result<(), crate::process::ProcessError> {
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
        let up = match self.backend.start(generation, reason) {
            Ok(up) => up,
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
        self.slot = Some(Slot {
            generation,
            server: None,
            phase: Phase::Starting,
            spawned: now,
            ready_after: None,
            for_change,
        });
        self.restarts.pending_start_reason = Some(reason.to_owned());
        if let Some(server) = up {
            self.on_up(generation, server);
        }
        Ok(())
    }

    /// The back end reports the server of `generation` up: replay the handshake, or
    /// take it as ready when there is none to replay.
    pub(crate) fn on_up(&mut self, generation: u64, server: ServerInfo) {
        let Some(slot) = self.slot.as_mut().filter(|s| s.generation == generation) else {
            return;
        };
        if slot.phase != Phase::Starting {
            return;
        }
        let spawned = slot.spawned;
        let now = Instant::now();
        let reason = self
            .restarts
            .pending_start_reason
            .take()
            .unwrap_or_else(|| "restart".to_owned());
        let (pid, number) = (server.pid, server.number);
        slot.server = Some(server.clone());
        let what = pid.map_or_else(String::new, |pid| format!(", pid {pid}"));
        say(&format!(
            "{} the server (generation {number}{what}): {reason}",
            if server.started { "started" } else { "reached" }
        ));
        self.restarts.history.push(StartRecord {
            generation: number,
            pid,
            started_at: jiff::Timestamp::now(),
            reason: reason.clone(),
        });
        let probe = self.wants_probe();
        let replay = self.handshake.has_baseline() || probe;
        if let Some(slot) = &mut self.slot {
            slot.phase = if replay {
                Phase::Initializing {
                    deadline: now + self.opts.limits.readiness_timeout,
                    timeout: self.opts.limits.readiness_timeout,
                    replayed: true,
                }
            } else {
                Phase::Open
            };
        }
        let mut details = json!({
            "command": self.opts.command,
            "reason": reason,
            "start_ms": super::audit::millis(now.duration_since(spawned)),
        });
        if !server.started {
            details["found_running"] = json!(true);
        }
        self.record(AuditEvent::ServerStarted, details);
        if probe {
            self.probe(generation);
        } else if replay {
            let id = self.routing.proxy_id();
            if let Some(request) = self.handshake.initialize_request(id) {
                self.routing.inflight.insert(
                    id,
                    super::inflight::Entry {
                        generation,
                        origin: super::inflight::Origin::ReplayedInitialize,
                    },
                );
                self.backend.send(generation, request);
            }
        } else {
            // Nothing to replay (the client has not initialized yet): ready as it is.
            self.on_ready(server.startup);
        }
    }

    /// Start a server after an exit or a backoff; a spawn failure is handled like a crash.
    pub(super) fn start_or_fail(&mut self, reason: &str) {
        if let Err(err) = self.start_server(reason) {
            let status = ExitStatus::Unknown;
            self.fail_restart_waiters(&format!("the new server could not be started: {err}"));
            self.after_crash(status, &format!("could not be started: {err}"));
        }
    }

    /// The answer to the replayed `initialize`: the new child is ready, or it refused.
    pub(crate) fn on_replayed_initialize(&mut self, message: &Message, is_error: bool) {
        let Some(slot) = &self.slot else { return };
        let generation = slot.number();
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
        let generation = self.slot.as_ref().map_or(0, |s| s.generation);
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
            self.backend.send(generation, bytes);
        }
        self.record(AuditEvent::HandshakeReplayed, json!({"messages": count}));
        self.mark_ready();
    }

    pub(crate) fn mark_ready(&mut self) {
        let Some(slot) = &mut self.slot else { return };
        slot.phase = Phase::Ready;
        let startup = slot.spawned.elapsed();
        slot.ready_after = Some(startup);
        let (number, pid) = (slot.number(), slot.pid());
        self.record(
            AuditEvent::ServerReady,
            json!({"startup_ms": millis(startup)}),
        );
        let what = pid.map_or_else(String::new, |pid| format!(", pid {pid}"));
        say(&format!(
            "server ready (generation {number}{what}) after {} ms",
            startup.as_millis()
        ));
        self.on_ready(startup);
    }

    /// The current child accepts requests: answer waiting `restart_server` calls, tell
    /// the client, send what was held.
    fn on_ready(&mut self, startup: std::time::Duration) {
        let Some(slot) = &self.slot else { return };
        let (generation, number, pid) = (slot.generation, slot.number(), slot.pid());
        let mut answers = Vec::new();
        if let Some(restart) = self.restarts.restart.take() {
            let result = restart.answer(number, pid, startup);
            for waiter in restart.waiters {
                let answer = waiter.era.result(tools::tool_result(&result, false));
                answers.push((waiter.raw_id, answer));
            }
        }
        if generation > 1 {
            let what = pid.map_or_else(String::new, |pid| format!(", pid {pid}"));
            let text = format!(
                "the MCP server restarted (generation {number}{what}); its tools may have changed"
            );
            if let Some(note) = self.handshake.restart_log(&text) {
                self.send_client(note);
            }
            if !self.opts.remember {
                for note in self.handshake.list_changed_notifications() {
                    self.send_client(note);
                }
            }
        }
        self.open_listens();
        self.flush_buffer();
        if self.stateless_client() && generation > 1 {
            self.read_lists(true);
        } else if self.opts.remember && (self.handshake.has_baseline() || self.stateless_client()) {
            self.read_lists(generation > 1);
        }
        // Those who asked for the restart hear of it after the client heard what changed:
        // a tool the new server added can be called as soon as the answer is read.
        match &mut self.learned.round {
            Some(round) if round.notify => round.answers.extend(answers),
            _ => {
                for (raw_id, answer) in answers {
                    self.reply_result(&raw_id, &answer);
                }
            }
        }
        self.after_settled();
    }

    /// Once a restart or build is over, act on a change that arrived meanwhile.
    pub(super) fn after_settled(&mut self) {
        if !self.restarts.pending_changes.is_empty()
            && self.restarts.restart.is_none()
            && !self.restarts.build_running
        {
            let changed = std::mem::take(&mut self.restarts.pending_changes);
            self.on_files_changed(changed);
        }
    }

    /// Ask for a restart. A restart already under way absorbs it (a tool call waits for
    /// the same new child; a file change schedules exactly one more).
    pub(crate) fn request_restart(&mut self, reason: &str, source: Source, waiter: Option<Waiter>) {
        if self.shutdown.is_some() {
            if let Some(waiter) = waiter {
                let text = format!("the {} is shutting down; no restart", self.opts.role);
                self.reply_result(&waiter.raw_id, &waiter.era.result(tools::tool_error(&text)));
            }
            return;
        }
        if let Some(restart) = &mut self.restarts.restart {
            if let Some(waiter) = waiter {
                restart.waiters.push(waiter);
            }
            return;
        }
        let (old_pid, old_generation) = match &self.slot {
            Some(slot) => (slot.pid(), slot.number()),
            None => (
                self.restarts.history.last().and_then(|h| h.pid),
                self.restarts.history.last().map_or(0, |h| h.generation),
            ),
        };
        say(&format!(
            "restart requested ({}): {reason}",
            source.as_str()
        ));
        let mut details = json!({"reason": reason, "source": source.as_str()});
        if let Source::Signal(signal) = source {
            details["signal"] = json!(signal);
        }
        self.record(AuditEvent::RestartRequested, details);
        self.write_marker(old_pid, old_generation, reason);
        self.restarts.restart = Some(Restart {
            reason: reason.to_owned(),
            source,
            requested: Instant::now(),
            old_pid,
            old_generation,
            stopped: None,
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
                Phase::Ready | Phase::Open => {
                    slot.phase = drain;
                    // A frozen server could not finish what it was asked.
                    let generation = slot.generation;
                    self.backend.resume(generation);
                }
                Phase::Starting | Phase::Initializing { .. } => {
                    return self.begin_stop(StopWhy::Restart);
                }
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

    /// Stop the draining server once nothing it was asked is still running.
    pub(crate) fn check_drained(&mut self) {
        let Some(slot) = &self.slot else { return };
        if !matches!(slot.phase, Phase::Draining { .. }) {
            return;
        }
        // The front's own readings of the lists finish too: what is kept of the server
        // stays whole for whoever starts while it restarts.
        if self.routing.inflight.awaited_from(slot.generation) == 0 {
            self.begin_stop(StopWhy::Restart);
        }
    }

    /// Stop the current server: audit first (durably), answer what is still in flight,
    /// then ask the back end to stop it. Its end arrives as an event.
    pub(crate) fn begin_stop(&mut self, why: StopWhy) {
        let Some(slot) = &self.slot else { return };
        if matches!(slot.phase, Phase::Stopping(_)) {
            return;
        }
        let generation = slot.generation;
        let how = self.backend.stop_plan(why);
        self.record(
            AuditEvent::ServerExiting,
            json!({"why": why.as_str(), "how": how}),
        );
        self.close_listens(generation);
        self.fail_inflight(generation, why.as_lost());
        // Issue 6: the audit lines are durable before the server is stopped.
        self.sync_audit();
        if let Some(slot) = &mut self.slot {
            slot.phase = Phase::Stopping(why);
        }
        self.backend.stop(generation, why);
    }

    /// Deadlines: buffered requests, readiness, drain grace, backoff, answers held for a
    /// relisting.
    pub(crate) fn on_timer(&mut self, now: Instant) {
        if self
            .learned
            .relist
            .as_ref()
            .is_some_and(|relist| relist.deadline <= now)
        {
            self.release_relist();
        }
        self.fail_overdue(now);
        for held in self.routing.buffer.take_expired(now) {
            let raw = held.message.raw_id().unwrap_or(b"null").to_vec();
            let method = held.message.method().unwrap_or("").to_owned();
            self.reply_error(
                Some(&raw),
                message::INTERNAL_ERROR,
                &format!(
                    "the MCP server was not ready within {} (it is restarting); the request was not sent",
                    crate::words::precise_span(self.opts.limits.buffer_deadline)
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
                    let generation = slot.number();
                    let handshake = if self.stateless_client() {
                        "server/discover"
                    } else {
                        "initialize"
                    };
                    say(&format!(
                        "the server (generation {generation}) did not answer {handshake} within {} ms",
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

    /// SIGINT/SIGTERM or the client closing: stop the server gracefully, then exit 0.
    pub(crate) fn begin_shutdown(&mut self, outcome: SuperviseOutcome) {
        if self.shutdown.is_some() {
            return;
        }
        self.shutdown = Some(outcome);
        self.release_relist();
        let text = format!("the MCP {} is shutting down", self.opts.role);
        self.fail_buffered(&text);
        self.fail_restart_waiters(&text);
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
