//! The store the state's unit tests start from: a fresh database holding one run and
//! its phase 1's first attempt.

use super::Store;

/// A store in a directory of its own (kept as long as the value), with one run of
/// `/p.md` and one attempt at its phase 1.
pub(super) struct OneAttempt {
    /// The database's directory.
    _dir: tempfile::TempDir,
    /// The store.
    pub(super) store: Store,
    /// The run's id.
    pub(super) run: String,
    /// The attempt's execution.
    pub(super) execution: i64,
}

impl OneAttempt {
    /// The store, the run and the attempt.
    pub(super) fn new() -> OneAttempt {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("store");
        let run = store.create_run("/p.md", "Plan").expect("run");
        let execution = store
            .start_execution(&run, "1", 1, false, None)
            .expect("execution");
        OneAttempt {
            _dir: dir,
            store,
            run,
            execution,
        }
    }
}
