//! The compaction guard: how an agent's own "I am about to compact" reaches the session
//! that runs it, without going through the agent's output.
//!
//! The session makes a FIFO beside its transcript (`attempt-1-session-2.guard`) and names
//! it to the agent in [`GUARD_ENV`]. Claude Code runs every `PreCompact` hook in its
//! settings; debussy's own (passed with `--settings`, see
//! [`crate::agent::claude`]) runs `debussy __hook pre-compact`, which writes one line to
//! the FIFO ([`notify()`]) and blocks the compaction. The session reads the line
//! (`GuardPipe`) and stops the agent like a threshold stop, with reason
//! `agent_compaction_blocked`.
//!
//! Nobody listening (no variable, a session whose restarts are off, a debussy that died)
//! means the hook lets the compaction happen, as the agent would without debussy.
//!
//! The other way, the session tells the agent's `PostToolUse` hook to end the session
//! after the tool call that just returned (`StopMarker`): a file beside the transcript
//! (`attempt-1-session-2.stop`), named in [`STOP_ENV`], that exists once the session has
//! decided to stop. `debussy __hook post-tool-use` sees it ([`stop_marked`]) and answers
//! `{"continue": false}`, so Claude Code ends before its next model request.

use std::io::Write as _;
use std::os::unix::fs::{FileTypeExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};

use tokio::io::{AsyncBufReadExt as _, BufReader, Lines};
use tokio::net::unix::pipe;

/// What a session does when its agent is about to compact its own context.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CompactionGuard {
    /// Nothing: the agent compacts as it would without debussy (restarts are off).
    #[default]
    Off,
    /// Block the compaction and stop the session for a checkpoint restart.
    Stop,
    /// Block the compaction and let the session go on (a handoff: its one request fits
    /// the window, a summary of the context would be worth less than the context).
    Block,
}

pub use crate::run_env::{GUARD_ENV, STOP_ENV};

/// What the hook sends: one line.
const PRE_COMPACT_LINE: &str = "pre_compact";

/// The guard FIFO of the session whose transcript is `log_path`.
#[must_use]
pub fn guard_path(log_path: &Path) -> PathBuf {
    let stem = log_path
        .file_stem()
        .map(|stem| stem.to_string_lossy().into_owned())
        .unwrap_or_else(|| "session".to_owned());
    log_path.with_file_name(format!("{stem}.guard"))
}

/// The session's end of the FIFO: made on [`GuardPipe::open`], removed on drop.
#[derive(Debug)]
pub(super) struct GuardPipe {
    path: PathBuf,
    lines: Lines<BufReader<pipe::Receiver>>,
}

impl GuardPipe {
    /// Make the FIFO at `path` (replacing a leftover one) and open it for reading. It is
    /// held open for writing too, so a hook that writes and exits never ends the stream.
    pub(super) fn open(path: PathBuf) -> std::io::Result<GuardPipe> {
        match std::fs::remove_file(&path) {
            Ok(()) => {}
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
            Err(err) => return Err(err),
        }
        nix::unistd::mkfifo(
            &path,
            nix::sys::stat::Mode::S_IRUSR | nix::sys::stat::Mode::S_IWUSR,
        )
        .map_err(std::io::Error::from)?;
        let receiver = pipe::OpenOptions::new()
            .read_write(true)
            .open_receiver(&path)?;
        Ok(GuardPipe {
            path,
            lines: BufReader::new(receiver).lines(),
        })
    }

    /// The session's guard for `mode`: none when off, else the FIFO beside the transcript
    /// at `log_path`.
    pub(super) fn arm(mode: CompactionGuard, log_path: &Path) -> std::io::Result<Option<Self>> {
        match mode {
            CompactionGuard::Off => Ok(None),
            CompactionGuard::Stop | CompactionGuard::Block => {
                GuardPipe::open(guard_path(log_path)).map(Some)
            }
        }
    }

    /// Wait until the agent's hook announces a compaction; forever without a guard.
    pub(super) async fn heard(guard: Option<&mut GuardPipe>) {
        match guard {
            Some(guard) => guard.pre_compact().await,
            None => std::future::pending().await,
        }
    }

    /// The path to name in [`GUARD_ENV`].
    pub(super) fn path(&self) -> &Path {
        &self.path
    }

    /// Wait for the agent's hook to say it is about to compact.
    pub(super) async fn pre_compact(&mut self) {
        loop {
            match self.lines.next_line().await {
                Ok(Some(line)) if line.trim() == PRE_COMPACT_LINE => return,
                Ok(Some(_)) => {}
                // Held open for writing by ourselves, the stream cannot end; should it
                // fail, the guard is gone and the agent compacts as it would anyway.
                Ok(None) | Err(_) => std::future::pending::<()>().await,
            }
        }
    }
}

