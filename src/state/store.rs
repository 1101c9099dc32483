//! [`Store`]: the open database, how it is opened (private file modes, WAL, busy
//! timeout) and migrated, and the error helpers the table modules share.

use std::fmt::Write as _;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::Connection;

use super::{PRIVATE_DIR_MODE, PRIVATE_FILE_MODE, STATE_DB, StateError, schema};

/// How long a write waits for another process's transaction before failing.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a write that the next one of its kind replaces waits instead: the running
/// session's figures, written by the run's one task on every model request while it
/// also takes in the agent's output and the user's requests, which must not stand
/// still behind another process's lock.
const BRIEF_BUSY_TIMEOUT: Duration = Duration::from_millis(100);

/// An open state database.
#[derive(Debug)]
pub struct Store {
    pub(super) conn: Connection,
    pub(super) path: PathBuf,
}

impl Store {
    /// Keep the database from growing past the pages it has now, as a full disk
    /// would: every write that needs another page then fails.
    #[cfg(test)]
    pub(crate) fn cap_pages_for_test(&self) {
        let pages: i64 = self
            .conn
            .query_row("PRAGMA page_count", [], |row| row.get(0))
            .expect("page count");
        self.conn
            .pragma_update(None, "max_page_count", pages)
            .expect("cap the pages");
    }

    /// Open (creating if needed) the project's `.debussy/state.db` and migrate it.
    ///
    /// # Errors
    /// When the file cannot be created or opened, or was written by a newer debussy.
    pub fn open(project_root: &Path) -> Result<Store, StateError> {
        let dir = Path::new(STATE_DB).parent().unwrap_or(Path::new(""));
        crate::files::private_dir(project_root, dir).map_err(|source| StateError::CreateDir {
            path: project_root.join(dir),
            source,
        })?;
        Store::open_at(&project_root.join(STATE_DB))
    }

    /// Open the project's store if it exists; `None` when no run has happened yet.
    ///
    /// # Errors
    /// As [`Store::open`].
    pub fn open_existing(project_root: &Path) -> Result<Option<Store>, StateError> {
        let path = project_root.join(STATE_DB);
        if path.symlink_metadata().is_ok() {
            Store::open(project_root).map(Some)
        } else {
            Ok(None)
        }
    }

    /// Open the project's store to read it, if it exists: as [`Store::open_existing`], and
    /// where the database cannot be written (a read-only mount, another user's project,
    /// a full disk) as it stands on disk, read-only, when this debussy knows its schema.
    ///
    /// # Errors
    /// As [`Store::open_existing`], when reading it read-only fails too.
    pub fn open_to_read(project_root: &Path) -> Result<Option<Store>, StateError> {
        match Store::open_existing(project_root) {
            Err(err) if err.is_unwritable() || err.is_out_of_space() => {
                match Store::open_read_only(&project_root.join(STATE_DB)) {
                    Ok(store) => Ok(Some(store)),
                    Err(schema @ (StateError::TooNew { .. } | StateError::Unmigrated { .. })) => {
                        Err(schema)
                    }
                    Err(_) => Err(err),
                }
            }
            opened => opened,
        }
    }

