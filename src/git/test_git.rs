//! The `git` command for the git layer's tests, which set up and inspect real
//! repositories with the tool users have.

use std::path::Path;

/// `git args…` in `dir`, which must succeed (with no editor to wait for); its stdout.
pub(crate) fn git(dir: &Path, args: &[&str]) -> String {
    let output = std::process::Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_EDITOR", "true")
        .output()
        .expect("git");
    assert!(
        output.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).trim().to_owned()
}
