//! The stdio back end (`debussy mcp supervise`): each generation is a child process,
//! spoken to in newline-delimited JSON-RPC on its stdin and stdout, its stderr passed
//! through line by line.
//!
//! The process itself (its group, pipes, stop ladder, reaping) belongs to
//! [`crate::process`]; this module only adapts it to the [`Backend`] vocabulary. One
//! child at a time: the front starts the next generation only after the previous one's
//! [`BackendEvent::Down`].

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::{Backend, BackendEvent, EndCause, ServerInfo, StopWhy};
use crate::mcp::front::tools::StartRecord;
use crate::mcp::options::Limits;
use crate::process::{
    Child, ChildControl, Events, ProcessCommand, ProcessError, ProcessEvent, Signal, StdinWriter,
    StopLadder, Stream,
};

/// The stdio back end: the server command and the child of the current generation.
#[derive(Debug)]
pub(crate) struct StdioBackend {
    command: Vec<String>,
    limits: Limits,
    child: Option<ChildUnit>,
    events: Option<(u64, Events)>,
}

/// A running child. Dropping it kills the child's whole group.
#[derive(Debug)]
struct ChildUnit {
    generation: u64,
    pid: u32,
    stdin: ChildStdin,
    control: ChildControl,
    _owner: Child,
}

/// A child's stdin, written through: a line goes straight to the pipe when nothing
/// waits before it (the hot path costs no task hand-off), and to a writer task, in
/// order, when the pipe is full.
#[derive(Debug)]
struct ChildStdin {
    pipe: Option<StdinWriter>,
    queue: mpsc::UnboundedSender<Vec<u8>>,
    /// Lines handed to the writer task and not yet written.
    queued: Arc<AtomicUsize>,
}

impl ChildStdin {
    fn new(pipe: Option<StdinWriter>) -> Self {
        let (queue, mut lines) = mpsc::unbounded_channel::<Vec<u8>>();
        let queued = Arc::new(AtomicUsize::new(0));
        if let Some(pipe) = pipe.clone() {
            let queued = Arc::clone(&queued);
            tokio::spawn(async move {
                while let Some(bytes) = lines.recv().await {
                    let written = pipe.write_all(&bytes).await;
                    queued.fetch_sub(1, Ordering::AcqRel);
                    if written.is_err() {
                        // Closed by the stop ladder or the child's exit; the exit event
                        // tells the front what happened.
                        break;
                    }
                }
            });
        }
        ChildStdin {
            pipe,
            queue,
            queued,
        }
    }

    /// Send one line (without its newline). Never waits: a child that stops reading
    /// cannot stall the front.
    fn send(&self, mut line: Vec<u8>) {
        let Some(pipe) = &self.pipe else { return };
        line.push(b'\n');
        if self.queued.load(Ordering::Acquire) == 0 {
            match pipe.try_write(&line) {
                Ok(written) if written == line.len() => return,
                Ok(written) => {
                    line.drain(..written);
                }
                // Closed: the exit event tells the front what happened.
                Err(_) => return,
            }
        }
        self.queued.fetch_add(1, Ordering::AcqRel);
        let _ = self.queue.send(line);
    }
}

impl StdioBackend {
    /// A back end starting `command` for each generation, within `limits`.
    pub(crate) fn new(command: Vec<String>, limits: Limits) -> Self {
        StdioBackend {
            command,
            limits,
            child: None,
            events: None,
        }
    }

    fn current(&self, generation: u64) -> Option<&ChildUnit> {
        self.child.as_ref().filter(|c| c.generation == generation)
    }
}

impl Backend for StdioBackend {
    const CLEAN_EXIT_ENDS: bool = true;

    fn start(
        &mut self,
        generation: u64,
        _reason: &str,
    ) -> Result<Option<ServerInfo>, ProcessError> {
        let (program, args) = self
            .command
            .split_first()
            .ok_or_else(|| ProcessError::Spawn {
                program: String::new(),
                source: std::io::Error::new(std::io::ErrorKind::InvalidInput, "no server command"),
            })?;
        let mut child = ProcessCommand::new(program)
            .args(args)
            .env("DEBUSSY_MCP_GENERATION", generation.to_string())
            .stdin_piped()
            .read_stdout_inline()
            .max_line_bytes(self.limits.max_line_length)
            .stop_ladder(StopLadder::mcp(
                self.limits.stop_close_grace,
                self.limits.stop_term_grace,
            ))
            .spawn()?;
        let pid = child.pid();
        let control = child.control();
        let stdin = ChildStdin::new(child.stdin());
        self.events = child.take_events().map(|events| (generation, events));
        self.child = Some(ChildUnit {
            generation,
            pid,
            stdin,
            control,
            _owner: child,
        });
        Ok(Some(ServerInfo {
            pid: Some(pid),
            number: generation,
            startup: Duration::ZERO,
            started: true,
        }))
    }

    fn send(&mut self, generation: u64, line: Vec<u8>) {
        if let Some(child) = self.current(generation) {
            child.stdin.send(line);
        }
    }

    fn resume(&mut self, generation: u64) {
        if let Some(child) = self.current(generation) {
            child.control.signal(Signal::SIGCONT);
        }
    }

    fn stop(&mut self, generation: u64, _why: StopWhy) {
        if let Some(child) = self.current(generation) {
            child.control.request_stop();
        }
    }

    fn stop_plan(&self, _why: StopWhy) -> String {
        format!(
            "close stdin, SIGTERM after {} ms, SIGKILL after {} ms more",
            self.limits.stop_close_grace.as_millis(),
            self.limits.stop_term_grace.as_millis()
        )
    }

    fn kill(&mut self, generation: u64) {
        if let Some(child) = self.current(generation) {
            child.control.request_kill();
        }
    }

    fn cancel(&mut self, _generation: u64, _id: u64) -> bool {
        false
    }

    async fn next_event(&mut self) -> BackendEvent {
        loop {
            let Some((generation, events)) = &mut self.events else {
                return std::future::pending().await;
            };
            let generation = *generation;
            let Some(event) = events.recv().await else {
                self.events = None;
                continue;
            };
            return match event {
                ProcessEvent::Line {
                    stream: Stream::Stdout,
                    line,
                } => BackendEvent::Line { generation, line },
                ProcessEvent::Line {
                    stream: Stream::Stderr,
                    line,
                } => BackendEvent::Stderr { generation, line },
                ProcessEvent::LineTooLong {
                    stream: Stream::Stdout,
                    len,
                    head,
                    tail,
                    ..
                } => BackendEvent::TooLong {
                    generation,
                    len,
                    head,
                    tail,
                },
                ProcessEvent::LineTooLong {
                    stream: Stream::Stderr,
                    limit,
                    len,
                    head,
                    ..
                } => {
                    let mut line = head;
                    line.extend_from_slice(
                        format!("… ({len} bytes, over the {limit}-byte limit)").as_bytes(),
                    );
                    BackendEvent::Stderr { generation, line }
                }
                ProcessEvent::Leaked(leak) => BackendEvent::Leaked {
                    generation,
                    what: leak.to_string(),
                },
                ProcessEvent::Exited(report) => {
                    self.events = None;
                    let pid = self
                        .child
                        .take_if(|c| c.generation == generation)
                        .map(|c| c.pid);
                    BackendEvent::Down {
                        generation,
                        cause: EndCause::Exited(report.status),
                        stop: report.stop.as_ref().map(super::Stopped::from),
                        pid,
                    }
                }
            };
        }
    }

    fn status(&self) -> Value {
        json!({"command": self.command})
    }

    fn starts(&self) -> Option<Vec<StartRecord>> {
        None
    }
}
