//! [`StateError`]: what can go wrong with the state database, naming the file and what
//! was being done.

use std::path::PathBuf;

/// Errors from the state store.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum StateError {
    /// The `.debussy` directory could not be created.
    #[error("failed to create {}", .path.display())]
    CreateDir {
        /// The directory.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The database file, or a journal file beside it, cannot be opened for writing:
    /// made read-only or mounted so, another user's, or not a regular file.
    #[error("cannot open state database {} for writing", .path.display())]
    #[diagnostic(help("{}", unopenable_help(.source)))]
    Unopenable {
        /// The database file.
        path: PathBuf,
        /// What the OS said, or what is in the file's place.
        #[source]
        source: std::io::Error,
    },
    /// SQLite failed.
    #[error("state database {} failed while trying to {action}", .path.display())]
    Sqlite {
        /// The database file.
        path: PathBuf,
        /// What was being done.
        action: &'static str,
        /// SQLite's error.
        #[source]
        source: rusqlite::Error,
    },
    /// The disk that holds the database is full (or the user's quota spent).
    #[error(
        "state database {} failed while trying to {action}: the disk that holds it is full",
        .path.display()
    )]
    #[diagnostic(help(
        "free space on that disk (`df -h {}` says how much is left), then run debussy again: a run it paused goes on with `debussy run --resume`",
        .path.parent().unwrap_or(.path).display()
    ))]
    DiskFull {
        /// The database file.
        path: PathBuf,
        /// What was being done.
        action: &'static str,
        /// SQLite's error.
        #[source]
        source: rusqlite::Error,
    },
    /// Another process held the database's write lock for longer than a write waits.
    #[error(
        "state database {} is locked by another process{}, which kept it past the {} wait while debussy tried to {action}",
        .path.display(),
        .holder.as_ref().map(|holder| format!(" ({holder})")).unwrap_or_default(),
        wait_in_words(*.waited)
    )]
    #[diagnostic(help(
        "a program with a transaction open on it holds the lock (a `sqlite3` shell, a database browser); `fuser {}` names it. Close it, then run debussy again",
        .path.display()
    ))]
    Locked {
        /// The database file.
        path: PathBuf,
        /// What was being done.
        action: &'static str,
        /// How long debussy waited.
        waited: std::time::Duration,
        /// The process holding the lock, when the system says (`process 4242, sqlite3`).
        holder: Option<String>,
    },
    /// The database was written by a newer debussy.
    #[error(
        "state database {} has schema version {found}, newer than this debussy understands ({known}); upgrade debussy",
        .path.display()
    )]
    TooNew {
        /// The database file.
        path: PathBuf,
        /// Version found.
        found: usize,
        /// Newest version known.
        known: usize,
    },
    /// The database, which cannot be written here, was written by an older debussy.
    #[error(
        "state database {} has schema version {found}, older than this debussy's ({known}), and cannot be written here to bring it up to date",
        .path.display()
    )]
    #[diagnostic(help(
        "run this debussy once where the database can be written (`debussy status` in the project, as its owner), or the debussy that wrote it"
    ))]
    Unmigrated {
        /// The database file.
        path: PathBuf,
        /// Version found.
        found: usize,
        /// Newest version known.
        known: usize,
    },
    /// A stored value could not be read back.
    #[error("state database {} holds an unreadable value: {detail}", .path.display())]
    Corrupt {
        /// The database file.
        path: PathBuf,
        /// What was wrong.
        detail: String,
    },
}

impl StateError {
    /// Whether the error says the database or its directory cannot be written here (a
    /// read-only mount, another user's files), when it could still be read.
    #[must_use]
    pub fn is_unwritable(&self) -> bool {
        match self {
            StateError::CreateDir { source, .. } | StateError::Unopenable { source, .. } => {
                matches!(
                    source.kind(),
                    std::io::ErrorKind::ReadOnlyFilesystem | std::io::ErrorKind::PermissionDenied
                )
            }
            StateError::Sqlite { source, .. } => matches!(
                source.sqlite_error_code(),
                Some(rusqlite::ErrorCode::ReadOnly | rusqlite::ErrorCode::CannotOpen)
            ),
            _ => false,
        }
    }

    /// Whether the error says the disk that holds the database is full (SQLite's
    /// "database or disk is full", or the system's "no space left" or "quota exceeded"
    /// where the directory was made): nothing more can be recorded until there is room.
    #[must_use]
    pub fn is_out_of_space(&self) -> bool {
        match self {
            StateError::CreateDir { source, .. } | StateError::Unopenable { source, .. } => {
                crate::files::is_out_of_space(source)
            }
            StateError::DiskFull { .. } => true,
            _ => false,
        }
    }
}

/// `10-second`, `100-millisecond`.
fn wait_in_words(waited: std::time::Duration) -> String {
    if waited.subsec_millis() == 0 {
        format!("{}-second", waited.as_secs())
    } else {
        format!("{}-millisecond", waited.as_millis())
    }
}

/// How to free a database that cannot be opened for writing, by what the OS said.
fn unopenable_help(source: &std::io::Error) -> &'static str {
    match source.kind() {
        std::io::ErrorKind::ReadOnlyFilesystem | std::io::ErrorKind::PermissionDenied => {
            "make the file (and its -wal and -shm beside it) writable by your user: look for the owner and mode, or a read-only mount. `debussy status` still reads it as it stands"
        }
        _ => {
            "put the database file itself in that place, or move what is there away (debussy then begins a new history)"
        }
    }
}
