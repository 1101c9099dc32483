//! The vocabulary between the front and a back end: what a back end reports
//! ([`BackendEvent`]) and why the front stops a server ([`StopWhy`]).

use std::time::Duration;

use crate::process::{ExitStatus, StopReport};

/// How a server was stopped, as the front reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Stopped {
    /// The steps taken, in order (`close stdin`, `shutdown request`, `SIGTERM`, …).
    pub(crate) actions: Vec<String>,
    /// The step that ended it (the last one taken).
    pub(crate) how: String,
    /// From the stop request to the end.
    pub(crate) took: Duration,
    /// Whether it is gone (and, for a daemon, its port free).
    pub(crate) gone: bool,
}

impl From<&StopReport> for Stopped {
    fn from(report: &StopReport) -> Self {
        let actions: Vec<String> = report.actions.iter().map(ToString::to_string).collect();
        Stopped {
            how: actions
                .last()
                .cloned()
                .unwrap_or_else(|| "its own exit".to_owned()),
            actions,
            took: report.took,
            gone: true,
        }
    }
}

/// Why the front stops a server generation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StopWhy {
    /// A planned restart.
    Restart,
    /// It did not become ready in time.
    ReadinessTimeout,
    /// The front is exiting.
    Shutdown,
}

impl StopWhy {
    /// In words, for the audit log.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            StopWhy::Restart => "restart",
            StopWhy::ReadinessTimeout => "readiness timeout",
            StopWhy::Shutdown => "shutdown",
        }
    }

    /// What happened to the server, as a request in flight is told (`the MCP server …
    /// while this request was in flight`).
    pub(crate) fn as_lost(self) -> &'static str {
        match self {
            StopWhy::Restart => "was restarted",
            StopWhy::ReadinessTimeout => "did not become ready",
            StopWhy::Shutdown => "was shut down",
        }
    }
}

/// The server a generation reached, as the back end knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ServerInfo {
    /// Its pid, when the back end knows it.
    pub(crate) pid: Option<u32>,
    /// Its number as the server itself sees it (`DEBUSSY_MCP_GENERATION`).
    pub(crate) number: u64,
    /// How long it took from the start to taking messages (zero when it was there).
    pub(crate) startup: Duration,
    /// Whether this generation started it (rather than finding it running).
    pub(crate) started: bool,
}

/// What became of a request the back end could not deliver or whose answer it lost.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Fate {
    /// It never reached the server: it can be sent again.
    NotSent(String),
    /// It reached the server, which went away before answering: it may have run.
    Lost(String),
    /// The server refused it without a JSON-RPC answer (an HTTP error).
    Refused(String),
}

/// How a server generation ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum EndCause {
    /// Its process ended (asked to or not), with this status.
    Exited(ExitStatus),
    /// It was replaced by someone else (another bridge restarted the shared daemon, or
    /// the daemon forgot the session): start the next generation at once, no crash.
    Replaced(String),
    /// It could not be reached any more, or did not come up: counts as a crash.
    Unreachable(String),
    /// It keeps running; only this link to it ended (a bridge that leaves a shared daemon
    /// running when it ends).
    Left(String),
    /// It cannot be used, and trying again soon will not help (the program cannot be
    /// started, or what answers on the port is not an MCP server): requests waiting for
    /// it are answered with the reason at once.
    Refused(String),
}

/// What a back end tells the front.
#[derive(Debug)]
pub(crate) enum BackendEvent {
    /// The server of `generation` takes messages now.
    Up {
        /// The generation.
        generation: u64,
        /// The server reached.
        server: ServerInfo,
    },
    /// One message from the server (one JSON-RPC line, without its newline).
    Line {
        /// The generation it came from.
        generation: u64,
        /// Its bytes, exactly as the server sent them.
        line: Vec<u8>,
    },
    /// A message from the server over the size limit was dropped.
    TooLong {
        /// The generation it came from.
        generation: u64,
        /// Its length.
        len: usize,
        /// Its first bytes.
        head: Vec<u8>,
        /// Its last bytes.
        tail: Vec<u8>,
    },
    /// A line the server wrote on stderr.
    Stderr {
        /// The generation it came from.
        generation: u64,
        /// The line, without its newline.
        line: Vec<u8>,
    },
    /// A request (by the front's id) was not delivered, or its answer was lost.
    Undelivered {
        /// The generation it was sent to.
        generation: u64,
        /// The id the front gave it.
        id: u64,
        /// What became of it.
        fate: Fate,
    },
    /// The server left processes or pipes behind.
    Leaked {
        /// The generation.
        generation: u64,
        /// What was left, in words.
        what: String,
    },
    /// The server of `generation` is gone (its last event).
    Down {
        /// The generation.
        generation: u64,
        /// How it ended.
        cause: EndCause,
        /// How it was stopped, when the front stopped it.
        stop: Option<Stopped>,
        /// Its pid, when known.
        pid: Option<u32>,
    },
}
