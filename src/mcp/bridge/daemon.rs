//! The daemon behind the bridge: started detached in a process group of its own with its
//! output in `daemon.log`, recorded in `daemon.json` (shared by every bridge of the state
//! directory), waited on until it answers, and stopped with an escalation that also works
//! on a frozen process.

use std::collections::BTreeSet;
use std::fs::OpenOptions;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tokio::sync::mpsc::UnboundedSender;

use super::http::{Endpoint, Session};
use crate::process::ExitStatus;
use crate::process::{ports, procfs};

/// The file recording the daemon and its starts.
const RECORD_FILE: &str = "daemon.json";
/// The daemon's stdout and stderr.
pub(crate) const LOG_FILE: &str = "daemon.log";
/// How many starts `daemon.json` keeps.
const KEEP_STARTS: usize = 100;

/// One start of the daemon.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct StartEntry {
    /// 1 for the first daemon this state directory saw.
    pub(crate) generation: u64,
    /// Its pid.
    pub(crate) pid: u32,
    /// When it was spawned, ISO 8601 UTC.
    pub(crate) started_at: String,
    /// Why (`initial start`, a restart's reason, a crash).
    pub(crate) reason: String,
    /// The pid of the bridge that started it.
    pub(crate) bridge_pid: u32,
}

/// What `daemon.json` holds: the daemon started last and the history of starts. Written
/// only under the restart lock, atomically.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct DaemonRecord {
    /// The pid of the daemon started last, until it is stopped.
    pub(crate) pid: Option<u32>,
    /// The generation of the daemon started last.
    pub(crate) generation: u64,
    /// Recent starts, oldest first.
    pub(crate) starts: Vec<StartEntry>,
}

impl DaemonRecord {
    /// The record in `dir`, or an empty one when there is none (or it is unreadable).
    pub(crate) fn load(dir: &Path) -> Self {
        std::fs::read(dir.join(RECORD_FILE))
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default()
    }

    fn save(&self, dir: &Path) -> std::io::Result<()> {
        let temp = dir.join(format!(".{RECORD_FILE}.{}.tmp", std::process::id()));
        std::fs::write(&temp, serde_json::to_vec_pretty(self)?)?;
        std::fs::rename(&temp, dir.join(RECORD_FILE))
    }

    /// The current daemon's start, when it is still the one recorded.
    pub(crate) fn current(&self) -> Option<&StartEntry> {
        let pid = self.pid?;
        self.starts.last().filter(|start| start.pid == pid)
    }
}

/// A daemon this bridge started has exited (its status, collected by the reaper thread).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DaemonExit {
    /// Its pid.
    pub(crate) pid: u32,
    /// How it ended.
    pub(crate) status: ExitStatus,
}

/// How a stop went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StopOutcome {
    /// The processes that were stopped: the recorded daemon and whatever held the port.
    pub(crate) pids: Vec<u32>,
    /// Whether they are all gone and the port is free.
    pub(crate) stopped: bool,
    /// The step that ended them (`nothing running`, `shutdown request`, `SIGTERM`,
    /// `SIGKILL`), or what is still there.
    pub(crate) how: String,
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
    /// A path answering 2xx once the daemon is ready, else `initialize` is tried.
    pub(crate) health: Option<String>,
    /// A path that shuts the daemon down when POSTed to.
    pub(crate) shutdown_path: Option<String>,
    /// How long a new daemon has to become ready.
    pub(crate) ready_timeout: Duration,
    /// Time between SIGTERM and SIGKILL.
    pub(crate) term_grace: Duration,
    /// Where the reaper reports the exit of a daemon this bridge started.
    pub(crate) exits: UnboundedSender<DaemonExit>,
}

