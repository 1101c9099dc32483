//! The front's state and its event loop: one task that owns everything the client can
//! observe and routes each message between the client and the current server
//! generation (see the theory of operation in [`crate::mcp`]).
//!
//! This file holds the state and the loop; routing is in `client` and `server`,
//! starting, stopping and restarting servers in `lifecycle` and `exits`.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::audit::{AuditEvent, AuditLog};
use super::coordinator::Restarts;
use super::handshake::Handshake;
use super::learned::Learned;
use super::routing::Routing;
use super::settings::Settings;
use super::stateless::Stateless;
use super::stderr_tail::StderrTail;
use super::tools::ToolView;
use crate::mcp::backend::{Backend, BackendEvent, ServerInfo, StopWhy};
use crate::mcp::jsonrpc::framing::{Frame, LineReader};
use crate::mcp::jsonrpc::line_writer::LineWriter;
use crate::mcp::jsonrpc::message;
use crate::mcp::say;

/// Something the front reacts to, other than client input and back-end events.
#[derive(Debug)]
pub(crate) enum Control {
    /// SIGINT or SIGTERM: stop the server gracefully and exit 0. A second one kills.
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
}

/// Where a server generation is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Started; the back end has not reported it up yet.
    Starting,
    /// No handshake to replay yet (the client has not initialized): messages pass
    /// straight through.
    Open,
    /// Waiting for the answer to the handshake (`replayed`: sent by the front; otherwise
    /// the client's own first `initialize`).
    Initializing {
        /// When the server counts as never ready.
        deadline: Instant,
        /// The readiness timeout that set `deadline` (for logs and the audit).
        timeout: Duration,
        /// Whether the front replayed it (the answer is not forwarded).
        replayed: bool,
    },
    /// Ready: requests are forwarded.
    Ready,
    /// A planned restart waits for requests in flight to finish.
    Draining {
        /// When the remaining ones are failed and the server is stopped anyway.
        deadline: Instant,
    },
    /// Being stopped; its late replies are dropped.
    Stopping(StopWhy),
}

/// The server generation the front routes to.
#[derive(Debug)]
pub(crate) struct Slot {
    pub(crate) generation: u64,
    /// The server, once the back end reported it up.
    pub(crate) server: Option<ServerInfo>,
    pub(crate) phase: Phase,
    pub(crate) spawned: Instant,
    pub(crate) ready_after: Option<Duration>,
    /// Started because watched files changed: if it fails before it is ready, the
    /// change broke it, and the front waits for the next change.
    pub(crate) for_change: bool,
}

impl Slot {
    /// The server's pid, when known.
    pub(crate) fn pid(&self) -> Option<u32> {
        self.server.as_ref().and_then(|s| s.pid)
    }

    /// The server's own number for itself (its `DEBUSSY_MCP_GENERATION`).
    pub(crate) fn number(&self) -> u64 {
        self.server.as_ref().map_or(self.generation, |s| s.number)
    }
}

/// What the front is doing when it has no server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Idle {
    /// A server exists (or is about to).
    No,
    /// Waiting to start the next server after an exit.
    Backoff(Instant),
    /// Given up after too many failures: requests get errors until `restart_server`.
    Degraded(String),
}

/// How the supervisor ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SuperviseOutcome {
    /// The server exited 0 on its own: a clean shutdown.
    ServerExited,
    /// The client closed its end (EOF on stdin), or went away.
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

/// The front's state. Owned by one task; nothing here is shared.
pub(crate) struct Front<B> {
    pub(crate) opts: Settings,
    pub(crate) backend: B,
    /// The legacy era's handshake and session state, replayed to each new server.
    pub(crate) handshake: Handshake,
    /// The 2026-07-28 revision's state: the client's envelope and its listen streams.
    pub(crate) stateless: Stateless,
    /// The server's answers kept to serve while it restarts.
    pub(crate) learned: Learned,
    pub(crate) audit: Option<AuditLog>,
    /// The client's side of the proxy: written by the front itself, never waiting.
    pub(crate) to_client: LineWriter,
    pub(crate) control_tx: mpsc::UnboundedSender<Control>,
    /// Where each message in flight belongs, and the id allocators.
    pub(crate) routing: Routing,
    pub(crate) slot: Option<Slot>,
    pub(crate) idle: Idle,
    /// Restarts: under way, pending, policy, counters.
    pub(crate) restarts: Restarts,
    /// The tool list as the client sees it.
    pub(crate) tools: ToolView,
    /// The end of the latest server's stderr (kept after it exits, to explain why).
    pub(crate) stderr_tail: StderrTail,
    pub(crate) started: Instant,
    pub(crate) shutdown: Option<SuperviseOutcome>,
    pub(crate) done: Option<SuperviseOutcome>,
}

