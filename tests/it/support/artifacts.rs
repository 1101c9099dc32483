//! Test artifacts: files a test leaves behind for a person to read after the run
//! (captured stream-json, the requests the model server saw, stderr).
//!
//! They live under `target/tmp/artifacts/<test binary>/<name>/` (Cargo's
//! `CARGO_TARGET_TMPDIR`), are recreated empty at the start of each test that asks for
//! them, and are never read back by another test.

use std::io;
use std::path::PathBuf;

/// A fresh, empty artifact directory for `name` (use the test's name).
pub fn dir(name: &str) -> io::Result<PathBuf> {
    // Cargo names test binaries `<target>-<hash>`.
    let binary = std::env::current_exe()
        .ok()
        .and_then(|exe| {
            exe.file_stem()
                .map(|stem| stem.to_string_lossy().into_owned())
        })
        .map_or_else(
            || "tests".to_owned(),
            |stem| match stem.rsplit_once('-') {
                Some((target, _hash)) => target.to_owned(),
                None => stem,
            },
        );
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("artifacts")
        .join(binary)
        .join(name);
    match std::fs::remove_dir_all(&dir) {
        Ok(()) => {}
        Err(error) if error.kind() == io::ErrorKind::NotFound => {}
        Err(error) => return Err(error),
    }
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}