    /// Open the database at `path` read-only, unmigrated. With no `-wal` file beside it,
    /// or an empty one, as immutable: SQLite could not make (or, on a full disk, grow)
    /// the `-shm` file a read-only reader needs, and the `-wal` holds nothing to read: a
    /// writer with anything in it keeps it.
    ///
    /// # Errors
    /// When it cannot be opened or read, or its schema is not this debussy's.
    pub fn open_read_only(path: &Path) -> Result<Store, StateError> {
        let err = |action| sqlite_error(path, action);
        let mut wal = path.as_os_str().to_owned();
        wal.push("-wal");
        let immutable = std::fs::symlink_metadata(&wal).map_or(true, |wal| wal.len() == 0);
        let mut uri = String::from("file:");
        for byte in path.as_os_str().as_encoded_bytes() {
            match byte {
                b'%' | b'?' | b'#' | 0x80.. => {
                    let _ = write!(uri, "%{byte:02X}");
                }
                _ => uri.push(char::from(*byte)),
            }
        }
        if immutable {
            uri.push_str("?immutable=1");
        }
        let flags = rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY
            | rusqlite::OpenFlags::SQLITE_OPEN_URI
            | rusqlite::OpenFlags::SQLITE_OPEN_NOFOLLOW;
        let conn = Connection::open_with_flags(&uri, flags).map_err(err("open read-only"))?;
        let version: usize = conn
            .pragma_query_value(None, "user_version", |row| row.get(0))
            .map_err(err("read the schema version"))?;
        let known = schema::MIGRATIONS.len();
        let path = path.to_path_buf();
        if version > known {
            return Err(StateError::TooNew {
                path,
                found: version,
                known,
            });
        }
        if version < known {
            return Err(StateError::Unmigrated {
                path,
                found: version,
                known,
            });
        }
        Ok(Store { conn, path })
    }

    /// Open (creating if needed) a database at `path` and migrate it. The database and
    /// its journal files are never opened through a link: one in their place is refused.
    ///
    /// # Errors
    /// As [`Store::open`].
    pub fn open_at(path: &Path) -> Result<Store, StateError> {
        if let Some(dir) = path.parent() {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(PRIVATE_DIR_MODE)
                .create(dir)
                .map_err(|source| StateError::CreateDir {
                    path: dir.to_path_buf(),
                    source,
                })?;
        }
        make_private(path).map_err(|source| StateError::Unopenable {
            path: path.to_path_buf(),
            source,
        })?;
        let err = |action| sqlite_error(path, action);
        let flags = rusqlite::OpenFlags::default() | rusqlite::OpenFlags::SQLITE_OPEN_NOFOLLOW;
        let conn = Connection::open_with_flags(path, flags).map_err(err("open"))?;
        conn.busy_timeout(BUSY_TIMEOUT)
            .map_err(err("set the busy timeout"))?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(err("enable WAL"))?;
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(err("set synchronous"))?;
        conn.pragma_update(None, "foreign_keys", "ON")
            .map_err(err("enable foreign keys"))?;
        let mut store = Store {
            conn,
            path: path.to_path_buf(),
        };
        store.migrate()?;
        Ok(store)
    }

    /// The database file.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    pub(super) fn sql(
        &self,
        action: &'static str,
    ) -> impl FnOnce(rusqlite::Error) -> StateError + '_ {
        sqlite_error(&self.path, action)
    }

    /// Do `write`, waiting at most [`BRIEF_BUSY_TIMEOUT`] for another process's lock.
    pub(super) fn briefly<T>(
        &self,
        write: impl FnOnce() -> Result<T, StateError>,
    ) -> Result<T, StateError> {
        let wait = |timeout| {
            self.conn
                .busy_timeout(timeout)
                .map_err(self.sql("set the busy timeout"))
        };
        wait(BRIEF_BUSY_TIMEOUT)?;
        let written = write().map_err(|err| match err {
            StateError::Locked {
                path,
                action,
                holder,
                ..
            } => StateError::Locked {
                path,
                action,
                holder,
                waited: BRIEF_BUSY_TIMEOUT,
            },
            other => other,
        });
        let restored = wait(BUSY_TIMEOUT);
        let value = written?;
        restored.map(|()| value)
    }

    /// Run the statement `sql` with `params`; `action` names it in an error.
    pub(super) fn execute(
        &self,
        action: &'static str,
        sql: &str,
        params: impl rusqlite::Params,
    ) -> Result<(), StateError> {
        self.conn
            .execute(sql, params)
            .map(drop)
            .map_err(self.sql(action))
    }

    /// The rows the query `sql` with `params` gives, each read by `read`; `action` names
    /// it in an error.
    pub(super) fn rows<T, C: FromIterator<T>>(
        &self,
        action: &'static str,
        sql: &str,
        params: impl rusqlite::Params,
        read: impl FnMut(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
    ) -> Result<C, StateError> {
        let mut statement = self.conn.prepare(sql).map_err(self.sql(action))?;
        statement
            .query_map(params, read)
            .map_err(self.sql(action))?
            .collect::<Result<C, _>>()
            .map_err(self.sql(action))
    }

    fn migrate(&mut self) -> Result<(), StateError> {
        let path = self.path.clone();
        let err = |action| sqlite_error(&path, action);
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(err("begin the migration"))?;
        let version: usize = tx
            .pragma_query_value(None, "user_version", |row| row.get(0))
            .map_err(err("read the schema version"))?;
        let known = schema::MIGRATIONS.len();
        if version > known {
            return Err(StateError::TooNew {
                path,
                found: version,
                known,
            });
        }
        for migration in &schema::MIGRATIONS[version..] {
            tx.execute_batch(migration)
                .map_err(err("migrate the schema"))?;
        }
        if version < known {
            tx.pragma_update(None, "user_version", known)
                .map_err(err("record the schema version"))?;
        }
        tx.commit().map_err(err("commit the migration"))
    }

    pub(super) fn corrupt(&self, detail: String) -> StateError {
        StateError::Corrupt {
            path: self.path.clone(),
            detail,
        }
    }

    pub(super) fn parse<T: std::str::FromStr<Err = String>>(
        &self,
        text: &str,
    ) -> Result<T, StateError> {
        text.parse().map_err(|detail| self.corrupt(detail))
    }
}

