//! Running a command to its end under a time limit, keeping what it printed: the one way
//! debussy runs a short-lived helper (git, its hooks) as a supervised child.
//!
//! The command runs like every other child ([`ProcessCommand::spawn`]): the leader of its
//! own process group below a reaper that kills everything under it if debussy dies, so
//! a `git merge` and the hooks it starts never outlive debussy. Past the limit the group is
//! stopped with the command's stop ladder and the run reads [`Finish::TimedOut`].

use std::time::Duration;

use super::{ExitStatus, Leak, ProcessCommand, ProcessError, ProcessEvent, Stream};

/// The most bytes kept of each output stream; the rest is counted, not stored.
pub const OUTPUT_LIMIT: usize = 32 * 1024 * 1024;

/// How a command run to its end finished.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Finish {
    /// It ended by itself (an exit code or a signal).
    Exited(ExitStatus),
    /// It was still running at the limit (the configured value, as given), and its
    /// process group was stopped.
    TimedOut(Duration),
}

/// What a command run to its end printed, and how it finished.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Output {
    /// How it finished.
    pub finish: Finish,
    /// Its standard output, lines joined with `\n` (lossily decoded): its first
    /// [`OUTPUT_LIMIT`] bytes at most, whole lines.
    pub stdout: String,
    /// Its standard error, as `stdout`.
    pub stderr: String,
    /// Whether either stream had more than [`OUTPUT_LIMIT`] bytes (or a line too long
    /// to frame), so that what is kept is not all it printed.
    pub truncated: bool,
}

impl Output {
    /// Whether it exited with code 0 within the limit.
    #[must_use]
    pub fn is_success(&self) -> bool {
        matches!(self.finish, Finish::Exited(status) if status.is_success())
    }
}

/// Where the lines of a command run to its end go as they arrive
/// ([`ProcessCommand::run_to_end`]): each caller keeps what it needs of them (the head
/// up to a bound for [`Output`], the tail for a gate).
pub trait OutputSink {
    /// A line from `stream`, without its newline.
    fn line(&mut self, stream: Stream, line: &[u8]);
    /// A line longer than the command's line limit on `stream`, dropped.
    fn line_too_long(&mut self, stream: Stream, limit: usize);
    /// Processes the command left behind when it ended; they were killed.
    fn leaked(&mut self, command: &ProcessCommand, leak: &Leak) {
        tracing::debug!(command = %command.display(), %leak, "left processes behind; they were killed");
    }
}

impl ProcessCommand {
    /// Run the command to its end, handing its lines to `sink`, and stop its process
    /// group once it has run for `limit`. Dropping the future kills the group.
    ///
    /// # Errors
    /// When the command cannot be started (see [`ProcessCommand::spawn`]).
    pub async fn run_to_end(
        &self,
        limit: Duration,
        sink: &mut impl OutputSink,
    ) -> Result<Finish, ProcessError> {
        let mut child = self.spawn()?;
        let control = child.control();
        let deadline = tokio::time::Instant::now() + limit;
        let mut timed_out = false;
        let status = loop {
            let event = tokio::select! {
                event = child.next_event() => event,
                () = tokio::time::sleep_until(deadline), if !timed_out => {
                    timed_out = true;
                    control.request_stop();
                    continue;
                }
            };
            match event {
                Some(ProcessEvent::Line { stream, line }) => sink.line(stream, &line),
                Some(ProcessEvent::LineTooLong { stream, limit, .. }) => {
                    sink.line_too_long(stream, limit);
                }
                Some(ProcessEvent::Leaked(leak)) => sink.leaked(self, &leak),
                Some(ProcessEvent::Exited(report)) => break report.status,
                None => break control.wait().await.status,
            }
        };
        Ok(if timed_out {
            Finish::TimedOut(limit)
        } else {
            Finish::Exited(status)
        })
    }

    /// Run the command to its end, keeping the first [`OUTPUT_LIMIT`] bytes of each
    /// stream, and stop its process group once it has run for `limit`. Dropping the
    /// future kills the group.
    ///
    /// # Errors
    /// When the command cannot be started (see [`ProcessCommand::spawn`]).
    pub async fn output(&self, limit: Duration) -> Result<Output, ProcessError> {
        let mut kept = Kept::default();
        let finish = self.run_to_end(limit, &mut kept).await?;
        Ok(Output {
            finish,
            truncated: kept.stdout.truncated || kept.stderr.truncated,
            stdout: kept.stdout.text(),
            stderr: kept.stderr.text(),
        })
    }

