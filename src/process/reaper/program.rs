//! Which executable serves as the reaper, and the entry point that makes a debussy
//! binary one.
//!
//! Each binary that starts children (`debussy`, `debussy-mcp`) calls [`run_if_reaper`]
//! first thing in `main`: started as a reaper, it serves and returns the exit code;
//! otherwise it records that this very executable (`/proc/self/exe`, the same file even
//! if it was replaced on disk since) can be re-executed as the reaper of its children.
//!
//! Programs that link the library without such a `main` (its tests, benchmarks) find the
//! `debussy` binary that cargo builds beside them, or are told with [`set_program`].

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::OnceLock;

use super::protocol::MARKER;

/// The reaper chosen for this process, once known.
static PROGRAM: OnceLock<PathBuf> = OnceLock::new();

/// Where a running executable is found again, even after it was replaced on disk.
const SELF_EXE: &str = "/proc/self/exe";

/// Serve as a reaper when started as one (the first argument is the reaper's marker),
/// returning the exit code to leave `main` with; otherwise make this executable the
/// reaper of every child this process starts and return `None`.
///
/// Call it first in `main`, before anything opens a file or starts a thread.
#[must_use]
pub fn run_if_reaper() -> Option<ExitCode> {
    let mut args = std::env::args_os().skip(1);
    if args.next().is_some_and(|first| first == MARKER) {
        return Some(super::serve::serve(args));
    }
    let _ = PROGRAM.set(PathBuf::from(SELF_EXE));
    None
}

/// Use the debussy binary at `path` as the reaper of the children this process starts,
/// unless one was chosen already. For programs whose `main` is not debussy's.
pub fn set_program(path: impl Into<PathBuf>) {
    let _ = PROGRAM.set(path.into());
}

/// The reaper executable for this process: the one chosen, else a `debussy` binary
/// beside this executable or one directory up (cargo's `target/<profile>/deps/` layout).
pub(crate) fn program() -> Option<PathBuf> {
    if let Some(path) = PROGRAM.get() {
        return Some(path.clone());
    }
    let found = std::env::current_exe()
        .ok()
        .and_then(|exe| sibling(&exe, &OsString::from("debussy")))?;
    Some(PROGRAM.get_or_init(|| found).clone())
}

fn sibling(exe: &Path, name: &OsString) -> Option<PathBuf> {
    let dir = exe.parent()?;
    [Some(dir), dir.parent()]
        .into_iter()
        .flatten()
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file() && candidate != exe)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_binary_beside_or_one_up_is_found() {
        let dir = tempfile::tempdir().expect("tempdir");
        let deps = dir.path().join("deps");
        std::fs::create_dir(&deps).expect("mkdir");
        let test_exe = deps.join("it-123");
        std::fs::write(&test_exe, "").expect("write");
        let name = OsString::from("debussy");
        assert_eq!(sibling(&test_exe, &name), None);
        std::fs::write(dir.path().join("debussy"), "").expect("write");
        assert_eq!(sibling(&test_exe, &name), Some(dir.path().join("debussy")));
        std::fs::write(deps.join("debussy"), "").expect("write");
        assert_eq!(sibling(&test_exe, &name), Some(deps.join("debussy")));
    }
}
