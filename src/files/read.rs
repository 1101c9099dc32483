//! Reading only regular files, and only up to a limit.

use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// The most a plan or phase file may hold.
pub const PLAN_LIMIT: u64 = 16 * 1024 * 1024;
/// The most a configuration file may hold.
pub const CONFIG_LIMIT: u64 = 4 * 1024 * 1024;

/// Open `path` for reading if it is a regular file (following links, which are read
/// through, never written through).
///
/// The file is opened non-blocking, so a FIFO with no writer cannot hang the open; it is
/// then refused by its type, as are directories, devices and sockets.
///
/// # Errors
/// The file cannot be opened, or is not a regular file (`InvalidInput`, naming what it
/// is).
pub fn open_regular(path: &Path) -> io::Result<File> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NONBLOCK)
        .open(path)?;
    let kind = file.metadata()?.file_type();
    if kind.is_file() {
        return Ok(file);
    }
    let what = if kind.is_dir() {
        "a directory"
    } else if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_char_device() {
        "a character device"
    } else if kind.is_block_device() {
        "a block device"
    } else if kind.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    };
    Err(io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("it is {what}, not a regular file"),
    ))
}

/// Read a regular file whole, refusing one larger than `limit` bytes.
///
/// # Errors
/// As [`open_regular`]; `FileTooLarge` past the limit (checked on what is read, not only
/// on the size the file claims).
pub fn read_bytes_limited(path: &Path, limit: u64) -> io::Result<Vec<u8>> {
    let file = open_regular(path)?;
    let claimed = file.metadata()?.len();
    if claimed > limit {
        return Err(too_large(limit));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(claimed).unwrap_or(0));
    file.take(limit + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(too_large(limit));
    }
    Ok(bytes)
}

/// Read a regular file of UTF-8 text whole, refusing one larger than `limit` bytes.
///
/// A byte-order mark at the start is dropped: editors on Windows save one, and no
/// reader here wants it (a YAML parser takes it for the start of a second document).
///
/// # Errors
/// As [`read_bytes_limited`]; `InvalidData` when the bytes are not UTF-8 (naming the
/// line).
pub fn read_text_limited(path: &Path, limit: u64) -> io::Result<String> {
    let mut bytes = read_bytes_limited(path, limit)?;
    if bytes.starts_with(BYTE_ORDER_MARK) {
        bytes.drain(..BYTE_ORDER_MARK.len());
    }
    String::from_utf8(bytes).map_err(|err| {
        let at = err.utf8_error().valid_up_to();
        let line = err.as_bytes()[..at].iter().filter(|&&b| b == b'\n').count() + 1;
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("it is not UTF-8 text (line {line}, byte {at})"),
        )
    })
}

/// UTF-8's encoding of U+FEFF.
const BYTE_ORDER_MARK: &[u8] = b"\xEF\xBB\xBF";

fn too_large(limit: u64) -> io::Error {
    io::Error::new(
        io::ErrorKind::FileTooLarge,
        format!("it is larger than the {} MiB limit", limit / (1024 * 1024)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_regular_file_is_read() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("plan.md");
        std::fs::write(&path, "# Plan\n").expect("write");
        assert_eq!(
            read_text_limited(&path, PLAN_LIMIT).expect("read"),
            "# Plan\n"
        );
    }

    #[test]
    fn a_fifo_is_refused_at_once() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("plan.md");
        nix::unistd::mkfifo(&path, nix::sys::stat::Mode::S_IRWXU).expect("mkfifo");
        let err = read_text_limited(&path, PLAN_LIMIT).expect_err("a FIFO");
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        assert!(err.to_string().contains("a FIFO"), "{err}");
    }

    #[test]
    fn devices_and_directories_are_refused() {
        let err = read_bytes_limited(Path::new("/dev/zero"), 1024).expect_err("a device");
        assert!(err.to_string().contains("character device"), "{err}");
        let dir = tempfile::tempdir().expect("tempdir");
        let err = read_bytes_limited(dir.path(), 1024).expect_err("a directory");
        assert!(err.to_string().contains("a directory"), "{err}");
    }

    #[test]
    fn a_file_past_the_limit_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("big");
        std::fs::write(&path, vec![b'x'; 2048]).expect("write");
        let err = read_bytes_limited(&path, 1024).expect_err("too large");
        assert_eq!(err.kind(), io::ErrorKind::FileTooLarge);
        assert_eq!(
            read_bytes_limited(&path, 2048).expect("at the limit").len(),
            2048
        );
    }

    #[test]
    fn bytes_that_are_not_text_name_their_line() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("c.yaml");
        std::fs::write(&path, b"a: 1\nb: \xff\n").expect("write");
        let err = read_text_limited(&path, 1024).expect_err("not UTF-8");
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
        assert!(err.to_string().contains("line 2"), "{err}");
    }

    #[test]
    fn a_leading_byte_order_mark_is_dropped() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("c.yaml");
        std::fs::write(&path, "\u{feff}a: 1\r\n\u{feff}").expect("write");
        assert_eq!(
            read_text_limited(&path, 1024).expect("read"),
            "a: 1\r\n\u{feff}"
        );
    }

    #[test]
    fn a_symlink_loop_is_an_error_not_a_hang() {
        let dir = tempfile::tempdir().expect("tempdir");
        let a = dir.path().join("a");
        let b = dir.path().join("b");
        std::os::unix::fs::symlink(&b, &a).expect("link");
        std::os::unix::fs::symlink(&a, &b).expect("link");
        assert!(read_bytes_limited(&a, 1024).is_err());
    }
}