/// What became of the SQLite error of `action` on the database at `path`.
pub(super) fn sqlite_error<'p>(
    path: &'p Path,
    action: &'static str,
) -> impl FnOnce(rusqlite::Error) -> StateError + 'p {
    move |source| match source.sqlite_error_code() {
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked) => {
            StateError::Locked {
                path: path.to_path_buf(),
                action,
                waited: BUSY_TIMEOUT,
                holder: super::lock_holder::write_lock_holder(path),
            }
        }
        // SQLite says "database or disk is full" when a write finds no room, but a file
        // it could not grow (the `-shm` index) only as an I/O error: the disk says which.
        Some(rusqlite::ErrorCode::DiskFull) => StateError::DiskFull {
            path: path.to_path_buf(),
            action,
            source,
        },
        Some(rusqlite::ErrorCode::SystemIoFailure)
            if crate::files::has_no_room(path.parent().unwrap_or(path)) =>
        {
            StateError::DiskFull {
                path: path.to_path_buf(),
                action,
                source,
            }
        }
        _ => StateError::Sqlite {
            path: path.to_path_buf(),
            action,
            source,
        },
    }
}

/// Create the database file readable by its owner only, and narrow the mode of an
/// existing one and of its `-wal`/`-shm` files (SQLite gives those the database's mode).
/// A link in the place of the database or of a file SQLite makes beside it (committed
/// by a repository, say) is refused: SQLite would write through it.
fn make_private(db: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    for suffix in ["", "-wal", "-shm", "-journal"] {
        let mut name = db.as_os_str().to_owned();
        name.push(suffix);
        let file = PathBuf::from(name);
        match std::fs::symlink_metadata(&file) {
            Ok(meta) if meta.file_type().is_symlink() => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    format!(
                        "{} is a symbolic link; debussy never writes through links: remove it",
                        file.display()
                    ),
                ));
            }
            Ok(meta) if !meta.is_file() => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    format!("{} is not a regular file: remove it", file.display()),
                ));
            }
            Ok(meta) if meta.permissions().mode() & 0o077 != 0 => {
                std::fs::set_permissions(
                    &file,
                    std::fs::Permissions::from_mode(PRIVATE_FILE_MODE),
                )?;
            }
            _ => {}
        }
    }
    // Made here (never through a link) so that SQLite finds it with its mode set.
    drop(crate::files::open_private_append(db)?);
    Ok(())
}
