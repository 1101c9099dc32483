//! One running Claude Code child and what it printed: [`ClaudeRun`] feeds the prompt,
//! reads stdout line by line with timeouts and kills the process group when dropped;
//! [`Transcript`] holds a finished run's output with accessors for stream-json.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::super::model_server::Usage;

/// A run that did not finish in time or could not be read; carries what it printed
/// so far.
#[derive(Debug)]
pub struct RunError {
    what: String,
    lines: Vec<String>,
    stderr: String,
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{} ({} stdout line(s) so far)",
            self.what,
            self.lines.len()
        )?;
        for line in self.lines.iter().rev().take(5).rev() {
            let shown: String = line.chars().take(300).collect();
            writeln!(f, "  stdout: {shown}")?;
        }
        if !self.stderr.trim().is_empty() {
            write!(f, "  stderr: {}", self.stderr.trim())?;
        }
        Ok(())
    }
}

impl std::error::Error for RunError {}

/// One running `claude` child. Dropping it kills the whole process group (the CLI and
/// anything its Bash tool started).
#[derive(Debug)]
pub struct ClaudeRun {
    child: Child,
    pgid: Option<Pid>,
    stdout: mpsc::UnboundedReceiver<String>,
    stderr: Option<JoinHandle<String>>,
    lines: Vec<String>,
}

impl ClaudeRun {
    /// Spawns `command` (normally from [`super::Sandbox::command`]; it must pipe stdin and
    /// stdout and start a new process group), writes `prompt` to its stdin and closes
    /// it. Must be called inside a Tokio runtime: the pipes are served by tasks.
    pub fn spawn(mut command: Command, prompt: &str) -> io::Result<Self> {
        let mut child = command.spawn()?;
        let pgid = child
            .id()
            .and_then(|pid| i32::try_from(pid).ok())
            .map(Pid::from_raw);
        let mut stdin = child
            .stdin
            .take()
            .ok_or_else(|| io::Error::other("the command's stdin is not piped"))?;
        let prompt = prompt.to_owned();
        tokio::spawn(async move {
            // A child that exits before reading its prompt closes the pipe; the test
            // sees that from the output, not from here.
            let _ = stdin.write_all(prompt.as_bytes()).await;
            let _ = stdin.shutdown().await;
        });
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| io::Error::other("the command's stdout is not piped"))?;
        let (sender, receiver) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            let mut lines = BufReader::new(stdout).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        let stderr = child.stderr.take().map(|mut stderr| {
            tokio::spawn(async move {
                let mut text = String::new();
                let mut bytes = Vec::new();
                if stderr.read_to_end(&mut bytes).await.is_ok() {
                    text = String::from_utf8_lossy(&bytes).into_owned();
                }
                text
            })
        });
        Ok(Self {
            child,
            pgid,
            stdout: receiver,
            stderr,
            lines: Vec::new(),
        })
    }

    fn error(&self, what: String) -> RunError {
        RunError {
            what,
            lines: self.lines.clone(),
            stderr: String::new(),
        }
    }

    /// The next stdout line, `Ok(None)` at end of output.
    pub async fn next_line(&mut self, timeout: Duration) -> Result<Option<String>, RunError> {
        match tokio::time::timeout(timeout, self.stdout.recv()).await {
            Ok(Some(line)) => {
                self.lines.push(line.clone());
                Ok(Some(line))
            }
            Ok(None) => Ok(None),
            Err(_) => Err(self.error(format!("no stdout line within {timeout:?}"))),
        }
    }

    /// Reads lines until one parses as JSON and satisfies `wanted`, and returns it.
    pub async fn wait_for_line(
        &mut self,
        what: &str,
        timeout: Duration,
        wanted: impl Fn(&Value) -> bool,
    ) -> Result<Value, RunError> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            match self.next_line(left).await {
                Ok(Some(line)) => {
                    if let Ok(value) = serde_json::from_str::<Value>(&line)
                        && wanted(&value)
                    {
                        return Ok(value);
                    }
                }
                Ok(None) => return Err(self.error(format!("output ended before {what}"))),
                Err(_) => {
                    return Err(
                        self.error(format!("timed out after {timeout:?} waiting for {what}"))
                    );
                }
            }
        }
    }

    /// Kills the process group with SIGKILL (idempotent).
    pub fn kill(&mut self) {
        if let Some(pgid) = self.pgid.take() {
            // ESRCH: the group is already gone.
            let _ = killpg(pgid, Signal::SIGKILL);
        }
    }

    /// Reads the rest of the output and waits for the exit. On timeout the process
    /// group is killed and the error carries the output so far.
    pub async fn finish(mut self, timeout: Duration) -> Result<Transcript, RunError> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            match self.next_line(left).await {
                Ok(Some(_)) => {}
                Ok(None) => break,
                Err(_) => {
                    self.kill();
                    let mut error =
                        self.error(format!("the run did not finish within {timeout:?}"));
                    error.stderr = self.take_stderr().await;
                    return Err(error);
                }
            }
        }
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        let status = match tokio::time::timeout(left, self.child.wait()).await {
            Ok(Ok(status)) => status,
            Ok(Err(error)) => return Err(self.error(format!("cannot wait for the child: {error}"))),
            Err(_) => {
                self.kill();
                return Err(self.error(format!(
                    "stdout closed but the child did not exit within {timeout:?}"
                )));
            }
        };
        // The CLI is gone; anything left in its group (a Bash tool's background job)
        // must not outlive the test.
        self.kill();
        let stderr = self.take_stderr().await;
        Ok(Transcript {
            lines: std::mem::take(&mut self.lines),
            stderr,
            status,
        })
    }

    async fn take_stderr(&mut self) -> String {
        match self.stderr.take() {
            Some(task) => tokio::time::timeout(Duration::from_secs(5), task)
                .await
                .ok()
                .and_then(Result::ok)
                .unwrap_or_default(),
            None => String::new(),
        }
    }
}

