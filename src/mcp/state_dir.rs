//! The state directory's ownership: one live supervisor per directory, held with an
//! advisory lock on `<state-dir>/supervisor.lock` that records the holder's pid, and the
//! `.gitignore` that keeps `.debussy/mcp/` out of git where `debussy init` never ran.
//!
//! Two supervisors writing one directory would interleave their audit lines and
//! overwrite each other's restart markers, so the second is refused while the first
//! lives. The lock is `flock`-style: the kernel drops it when the holder exits, however
//! it exits, so a supervisor that was killed never leaves a stale lock behind.

use std::io;
use std::path::{Path, PathBuf};

use crate::files::{PidLock, PidLockError};

/// Name of the lock file inside the state directory.
pub(crate) const LOCK_FILE: &str = "supervisor.lock";

/// Why the state directory cannot be taken.
#[derive(Debug, thiserror::Error)]
pub enum StateDirError {
    /// Another live supervisor holds the directory.
    #[error(
        "use the state directory {}: another supervisor{} is using it",
        path.display(),
        pid.map(|pid| format!(" (pid {pid})")).unwrap_or_default()
    )]
    InUse {
        /// The directory.
        path: PathBuf,
        /// The holder's pid, if it could be read.
        pid: Option<u32>,
    },
    /// The directory or its lock file cannot be created or locked.
    #[error("create the state directory {}", path.display())]
    Io {
        /// The directory.
        path: PathBuf,
        /// What the OS said.
        #[source]
        source: io::Error,
    },
}

/// The lock on a state directory; dropping it releases the directory.
#[derive(Debug)]
pub(crate) struct StateDirLock {
    _lock: PidLock,
}

/// Create `dir` if needed and take it for this process, or say who holds it.
pub(crate) fn lock(dir: &Path) -> Result<StateDirLock, StateDirError> {
    let io_error = |source| StateDirError::Io {
        path: dir.to_owned(),
        source,
    };
    std::fs::create_dir_all(dir).map_err(io_error)?;
    match PidLock::try_acquire(&dir.join(LOCK_FILE), "") {
        Ok(lock) => Ok(StateDirLock { _lock: lock }),
        Err(PidLockError::Held(held)) => Err(StateDirError::InUse {
            path: dir.to_owned(),
            pid: held.pid,
        }),
        Err(PidLockError::Io { source, .. }) => Err(io_error(source)),
    }
}

/// Keep `.debussy/mcp/` (the parent of default state directories, `mcp_dir`) out of git
/// when `debussy init` never wrote `.debussy/.gitignore`, which covers it.
///
/// # Errors
/// The directory or the file cannot be written.
pub(crate) fn ignore_in_git(mcp_dir: &Path) -> io::Result<()> {
    let covered = mcp_dir
        .parent()
        .is_some_and(|debussy| debussy.join(".gitignore").exists());
    let ignore = mcp_dir.join(".gitignore");
    if covered || ignore.exists() {
        return Ok(());
    }
    std::fs::create_dir_all(mcp_dir)?;
    std::fs::write(
        ignore,
        "# State of `debussy mcp supervise` and `debussy mcp bridge` (audit logs, restart markers, daemon logs).\n*\n",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_held_directory_names_its_holder_and_is_free_once_released() {
        let dir = tempfile::tempdir().expect("tempdir");
        let state = dir.path().join("a/b");
        let held = lock(&state).expect("first lock");
        let pid = std::fs::read_to_string(state.join(LOCK_FILE)).expect("lock file");
        assert_eq!(pid.trim(), std::process::id().to_string());
        match lock(&state) {
            Err(StateDirError::InUse { pid, .. }) => assert_eq!(pid, Some(std::process::id())),
            other => panic!("expected InUse, got {other:?}"),
        }
        drop(held);
        lock(&state).expect("free again");
    }

    #[test]
    fn the_mcp_directory_is_ignored_unless_init_covered_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mcp = dir.path().join(".debussy/mcp");
        ignore_in_git(&mcp).expect("write");
        let text = std::fs::read_to_string(mcp.join(".gitignore")).expect("read");
        assert_eq!(text.lines().last(), Some("*"));

        let other = tempfile::tempdir().expect("tempdir");
        let debussy = other.path().join(".debussy");
        std::fs::create_dir_all(&debussy).expect("mkdir");
        std::fs::write(debussy.join(".gitignore"), "mcp/\n").expect("write");
        ignore_in_git(&debussy.join("mcp")).expect("nothing to do");
        assert!(!debussy.join("mcp/.gitignore").exists());
    }
}
