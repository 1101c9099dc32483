//! Starting the debussy binary under test the same way everywhere.

use std::path::Path;
use std::process::{Command, Stdio};

use debussy::run_env;

/// The debussy binary Cargo built for these tests.
pub const DEBUSSY: &str = env!("CARGO_BIN_EXE_debussy");

/// `debussy ARGS` in the project at `root`, isolated from whoever runs the tests: `HOME`
/// and `XDG_CONFIG_HOME` under `root/.home`, no colour, no debug log, none of the
/// caller's `DEBUSSY_*` variables (a test run from inside a debussy session must not
/// join it), and stdin closed. Callers add their own variables and pipes.
pub fn debussy(root: &Path, args: &[&str]) -> Command {
    debussy_at(Path::new(DEBUSSY), root, args)
}

/// [`debussy`] running the debussy binary at `program`.
pub fn debussy_at(program: &Path, root: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(program);
    command
        .args(args)
        .current_dir(root)
        .env("HOME", root.join(".home"))
        .env("XDG_CONFIG_HOME", root.join(".home/config"))
        .env("NO_COLOR", "1")
        .env_remove("DEBUSSY_LOG")
        .env_remove(run_env::RUN_ID)
        .env_remove(run_env::PHASE_ID)
        .env_remove(run_env::PROJECT_ROOT)
        .stdin(Stdio::null());
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("DEBUSSY_") {
            command.env_remove(key);
        }
    }
    command
}
