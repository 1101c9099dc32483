//! The dispatcher: one task that owns every piece of the proxy's state and routes each
//! message between the client and the current child (see the theory of operation in
//! [`super`]).
//!
//! This file holds the state and the event loop; routing is in `from_client` and
//! `from_server`, starting, stopping and restarting children in `lifecycle`.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::audit::{AuditEvent, AuditLog};
use super::child::ChildUnit;
use super::coordinator::{Restarts, Source};
use super::framing::LineReader;
use super::handshake::Handshake;
use super::message;
use super::options::SuperviseOptions;
use super::routing::Routing;
use super::tools::ToolView;
use super::{framing::Frame, say};
use crate::process::{Events, ProcessEvent};

/// Something the dispatcher reacts to, other than client input and child events.
#[derive(Debug)]
pub(crate) enum Control {
    /// SIGINT or SIGTERM: stop the child gracefully and exit 0. A second one kills.
    Shutdown(&'static str),
    /// SIGHUP: restart the server (as `restart_server` does, without a caller waiting).
    Restart(&'static str),
    /// Watched files changed.
    FilesChanged(Vec<String>),
    /// The `--build` command finished.
    BuildDone {
        /// Whether it exited 0.
        ok: bool,
        /// How it ended, in words.
        detail: String,
    },
    /// Writing to the client failed: the client is gone.
    ClientGone(String),
}

/// Why the MCP supervisor is stopping its server child (the MCP layer's own; agent
/// sessions stop for a [`StopCause`](crate::session::StopCause)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StopWhy {
    /// A planned restart.
    Restart,
    /// It never answered `initialize` in time.
    ReadinessTimeout,
    /// The supervisor is exiting.
    Shutdown,
}

/// Where a child is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    /// No handshake to replay yet (the client has not initialized): messages pass
    /// straight through.
    Open,
    /// Waiting for the answer to `initialize` (`replayed`: sent by the proxy; otherwise
    /// the client's own first `initialize`).
    Initializing {
        /// When the child counts as never ready.
        deadline: Instant,
        /// The readiness timeout that set `deadline` (for logs and the audit).
        timeout: Duration,
        /// Whether the proxy replayed it (the answer is not forwarded).
        replayed: bool,
    },
    /// Ready: requests are forwarded.
    Ready,
    /// A planned restart waits for requests in flight to finish.
    Draining {
        /// When the remaining ones are failed and the child is stopped anyway.
        deadline: Instant,
    },
    /// Being stopped; its late replies are dropped.
    Stopping(StopWhy),
}

/// The child the proxy routes to.
#[derive(Debug)]
pub(crate) struct Slot {
    pub(crate) unit: ChildUnit,
    pub(crate) phase: Phase,
    pub(crate) spawned: Instant,
    pub(crate) ready_after: Option<Duration>,
    /// Started because watched files changed: if it fails before it is ready, the
    /// change broke it, and the supervisor waits for the next change.
    pub(crate) for_change: bool,
}

/// What the supervisor is doing when it has no child.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Idle {
    /// A child exists (or is about to).
    No,
    /// Waiting to start the next child after an exit.
    Backoff(Instant),
    /// Given up after too many failures: requests get errors until `restart_server`.
    Degraded(String),
}

/// How the supervisor ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SuperviseOutcome {
    /// The server exited 0 on its own: a clean shutdown.
    ServerExited,
    /// The client closed its end (EOF on stdin).
    ClientClosed,
    /// SIGINT or SIGTERM.
    Signalled(&'static str),
}

impl SuperviseOutcome {
    /// Why the supervisor ended, in words.
    #[must_use]
    pub fn describe(&self) -> String {
        match self {
            SuperviseOutcome::ServerExited => "the server shut down cleanly".to_owned(),
            SuperviseOutcome::ClientClosed => "the client closed the connection".to_owned(),
            SuperviseOutcome::Signalled(signal) => format!("{signal} received"),
        }
    }
}

/// The dispatcher's state. Owned by one task; nothing here is shared.
pub(crate) struct Proxy {
    pub(crate) opts: SuperviseOptions,
    pub(crate) handshake: Handshake,
    pub(crate) audit: Option<AuditLog>,
    pub(crate) to_client: mpsc::UnboundedSender<Vec<u8>>,
    /// Events of a child just started, for the loop to read from.
    pub(crate) new_events: Option<(u64, Events)>,
    pub(crate) control_tx: mpsc::UnboundedSender<Control>,
    /// Where each message in flight belongs, and the id allocators.
    pub(crate) routing: Routing,
    pub(crate) slot: Option<Slot>,
    pub(crate) idle: Idle,
    /// Restarts: under way, pending, policy, counters.
    pub(crate) restarts: Restarts,
    /// The tool list as the client sees it.
    pub(crate) tools: ToolView,
    /// The end of the latest child's stderr (kept after it exits, to explain why).
    pub(crate) stderr_tail: super::stderr_tail::StderrTail,
    pub(crate) started: Instant,
    pub(crate) shutdown: Option<SuperviseOutcome>,
    pub(crate) done: Option<SuperviseOutcome>,
}

