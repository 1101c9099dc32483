//! The link's life: connecting (and starting the daemon), losing the session, the
//! daemon's exits, backoff and degraded mode, and the bridge's own shutdown.

use std::time::{Duration, Instant};

use serde_json::json;

use super::connect::{ConnectError, Connection};
use super::daemon::{DaemonExit, StartEntry};
use super::dispatch::{Bridge, Event, Link, millis};
use super::forward::list_changed;
use crate::mcp::message;
use crate::mcp::{AuditEvent, say};

impl Bridge {
    /// Start connecting (starting the daemon if nothing listens), unless already doing so.
    pub(super) fn connect(&mut self, start_reason: &str) {
        if self.connecting || self.shutting_down.is_some() {
            return;
        }
        self.connecting = true;
        self.connect_attempt += 1;
        let attempt = self.connect_attempt;
        self.reconnect_at = None;
        let daemon = self.daemon.clone();
        let params = self
            .client_init
            .clone()
            .unwrap_or_else(super::connect::default_initialize_params);
        let events = self.events.clone();
        let reason = start_reason.to_owned();
        tokio::spawn(async move {
            let result = super::connect::connect(&daemon, &params, &reason).await;
            let _ = events.send(Event::Connected { attempt, result });
        });
    }

    /// The session is gone (the daemon died, restarted or forgot it): hold new requests
    /// and connect again.
    pub(super) fn lose_link(&mut self, why: &str) {
        if let Link::Ready(session) = std::mem::replace(&mut self.link, Link::Down) {
            say(&format!("lost the session with the MCP daemon: {why}"));
            let endpoint = self.daemon.endpoint.clone();
            tokio::spawn(async move { endpoint.delete(&session).await });
        }
        self.epoch += 1;
        if let Some(listener) = self.listener.take() {
            listener.abort();
        }
        if self.restart.is_none() && !self.policy.is_degraded() && self.reconnect_at.is_none() {
            self.connect("the daemon went away");
        }
    }

    pub(super) fn on_connected(&mut self, result: Result<Connection, ConnectError>) {
        self.connecting = false;
        if self.shutting_down.is_some() {
            if let Ok(connection) = result {
                let endpoint = self.daemon.endpoint.clone();
                tokio::spawn(async move { endpoint.delete(&connection.session).await });
            }
            return;
        }
        match result {
            Ok(connection) => self.on_link(connection),
            Err(err) => self.on_connect_failed(&err),
        }
    }

    fn on_link(&mut self, connection: Connection) {
        self.epoch += 1;
        self.daemon.endpoint = connection.endpoint.clone();
        if let Some((start, startup)) = &connection.started {
            self.on_daemon_started(start, *startup);
        }
        let generation = connection.daemon.as_ref().map(|d| d.generation);
        let pid = connection.daemon.as_ref().map(|d| d.pid);
        self.record(
            AuditEvent::SessionOpened,
            json!({"session_id": connection.session.id, "daemon_generation": generation, "daemon_pid": pid}),
        );
        let changed =
            self.learned.lists != connection.learned.lists && self.learned.initialize.is_some();
        let capabilities_changed = self.learned.initialize.is_some()
            && self
                .learned
                .initialize
                .as_ref()
                .and_then(|i| i.get("capabilities"))
                != connection
                    .learned
                    .initialize
                    .as_ref()
                    .and_then(|i| i.get("capabilities"));
        if capabilities_changed {
            self.record(
                AuditEvent::CapabilityDrift,
                json!({"new": connection.learned.initialize}),
            );
        }
        let previous = std::mem::replace(&mut self.learned, connection.learned);
        if let Err(err) = self.learned.save(&self.opts.state_dir) {
            say(&format!(
                "cannot save what was learned from the daemon: {err}"
            ));
        }
        self.link = Link::Ready(connection.session.clone());
        self.listener = Some(super::listen::spawn(
            self.daemon.endpoint.clone(),
            connection.session,
            self.epoch,
            self.events.clone(),
        ));
        self.answer_restart(connection.daemon.as_ref());
        self.flush_waiting();
        if changed && self.client_initialized {
            for (method, _) in super::learned::LISTS {
                if method != "resources/templates/list"
                    && previous.lists.get(method) != self.learned.lists.get(method)
                {
                    self.send_client(message::notification(&list_changed(method), None));
                }
            }
        }
    }

    fn on_daemon_started(&mut self, start: &StartEntry, startup: Duration) {
        self.own_daemon = Some(start.pid);
        self.policy.child_started(Instant::now());
        self.record_for(
            AuditEvent::ServerStarted,
            Some(start.generation),
            Some(start.pid),
            json!({"command": self.opts.command, "reason": start.reason}),
        );
        self.record_for(
            AuditEvent::ServerReady,
            Some(start.generation),
            Some(start.pid),
            json!({"startup_ms": millis(startup)}),
        );
        say(&format!(
            "daemon started (generation {}, pid {}) and ready after {} ms",
            start.generation,
            start.pid,
            startup.as_millis()
        ));
    }

    fn on_connect_failed(&mut self, err: &ConnectError) {
        let why = err.why.as_str();
        say(&format!("cannot reach the MCP daemon: {why}"));
        self.record(AuditEvent::ReadinessTimeout, json!({"why": why}));
        if let Some(restart) = self.restart.take() {
            self.fail_restart(restart, why, None);
        }
        if err.definite {
            // Those waiting learn why now rather than at their deadline.
            let message = format!("the MCP daemon is not available: {why}");
            while let Some((held, _)) = self.waiting.pop_front() {
                self.answer_error(&held, &message);
            }
        }
        self.last_exit = Some(why.to_owned());
        let exit = crate::restart::ChildExit::Crashed(crate::process::ExitStatus::Unknown);
        self.decide_after_loss(exit, why);
    }

