//! The supervisor's audit trail: append-only JSON Lines at `<state-dir>/audit.jsonl`.
//!
//! Each line is `{timestamp, event_type, generation, pid, …}` (issue 6, "Audit trail and
//! marker"). Every line is written and flushed to the OS before `record` returns, and
//! fsynced: in the background as it is written, and at once at the barriers — before a
//! child is stopped and before the supervisor exits — so that a line written before a
//! child is stopped survives the machine dying. Failing to write is reported on
//! stderr and never stops the proxy: the audit trail serves the proxy, not the reverse.
//!
//! This module owns the file and the event names; it does not decide when events happen.

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{Map, Value};

/// The events the audit trail records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AuditEvent {
    /// The supervisor started (command, state directory, watched paths).
    SupervisorStarted,
    /// A child process was spawned (generation, pid, command).
    ServerStarted,
    /// A child answered `initialize` (how long it took).
    ServerReady,
    /// A restart was asked for (`reason`, `source`: tool, exit42, watch, signal).
    RestartRequested,
    /// The restart marker file was written.
    MarkerWritten,
    /// A child is about to be stopped (how it will be stopped).
    ServerExiting,
    /// A child exited (`code` or `signal`, whether it was asked to).
    ServerExited,
    /// A crashed child will be restarted after `delay_ms`.
    CrashBackoff,
    /// Too many crashes, or a child that never became ready: requests get errors until
    /// `restart_server` succeeds.
    Degraded,
    /// The remembered handshake and session state were replayed to a new child.
    HandshakeReplayed,
    /// A new child's protocol version or capabilities differ from the first child's.
    CapabilityDrift,
    /// A request in flight was answered with an error because its child went away.
    RequestFailedByRestart,
    /// A request in flight was answered with an error because its server did not
    /// answer within `mcp.answer_timeout`.
    RequestTimedOut,
    /// A new child did not answer `initialize` within the readiness timeout.
    ReadinessTimeout,
    /// The `--build` command failed; the running child was kept.
    BuildFailed,
    /// The supervisor is exiting (why, exit code).
    SupervisorExiting,
}

/// The append-only audit file.
#[derive(Debug)]
pub struct AuditLog {
    file: File,
    path: PathBuf,
    /// Asks the background syncer to fsync; `None` if it could not be started.
    syncer: Option<std::sync::mpsc::Sender<()>>,
}

impl AuditLog {
    /// Open (creating it and its directory if needed) `<dir>/audit.jsonl` for appending.
    ///
    /// # Errors
    /// The directory cannot be created or the file cannot be opened.
    pub fn open(dir: &Path) -> io::Result<Self> {
        std::fs::create_dir_all(dir)?;
        let path = dir.join("audit.jsonl");
        let file = crate::files::open_private_append(&path)?;
        let syncer = spawn_syncer(&file);
        Ok(AuditLog { file, path, syncer })
    }

    /// Where the log is.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Append the first event of a supervisor or bridge: what it runs, and how.
    ///
    /// # Errors
    /// As [`AuditLog::record`].
    pub fn record_started(&mut self, details: Value) -> io::Result<()> {
        self.record(AuditEvent::SupervisorStarted, None, None, details)
    }

    /// Append one event: written and flushed before returning, fsynced in the background
    /// (see [`AuditLog::sync`] for the barrier).
    ///
    /// # Errors
    /// Writing or syncing failed; the caller reports it and carries on.
    pub fn record(
        &mut self,
        event: AuditEvent,
        generation: Option<u64>,
        pid: Option<u32>,
        details: Value,
    ) -> io::Result<()> {
        let mut line = Map::new();
        line.insert("timestamp".to_owned(), Value::String(crate::mcp::iso_now()));
        line.insert("event_type".to_owned(), serde_json::to_value(event)?);
        line.insert(
            "generation".to_owned(),
            generation.map_or(Value::Null, Value::from),
        );
        line.insert("pid".to_owned(), pid.map_or(Value::Null, Value::from));
        if let Value::Object(details) = details {
            for (key, value) in details {
                line.entry(key).or_insert(value);
            }
        }
        let mut bytes = serde_json::to_vec(&Value::Object(line))?;
        bytes.push(b'\n');
        // One write call per line: with O_APPEND, lines from two supervisors sharing a
        // state directory interleave whole, never mixed.
        self.file.write_all(&bytes)?;
        self.file.flush()?;
        self.sync_soon();
        Ok(())
    }

    /// Make everything written so far durable now (fsync). The supervisor calls this
    /// before it stops a child and before it exits.
    ///
    /// # Errors
    /// The file system refused to sync.
    pub fn sync(&mut self) -> io::Result<()> {
        self.file.sync_data()
    }

    /// Ask the background syncer to fsync (the line is already with the OS, so only a
    /// machine crash in the next milliseconds could lose it); sync here if there is no
    /// syncer. Keeps fsync off the proxy's path except at the barriers.
    fn sync_soon(&mut self) {
        let queued = self.syncer.as_ref().is_some_and(|tx| tx.send(()).is_ok());
        if !queued {
            let _ = self.file.sync_data();
        }
    }
}

/// One thread that fsyncs the audit file whenever asked, folding requests that pile up
/// while it syncs into one. It ends when the log is dropped.
fn spawn_syncer(file: &File) -> Option<std::sync::mpsc::Sender<()>> {
    let file = file.try_clone().ok()?;
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    std::thread::Builder::new()
        .name("audit-sync".to_owned())
        .spawn(move || {
            while rx.recv().is_ok() {
                while rx.try_recv().is_ok() {}
                let _ = file.sync_data();
            }
        })
        .ok()?;
    Some(tx)
}

/// A duration as the audit log's `*_ms` details write it: whole milliseconds.
pub(super) fn millis(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use serde_json::json;

    use super::*;

    #[test]
    fn lines_are_appended_with_the_common_fields() {
        let dir = tempfile::tempdir().expect("tempdir");
        let state = dir.path().join("nested/state");
        let mut log = AuditLog::open(&state).expect("open");
        log.record(
            AuditEvent::RestartRequested,
            Some(3),
            Some(1234),
            json!({"reason": "edited", "source": "tool"}),
        )
        .expect("record");
        drop(log);
        let mut log = AuditLog::open(&state).expect("reopen");
        log.record(AuditEvent::SupervisorExiting, None, None, json!({}))
            .expect("record");
        let text = std::fs::read_to_string(log.path()).expect("read");
        let lines: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).expect("json line"))
            .collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0]["event_type"], "restart_requested");
        assert_eq!(lines[0]["generation"], 3);
        assert_eq!(lines[0]["pid"], 1234);
        assert_eq!(lines[0]["reason"], "edited");
        assert!(
            lines[0]["timestamp"]
                .as_str()
                .is_some_and(|t| t.ends_with('Z'))
        );
        assert_eq!(lines[1]["event_type"], "supervisor_exiting");
        assert_eq!(lines[1]["pid"], Value::Null);
        let mode = std::fs::metadata(log.path())
            .expect("meta")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn details_cannot_overwrite_the_common_fields() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut log = AuditLog::open(dir.path()).expect("open");
        log.record(
            AuditEvent::ServerStarted,
            Some(1),
            Some(9),
            json!({"event_type": "forged", "command": ["x"]}),
        )
        .expect("record");
        let text = std::fs::read_to_string(log.path()).expect("read");
        let line: Value = serde_json::from_str(text.trim()).expect("json");
        assert_eq!(line["event_type"], "server_started");
        assert_eq!(line["command"], json!(["x"]));
    }
}
