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
    /// A stored value could not be read back.
    #[error("state database {} holds an unreadable value: {detail}", .path.display())]
    Corrupt {
        /// The database file.
        path: PathBuf,
        /// What was wrong.
        detail: String,
    },
}
