//! Writing debussy's own files without following links.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// Mode of the files debussy writes for itself: readable by their owner only.
const PRIVATE_FILE_MODE: u32 = 0o600;

/// Replace `path` with `bytes`, readable by its owner only, never writing through a
/// link: the bytes go to a fresh file beside it (created exclusively, so no link can be
/// waiting there) that is then renamed over `path`. A link at `path` is replaced, not
/// followed. Readers see the old content or the new, never half of it.
///
/// # Errors
/// The directory cannot be written, or the rename fails.
pub fn write_private(path: &Path, bytes: &[u8]) -> io::Result<()> {
    replace_file(path, bytes, PRIVATE_FILE_MODE)
}

/// Replace `path` with `bytes` as [`write_private`] does, with the file's mode `mode`
/// (before the umask): for files written for the user, such as those `init` makes.
///
/// # Errors
/// The directory cannot be written, or the rename fails.
pub fn replace_file(path: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
    let dir = path.parent().unwrap_or_else(|| Path::new("."));
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no file name"))?;
    let mut temp_name = std::ffi::OsString::from(".");
    temp_name.push(name);
    temp_name.push(format!(".{}.tmp", std::process::id()));
    let temp = dir.join(temp_name);
    let _ = std::fs::remove_file(&temp);
    let written = (|| {
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .custom_flags(nix::libc::O_NOFOLLOW)
            .open(&temp)?;
        file.write_all(bytes)?;
        file.sync_data()?;
        std::fs::rename(&temp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    written
}

/// Create `path` (or empty the file already there) to write it, readable by its owner
/// only, refusing a link or anything but a regular file in its place.
///
/// # Errors
/// The file cannot be opened, is a link, or is not a regular file.
pub fn create_private(path: &Path) -> io::Result<File> {
    let file = open_own(path, OpenOptions::new().write(true).truncate(false))?;
    // Emptied only once it is known to be a regular file: a FIFO is never truncated.
    file.set_len(0)?;
    Ok(file)
}

/// Open `path` to append to it, creating it readable by its owner only, and refusing a
/// link or anything but a regular file in its place.
///
/// # Errors
/// The file cannot be opened, is a link (`ELOOP`), or is not a regular file.
pub fn open_private_append(path: &Path) -> io::Result<File> {
    open_own(path, OpenOptions::new().append(true))
}

/// Open `path` with `options`, creating it readable by its owner only, never through a
/// link and never blocking on a FIFO, and refuse anything but a regular file.
fn open_own(path: &Path, options: &mut OpenOptions) -> io::Result<File> {
    let file = options
        .create(true)
        .mode(PRIVATE_FILE_MODE)
        .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK)
        .open(path)
        .map_err(|err| refuse_link(path, err))?;
    if !file.metadata()?.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} is not a regular file", path.display()),
        ));
    }
    Ok(file)
}

/// `O_NOFOLLOW` on a link fails with `ELOOP`; say what that means.
pub(super) fn refuse_link(path: &Path, err: io::Error) -> io::Error {
    if err.raw_os_error() == Some(nix::libc::ELOOP) {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "{} is a symbolic link; debussy never writes through links: remove it",
                path.display()
            ),
        )
    } else {
        err
    }
}

/// Whether a failed write failed for want of room: the file system is full (`ENOSPC`)
/// or the user's quota is spent (`EDQUOT`). Nothing more can be written there until the
/// user frees some.
#[must_use]
pub fn is_out_of_space(err: &io::Error) -> bool {
    matches!(
        err.kind(),
        io::ErrorKind::StorageFull | io::ErrorKind::QuotaExceeded
    )
}

/// Whether the file system that holds `dir` has no room left for this user: no block
/// is available (`statvfs`). Says why a write failed when the error does not (SQLite
/// reports a file it could not grow as an I/O error). False when it cannot be asked.
#[must_use]
pub fn has_no_room(dir: &Path) -> bool {
    nix::sys::statvfs::statvfs(dir).is_ok_and(|stat| stat.blocks_available() == 0)
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::super::link_to_precious;
    use super::*;

    #[test]
    fn a_file_system_with_no_block_available_has_no_room() {
        // procfs has no blocks at all.
        assert!(has_no_room(Path::new("/proc")));
        let dir = tempfile::tempdir().expect("tempdir");
        assert!(!has_no_room(dir.path()));
        assert!(!has_no_room(&dir.path().join("missing")));
    }

    #[test]
    fn a_link_in_place_is_replaced_and_its_target_left_alone() {
        let (_dir, outside, path) = link_to_precious("daemon.json");
        write_private(&path, b"{}").expect("write");
        assert_eq!(std::fs::read_to_string(&outside).expect("read"), "precious");
        assert_eq!(std::fs::read_to_string(&path).expect("read"), "{}");
        let meta = std::fs::symlink_metadata(&path).expect("meta");
        assert!(meta.is_file());
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    }

    #[test]
    fn creating_through_a_link_is_refused_and_a_file_there_emptied() {
        let (_dir, outside, path) = link_to_precious("session.jsonl");
        let err = create_private(&path).expect_err("a link");
        assert!(err.to_string().contains("symbolic link"), "{err}");
        assert_eq!(std::fs::read_to_string(&outside).expect("read"), "precious");
        std::fs::remove_file(&path).expect("unlink");
        std::fs::write(&path, "old").expect("write");
        let mut file = create_private(&path).expect("a file");
        file.write_all(b"new").expect("write");
        assert_eq!(std::fs::read_to_string(&path).expect("read"), "new");
    }

    #[test]
    fn appending_through_a_link_is_refused() {
        let (_dir, outside, path) = link_to_precious("audit.jsonl");
        let err = open_private_append(&path).expect_err("a link");
        assert!(err.to_string().contains("symbolic link"), "{err}");
        assert_eq!(std::fs::read_to_string(&outside).expect("read"), "precious");
    }
}