impl Daemon {
    /// Start a daemon, detached: its own process group, stdin from /dev/null, stdout and
    /// stderr appended to `daemon.log`. Call under the restart lock: it bumps the
    /// generation in `daemon.json`.
    ///
    /// # Errors
    /// The program cannot be found or started, or the state directory cannot be written.
    pub(crate) fn spawn(&self, reason: &str) -> Result<StartEntry, String> {
        let (program, args) = self
            .command
            .split_first()
            .ok_or("the daemon command is empty")?;
        let resolved = which::which(program).map_err(|err| {
            format!("cannot find the daemon program `{program}` ({err}); is it on PATH?")
        })?;
        let log_path = self.state_dir.join(LOG_FILE);
        let log = OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .open(&log_path)
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
        let exits = self.exits.clone();
        let reaper = std::thread::Builder::new()
            .name(format!("mcp-daemon-{pid}"))
            .spawn(move || {
                let status = child.wait().map_or(ExitStatus::Unknown, ExitStatus::from);
                let _ = exits.send(DaemonExit { pid, status });
            });
        if let Err(err) = reaper {
            super::super::say(&format!(
                "cannot start a thread to wait for daemon pid {pid}: {err}"
            ));
        }
        let start = StartEntry {
            generation,
            pid,
            started_at: super::super::iso_now(),
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
        Ok(start)
    }

    /// Wait until the daemon started as `pid` answers (the health path, else an
    /// `initialize`), at most the ready timeout. Returns how long it took.
    ///
    /// # Errors
    /// The daemon exited, or did not answer in time; the message ends with the tail of
    /// its log.
    pub(crate) async fn wait_ready(&self, pid: u32) -> Result<Duration, String> {
        let started = Instant::now();
        loop {
            if self.ready().await {
                return Ok(started.elapsed());
            }
            if !alive(pid) {
                return Err(format!(
                    "the daemon (pid {pid}) exited during startup{}",
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
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    async fn ready(&self) -> bool {
        if let Some(health) = &self.health {
            return self
                .endpoint
                .healthy(health, Duration::from_millis(500))
                .await;
        }
        if !self.endpoint.listening().await {
            return false;
        }
        let probe = json!({
            "jsonrpc": "2.0",
            "id": "debussy-bridge-ready",
            "method": "initialize",
            "params": super::connect::default_initialize_params(),
        });
        let id = json!("debussy-bridge-ready");
        let mut answered = false;
        let body = serde_json::to_vec(&probe).unwrap_or_default();
        let mut on_message = |message: serde_json::Value| {
            answered |= message.get("result").is_some();
        };
        let attempt = tokio::time::timeout(
            Duration::from_secs(1),
            self.endpoint
                .post(&Session::default(), body, Some(&id), &mut on_message),
        )
        .await;
        if let Ok(Ok(session_id)) = attempt
            && answered
        {
            self.endpoint
                .delete(&Session {
                    id: session_id,
                    protocol: None,
                })
                .await;
            return true;
        }
        false
    }

    /// The last lines of the daemon's log, as `: …` to append to a message.
    pub(crate) fn log_tail(&self) -> String {
        let path = self.state_dir.join(LOG_FILE);
        let Ok(mut file) = std::fs::File::open(&path) else {
            return String::new();
        };
        let len = file.metadata().map_or(0, |m| m.len());
        let _ = file.seek(SeekFrom::Start(len.saturating_sub(1500)));
        let mut tail = String::new();
        let _ = file.read_to_string(&mut tail);
        let lines: Vec<&str> = tail.lines().rev().take(8).collect();
        if lines.is_empty() {
            return format!(" (its log, {}, is empty)", path.display());
        }
        let lines: Vec<&str> = lines.into_iter().rev().collect();
        format!("; the end of {}:\n{}", path.display(), lines.join("\n"))
    }

    /// Stop the daemon, frozen or not: SIGCONT to the recorded daemon and to every
    /// process listening on the port, the shutdown request if there is a shutdown path,
    /// SIGTERM, then SIGKILL, each waited on until they are gone and the port is free.
    pub(crate) async fn stop(&self) -> StopOutcome {
        let mut record = DaemonRecord::load(&self.state_dir);
        let recorded = record.pid.filter(|pid| alive(*pid));
        let mut targets: BTreeSet<u32> = ports::listeners(self.port).into_iter().collect();
        targets.extend(recorded);
        targets.remove(&std::process::id());
        let outcome = if targets.is_empty() {
            StopOutcome {
                pids: Vec::new(),
                stopped: ports::listeners(self.port).is_empty(),
                how: "nothing was running".to_owned(),
            }
        } else {
            self.escalate(&targets, recorded).await
        };
        if outcome.stopped && record.pid.is_some() {
            record.pid = None;
            let _ = record.save(&self.state_dir);
        }
        outcome
    }

    async fn escalate(&self, targets: &BTreeSet<u32>, recorded: Option<u32>) -> StopOutcome {
        let pids: Vec<u32> = targets.iter().copied().collect();
        let outcome = |how: &str, stopped| StopOutcome {
            pids: pids.clone(),
            stopped,
            how: how.to_owned(),
        };
        signal_all(targets, recorded, Signal::SIGCONT);
        if let Some(path) = &self.shutdown_path
            && self
                .endpoint
                .request_shutdown(path, Duration::from_millis(500))
                .await
            && self.wait_gone(targets, Duration::from_secs(1)).await
        {
            return outcome("shutdown request", true);
        }
        signal_all(targets, recorded, Signal::SIGCONT);
        signal_all(targets, recorded, Signal::SIGTERM);
        if self.wait_gone(targets, self.term_grace).await {
            return outcome("SIGTERM", true);
        }
        let mut holders: BTreeSet<u32> = ports::listeners(self.port).into_iter().collect();
        holders.extend(targets.iter().copied().filter(|pid| alive(*pid)));
        holders.remove(&std::process::id());
        signal_all(&holders, recorded, Signal::SIGKILL);
        if self.wait_gone(&holders, Duration::from_secs(2)).await {
            return outcome("SIGKILL", true);
        }
        let left: Vec<String> = holders
            .iter()
            .filter(|pid| alive(**pid))
            .map(u32::to_string)
            .collect();
        outcome(
            &format!(
                "still running after SIGKILL: pid {}; port {} held by {:?}",
                left.join(", "),
                self.port,
                ports::listeners(self.port)
            ),
            false,
        )
    }

    async fn wait_gone(&self, pids: &BTreeSet<u32>, within: Duration) -> bool {
        let deadline = Instant::now() + within;
        loop {
            if pids.iter().all(|pid| !alive(*pid)) && ports::listeners(self.port).is_empty() {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

/// Send `signal` to each pid, and to the process group of `recorded` when it leads one
/// (the daemon's children, such as a `uv run` wrapper's Python, go with it).
fn signal_all(pids: &BTreeSet<u32>, recorded: Option<u32>, signal: Signal) {
    if let Some(leader) = recorded.and_then(|pid| i32::try_from(pid).ok())
        && leads_group(leader)
    {
        let _ = killpg(Pid::from_raw(leader), signal);
    }
    for pid in pids {
        if let Ok(raw) = i32::try_from(*pid) {
            let _ = kill(Pid::from_raw(raw), signal);
        }
    }
}

fn leads_group(pid: i32) -> bool {
    procfs::state_and_group(Path::new(&format!("/proc/{pid}"))).is_some_and(|(_, g)| g == pid)
}

/// Whether `pid` is a live process (not gone, not a zombie waiting to be reaped).
pub(crate) fn alive(pid: u32) -> bool {
    let Ok(raw) = i32::try_from(pid) else {
        return false;
    };
    if kill(Pid::from_raw(raw), None).is_err() {
        return false;
    }
    procfs::state_and_group(Path::new(&format!("/proc/{pid}")))
        .is_none_or(|(state, _)| state != 'Z' && state != 'X')
}
