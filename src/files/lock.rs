//! [`PidLock`]: the one lock file type. An advisory `flock(2)` lock on a file that names
//! its holder, used for a project's run (`.debussy/runs/run.lock`), a supervisor's state
//! directory and a bridge's daemon restarts.
//!
//! The kernel drops the lock when the holder's process dies however it dies, so a killed
//! holder never leaves a stale lock. The file is opened close-on-exec (children never
//! inherit, and never prolong, the lock) and without following links: a link committed
//! where the lock belongs is refused, never written through.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::write::refuse_link;

/// A held lock; dropping it (or the process dying) releases it.
#[derive(Debug)]
pub struct PidLock {
    file: File,
    path: PathBuf,
}

/// What the lock file said about the process holding it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockHeld {
    /// The lock file.
    pub path: PathBuf,
    /// The holder's pid, when the file names one.
    pub pid: Option<u32>,
    /// What the holder wrote after its pid (a run id, for the run lock).
    pub note: String,
}

/// Why a [`PidLock`] could not be taken.
#[derive(Debug, thiserror::Error)]
pub enum PidLockError {
    /// Another live process holds it.
    #[error("{} is held by another process{}", .0.path.display(), .0.pid.map(|p| format!(" (pid {p})")).unwrap_or_default())]
    Held(LockHeld),
    /// The file cannot be opened or locked (a link in its place is refused here).
    #[error("lock {}", path.display())]
    Io {
        /// The lock file.
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
}

impl PidLock {
    /// Take the lock at `path` without waiting, creating the file (mode 0600) if needed,
    /// and record this process's pid followed by `note`.
    ///
    /// # Errors
    /// [`PidLockError::Held`] naming the holder when another live process has it;
    /// [`PidLockError::Io`] when the file cannot be opened or is a link.
    pub fn try_acquire(path: &Path, note: &str) -> Result<PidLock, PidLockError> {
        let mut file = open(path)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                return Err(PidLockError::Held(read_holder(path, &mut file)));
            }
            Err(TryLockError::Error(source)) => {
                return Err(PidLockError::Io {
                    path: path.to_owned(),
                    source,
                });
            }
        }
        let mut lock = PidLock {
            file,
            path: path.to_owned(),
        };
        lock.record(note).map_err(|source| PidLockError::Io {
            path: path.to_owned(),
            source,
        })?;
        Ok(lock)
    }

    /// Take the lock at `path`, waiting at most `within` for another holder to let go.
    ///
    /// # Errors
    /// As [`PidLock::try_acquire`], once `within` has passed.
    pub async fn acquire_within(
        path: &Path,
        note: &str,
        within: Duration,
    ) -> Result<PidLock, PidLockError> {
        let deadline = Instant::now() + within;
        loop {
            match PidLock::try_acquire(path, note) {
                Err(PidLockError::Held(_)) if Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                other => return other,
            }
        }
    }

    /// Whether another process holds the lock at `path` right now.
    #[must_use]
    pub fn held_elsewhere(path: &Path) -> bool {
        let Ok(file) = OpenOptions::new()
            .read(true)
            .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK)
            .open(path)
        else {
            return false;
        };
        matches!(file.try_lock(), Err(TryLockError::WouldBlock))
    }

    /// Rewrite what the lock says: this process's pid, then `note`.
    ///
    /// # Errors
    /// The file cannot be written.
    pub fn record(&mut self, note: &str) -> io::Result<()> {
        self.file.set_len(0)?;
        self.file.seek(SeekFrom::Start(0))?;
        if note.is_empty() {
            writeln!(self.file, "{}", std::process::id())?;
        } else {
            writeln!(self.file, "{} {note}", std::process::id())?;
        }
        self.file.flush()
    }

    /// The lock file.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }
}

fn open(path: &Path) -> Result<File, PidLockError> {
    let io = |source| PidLockError::Io {
        path: path.to_owned(),
        source,
    };
    // Not truncated on open: the holder's pid must stay readable for a refusal.
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK)
        .open(path)
        .map_err(|err| io(refuse_link(path, err)))?;
    if !file.metadata().map_err(io)?.is_file() {
        return Err(io(io::Error::new(
            io::ErrorKind::InvalidInput,
            "it is not a regular file",
        )));
    }
    Ok(file)
}

fn read_holder(path: &Path, file: &mut File) -> LockHeld {
    let mut text = String::new();
    let _ = file.take(4096).read_to_string(&mut text);
    let mut words = text.split_whitespace();
    let pid = words.next().and_then(|w| w.parse().ok());
    let note = words.collect::<Vec<_>>().join(" ");
    LockHeld {
        path: path.to_owned(),
        pid,
        note,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_holder_is_refused_with_the_first_named_until_it_lets_go() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("run.lock");
        let mut first = PidLock::try_acquire(&path, "starting").expect("first");
        first.record("run-1").expect("record");
        match PidLock::try_acquire(&path, "") {
            Err(PidLockError::Held(held)) => {
                assert_eq!(held.pid, Some(std::process::id()));
                assert_eq!(held.note, "run-1");
            }
            other => panic!("expected Held, got {other:?}"),
        }
        assert!(PidLock::held_elsewhere(&path));
        drop(first);
        assert!(!PidLock::held_elsewhere(&path));
        PidLock::try_acquire(&path, "").expect("free after drop");
    }

    #[test]
    fn a_link_where_the_lock_belongs_is_refused_and_its_target_untouched() {
        let (_dir, outside, path) = super::super::link_to_precious("run.lock");
        let err = PidLock::try_acquire(&path, "x").expect_err("a link");
        assert!(err.to_string().contains("run.lock"), "{err}");
        assert!(
            std::error::Error::source(&err)
                .is_some_and(|s| s.to_string().contains("symbolic link")),
            "{err:?}"
        );
        assert_eq!(std::fs::read_to_string(&outside).expect("read"), "precious");
    }

    #[tokio::test]
    async fn waiting_gives_up_after_the_deadline() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("restart.lock");
        let held = PidLock::try_acquire(&path, "").expect("first");
        let refused = PidLock::acquire_within(&path, "", Duration::from_millis(30)).await;
        assert!(matches!(refused, Err(PidLockError::Held(_))), "{refused:?}");
        drop(held);
        PidLock::acquire_within(&path, "", Duration::ZERO)
            .await
            .expect("after release");
    }
}
