//! One run per project: an advisory lock on `.debussy/runs/run.lock`, held for a run's
//! whole life, that names the run holding it. (It lives under `runs/` because runs keep
//! that directory out of commits: `vcs::ignore_run_data`.)
//!
//! The lock is a [`PidLock`]: the kernel drops it when the process dies however it dies,
//! agent processes never inherit it, and a link in its place is refused, never written
//! through. Its text is `pid run-id`, read by a refused run to say who holds it.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::files::{PidLock, PidLockError};
use crate::state::PRIVATE_DIR_MODE;

/// The lock file, relative to the project root.
pub const LOCK_FILE: &str = ".debussy/runs/run.lock";

/// Why the run lock could not be taken.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum LockError {
    /// Another `debussy run` of this project is live.
    #[error(
        "failed to start: another run of this project is live: run {run_id} (pid {pid}) holds {}",
        .path.display()
    )]
    #[diagnostic(help(
        "wait for it to finish, or stop it: Ctrl-C in its terminal or `kill -INT {pid}` pauses it (continue later with --resume)"
    ))]
    Held {
        /// The lock file.
        path: PathBuf,
        /// The live run's process.
        pid: String,
        /// The live run's id (`unknown` while it is still starting).
        run_id: String,
    },
    /// The lock file or `.debussy/` could not be prepared.
    #[error("failed to prepare the run lock {}", .path.display())]
    Io {
        /// The path.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

/// The held lock; dropping it (or the process dying) releases it.
#[derive(Debug)]
pub struct RunLock(PidLock);

/// Take the project's run lock, then keep `.debussy/`'s run data out of git
/// (`vcs::ignore_run_data`) before anything else is written there: a run refused after
/// this (a dirty tree, a failed check) leaves nothing for `git add -A` to sweep in.
///
/// # Errors
/// [`super::RunError::Locked`] as [`RunLock::acquire`] says;
/// [`super::RunError::Prepare`] when the repository's `info/exclude` cannot be written.
pub fn take(root: &Path) -> Result<RunLock, super::RunError> {
    let lock = RunLock::acquire(root)?;
    crate::git::vcs::ignore_run_data(root).map_err(|source| super::RunError::Prepare {
        path: root.join(".debussy").display().to_string(),
        source,
    })?;
    Ok(lock)
}

/// Create `.debussy/` readable by its owner only, narrowing the mode of an existing one.
/// A link in its place (a repository may commit one) is refused, never followed.
///
/// # Errors
/// When the directory cannot be created or its mode set, or is a link.
pub fn prepare_run_dir(root: &Path) -> std::io::Result<PathBuf> {
    let dir = crate::files::private_dir(root, Path::new(".debussy"))?;
    let mode = std::fs::symlink_metadata(&dir)?.permissions().mode() & 0o777;
    if mode != PRIVATE_DIR_MODE {
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(PRIVATE_DIR_MODE))?;
    }
    Ok(dir)
}

impl RunLock {
    /// Take the project's run lock without waiting.
    ///
    /// # Errors
    /// [`LockError::Held`] when another live process holds it; [`LockError::Io`] when the
    /// file cannot be opened.
    pub fn acquire(root: &Path) -> Result<RunLock, LockError> {
        let path = root.join(LOCK_FILE);
        let io = |source| LockError::Io {
            path: path.clone(),
            source,
        };
        prepare_run_dir(root).map_err(io)?;
        if let Some(dir) = Path::new(LOCK_FILE).parent() {
            crate::files::private_dir(root, dir).map_err(io)?;
        }
        match PidLock::try_acquire(&path, "starting") {
            Ok(lock) => Ok(RunLock(lock)),
            Err(PidLockError::Held(held)) => Err(LockError::Held {
                path,
                pid: held
                    .pid
                    .map_or_else(|| "unknown".to_owned(), |pid| pid.to_string()),
                run_id: if held.note.is_empty() {
                    "unknown".to_owned()
                } else {
                    held.note
                },
            }),
            Err(PidLockError::Io { source, .. }) => Err(io(source)),
        }
    }

    /// Name the run holding the lock (written next to this process's pid).
    ///
    /// # Errors
    /// When the lock file cannot be written.
    pub fn record(&mut self, run_id: &str) -> std::io::Result<()> {
        self.0.record(run_id)
    }

    /// The lock file.
    #[must_use]
    pub fn path(&self) -> &Path {
        self.0.path()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_is_refused_naming_the_holder_and_freed_on_drop() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut first = RunLock::acquire(dir.path()).expect("first");
        first.record("run-1").expect("record");
        match RunLock::acquire(dir.path()) {
            Err(LockError::Held { pid, run_id, .. }) => {
                assert_eq!(pid, std::process::id().to_string());
                assert_eq!(run_id, "run-1");
            }
            other => panic!("expected Held, got {other:?}"),
        }
        drop(first);
        RunLock::acquire(dir.path()).expect("free after drop");
    }

    #[test]
    fn the_run_directory_is_made_private() {
        let dir = tempfile::tempdir().expect("tempdir");
        let run_dir = dir.path().join(".debussy");
        std::fs::create_dir(&run_dir).expect("mkdir");
        std::fs::set_permissions(&run_dir, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let lock = RunLock::acquire(dir.path()).expect("lock");
        let mode = |p: &Path| std::fs::metadata(p).expect("meta").permissions().mode() & 0o777;
        assert_eq!(mode(&run_dir), 0o700);
        assert_eq!(mode(lock.path()), 0o600);
    }
}