    /// [`output`](Self::output) for code that is not async (a blocking task, a hook run
    /// around a libgit2 commit): the command runs on a runtime of its own, on a thread of
    /// its own, so this may be called from anywhere, a runtime's own threads included.
    ///
    /// # Errors
    /// When the command cannot be started, or no thread or runtime can be made for it.
    pub fn output_blocking(&self, limit: Duration) -> Result<Output, ProcessError> {
        let command = self.clone();
        let program = self.program().to_string_lossy().into_owned();
        let spawn_error = |source: std::io::Error| ProcessError::Spawn {
            program: program.clone(),
            source,
        };
        let runner = std::thread::Builder::new()
            .name("debussy-command".into())
            .spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()?;
                Ok(runtime.block_on(command.output(limit)))
            })
            .map_err(spawn_error)?;
        match runner.join() {
            Ok(Ok(output)) => output,
            Ok(Err(err)) => Err(spawn_error(err)),
            Err(panic) => std::panic::resume_unwind(panic),
        }
    }
}

/// Both streams' heads, for [`Output`].
#[derive(Default)]
struct Kept {
    stdout: Collected,
    stderr: Collected,
}

impl OutputSink for Kept {
    fn line(&mut self, stream: Stream, line: &[u8]) {
        match stream {
            Stream::Stdout => self.stdout.push(line),
            Stream::Stderr => self.stderr.push(line),
        }
    }

    fn line_too_long(&mut self, stream: Stream, _limit: usize) {
        match stream {
            Stream::Stdout => self.stdout.truncated = true,
            Stream::Stderr => self.stderr.truncated = true,
        }
    }
}

/// One stream's lines, up to [`OUTPUT_LIMIT`] bytes.
#[derive(Default)]
struct Collected {
    bytes: Vec<u8>,
    truncated: bool,
}

impl Collected {
    fn push(&mut self, line: &[u8]) {
        if self.truncated {
            return;
        }
        let needed = line.len() + usize::from(!self.bytes.is_empty());
        if self.bytes.len() + needed > OUTPUT_LIMIT {
            self.truncated = true;
            return;
        }
        if !self.bytes.is_empty() {
            self.bytes.push(b'\n');
        }
        self.bytes.extend_from_slice(line);
    }

    fn text(self) -> String {
        String::from_utf8_lossy(&self.bytes).into_owned()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::*;
    use crate::process::{Signal, StopAction, StopLadder, StopStep};

    #[tokio::test]
    async fn keeps_both_streams_and_the_exit() {
        let output = ProcessCommand::new("sh")
            .args(["-c", "echo one; echo two; echo oops >&2; exit 3"])
            .output(Duration::from_secs(10))
            .await
            .expect("run");
        assert_eq!(output.stdout, "one\ntwo");
        assert_eq!(output.stderr, "oops");
        assert_eq!(output.finish, Finish::Exited(ExitStatus::Code(3)));
        assert!(!output.is_success() && !output.truncated);
    }

    #[tokio::test]
    async fn a_command_past_its_limit_is_stopped_with_its_group_and_says_the_limit() {
        let dir = tempfile::tempdir().expect("tempdir");
        let pid_file = dir.path().join("pid");
        let script = format!("sleep 30 & echo $! > {}; wait", pid_file.display());
        let started = Instant::now();
        let output = ProcessCommand::new("sh")
            .args(["-c", &script])
            .stop_ladder(StopLadder::new([StopStep::new(
                StopAction::Signal(Signal::SIGTERM),
                Duration::from_secs(2),
            )]))
            .output(Duration::from_millis(300))
            .await
            .expect("run");
        assert_eq!(output.finish, Finish::TimedOut(Duration::from_millis(300)));
        assert!(started.elapsed() < Duration::from_secs(10));
        let pid: i32 = std::fs::read_to_string(&pid_file)
            .expect("pid")
            .trim()
            .parse()
            .expect("number");
        let deadline = Instant::now() + Duration::from_secs(5);
        let alive = || {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|stat| crate::process::procfs::parse_full_stat(&stat))
                .is_some_and(crate::process::procfs::Stat::is_live)
        };
        while alive() {
            assert!(
                Instant::now() < deadline,
                "the grandchild outlived the stop"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    #[test]
    fn runs_from_code_that_is_not_async_and_from_a_runtime_thread() {
        let output = ProcessCommand::new("echo")
            .arg("plain")
            .output_blocking(Duration::from_secs(10))
            .expect("run");
        assert_eq!(output.stdout, "plain");
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let inside = runtime.block_on(async {
            ProcessCommand::new("echo")
                .arg("inside")
                .output_blocking(Duration::from_secs(10))
        });
        assert_eq!(inside.expect("run").stdout, "inside");
    }

    #[test]
    fn output_past_the_limit_is_cut_and_marked() {
        let mut collected = Collected::default();
        let line = vec![b'x'; OUTPUT_LIMIT / 2];
        collected.push(&line);
        collected.push(&line);
        collected.push(b"more");
        assert!(collected.truncated);
        assert_eq!(collected.bytes.len(), OUTPUT_LIMIT / 2);
    }
}
