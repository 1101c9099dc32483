//! The restart lock: `restart.lock` in the state directory, held while a bridge stops,
//! starts or waits for the daemon, so bridges that share a daemon run one restart at a
//! time and the others find the new daemon instead of starting a second one.

use std::path::Path;
use std::time::Duration;

use crate::files::{PidLock, PidLockError};

const LOCK_FILE: &str = "restart.lock";

/// Longer than any one restart holds the lock: stop (SIGTERM grace, SIGKILL) and slack.
pub(crate) const LOCK_SLACK: Duration = Duration::from_secs(10);

/// The held lock; dropping it releases it (the kernel does, if the process dies).
#[derive(Debug)]
pub(crate) struct RestartLock {
    _lock: PidLock,
}

/// Take the lock, waiting at most `within`.
///
/// # Errors
/// The file cannot be opened, or another bridge held the lock the whole time.
pub(crate) async fn acquire(dir: &Path, within: Duration) -> Result<RestartLock, String> {
    let path = dir.join(LOCK_FILE);
    match PidLock::acquire_within(&path, "", within).await {
        Ok(lock) => Ok(RestartLock { _lock: lock }),
        Err(PidLockError::Held(_)) => Err(format!(
            "another bridge held {} for over {} s",
            path.display(),
            within.as_secs()
        )),
        Err(err @ PidLockError::Io { .. }) => Err(crate::error_chain::error_chain(&err)),
    }
}

/// Whether another bridge holds the lock right now (a restart is under way).
pub(crate) fn held_elsewhere(dir: &Path) -> bool {
    PidLock::held_elsewhere(&dir.join(LOCK_FILE))
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
