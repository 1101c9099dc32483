//! The daemon behind the bridge: started detached in a process group of its own with its
//! output in `daemon.log`, recorded in `daemon.json` (shared by every bridge of the state
//! directory) as a [`ProcessIdentity`], waited on until its port accepts connections,
//! and stopped with an escalation that also works on a frozen process.
//!
//! Only the recorded daemon is ever signalled, and only while it is still the recorded
//! process (pid and start time): a pid reused by an unrelated process, or whatever else
//! listens on the port, is left alone. The exit of a daemon this bridge started comes
//! from the thread that reaps it, so stopping one waits on an event, not on `/proc`.

use std::io::{Read, Seek, SeekFrom};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use tokio::sync::watch;

use super::client::Endpoint;
use crate::mcp::backend::Stopped;
use crate::process::{ExitStatus, ProcessIdentity, Signal};

/// The file recording the daemon and its starts.
const RECORD_FILE: &str = "daemon.json";
/// The most bytes of `daemon.json` read back.
const RECORD_LIMIT: u64 = 4 * 1024 * 1024;
/// The daemon's stdout and stderr.
pub(crate) const LOG_FILE: &str = "daemon.log";
/// How many starts `daemon.json` keeps.
const KEEP_STARTS: usize = 100;
/// Between two looks at a daemon another bridge started (it cannot be waited on).
const FOREIGN_POLL: Duration = Duration::from_millis(5);

/// One start of the daemon.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct StartEntry {
    /// 1 for the first daemon this state directory saw.
    pub(crate) generation: u64,
    /// Its pid.
    pub(crate) pid: u32,
    /// Its start time in clock ticks after boot, with `pid` its identity.
    #[serde(default)]
    pub(crate) start_ticks: Option<u64>,
    /// When it was spawned, ISO 8601 UTC.
    pub(crate) started_at: String,
    /// Why (`initial start`, a restart's reason, a crash).
    pub(crate) reason: String,
    /// The pid of the bridge that started it.
    pub(crate) bridge_pid: u32,
}

impl StartEntry {
    /// The process this entry recorded, if its identity was recorded.
    pub(crate) fn identity(&self) -> Option<ProcessIdentity> {
        self.start_ticks.map(|start| ProcessIdentity {
            pid: self.pid,
            start,
        })
    }
}

/// What `daemon.json` holds: the daemon started last and the history of starts. Written
/// only under the restart lock, atomically, readable by its owner only.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct DaemonRecord {
    /// The pid of the daemon started last, until it is stopped.
    pub(crate) pid: Option<u32>,
    /// The generation of the daemon started last.
    pub(crate) generation: u64,
    /// Recent starts, oldest first.
    pub(crate) starts: Vec<StartEntry>,
    /// The daemon a bridge stopped on purpose last (a restart, or a bridge's end with
    /// `--stop-daemon-on-exit`), written before the first signal: to the other bridges
    /// its exit is not a crash, however late they see it.
    #[serde(default)]
    pub(crate) stopped: Option<StartEntry>,
}

impl DaemonRecord {
    /// The record in `dir`, or an empty one when there is none (or it is unreadable).
    pub(crate) fn load(dir: &Path) -> Self {
        crate::files::read_bytes_limited(&dir.join(RECORD_FILE), RECORD_LIMIT)
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default()
    }

    fn save(&self, dir: &Path) -> std::io::Result<()> {
        crate::files::write_private(&dir.join(RECORD_FILE), &serde_json::to_vec_pretty(self)?)
    }

    /// The current daemon's start, when it is still the one recorded.
    pub(crate) fn current(&self) -> Option<&StartEntry> {
        let pid = self.pid?;
        self.starts.last().filter(|start| start.pid == pid)
    }

    /// Whether a bridge stopped the daemon started as `start` on purpose.
    pub(crate) fn stopped_on_purpose(&self, start: &StartEntry) -> bool {
        self.stopped.as_ref().is_some_and(|stopped| {
            stopped.pid == start.pid && stopped.start_ticks == start.start_ticks
        })
    }
}

/// Whether the daemon started as `start` (when known) went away because another bridge
/// is restarting it or stopped it on purpose, rather than by a crash.
pub(crate) fn replaced_elsewhere(dir: &Path, start: Option<&StartEntry>) -> bool {
    super::lock::held_elsewhere(dir)
        || start.is_some_and(|start| DaemonRecord::load(dir).stopped_on_purpose(start))
}

