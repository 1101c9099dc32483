//! Files debussy reads and writes on its own account, made safe against what a
//! repository or a user may put in their place.
//!
//! The rules (docs/reliability.md): debussy opens only regular files and reads them up to
//! a limit, so a FIFO, a device or a 5 GB file is refused with its name instead of
//! hanging or exhausting memory ([`read_text_limited`]), and reads a long file line by
//! line with a bound on each line ([`read_line_limited`]); it never writes through a
//! symbolic link, so a link committed where debussy keeps its own files cannot make it
//! overwrite a file elsewhere ([`write_private`], [`PidLock`]), and it makes and checks
//! its own directories below a project so that none of them is a link either
//! ([`private_dir`]). This module does no interpretation: callers wrap its `io::Error`s
//! with the path and what the file was for.

mod dirs;
mod lines;
mod lock;
mod read;
mod write;

pub use dirs::private_dir;
pub use lines::{LineRead, read_line_limited};
pub use lock::{LockHeld, PidLock, PidLockError};
pub use read::{CONFIG_LIMIT, PLAN_LIMIT, open_regular, read_bytes_limited, read_text_limited};
pub use write::{
    create_private, has_no_room, is_out_of_space, open_private_append, replace_file, write_private,
};

/// A temporary directory holding a file of precious text and, at `name`, a link to it;
/// the file's path and the link's.
#[cfg(test)]
fn link_to_precious(name: &str) -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let outside = dir.path().join("outside.txt");
    std::fs::write(&outside, "precious").expect("write");
    let path = dir.path().join(name);
    std::os::unix::fs::symlink(&outside, &path).expect("link");
    (dir, outside, path)
}