impl Drop for ClaudeRun {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Spawns `command` with `prompt` and waits for it to finish.
pub async fn run(
    command: Command,
    prompt: &str,
    timeout: Duration,
) -> Result<Transcript, RunError> {
    let run = ClaudeRun::spawn(command, prompt).map_err(|error| RunError {
        what: format!("cannot start claude: {error}"),
        lines: Vec::new(),
        stderr: String::new(),
    })?;
    run.finish(timeout).await
}

/// Everything a finished run printed.
#[derive(Debug)]
pub struct Transcript {
    /// The stdout lines (stream-json).
    pub lines: Vec<String>,
    /// Everything on stderr.
    pub stderr: String,
    /// How the CLI exited.
    pub status: ExitStatus,
}

impl Transcript {
    /// Every stdout line parsed as JSON. Panics, naming the line, if one is not JSON:
    /// stream-json output is one JSON object per line.
    pub fn json(&self) -> Vec<Value> {
        self.lines
            .iter()
            .enumerate()
            .map(|(number, line)| {
                serde_json::from_str(line).unwrap_or_else(|error| {
                    panic!("stdout line {} is not JSON ({error}): {line}", number + 1)
                })
            })
            .collect()
    }

    /// The lines whose `type` is `kind`.
    pub fn of_type(&self, kind: &str) -> Vec<Value> {
        self.json()
            .into_iter()
            .filter(|line| line.get("type").and_then(Value::as_str) == Some(kind))
            .collect()
    }

    /// The `system` lines with the given `subtype`.
    pub fn system(&self, subtype: &str) -> Vec<Value> {
        self.of_type("system")
            .into_iter()
            .filter(|line| line.get("subtype").and_then(Value::as_str) == Some(subtype))
            .collect()
    }

    /// The `result` line, if the run printed one.
    pub fn result(&self) -> Option<Value> {
        self.of_type("result").into_iter().last()
    }

    /// The `assistant` lines of the main thread (`parent_tool_use_id` null).
    pub fn main_assistant_lines(&self) -> Vec<Value> {
        self.of_type("assistant")
            .into_iter()
            .filter(|line| line.get("parent_tool_use_id").is_none_or(Value::is_null))
            .collect()
    }

    /// The `assistant` lines of the subagent started by tool call `parent`.
    pub fn subagent_assistant_lines(&self, parent: &str) -> Vec<Value> {
        self.of_type("assistant")
            .into_iter()
            .filter(|line| line.get("parent_tool_use_id").and_then(Value::as_str) == Some(parent))
            .collect()
    }

    /// `(message.id, usage)` of each distinct main-thread message, in order. Claude
    /// Code prints one `assistant` line per content block, each repeating the
    /// message's id and usage; this keeps the first of each.
    pub fn main_usages(&self) -> Vec<(String, Usage)> {
        let mut out: Vec<(String, Usage)> = Vec::new();
        for line in self.main_assistant_lines() {
            let message = &line["message"];
            let id = message["id"].as_str().unwrap_or_default().to_owned();
            if out.iter().all(|(seen, _)| *seen != id) {
                out.push((id, Usage::from_json(&message["usage"])));
            }
        }
        out
    }

    /// Writes `stream.jsonl` (stdout) and `stderr.txt` into `dir`; returns the
    /// stream's path.
    pub fn save(&self, dir: &Path) -> io::Result<PathBuf> {
        std::fs::create_dir_all(dir)?;
        let stream = dir.join("stream.jsonl");
        let mut text = self.lines.join("\n");
        text.push('\n');
        std::fs::write(&stream, text)?;
        std::fs::write(dir.join("stderr.txt"), &self.stderr)?;
        Ok(stream)
    }
}