/// A daemon this bridge started: who it is and when it exits.
#[derive(Debug, Clone)]
pub(crate) struct OwnDaemon {
    /// Its pid and start time.
    pub(crate) identity: ProcessIdentity,
    /// Its exit status, once the reaper saw it.
    pub(crate) exit: watch::Receiver<Option<ExitStatus>>,
}

/// Starts, waits for and stops the daemon.
#[derive(Debug, Clone)]
pub(crate) struct Daemon {
    /// The daemon command.
    pub(crate) command: Vec<String>,
    /// The state directory (record, log, lock).
    pub(crate) state_dir: PathBuf,
    /// The daemon's port.
    pub(crate) port: u16,
    /// Its MCP endpoint.
    pub(crate) endpoint: Endpoint,
    /// A path answering 2xx once the daemon is ready, else its port accepting is enough.
    pub(crate) health: Option<String>,
    /// A path that shuts the daemon down when POSTed to.
    pub(crate) shutdown_path: Option<String>,
    /// How long a new daemon has to become ready.
    pub(crate) ready_timeout: Duration,
    /// Time between SIGTERM and SIGKILL.
    pub(crate) term_grace: Duration,
}

impl Daemon {
    /// Start a daemon, detached: its own process group, stdin from /dev/null, stdout and
    /// stderr appended to `daemon.log`. Call under the restart lock: it bumps the
    /// generation in `daemon.json`.
    ///
    /// # Errors
    /// The program cannot be found or started, or the state directory cannot be written.
    pub(crate) fn spawn(&self, reason: &str) -> Result<(StartEntry, OwnDaemon), String> {
        let (program, args) = self
            .command
            .split_first()
            .ok_or("the daemon command is empty")?;
        let resolved = which::which(program).map_err(|err| {
            format!("cannot find the daemon program `{program}` ({err}); is it on PATH?")
        })?;
        let log_path = self.state_dir.join(LOG_FILE);
        let log = crate::files::open_private_append(&log_path)
            .map_err(|err| format!("cannot open {}: {err}", log_path.display()))?;
        let log_err = log
            .try_clone()
            .map_err(|err| format!("cannot open {}: {err}", log_path.display()))?;
        let mut record = DaemonRecord::load(&self.state_dir);
        let generation = record.generation + 1;
        let mut child = std::process::Command::new(resolved)
            .args(args)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log_err)
            .process_group(0)
            .env("DEBUSSY_MCP_GENERATION", generation.to_string())
            .env("DEBUSSY_MCP_PORT", self.port.to_string())
            .spawn()
            .map_err(|err| format!("cannot start `{}`: {err}", self.command.join(" ")))?;
        let pid = child.id();
        let identity = ProcessIdentity::of(pid);
        let (exit_tx, exit) = watch::channel(None);
        let reaper = std::thread::Builder::new()
            .name(format!("mcp-daemon-{pid}"))
            .spawn(move || {
                let status = child.wait().map_or(ExitStatus::Unknown, ExitStatus::from);
                let _ = exit_tx.send(Some(status));
            });
        if let Err(err) = reaper {
            crate::mcp::say(&format!(
                "cannot start a thread to wait for daemon pid {pid}: {err}"
            ));
        }
        let start = StartEntry {
            generation,
            pid,
            start_ticks: identity.map(|i| i.start),
            started_at: crate::mcp::iso_now(),
            reason: reason.to_owned(),
            bridge_pid: std::process::id(),
        };
        record.pid = Some(pid);
        record.generation = generation;
        record.starts.push(start.clone());
        let excess = record.starts.len().saturating_sub(KEEP_STARTS);
        record.starts.drain(..excess);
        record
            .save(&self.state_dir)
            .map_err(|err| format!("cannot write {RECORD_FILE}: {err}"))?;
        let identity = identity.unwrap_or(ProcessIdentity { pid, start: 0 });
        Ok((start, OwnDaemon { identity, exit }))
    }

    /// Wait until the daemon started as `own` takes connections (and its health path
    /// answers, if there is one), at most the ready timeout. Returns how long it took.
    ///
    /// # Errors
    /// The daemon exited, or did not come up in time; the message ends with the tail of
    /// its log.
    pub(crate) async fn wait_ready(&self, own: &OwnDaemon) -> Result<Duration, String> {
        let started = Instant::now();
        let pid = own.identity.pid;
        let mut pause = Duration::from_millis(1);
        loop {
            if self.ready().await {
                return Ok(started.elapsed());
            }
            if let Some(status) = *own.exit.borrow() {
                return Err(format!(
                    "the daemon (pid {pid}) exited during startup ({status}){}",
                    self.log_tail()
                ));
            }
            if started.elapsed() >= self.ready_timeout {
                return Err(format!(
                    "the daemon (pid {pid}) did not answer within {} ms{}",
                    self.ready_timeout.as_millis(),
                    self.log_tail()
                ));
            }
            let mut exit = own.exit.clone();
            // Wake at once if it exits meanwhile.
            let _ = tokio::time::timeout(pause, exit.changed()).await;
            pause = (pause * 2).min(Duration::from_millis(20));
        }
    }

    async fn ready(&self) -> bool {
        match &self.health {
            Some(health) => {
                self.endpoint
                    .healthy(health, Duration::from_millis(500))
                    .await
            }
            None => self.endpoint.listening().await,
        }
    }

    /// The last lines of the daemon's log, as `: …` to append to a message.
    pub(crate) fn log_tail(&self) -> String {
        let path = self.state_dir.join(LOG_FILE);
        let Ok(mut file) = crate::files::open_regular(&path) else {
            return String::new();
        };
        let len = file.metadata().map_or(0, |m| m.len());
        let _ = file.seek(SeekFrom::Start(len.saturating_sub(1500)));
        let mut tail = Vec::new();
        let _ = file.take(1500).read_to_end(&mut tail);
        let tail = String::from_utf8_lossy(&tail);
        let lines: Vec<&str> = tail.lines().rev().take(8).collect();
        if lines.is_empty() {
            return format!(" (its log, {}, is empty)", path.display());
        }
        let lines: Vec<&str> = lines.into_iter().rev().collect();
        format!("; the end of {}:\n{}", path.display(), lines.join("\n"))
    }

    /// Stop the recorded daemon, frozen or not: SIGCONT, the shutdown request if there
    /// is a shutdown path, SIGTERM to its group, then SIGKILL, each waited on until it is
    /// gone. `own` is how this bridge waits for a daemon it started; another bridge's is
    /// looked at every few milliseconds. A daemon that is not recorded is left alone.
    pub(crate) async fn stop(&self, own: Option<&OwnDaemon>) -> (Stopped, Option<ExitStatus>) {
        let started = Instant::now();
        let mut record = DaemonRecord::load(&self.state_dir);
        let target = record
            .current()
            .and_then(StartEntry::identity)
            .filter(ProcessIdentity::is_alive);
        let Some(target) = target else {
            let how = if record.pid.is_some() {
                "it was no longer running"
            } else {
                "nothing debussy started was running"
            };
            return (stopped(Vec::new(), how, started, true), None);
        };
        record.stopped = record.current().cloned();
        if let Err(err) = record.save(&self.state_dir) {
            crate::mcp::say(&format!(
                "cannot write {RECORD_FILE} before stopping the daemon: {err}"
            ));
        }
        let own = own.filter(|own| own.identity == target);
        let mut actions = Vec::new();
        let (how, gone) = self.escalate(target, own, &mut actions).await;
        if gone {
            record.pid = None;
        } else {
            // Still running: a later exit of it is its own again.
            record.stopped = None;
        }
        let _ = record.save(&self.state_dir);
        let status = own.and_then(|own| *own.exit.borrow());
        (stopped(actions, &how, started, gone), status)
    }

    async fn escalate(
        &self,
        target: ProcessIdentity,
        own: Option<&OwnDaemon>,
        actions: &mut Vec<String>,
    ) -> (String, bool) {
        signal(target, Signal::SIGCONT);
        if let Some(path) = &self.shutdown_path {
            actions.push("shutdown request".to_owned());
            if self
                .endpoint
                .request_shutdown(path, Duration::from_millis(500))
                .await
                && wait_gone(target, own, Duration::from_secs(1)).await
            {
                return ("shutdown request".to_owned(), true);
            }
        }
        for (step, grace) in [
            (Signal::SIGTERM, self.term_grace),
            (Signal::SIGKILL, Duration::from_secs(2)),
        ] {
            signal(target, Signal::SIGCONT);
            signal(target, step);
            actions.push(step.as_str().to_owned());
            if wait_gone(target, own, grace).await {
                return (step.as_str().to_owned(), true);
            }
        }
        (
            format!("pid {} still running after SIGKILL", target.pid),
            false,
        )
    }
}