impl Drop for GuardPipe {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// The file a session creates once it decides to stop, for the agent's `PostToolUse`
/// hook; removed on drop.
#[derive(Debug)]
pub(super) struct StopMarker {
    path: PathBuf,
}

impl StopMarker {
    /// The marker of the session whose transcript is `log_path` (not created yet; a
    /// leftover one is removed).
    pub(super) fn beside(log_path: &Path) -> StopMarker {
        let stem = log_path
            .file_stem()
            .map(|stem| stem.to_string_lossy().into_owned())
            .unwrap_or_else(|| "session".to_owned());
        let path = log_path.with_file_name(format!("{stem}.stop"));
        let _ = std::fs::remove_file(&path);
        StopMarker { path }
    }

    /// The path to name in [`STOP_ENV`].
    pub(super) fn path(&self) -> &Path {
        &self.path
    }

    /// Mark the stop (idempotent).
    pub(super) fn set(&self) -> std::io::Result<()> {
        crate::files::write_private(&self.path, b"stop\n")
    }
}

impl Drop for StopMarker {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// From the hook: whether the session whose marker is `path` has decided to stop (the
/// marker is a regular file; a link or anything else is not a marker).
#[must_use]
pub fn stop_marked(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|meta| meta.file_type().is_file())
}

/// From the hook: tell the session listening on `path` that the agent is about to
/// compact. `Ok(true)` when a session heard it (the hook then blocks the compaction),
/// `Ok(false)` when nobody listens (no such FIFO, or no reader: let it compact).
///
/// # Errors
/// When the FIFO exists and has a reader but cannot be written.
pub fn notify(path: &Path) -> std::io::Result<bool> {
    match std::fs::metadata(path) {
        Ok(meta) if meta.file_type().is_fifo() => {}
        Ok(_) => return Ok(false),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(err) => return Err(err),
    }
    let opened = std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(nix::libc::O_NONBLOCK)
        .open(path);
    let mut fifo = match opened {
        Ok(fifo) => fifo,
        Err(err)
            if err.kind() == std::io::ErrorKind::NotFound
                || err.raw_os_error() == Some(nix::libc::ENXIO) =>
        {
            return Ok(false);
        }
        Err(err) => return Err(err),
    };
    fifo.write_all(format!("{PRE_COMPACT_LINE}\n").as_bytes())?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn the_guard_sits_beside_the_transcript() {
        assert_eq!(
            guard_path(Path::new("/p/runs/r/1/attempt-1-session-2.jsonl")),
            PathBuf::from("/p/runs/r/1/attempt-1-session-2.guard")
        );
    }

    #[tokio::test]
    async fn a_hook_that_writes_is_heard_and_the_fifo_is_removed_after() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("s.guard");
        let mut pipe = GuardPipe::open(path.clone()).expect("open");
        assert_eq!(pipe.path(), path);
        let writer = {
            let path = path.clone();
            tokio::task::spawn_blocking(move || notify(&path))
        };
        tokio::time::timeout(Duration::from_secs(10), pipe.pre_compact())
            .await
            .expect("heard in time");
        assert!(writer.await.expect("join").expect("write"));
        drop(pipe);
        assert!(!path.exists());
    }

    #[test]
    fn the_stop_marker_is_made_on_demand_and_removed_after() {
        let dir = tempfile::tempdir().expect("tempdir");
        let log = dir.path().join("attempt-1-session-1.jsonl");
        let marker = StopMarker::beside(&log);
        assert_eq!(marker.path(), dir.path().join("attempt-1-session-1.stop"));
        assert!(!stop_marked(marker.path()));
        marker.set().expect("set");
        marker.set().expect("set again");
        assert!(stop_marked(marker.path()));
        let path = marker.path().to_path_buf();
        drop(marker);
        assert!(!stop_marked(&path));
        std::os::unix::fs::symlink(&log, &path).expect("link");
        assert!(!stop_marked(&path), "a link is not a marker");
    }

    #[test]
    fn nobody_listening_lets_the_compaction_happen() {
        let dir = tempfile::tempdir().expect("tempdir");
        assert!(!notify(&dir.path().join("missing.guard")).expect("no file"));
        let plain = dir.path().join("plain.guard");
        std::fs::write(&plain, "").expect("write");
        assert!(!notify(&plain).expect("not a fifo"));
        let orphan = dir.path().join("orphan.guard");
        nix::unistd::mkfifo(
            &orphan,
            nix::sys::stat::Mode::S_IRUSR | nix::sys::stat::Mode::S_IWUSR,
        )
        .expect("mkfifo");
        assert!(!notify(&orphan).expect("no reader"));
    }
}
