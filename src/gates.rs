//! Gates: the shell commands a phase must pass (`cargo test`, `ruff check .`), run after
//! each attempt in the project root.
//!
//! Each gate runs as `sh -c COMMAND` in its own process group through [`crate::process`],
//! with a timeout; on timeout the whole group is stopped (SIGTERM, then SIGKILL), so a
//! test runner's children die with it. Output (stdout and stderr, interleaved as read)
//! is kept up to a bounded tail for the state store and the remediation prompt. Which
//! gates a phase has, and what a failure means, is decided elsewhere.

use std::collections::VecDeque;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::process::{
    ExitStatus, Finish, Leak, OutputSink, ProcessCommand, Role, Signal, StopAction, StopLadder,
    StopStep, Stream,
};

/// The most output kept per gate (the end is kept: that is where failures are reported).
pub const OUTPUT_TAIL_BYTES: usize = 64 * 1024;

/// How long a timed-out gate gets after SIGTERM before SIGKILL.
const TERM_GRACE: Duration = Duration::from_secs(2);

/// A gate to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GateSpec {
    /// Its name (`tests`).
    pub name: String,
    /// The shell command.
    pub command: String,
}

/// How a gate went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GateRun {
    /// Its name.
    pub name: String,
    /// The shell command.
    pub command: String,
    /// Exit code 0 within the timeout.
    pub passed: bool,
    /// How it ended (`None` if it could not be started).
    pub exit: Option<ExitStatus>,
    /// Whether it was stopped for running past the timeout.
    pub timed_out: bool,
    /// The tail of its output, or why it could not start.
    pub output: String,
    /// How long it ran (past the timeout, this includes the stop).
    pub duration: Duration,
    /// The time limit it ran under (`gate_timeout`).
    pub limit: Duration,
}

impl GateRun {
    /// The exit code, when it exited normally.
    #[must_use]
    pub fn exit_code(&self) -> Option<i32> {
        self.exit.and_then(ExitStatus::code)
    }

    /// How it went: passed, failed with an exit status, timed out, not started.
    #[must_use]
    pub fn verdict(&self) -> GateVerdict {
        if self.passed {
            GateVerdict::Passed
        } else if self.timed_out {
            // The limit as configured: a gate that ignores SIGTERM runs on until the
            // SIGKILL, which is not what it was given.
            GateVerdict::TimedOut {
                secs: self.limit.as_secs(),
            }
        } else {
            match self.exit {
                Some(status) => GateVerdict::Failed(status),
                None => GateVerdict::NotStarted,
            }
        }
    }
}

/// How a gate went, as the run's events and outputs say it. Displays (and serializes)
/// as one line: `passed`, `failed (exit code 1)`, `timed out after 600s`, `could not start`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GateVerdict {
    /// Exit code 0 within the timeout.
    Passed,
    /// It ended unsuccessfully.
    Failed(ExitStatus),
    /// It was stopped for running past the timeout.
    TimedOut {
        /// How long it had run, in whole seconds.
        secs: u64,
    },
    /// It could not be started.
    NotStarted,
}

impl std::fmt::Display for GateVerdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GateVerdict::Passed => f.write_str("passed"),
            GateVerdict::Failed(status) => write!(f, "failed ({status})"),
            GateVerdict::TimedOut { secs } => write!(f, "timed out after {secs}s"),
            GateVerdict::NotStarted => f.write_str("could not start"),
        }
    }
}