fn stopped(actions: Vec<String>, how: &str, started: Instant, gone: bool) -> Stopped {
    Stopped {
        actions,
        how: how.to_owned(),
        took: started.elapsed(),
        gone,
    }
}

/// Send `signal` to the daemon's process group (its children, such as a `uv run`
/// wrapper's Python, go with it) and to the daemon, while it is the recorded process.
fn signal(target: ProcessIdentity, signal: Signal) {
    target.signal_group(signal);
    target.signal(signal);
}

/// Wait until `target` is gone, at most `within`: on the reaper's word for a daemon this
/// bridge started, by looking for one it did not.
async fn wait_gone(target: ProcessIdentity, own: Option<&OwnDaemon>, within: Duration) -> bool {
    let deadline = tokio::time::Instant::now() + within;
    if let Some(own) = own {
        let mut exit = own.exit.clone();
        return tokio::time::timeout_at(deadline, exit.wait_for(Option::is_some))
            .await
            .is_ok_and(|waited| waited.is_ok());
    }
    loop {
        if !target.is_alive() {
            return true;
        }
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(FOREIGN_POLL).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn daemon(state_dir: &Path) -> Daemon {
        Daemon {
            command: vec!["true".into()],
            state_dir: state_dir.to_path_buf(),
            port: 9,
            endpoint: Endpoint::new("127.0.0.1", 9, "/mcp", 1024).expect("endpoint"),
            health: None,
            shutdown_path: None,
            ready_timeout: Duration::from_secs(1),
            term_grace: Duration::from_millis(200),
        }
    }

    #[tokio::test]
    async fn a_recorded_pid_that_names_another_process_now_is_left_alone() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut innocent = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .expect("sleep");
        let pid = innocent.id();
        let now = ProcessIdentity::of(pid).expect("identity");
        // The record names the pid with another start time: a daemon that died, its
        // number since given to an unrelated process.
        let record = DaemonRecord {
            pid: Some(pid),
            generation: 1,
            starts: vec![StartEntry {
                generation: 1,
                pid,
                start_ticks: Some(now.start.saturating_sub(1)),
                started_at: "2026-11-26T00:00:00Z".into(),
                reason: "initial start".into(),
                bridge_pid: 1,
            }],
            stopped: None,
        };
        record.save(dir.path()).expect("save");
        let (stopped, _) = daemon(dir.path()).stop(None).await;
        assert_eq!(stopped.how, "it was no longer running");
        assert!(
            now.is_alive(),
            "the process that got the number was signalled"
        );
        let _ = innocent.kill();
        let _ = innocent.wait();
    }

    /// Another bridge may see the exit of a daemon stopped for a restart only after the
    /// restart lock is released: the record, not the lock, tells it that this was no
    /// crash. A daemon that died by itself is still one.
    #[tokio::test]
    async fn a_daemon_stopped_on_purpose_is_no_crash_after_the_lock_is_released() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut daemon = daemon(dir.path());
        daemon.command = vec!["sleep".into(), "30".into()];
        let (stopped_start, own) = daemon.spawn("initial start").expect("spawn");
        let (stopped, _) = daemon.stop(Some(&own)).await;
        assert!(stopped.gone, "{stopped:?}");
        assert!(replaced_elsewhere(dir.path(), Some(&stopped_start)));

        let (crashed_start, mut own) = daemon.spawn("a restart").expect("spawn");
        signal(own.identity, Signal::SIGKILL);
        tokio::time::timeout(Duration::from_secs(10), own.exit.wait_for(Option::is_some))
            .await
            .expect("the reaper saw the exit")
            .expect("the reaper is there");
        assert!(!replaced_elsewhere(dir.path(), Some(&crashed_start)));
        assert!(replaced_elsewhere(dir.path(), Some(&stopped_start)));
    }
}
