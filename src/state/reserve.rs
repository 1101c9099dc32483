//! Room kept on the disk for the database's last records: a file beside it
//! (`state.db-reserve`) that a run makes when it starts and removes when it finds the
//! disk full, so that the pause, where it left the work, and why, can still be recorded.

use std::io::Write as _;
use std::path::PathBuf;

use super::Store;

/// How much room is kept: what a pause writes (the stopped session, the attempt's end,
/// the pause's files, the run's end and time) is a few pages of the write-ahead log per
/// write, some tens of KiB in all.
pub(super) const RESERVE_BYTES: usize = 512 * 1024;

impl Store {
    /// The file that keeps the room.
    fn reserve_path(&self) -> PathBuf {
        let mut name = self.path.as_os_str().to_owned();
        name.push("-reserve");
        PathBuf::from(name)
    }

    /// Keep 512 KiB of the disk, in `state.db-reserve` beside the database, for the
    /// records a full disk would refuse ([`Store::release_reserve`] gives them back). On
    /// a disk without that much room none is kept: the run finds the disk full soon
    /// enough.
    pub fn keep_reserve(&self) {
        let path = self.reserve_path();
        if std::fs::symlink_metadata(&path)
            .is_ok_and(|meta| meta.is_file() && meta.len() == RESERVE_BYTES as u64)
        {
            return;
        }
        let written = crate::files::create_private(&path).and_then(|mut file| {
            // Bytes no file system compresses or skips as zeros: they take their room.
            let mut state = 0x9e37_79b9_7f4a_7c15_u64;
            let filler: Vec<u8> = (0..RESERVE_BYTES)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    state.to_le_bytes()[0]
                })
                .collect();
            file.write_all(&filler)?;
            file.sync_data()
        });
        if let Err(err) = written {
            tracing::debug!("no room kept for the state's last records: {err}");
            let _ = std::fs::remove_file(&path);
        }
    }

    /// Give the room [`Store::keep_reserve`] kept back to the disk, for the records that
    /// follow; whether there was any.
    pub fn release_reserve(&self) -> bool {
        std::fs::remove_file(self.reserve_path()).is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_room_is_kept_once_and_given_back() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("open");
        let path = store.reserve_path();
        assert!(!store.release_reserve(), "none kept yet");
        store.keep_reserve();
        let kept = std::fs::metadata(&path).expect("kept");
        assert_eq!(kept.len(), RESERVE_BYTES as u64);
        store.keep_reserve();
        assert!(store.release_reserve());
        assert!(!path.exists());
        assert!(!store.release_reserve(), "given back once");
    }

    #[test]
    fn a_link_in_its_place_is_not_written_through() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("open");
        let outside = dir.path().join("precious");
        std::fs::write(&outside, "precious").expect("write");
        std::os::unix::fs::symlink(&outside, store.reserve_path()).expect("link");
        store.keep_reserve();
        assert_eq!(std::fs::read_to_string(&outside).expect("read"), "precious");
    }
}