impl serde::Serialize for GateVerdict {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// Run one gate in `root`, stopping it after `timeout`.
pub async fn run_gate(spec: &GateSpec, root: &Path, timeout: Duration) -> GateRun {
    let started = Instant::now();
    let command = ProcessCommand::new("sh")
        .arg("-c")
        .arg(&spec.command)
        .current_dir(root)
        .stdin_payload(Vec::new())
        .role(Role::Gate(spec.name.clone()))
        .stop_ladder(StopLadder::new([StopStep::new(
            StopAction::Signal(Signal::SIGTERM),
            TERM_GRACE,
        )]));
    let mut tail = Tail::new(OUTPUT_TAIL_BYTES, &spec.name);
    let (exit, timed_out) = match command.run_to_end(timeout, &mut tail).await {
        Ok(Finish::Exited(status)) => (Some(status), false),
        Ok(Finish::TimedOut(_)) => (None, true),
        Err(err) => {
            return GateRun {
                name: spec.name.clone(),
                command: spec.command.clone(),
                passed: false,
                exit: None,
                timed_out: false,
                output: format!("failed to {err}"),
                duration: started.elapsed(),
                limit: timeout,
            };
        }
    };
    GateRun {
        name: spec.name.clone(),
        command: spec.command.clone(),
        passed: !timed_out && exit.is_some_and(ExitStatus::is_success),
        exit,
        timed_out,
        output: tail.into_string(),
        duration: started.elapsed(),
        limit: timeout,
    }
}

/// Run `gates` in order, each with `timeout`, calling `on_done` after each. Every gate
/// runs even after one fails, so a fix can address all of them at once.
pub async fn run_gates(
    gates: &[GateSpec],
    root: &Path,
    timeout: Duration,
    mut on_done: impl FnMut(&GateRun),
) -> Vec<GateRun> {
    let mut runs = Vec::with_capacity(gates.len());
    for gate in gates {
        let run = run_gate(gate, root, timeout).await;
        on_done(&run);
        runs.push(run);
    }
    runs
}

/// The last `limit` bytes of output, cut at a line boundary where possible.
struct Tail<'a> {
    gate: &'a str,
    limit: usize,
    lines: VecDeque<Vec<u8>>,
    bytes: usize,
    dropped: bool,
}

impl<'a> Tail<'a> {
    fn new(limit: usize, gate: &'a str) -> Tail<'a> {
        Tail {
            gate,
            limit,
            lines: VecDeque::new(),
            bytes: 0,
            dropped: false,
        }
    }

    fn push_line(&mut self, line: &[u8]) {
        let line = &line[line.len().saturating_sub(self.limit)..];
        self.bytes += line.len() + 1;
        self.lines.push_back(line.to_vec());
        while self.bytes > self.limit {
            let Some(old) = self.lines.pop_front() else {
                break;
            };
            self.bytes -= old.len() + 1;
            self.dropped = true;
        }
    }

    fn into_string(self) -> String {
        let mut out = String::with_capacity(self.bytes + 32);
        if self.dropped {
            out.push_str("[earlier output dropped]\n");
        }
        for line in &self.lines {
            out.push_str(&String::from_utf8_lossy(line));
            out.push('\n');
        }
        out
    }
}

impl OutputSink for Tail<'_> {
    fn line(&mut self, _stream: Stream, line: &[u8]) {
        self.push_line(line);
    }

    fn line_too_long(&mut self, _stream: Stream, limit: usize) {
        self.push_line(format!("[a line longer than {limit} bytes was dropped]").as_bytes());
    }