    /// After the daemon went away on its own or could not be reached: back off, or give
    /// up until `restart_server`.
    pub(super) fn decide_after_loss(&mut self, exit: crate::restart::ChildExit, why: &str) {
        use crate::restart::RestartDecision;
        match self.policy.child_exited(exit, Instant::now()) {
            RestartDecision::Stop => self.schedule_reconnect(Duration::ZERO, why),
            RestartDecision::RestartAfter(delay) => self.schedule_reconnect(delay, why),
            RestartDecision::Degraded => {
                let crashes = self.policy.crashes_in_window(Instant::now());
                say(&format!(
                    "the MCP daemon failed {crashes} times within {} s; requests get errors until `restart_server` is called",
                    self.policy.config().crash_window.as_secs()
                ));
                self.record(
                    AuditEvent::Degraded,
                    json!({"crashes": crashes, "why": why}),
                );
                self.reconnect_at = None;
                while let Some((message, _)) = self.waiting.pop_front() {
                    self.answer_error(&message, &self.degraded_message());
                }
            }
        }
    }

    fn schedule_reconnect(&mut self, delay: Duration, why: &str) {
        if matches!(self.link, Link::Ready(_)) || self.connecting || self.restart.is_some() {
            return;
        }
        self.record(
            AuditEvent::CrashBackoff,
            json!({"delay_ms": millis(delay), "why": why}),
        );
        self.reconnect_at = Some(Instant::now() + delay);
    }

    pub(super) fn degraded_message(&self) -> String {
        format!(
            "the MCP daemon keeps failing ({}); call the `restart_server` tool to try again",
            self.last_exit.as_deref().unwrap_or("it does not come up")
        )
    }

    pub(super) fn on_daemon_exited(&mut self, exit: DaemonExit) {
        let asked = self.stopping.contains(&exit.pid);
        self.stopping.retain(|pid| *pid != exit.pid);
        // Only the daemon this bridge started and connected to counts: one that died
        // while starting is reported by the connect attempt that started it.
        let current = self.own_daemon == Some(exit.pid);
        if current {
            self.own_daemon = None;
        }
        // Another bridge restarting the shared daemon holds the lock while it stops it.
        let planned = asked || (current && super::lock::held_elsewhere(&self.opts.state_dir));
        self.last_exit = Some(format!("pid {} exited: {}", exit.pid, exit.status));
        self.record_for(
            AuditEvent::ServerExited,
            None,
            Some(exit.pid),
            json!({"status": exit.status.to_string(), "requested": planned}),
        );
        if self.shutting_down.is_some() || !current {
            return;
        }
        if planned {
            if self.restart.is_none() && matches!(self.link, Link::Ready(_)) {
                self.lose_link("another bridge is restarting the daemon");
            }
            return;
        }
        say(&format!(
            "the MCP daemon (pid {}) exited: {}",
            exit.pid, exit.status
        ));
        if matches!(self.link, Link::Ready(_)) {
            self.link_lost_quietly();
        }
        let why = format!("the daemon exited: {}", exit.status);
        self.decide_after_loss(crate::restart::ChildExit::classify(exit.status), &why);
    }

    /// Drop the link without connecting again at once (the caller schedules it).
    fn link_lost_quietly(&mut self) {
        self.link = Link::Down;
        self.epoch += 1;
        if let Some(listener) = self.listener.take() {
            listener.abort();
        }
    }

    /// Delete the session and, with `--stop-daemon-on-exit`, stop the daemon this bridge
    /// started; then end.
    pub(super) fn begin_shutdown(&mut self, why: String) {
        if self.shutting_down.is_some() {
            return;
        }
        say(&format!("shutting down: {why}"));
        self.shutting_down = Some(why);
        self.reconnect_at = None;
        while let Some((message, _)) = self.waiting.pop_front() {
            self.answer_error(&message, "the bridge is shutting down");
        }
        if let Some(listener) = self.listener.take() {
            listener.abort();
        }
        let session = match std::mem::replace(&mut self.link, Link::Down) {
            Link::Ready(session) => Some(session),
            Link::Down => None,
        };
        let stop = self.opts.stop_daemon_on_exit && self.own_daemon.is_some();
        if stop {
            self.stopping.extend(self.own_daemon);
            self.record(
                AuditEvent::ServerExiting,
                json!({"why": "--stop-daemon-on-exit"}),
            );
            self.sync_audit();
        }
        let daemon = self.daemon.clone();
        let events = self.events.clone();
        tokio::spawn(async move {
            if let Some(session) = session {
                daemon.endpoint.delete(&session).await;
            }
            if stop {
                let lock =
                    super::lock::acquire(&daemon.state_dir, super::connect::LOCK_SLACK).await;
                let outcome = daemon.stop().await;
                drop(lock);
                say(&format!(
                    "daemon stopped ({}): {}",
                    outcome.how,
                    if outcome.stopped {
                        "the port is free"
                    } else {
                        "it is still there"
                    }
                ));
            }
            let _ = events.send(Event::ShutdownDone);
        });
    }
}
