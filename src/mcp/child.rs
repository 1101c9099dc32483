//! One MCP server process as the proxy sees it: a generation number, a pid, and a queue
//! of lines for its stdin. Its events ([`Events`]) go to the dispatcher, which reads them
//! directly in its loop.
//!
//! The process itself (its group, pipes, stop ladder, reaping) belongs to
//! [`crate::process`]; this module only adapts it. The child's stderr is read as events:
//! the dispatcher passes each line through to the supervisor's stderr (and so to the
//! client's log) and keeps the last ones to explain a crash.

use tokio::sync::mpsc;

use crate::process::{Child, ChildControl, Events, ProcessCommand, ProcessError, StopLadder};

use super::options::Limits;

/// A running child, owned by the dispatcher. Dropping it kills the child's whole group.
#[derive(Debug)]
pub(crate) struct ChildUnit {
    generation: u64,
    pid: u32,
    stdin: mpsc::UnboundedSender<Vec<u8>>,
    control: ChildControl,
    _owner: Child,
}

/// Start generation `generation` of the server `command`; returns the child and its
/// events. The child gets `DEBUSSY_MCP_GENERATION` in its environment.
pub(crate) fn spawn(
    command: &[String],
    generation: u64,
    limits: &Limits,
) -> Result<(ChildUnit, Option<Events>), ProcessError> {
    let (program, args) = command.split_first().ok_or_else(|| ProcessError::Spawn {
        program: String::new(),
        source: std::io::Error::new(std::io::ErrorKind::InvalidInput, "no server command"),
    })?;
    let mut child = ProcessCommand::new(program)
        .args(args)
        .env("DEBUSSY_MCP_GENERATION", generation.to_string())
        .stdin_piped()
        .max_line_bytes(limits.max_line_length)
        .stop_ladder(StopLadder::mcp(
            limits.stop_close_grace,
            limits.stop_term_grace,
        ))
        .spawn()?;
    let pid = child.pid();
    let control = child.control();
    let (stdin_tx, stdin_rx) = mpsc::unbounded_channel::<Vec<u8>>();
    if let Some(stdin) = child.stdin() {
        tokio::spawn(async move {
            let mut stdin_rx = stdin_rx;
            while let Some(line) = stdin_rx.recv().await {
                if stdin.write_line(&line).await.is_err() {
                    // Closed by the stop ladder or the child's exit; the exit event
                    // tells the dispatcher what happened.
                    break;
                }
            }
        });
    }
    let events = child.take_events();
    Ok((
        ChildUnit {
            generation,
            pid,
            stdin: stdin_tx,
            control,
            _owner: child,
        },
        events,
    ))
}

impl ChildUnit {
    /// The child's generation.
    pub(crate) fn generation(&self) -> u64 {
        self.generation
    }

    /// The child's pid.
    pub(crate) fn pid(&self) -> u32 {
        self.pid
    }

    /// Queue one line (without newline) for the child's stdin. Never waits: a child that
    /// stops reading cannot stall the dispatcher.
    pub(crate) fn send(&self, line: Vec<u8>) {
        let _ = self.stdin.send(line);
    }

    /// Start the stop ladder (close stdin, SIGTERM, SIGKILL) without waiting; the exit
    /// arrives as the child's last event. Idempotent.
    pub(crate) fn stop(&self) {
        self.control.request_stop();
    }

    /// SIGKILL the child's group now, cutting any ladder short.
    pub(crate) fn kill(&self) {
        self.control.request_kill();
    }
}