    fn leaked(&mut self, _command: &ProcessCommand, leak: &Leak) {
        tracing::warn!(gate = %self.gate, ?leak, "gate left processes behind; they were killed");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(command: &str) -> GateSpec {
        GateSpec {
            name: "g".into(),
            command: command.into(),
        }
    }

    const LONG: Duration = Duration::from_secs(30);

    #[tokio::test]
    async fn a_passing_gate_keeps_its_output() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("marker"), "").expect("write");
        let run = run_gate(
            &spec("test -f marker && echo ok && echo err >&2"),
            dir.path(),
            LONG,
        )
        .await;
        assert!(run.passed, "{run:?}");
        assert_eq!(run.exit_code(), Some(0));
        assert!(
            run.output.contains("ok\n") && run.output.contains("err\n"),
            "{}",
            run.output
        );
        assert_eq!(run.verdict().to_string(), "passed");
    }

    #[tokio::test]
    async fn a_failing_gate_reports_its_exit_code() {
        let dir = tempfile::tempdir().expect("tempdir");
        let run = run_gate(&spec("echo broken; exit 3"), dir.path(), LONG).await;
        assert!(!run.passed);
        assert_eq!(run.exit_code(), Some(3));
        assert!(run.verdict().to_string().contains('3'), "{}", run.verdict());
    }

    #[tokio::test]
    async fn a_timed_out_gate_is_reported_with_the_limit_it_was_given() {
        let dir = tempfile::tempdir().expect("tempdir");
        // It ignores SIGTERM, so only the SIGKILL after the grace ends it.
        let run = run_gate(
            &spec("trap '' TERM; sleep 30"),
            dir.path(),
            Duration::from_secs(1),
        )
        .await;
        assert!(run.timed_out, "{run:?}");
        assert!(run.duration >= Duration::from_secs(2), "{run:?}");
        assert_eq!(run.verdict().to_string(), "timed out after 1s");
    }

    #[tokio::test]
    async fn a_gate_past_its_timeout_is_stopped_with_its_children() {
        let dir = tempfile::tempdir().expect("tempdir");
        let pidfile = dir.path().join("child.pid");
        let command = format!("sleep 300 & echo $! > {}; wait", pidfile.display());
        let run = run_gate(&spec(&command), dir.path(), Duration::from_millis(300)).await;
        assert!(run.timed_out && !run.passed, "{run:?}");
        assert!(run.verdict().to_string().starts_with("timed out"));
        let pid: i32 = std::fs::read_to_string(&pidfile)
            .expect("pid")
            .trim()
            .parse()
            .expect("number");
        assert!(
            dies_within(pid, Duration::from_secs(2)),
            "the gate's child process survived"
        );
    }

    #[tokio::test]
    async fn a_server_a_gate_starts_in_a_session_of_its_own_dies_with_the_gate() {
        // A gate that starts a dev server with `setsid` (out of its group, as a daemon
        // does) and passes: the server must not outlive the gate.
        let dir = tempfile::tempdir().expect("tempdir");
        let pidfile = dir.path().join("server.pid");
        let command = format!(
            "setsid sh -c 'echo $$ > {}; exec sleep 300' </dev/null >/dev/null 2>&1 & \
             while [ ! -s {} ]; do sleep 0.01; done",
            pidfile.display(),
            pidfile.display()
        );
        let run = run_gate(&spec(&command), dir.path(), LONG).await;
        assert!(run.passed, "{run:?}");
        let pid: i32 = std::fs::read_to_string(&pidfile)
            .expect("pid")
            .trim()
            .parse()
            .expect("number");
        let gone = dies_within(pid, Duration::from_secs(2));
        if !gone {
            let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), Signal::SIGKILL);
        }
        assert!(gone, "the server the gate started outlived it");
    }

    #[tokio::test]
    async fn a_missing_directory_fails_the_gate_without_panicking() {
        let run = run_gate(&spec("true"), Path::new("/nonexistent/debussy"), LONG).await;
        assert!(!run.passed);
        assert_eq!(run.exit, None);
        assert!(run.output.contains("does not exist"), "{}", run.output);
    }

    #[tokio::test]
    async fn every_gate_runs_even_after_a_failure() {
        let dir = tempfile::tempdir().expect("tempdir");
        let gates = [spec("exit 1"), spec("true")];
        let mut seen = 0;
        let runs = run_gates(&gates, dir.path(), LONG, |_| seen += 1).await;
        assert_eq!((runs.len(), seen), (2, 2));
        assert!(!runs[0].passed && runs[1].passed);
    }

    /// Whether `pid` is gone (or a zombie awaiting its reaper) within `limit`.
    fn dies_within(pid: i32, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        loop {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let state = stat
                .rsplit(')')
                .next()
                .and_then(|rest| rest.split_whitespace().next());
            if matches!(state, None | Some("Z" | "X")) {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    #[test]
    fn output_tail_is_bounded_and_keeps_the_end() {
        let mut tail = Tail::new(20, "test");
        for i in 0..10 {
            tail.push_line(format!("line {i}").as_bytes());
        }
        let text = tail.into_string();
        assert!(text.starts_with("[earlier output dropped]\n"));
        assert!(text.ends_with("line 9\n"));
        assert!(!text.contains("line 0"));
    }
}
