//! debussy's own executable, named for commands started from outside this process: the
//! agent's hooks, the simulated agent and what it runs.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt as _;
use std::path::{Path, PathBuf};

/// The running debussy executable.
///
/// An executable replaced on disk while debussy runs (an upgrade, a rebuild) reads as
/// `PATH (deleted)`, which nothing can start; the file now at `PATH` is named instead, as
/// the next `debussy` started from there would be.
///
/// # Errors
/// When the executable cannot be located at all.
pub fn own_executable() -> std::io::Result<PathBuf> {
    let exe = std::env::current_exe()?;
    Ok(replacement_of(&exe).unwrap_or(exe))
}

/// Where a deleted executable, named `PATH (deleted)`, stood.
fn replacement_of(exe: &Path) -> Option<PathBuf> {
    let original = exe.as_os_str().as_bytes().strip_suffix(b" (deleted)")?;
    (!exe.exists()).then(|| PathBuf::from(OsStr::from_bytes(original)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replaced_executable_is_named_by_where_it_stood() {
        let dir = tempfile::tempdir().expect("tempdir");
        let exe = dir.path().join("debussy");
        std::fs::write(&exe, "").expect("write");
        let deleted = dir.path().join("debussy (deleted)");
        assert_eq!(replacement_of(&deleted), Some(exe.clone()));
        assert_eq!(replacement_of(&exe), None);
        std::fs::write(&deleted, "").expect("a file really named so");
        assert_eq!(replacement_of(&deleted), None);
    }

    #[test]
    fn the_running_test_binary_is_its_own_executable() {
        assert_eq!(
            own_executable().expect("located"),
            std::env::current_exe().expect("current exe")
        );
    }
}
