//! The restart lock: `restart.lock` in the state directory, held while a bridge stops,
//! starts or waits for the daemon, so bridges that share a daemon run one restart at a
//! time and the others find the new daemon instead of starting a second one.

use std::fs::{File, OpenOptions, TryLockError};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::time::{Duration, Instant};

const LOCK_FILE: &str = "restart.lock";

/// The held lock; dropping it releases it (the kernel does, if the process dies).
#[derive(Debug)]
pub(crate) struct RestartLock {
    _file: File,
}

/// Take the lock, waiting at most `within`.
///
/// # Errors
/// The file cannot be opened, or another bridge held the lock the whole time.
pub(crate) async fn acquire(dir: &Path, within: Duration) -> Result<RestartLock, String> {
    let path = dir.join(LOCK_FILE);
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(&path)
        .map_err(|err| format!("cannot open {}: {err}", path.display()))?;
    let deadline = Instant::now() + within;
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(RestartLock { _file: file }),
            Err(TryLockError::WouldBlock) if Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            Err(TryLockError::WouldBlock) => {
                return Err(format!(
                    "another bridge held {} for over {} s",
                    path.display(),
                    within.as_secs()
                ));
            }
            Err(TryLockError::Error(err)) => {
                return Err(format!("cannot lock {}: {err}", path.display()));
            }
        }
    }
}

/// Whether another bridge holds the lock right now (a restart is under way).
pub(crate) fn held_elsewhere(dir: &Path) -> bool {
    let Ok(file) = File::open(dir.join(LOCK_FILE)) else {
        return false;
    };
    matches!(file.try_lock(), Err(TryLockError::WouldBlock))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn one_holder_at_a_time() {
        let dir = tempfile::tempdir().expect("tempdir");
        let held = acquire(dir.path(), Duration::ZERO).await.expect("first");
        let refused = acquire(dir.path(), Duration::from_millis(30)).await;
        assert!(refused.is_err(), "{refused:?}");
        drop(held);
        acquire(dir.path(), Duration::ZERO)
            .await
            .expect("after release");
    }
}
