//! Locating a pinned agent CLI that `scripts/test-tools` installs: an override variable,
//! else the project-local install; the CLI must answer `--version`. When it is missing a
//! test fails under `CI=true` and is skipped, with the reason printed, otherwise.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::OnceLock;

use super::claude::in_ci;

/// A CLI the tests run, and where to find it.
#[derive(Debug)]
pub struct Pinned {
    /// Its name in messages (`the Codex CLI`).
    pub name: &'static str,
    /// The variable naming another executable to test against.
    pub override_env: &'static str,
    /// Where `scripts/test-tools` installs it, relative to the crate root.
    pub install_path: &'static str,
}

fn candidate(pinned: &Pinned, override_path: Option<OsString>) -> PathBuf {
    match override_path {
        Some(path) if !path.is_empty() => PathBuf::from(path),
        _ => Path::new(env!("CARGO_MANIFEST_DIR")).join(pinned.install_path),
    }
}

fn probe(pinned: &Pinned, path: &Path) -> Result<PathBuf, String> {
    if !path.is_file() {
        return Err(format!(
            "{} is not installed at {} (run scripts/test-tools, or set {})",
            pinned.name,
            path.display(),
            pinned.override_env
        ));
    }
    let output = std::process::Command::new(path)
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .map_err(|error| format!("cannot run {} --version: {error}", path.display()))?;
    if !output.status.success() {
        return Err(format!(
            "{} --version failed ({}): {}",
            path.display(),
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    Ok(path.to_owned())
}

/// The CLI's path for a test that needs it (looked up once per test process, in
/// `found`); `None`, after printing why, when it is missing outside CI.
pub fn require(
    pinned: &Pinned,
    found: &'static OnceLock<Result<PathBuf, String>>,
) -> Option<PathBuf> {
    match found
        .get_or_init(|| {
            probe(
                pinned,
                &candidate(pinned, std::env::var_os(pinned.override_env)),
            )
        })
        .clone()
    {
        Ok(path) => Some(path),
        Err(reason) if in_ci() => panic!("CI=true and {} is required: {reason}", pinned.name),
        Err(reason) => {
            let thread = std::thread::current();
            eprintln!("skipped {}: {reason}", thread.name().unwrap_or("test"));
            None
        }
    }
}
