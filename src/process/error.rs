//! [`ProcessError`]: why a program could not be started or written to.

use std::path::PathBuf;

/// Errors of the process layer: starting a program, and writing to its stdin.
///
/// Messages read after "failed to …".
#[derive(Debug, thiserror::Error)]
pub enum ProcessError {
    /// The program does not exist where it was looked for.
    #[error("start `{program}`: program not found ({searched})")]
    ProgramNotFound {
        /// The program as given.
        program: String,
        /// Where it was looked for: the `PATH` searched, or the path tried.
        searched: String,
    },
    /// The program exists but cannot be executed.
    #[error("start `{program}`: {} is not executable (check its permissions)", path.display())]
    NotExecutable {
        /// The program as given.
        program: String,
        /// The file that was found.
        path: PathBuf,
    },
    /// The program is a script whose `#!` interpreter does not exist.
    #[error("start `{program}`: its interpreter `{interpreter}` (the #! line of {}) was not found", path.display())]
    InterpreterNotFound {
        /// The program as given.
        program: String,
        /// The script that was found.
        path: PathBuf,
        /// The interpreter its first line names.
        interpreter: String,
    },
    /// The working directory set for the child does not exist.
    #[error("start `{program}`: working directory {} does not exist", cwd.display())]
    MissingCwd {
        /// The program as given.
        program: String,
        /// The directory that was asked for.
        cwd: PathBuf,
    },
    /// Any other failure to start the program.
    #[error("start `{program}`")]
    Spawn {
        /// The program as given.
        program: String,
        /// What the OS said.
        #[source]
        source: std::io::Error,
    },
    /// No reaper executable is known to run the program below (see [`reaper`](super::reaper)).
    #[error(
        "start `{program}`: no debussy binary to run it below (call `process::reaper::run_if_reaper` first in `main`, or `process::reaper::set_program`)"
    )]
    NoReaper {
        /// The program as given.
        program: String,
    },
    /// The reaper the program runs below could not be started, or did not answer.
    #[error("start `{program}`: its reaper {} failed", reaper.display())]
    Reaper {
        /// The program as given.
        program: String,
        /// The reaper executable.
        reaper: PathBuf,
        /// What went wrong.
        #[source]
        source: std::io::Error,
    },
    /// Writing to the child's stdin after it was closed (by the caller, the stop
    /// ladder, or the child's exit).
    #[error("write to the child's stdin: it is closed")]
    StdinClosed,
    /// Writing to the child's stdin failed (usually: the child exited).
    #[error("write to the child's stdin")]
    StdinWrite {
        /// What the OS said.
        #[source]
        source: std::io::Error,
    },
}