impl Proxy {
    /// Run until the supervisor should exit.
    pub(crate) async fn run<R: tokio::io::AsyncRead + Unpin>(
        mut self,
        mut client: LineReader<R>,
        mut control_rx: mpsc::UnboundedReceiver<Control>,
    ) -> SuperviseOutcome {
        let mut client_open = true;
        let mut child_events: Option<(u64, Events)> = None;
        loop {
            if let Some(events) = self.new_events.take() {
                child_events = Some(events);
            }
            if let Some(outcome) = self.done.take() {
                self.record(
                    AuditEvent::SupervisorExiting,
                    json!({"reason": outcome.describe(), "exit_code": 0}),
                );
                self.sync_audit();
                say(&format!("exiting: {}", outcome.describe()));
                return outcome;
            }
            let deadline = self.next_deadline();
            tokio::select! {
                biased;
                Some(control) = control_rx.recv() => self.on_control(control),
                (generation, event) = next_event(&mut child_events) => match event {
                    Some(ProcessEvent::Exited(report)) => {
                        child_events = None;
                        self.on_child_exit(generation, &report);
                    }
                    Some(event) => self.on_child(generation, event),
                    None => child_events = None,
                },
                frame = client.next(), if client_open => match frame {
                    Ok(Frame::Line(line)) => self.on_client_line(line),
                    Ok(Frame::Oversized(dropped)) => {
                        self.on_client_oversized(dropped.len, &dropped.head, &dropped.tail);
                    }
                    Ok(Frame::Eof) => {
                        client_open = false;
                        self.begin_shutdown(SuperviseOutcome::ClientClosed);
                    }
                    Err(err) => {
                        say(&format!("reading from the client failed: {err}"));
                        client_open = false;
                        self.begin_shutdown(SuperviseOutcome::ClientClosed);
                    }
                },
                () = sleep_until(deadline) => self.on_timer(Instant::now()),
            }
        }
    }

    fn next_deadline(&self) -> Option<Instant> {
        let phase = self.slot.as_ref().and_then(|slot| match slot.phase {
            Phase::Initializing { deadline, .. } | Phase::Draining { deadline } => Some(deadline),
            _ => None,
        });
        let backoff = match self.idle {
            Idle::Backoff(until) => Some(until),
            _ => None,
        };
        let buffered = if self.routing.buffer.is_empty() {
            None
        } else {
            self.routing.buffer.next_deadline()
        };
        [phase, backoff, buffered].into_iter().flatten().min()
    }

    fn on_control(&mut self, control: Control) {
        match control {
            Control::Shutdown(signal) => {
                if self.shutdown.is_some() {
                    say(&format!("{signal} again: killing the server now"));
                    if let Some(slot) = &self.slot {
                        slot.unit.kill();
                    }
                } else {
                    say(&format!("{signal} received: stopping the server"));
                    self.begin_shutdown(SuperviseOutcome::Signalled(signal));
                }
            }
            Control::Restart(signal) => {
                self.request_restart(&format!("{signal} received"), Source::Signal, None);
            }
            Control::FilesChanged(paths) => self.on_files_changed(&paths),
            Control::BuildDone { ok, detail } => self.on_build_done(ok, &detail),
            Control::ClientGone(err) => {
                say(&format!(
                    "writing to the client failed ({err}): shutting down"
                ));
                self.begin_shutdown(SuperviseOutcome::ClientClosed);
            }
        }
    }

    // ----- sending -----

    /// Send a line to the current server child, if there is one.
    pub(crate) fn send_to_current(&self, line: Vec<u8>) {
        if let Some(slot) = &self.slot {
            slot.unit.send(line);
        }
    }

    /// Send a line to the client.
    pub(crate) fn send_client(&self, line: Vec<u8>) {
        let _ = self.to_client.send(line);
    }

    pub(crate) fn reply_error(&self, raw_id: Option<&[u8]>, code: i64, text: &str) {
        self.send_client(message::error_response(raw_id, code, text));
    }

    pub(crate) fn reply_result(&self, raw_id: &[u8], result: &Value) {
        self.send_client(message::result_response(raw_id, result));
    }

    pub(crate) fn record(&mut self, event: AuditEvent, details: Value) {
        let (generation, pid) = match &self.slot {
            Some(slot) => (Some(slot.unit.generation()), Some(slot.unit.pid())),
            None => (Some(self.restarts.generation).filter(|g| *g > 0), None),
        };
        self.record_for(event, generation, pid, details);
    }

    /// Make every audit line written so far durable (a barrier before stopping a child).
    pub(crate) fn sync_audit(&mut self) {
        if let Some(audit) = &mut self.audit
            && let Err(err) = audit.sync()
        {
            say(&format!(
                "cannot sync the audit log {}: {err}",
                audit.path().display()
            ));
        }
    }

    pub(crate) fn record_for(
        &mut self,
        event: AuditEvent,
        generation: Option<u64>,
        pid: Option<u32>,
        details: Value,
    ) {
        if let Some(audit) = &mut self.audit
            && let Err(err) = audit.record(event, generation, pid, details)
        {
            say(&format!(
                "cannot write the audit log {}: {err}",
                audit.path().display()
            ));
        }
    }

    /// Whether client requests go straight to the child now.
    pub(crate) fn can_forward(&self) -> bool {
        self.slot
            .as_ref()
            .is_some_and(|slot| matches!(slot.phase, Phase::Open | Phase::Ready))
    }
}

/// The next event of the current child; never resolves when there is none.
async fn next_event(events: &mut Option<(u64, Events)>) -> (u64, Option<ProcessEvent>) {
    match events {
        Some((generation, events)) => (*generation, events.recv().await),
        None => std::future::pending().await,
    }
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline.into()).await,
        None => std::future::pending().await,
    }
}
