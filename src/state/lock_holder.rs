//! Which process holds the database's write lock, as Linux's `/proc/locks` says: in WAL
//! mode SQLite takes it as a POSIX lock on byte 120 of the `-shm` file.

use std::os::unix::fs::MetadataExt as _;
use std::path::Path;

/// The byte of the `-shm` file SQLite locks for writing (`WALINDEX_LOCK_OFFSET`, the
/// first of its locks).
const WRITE_LOCK_BYTE: u64 = 120;

/// The process holding the write lock of the database at `db`, in words
/// (`process 4242, sqlite3`); `None` when the system does not say.
pub(super) fn write_lock_holder(db: &Path) -> Option<String> {
    let mut shm = db.as_os_str().to_owned();
    shm.push("-shm");
    let meta = std::fs::metadata(shm).ok()?;
    let locks = std::fs::read_to_string("/proc/locks").ok()?;
    let pid = holder_in(&locks, meta.dev(), meta.ino())?;
    let name = crate::process::procfs::command_name(&Path::new("/proc").join(pid.to_string()));
    Some(match name {
        Some(name) => format!("process {pid}, {name}"),
        None => format!("process {pid}"),
    })
}

/// The pid of the POSIX write lock over [`WRITE_LOCK_BYTE`] of the file `dev`/`ino` in
/// `locks` (the text of `/proc/locks`).
fn holder_in(locks: &str, dev: u64, ino: u64) -> Option<u32> {
    let file = format!("{:02x}:{:02x}:{ino}", major(dev), minor(dev));
    locks.lines().find_map(|line| {
        // `1: POSIX  ADVISORY  WRITE 4242 08:01:1234 120 120`; a waiter's line starts
        // with `->` and holds nothing.
        let fields: Vec<&str> = line.split_whitespace().collect();
        let [_, "POSIX", _, "WRITE", pid, id, start, end] = fields.as_slice() else {
            return None;
        };
        let covers = start
            .parse::<u64>()
            .is_ok_and(|start| start <= WRITE_LOCK_BYTE)
            && (*end == "EOF" || end.parse::<u64>().is_ok_and(|end| end >= WRITE_LOCK_BYTE));
        (*id == file && covers).then(|| pid.parse().ok()).flatten()
    })
}

/// The major number of device `dev` (glibc's encoding).
fn major(dev: u64) -> u64 {
    ((dev >> 32) & 0xffff_f000) | ((dev >> 8) & 0xfff)
}

/// The minor number of device `dev` (glibc's encoding).
fn minor(dev: u64) -> u64 {
    ((dev >> 12) & 0xffff_ff00) | (dev & 0xff)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_write_lock_over_the_byte_is_found_and_nothing_else() {
        let dev = (8 << 8) | 1;
        let locks = "1: POSIX  ADVISORY  READ 11 08:01:77 128 128\n\
                     2: FLOCK  ADVISORY  WRITE 12 08:01:77 0 EOF\n\
                     3: POSIX  ADVISORY  WRITE 13 08:02:77 120 120\n\
                     4: POSIX  ADVISORY  WRITE 14 08:01:77 120 120\n\
                     4: -> POSIX  ADVISORY  WRITE 15 08:01:77 120 120\n";
        assert_eq!(holder_in(locks, dev, 77), Some(14));
        assert_eq!(holder_in(locks, dev, 78), None);
        let whole = "9: POSIX  ADVISORY  WRITE 21 08:01:77 0 EOF\n";
        assert_eq!(holder_in(whole, dev, 77), Some(21));
        assert_eq!(holder_in("", dev, 77), None);
    }

    #[test]
    fn the_process_holding_a_real_lock_is_named() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = super::super::Store::open(dir.path()).expect("open");
        assert_eq!(write_lock_holder(store.path()), None, "nobody holds it");
        let holder = rusqlite::Connection::open(store.path()).expect("open");
        holder.execute_batch("BEGIN IMMEDIATE").expect("lock");
        // This test's own process, through its other connection.
        let named = write_lock_holder(store.path()).expect("named");
        assert!(
            named.starts_with(&format!("process {}, ", std::process::id())),
            "{named}"
        );
    }

    #[test]
    fn device_numbers_split_as_the_system_does() {
        let dev = nix::sys::stat::makedev(259, 3);
        assert_eq!((major(dev), minor(dev)), (259, 3));
    }
}