impl<B: Backend> Front<B> {
    /// Run until the front should exit.
    pub(crate) async fn run<R: tokio::io::AsyncRead + Unpin>(
        mut self,
        mut client: LineReader<R>,
        mut control_rx: mpsc::UnboundedReceiver<Control>,
    ) -> SuperviseOutcome {
        let mut client_open = true;
        // One timer for the whole run, moved only to an earlier deadline: every message
        // changes the next deadline (a request's answer-by), and a timer made anew or
        // reset for each would cost a registration and a wake-up of the driver per
        // message. Firing early is harmless: `on_timer` acts only on what is due.
        let timer = tokio::time::sleep(std::time::Duration::ZERO);
        tokio::pin!(timer);
        let mut armed: Option<Instant> = None;
        loop {
            if let Some(outcome) = self.done.take() {
                self.record(
                    AuditEvent::SupervisorExiting,
                    json!({"reason": outcome.describe(), "exit_code": 0}),
                );
                self.sync_audit();
                say(&format!("exiting: {}", outcome.describe()));
                // Everything queued for the client goes out before the front returns.
                if let Err(why) = self.to_client.drain(Duration::from_secs(5)).await {
                    say(&format!(
                        "the last messages did not reach the client: {why}"
                    ));
                }
                return outcome;
            }
            if let Some(deadline) = self.next_deadline()
                && armed.is_none_or(|at| deadline < at)
            {
                timer.as_mut().reset(deadline.into());
                armed = Some(deadline);
            }
            tokio::select! {
                biased;
                Some(control) = control_rx.recv() => self.on_control(control),
                written = self.to_client.flush(), if self.to_client.needs_flush() => {
                    if let Err(why) = written {
                        say(&format!("the client is gone ({why}): shutting down"));
                        self.begin_shutdown(SuperviseOutcome::ClientClosed);
                    }
                }
                event = self.backend.next_event() => self.on_backend(event),
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
                () = &mut timer, if armed.is_some() => {
                    armed = None;
                    self.on_timer(Instant::now());
                }
            }
        }
    }

    fn on_backend(&mut self, event: BackendEvent) {
        match event {
            BackendEvent::Up { generation, server } => self.on_up(generation, server),
            BackendEvent::Line { generation, line } => self.on_server_line(generation, line),
            BackendEvent::TooLong {
                generation,
                len,
                head,
                tail,
            } => self.on_server_oversized(generation, len, &head, &tail),
            BackendEvent::Stderr { generation, line } => self.on_stderr(generation, line),
            BackendEvent::Undelivered {
                generation,
                id,
                fate,
            } => self.on_undelivered(generation, id, &fate),
            BackendEvent::Leaked { generation, what } => say(&format!(
                "the server (generation {generation}) left processes behind: {what}"
            )),
            BackendEvent::Down {
                generation,
                cause,
                stop,
                pid,
            } => self.on_down(generation, &cause, stop.as_ref(), pid),
        }
    }

    fn on_stderr(&mut self, generation: u64, mut line: Vec<u8>) {
        if generation == self.restarts.generation {
            self.stderr_tail.push(&line);
        }
        line.push(b'\n');
        let _ = std::io::Write::write_all(&mut std::io::stderr().lock(), &line);
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
        let buffered = self.routing.buffer.next_deadline();
        let relist = self.learned.relist.as_ref().map(|relist| relist.deadline);
        let answer = self.routing.inflight.next_answer_by();
        [phase, backoff, buffered, relist, answer]
            .into_iter()
            .flatten()
            .min()
    }

    fn on_control(&mut self, control: Control) {
        match control {
            Control::Shutdown(signal) => {
                if self.shutdown.is_some() {
                    say(&format!("{signal} again: killing the server now"));
                    if let Some(slot) = &self.slot {
                        let generation = slot.generation;
                        self.backend.kill(generation);
                    }
                } else {
                    say(&format!("{signal} received: stopping the server"));
                    self.begin_shutdown(SuperviseOutcome::Signalled(signal));
                }
            }
            Control::Restart(signal) => {
                self.request_restart(
                    &format!("{signal} received"),
                    super::coordinator::Source::Signal(signal),
                    None,
                );
            }
            Control::FilesChanged(paths) => self.on_files_changed(paths.into()),
            Control::BuildDone { ok, detail } => self.on_build_done(ok, &detail),
        }
    }

    // ----- sending -----

    /// Send a line to the current server, if there is one.
    pub(crate) fn send_to_current(&mut self, line: Vec<u8>) {
        if let Some(slot) = &self.slot {
            let generation = slot.generation;
            self.backend.send(generation, line);
        }
    }

    /// Send a line to the client.
    pub(crate) fn send_client(&mut self, line: Vec<u8>) {
        self.to_client.send(line);
    }

    pub(crate) fn reply_error(&mut self, raw_id: Option<&[u8]>, code: i64, text: &str) {
        self.send_client(message::error_response(raw_id, code, text));
    }

    pub(crate) fn reply_result(&mut self, raw_id: &[u8], result: &Value) {
        self.send_client(message::result_response(raw_id, result));
    }

    pub(crate) fn record(&mut self, event: AuditEvent, details: Value) {
        let (generation, pid) = match &self.slot {
            Some(slot) => (Some(slot.number()), slot.pid()),
            None => (Some(self.restarts.generation).filter(|g| *g > 0), None),
        };
        self.record_for(event, generation, pid, details);
    }

    /// Make every audit line written so far durable (a barrier before stopping a server).
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

    /// Whether client requests go straight to the server now.
    pub(crate) fn can_forward(&self) -> bool {
        self.slot
            .as_ref()
            .is_some_and(|slot| matches!(slot.phase, Phase::Open | Phase::Ready))
    }

    /// Whether the current server is being started or restarted (not ready, not gone
    /// for good): what the front answers from memory meanwhile.
    pub(crate) fn restarting(&self) -> bool {
        !self.can_forward() && !matches!(self.idle, Idle::Degraded(_))
    }
}
