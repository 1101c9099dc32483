//! A full disk under a run. The first write that finds no room (the state database, a
//! file of debussy's own, git's objects or a worktree's files) pauses the run at its
//! next step: the running sessions are
//! stopped, no gate, fix session or retry is started on work that cannot be recorded,
//! and `--resume` goes on once there is room.

use std::error::Error;
use std::fmt;

use crate::git::{GitCommandError, GitError};
use crate::session::{SpawnCause, SpawnFailure};
use crate::state::StateError;

/// What debussy was writing when the disk was found full, and the error that said so.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NoSpace {
    /// What could not be done, e.g. "record the session".
    what: String,
    /// The error and its causes, on one line.
    cause: String,
}

impl NoSpace {
    /// `err` as a full disk while debussy tried to `what`, when it or one of its causes
    /// says the disk is full (or the quota spent).
    pub(crate) fn in_error(what: &str, err: &(dyn Error + 'static)) -> Option<NoSpace> {
        let says_full = |err: &(dyn Error + 'static)| {
            err.downcast_ref::<StateError>()
                .is_some_and(StateError::is_out_of_space)
                || err
                    .downcast_ref::<std::io::Error>()
                    .is_some_and(crate::files::is_out_of_space)
                || err
                    .downcast_ref::<GitCommandError>()
                    .is_some_and(GitCommandError::is_out_of_space)
                || err
                    .downcast_ref::<GitError>()
                    .is_some_and(GitError::is_out_of_space)
        };
        let mut link = Some(err);
        while let Some(error) = link {
            if says_full(error) {
                return Some(NoSpace {
                    what: what.to_owned(),
                    cause: crate::error_chain::error_chain(err),
                });
            }
            link = error.source();
        }
        None
    }
}

impl NoSpace {
    /// The full disk a session found before its agent started (its directory, its
    /// transcript or the agent's home could not be made), when `failure` says so.
    pub(crate) fn at_session_start(failure: &SpawnFailure) -> Option<NoSpace> {
        (failure.cause == SpawnCause::DiskFull).then(|| NoSpace {
            what: "start the agent's session".to_owned(),
            cause: failure.message.clone(),
        })
    }
}

impl fmt::Display for NoSpace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the disk is full: debussy could not {} ({}). Free space on it, then resume the run",
            self.what, self.cause
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::Store;

    /// A store whose database may not grow past the pages it has: SQLite then fails
    /// every write that needs a new page with "database or disk is full", as it does
    /// on a full disk.
    fn full_store(dir: &std::path::Path) -> Store {
        let store = Store::open(dir).expect("open");
        store.cap_pages_for_test();
        store
    }

    #[test]
    fn a_database_that_cannot_grow_is_a_full_disk_and_says_so() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = full_store(dir.path());
        let err = (0..1000)
            .find_map(|i| {
                store
                    .learn_context_window(&format!("model-{i}-{}", "x".repeat(500)), 1)
                    .err()
            })
            .expect("a write fails once the pages run out");
        assert!(err.is_out_of_space(), "{err:?}");
        let full = NoSpace::in_error("remember a context window", &err).expect("no space");
        let said = full.to_string();
        assert!(
            said.starts_with(
                "the disk is full: debussy could not remember a context window (state database "
            ),
            "{said}"
        );
        assert!(
            said.ends_with("database or disk is full). Free space on it, then resume the run"),
            "{said}"
        );
    }

    #[test]
    fn the_systems_and_gits_no_space_are_a_full_disk_other_failures_are_not() {
        for (kind, full) in [
            (std::io::ErrorKind::StorageFull, true),
            (std::io::ErrorKind::QuotaExceeded, true),
            (std::io::ErrorKind::PermissionDenied, false),
            (std::io::ErrorKind::ReadOnlyFilesystem, false),
        ] {
            let err = StateError::CreateDir {
                path: "/p/.debussy".into(),
                source: std::io::Error::from(kind),
            };
            assert_eq!(
                NoSpace::in_error("create the state directory", &err).is_some(),
                full,
                "{kind:?}"
            );
            assert_eq!(err.is_out_of_space(), full, "{kind:?}");
        }
        let checkout = GitCommandError {
            command: "worktree add -q -b debussy/r/phase-1 wt refs/heads/main".into(),
            message: "error: unable to write file big.bin\nfatal: Could not reset index file to revision 'HEAD'.".into(),
        };
        assert!(NoSpace::in_error("make the phase's worktree", &checkout).is_some());
        let objects = GitCommandError {
            command: "add -A".into(),
            message: "fatal: unable to write loose object file: No space left on device".into(),
        };
        assert!(NoSpace::in_error("commit", &objects).is_some());
        // As a commit reports it: the command's error is the commit's, transparently.
        assert!(NoSpace::in_error("commit", &GitError::Command(objects)).is_some());
        let conflict = GitCommandError {
            command: "merge".into(),
            message: "CONFLICT (content): Merge conflict in a.txt".into(),
        };
        assert!(NoSpace::in_error("merge", &conflict).is_none());
        let locked = StateError::Locked {
            path: "/p/.debussy/state.db".into(),
            action: "record a session",
            waited: std::time::Duration::from_secs(10),
            holder: None,
        };
        assert!(NoSpace::in_error("record the session", &locked).is_none());
    }

    #[test]
    fn a_session_the_disk_had_no_room_to_start_is_a_full_disk_and_says_what_was_full() {
        let full = std::io::Error::from(std::io::ErrorKind::StorageFull);
        let failure = SpawnFailure::making("create the session log /p/s.jsonl".into(), &full, None);
        let said = NoSpace::at_session_start(&failure)
            .expect("a full disk")
            .to_string();
        assert!(
            said.starts_with(
                "the disk is full: debussy could not start the agent's session (create the session log /p/s.jsonl: "
            ),
            "{said}"
        );
        assert!(
            said.ends_with("Free space on it, then resume the run"),
            "{said}"
        );
        let missing = std::io::Error::from(std::io::ErrorKind::NotFound);
        let failure = SpawnFailure::making("start `claude`".into(), &missing, None);
        assert!(NoSpace::at_session_start(&failure).is_none());
    }
}
