//! What a running child reports to its owner: output lines, over-long lines, a leak, the exit.

use std::fmt;
use std::time::Duration;

use super::exit::ExitStatus;
use super::stop::StopAction;

/// Which output pipe a line came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Stream {
    /// The child's standard output.
    Stdout,
    /// The child's standard error.
    Stderr,
}

impl fmt::Display for Stream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Stream::Stdout => "stdout",
            Stream::Stderr => "stderr",
        })
    }
}

/// One thing a child did, in the order it happened on each pipe.
///
/// Lines of one stream arrive in order; lines of stdout and stderr interleave as they
/// were read. [`ProcessEvent::Exited`] is always the last event, sent after both pipes
/// were read to their end (or given up on as leaked), so a consumer that loops until
/// `Exited` has seen all the output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProcessEvent {
    /// One line of output, without its `\n` (and without a `\r` before it). The final
    /// line of a stream is delivered even when it has no newline. Bytes are passed as
    /// read: a line is not necessarily valid UTF-8.
    Line {
        /// The pipe it came from.
        stream: Stream,
        /// The line's bytes.
        line: Vec<u8>,
    },
    /// A line grew past the configured maximum; its bytes were discarded up to and
    /// including its newline. Reported once per over-long line, when it ends (at its
    /// newline or the end of the stream), with its first and last bytes so that the
    /// owner can tell what it was (the MCP proxy reads a JSON-RPC id from them).
    LineTooLong {
        /// The pipe it came from.
        stream: Stream,
        /// The limit it exceeded, in bytes.
        limit: usize,
        /// How long the line was, in bytes (without its terminator).
        len: usize,
        /// Its first bytes, at most [`LINE_EXCERPT_BYTES`](super::LINE_EXCERPT_BYTES).
        head: Vec<u8>,
        /// Its last bytes, at most [`LINE_EXCERPT_BYTES`](super::LINE_EXCERPT_BYTES).
        tail: Vec<u8>,
    },
    /// After the child exited, something it started was still alive or still held its
    /// output pipes open. Every process below the child still alive was killed, whether
    /// it was in the child's process group or had left it.
    Leaked(Leak),
    /// The child exited and was reaped. Always the last event.
    Exited(ExitReport),
}

/// What outlived a child after it exited (cf. nextest's leak detection).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Leak {
    /// Processes of the child's group still alive once the leak grace had passed; they
    /// were sent SIGKILL.
    pub group_pids: Vec<u32>,
    /// Processes the child started that had left its group (`setsid`, a daemon) and were
    /// still alive once the leak grace had passed; they were sent SIGKILL too.
    pub escaped_pids: Vec<u32>,
    /// Pipes still open once the leak grace had passed and everything below the child
    /// was killed: held by a process outside its tree (given the descriptor over a
    /// socket). Reading them was abandoned.
    pub open_pipes: Vec<Stream>,
}

impl fmt::Display for Leak {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let pids = |pids: &[u32]| {
            pids.iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut parts = Vec::new();
        if !self.group_pids.is_empty() {
            parts.push(format!(
                "process(es) {} still running in its group (killed)",
                pids(&self.group_pids)
            ));
        }
        if !self.escaped_pids.is_empty() {
            parts.push(format!(
                "process(es) {} still running outside its group (killed)",
                pids(&self.escaped_pids)
            ));
        }
        if !self.open_pipes.is_empty() {
            let pipes: Vec<String> = self.open_pipes.iter().map(Stream::to_string).collect();
            parts.push(format!(
                "{} held open by a process outside its tree",
                pipes.join(" and ")
            ));
        }
        f.write_str(&parts.join("; "))
    }
}

/// The final record of a child: how it ended and, if it was stopped, how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExitReport {
    /// How the child ended.
    pub status: ExitStatus,
    /// Present when a stop was requested before the child exited.
    pub stop: Option<StopReport>,
}

impl ExitReport {
    /// True when the child exited with code 0.
    #[must_use]
    pub fn is_success(&self) -> bool {
        self.status.is_success()
    }
}

/// How a requested stop went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StopReport {
    /// The actions taken, in order (`SIGCONT` sent before each signal is not listed).
    pub actions: Vec<StopAction>,
    /// Time from the stop request to the child being reaped.
    pub took: Duration,
    /// True when the ladder was cut short by [`crate::process::Child::kill`] or by the
    /// handle being dropped.
    pub escalated: bool,
}
