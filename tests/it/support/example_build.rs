//! Examples the tests run as peers (`examples/mcp_test_server.rs`), built once per test
//! run.
//!
//! Under nextest every test is a process of its own, so a build per process would run
//! `cargo build` for each of a hundred tests: over a second of CPU each, and every one
//! waiting on the build directory's lock. The first test of a run builds under a file
//! lock and leaves a stamp naming the run (`NEXTEST_RUN_ID`); the others find the stamp
//! and take the binary as it is. Under `cargo test`, one process runs every test, and a
//! build per process is one build.

use std::fs::File;
use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

/// The rmcp test server (`examples/mcp_test_server.rs`), built for this test run.
pub fn mcp_test_server() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| build("mcp_test_server")).clone()
}

fn build(example: &str) -> PathBuf {
    let dir = PathBuf::from(super::DEBUSSY)
        .parent()
        .expect("target dir")
        .join("examples");
    std::fs::create_dir_all(&dir).expect("create the examples directory");
    let exe = dir.join(example);
    let lock = File::create(dir.join(format!("{example}.lock"))).expect("create the build lock");
    lock.lock().expect("take the build lock");
    let stamp = dir.join(format!("{example}.run"));
    let run = std::env::var("NEXTEST_RUN_ID").ok();
    if run.is_some() && exe.exists() && std::fs::read_to_string(&stamp).ok() == run {
        return exe;
    }
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let mut command = Command::new(cargo);
    // What cargo sets for a test process (`CARGO_PKG_NAME`, …) is not passed on: build
    // scripts that watch these variables (ring's) would run again, rebuild everything
    // above them, and the next plain `cargo` command would do the same once more.
    for (key, _) in std::env::vars_os() {
        if key.to_str().is_some_and(set_by_cargo_for_a_test) {
            command.env_remove(key);
        }
    }
    let status = command
        .args(["build", "--quiet", "--example", example])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .status()
        .unwrap_or_else(|err| panic!("run cargo build --example {example}: {err}"));
    assert!(status.success(), "building the example {example} failed");
    assert!(exe.exists(), "{} missing after the build", exe.display());
    if let Some(run) = run {
        std::fs::write(&stamp, run).expect("write the build stamp");
    }
    exe
}

/// Whether cargo sets `key` for the test binary it runs (rather than the user for cargo).
fn set_by_cargo_for_a_test(key: &str) -> bool {
    [
        "CARGO_PKG_",
        "CARGO_BIN_",
        "CARGO_CRATE_",
        "CARGO_MANIFEST_",
    ]
    .iter()
    .any(|prefix| key.starts_with(prefix))
        || matches!(
            key,
            "CARGO_PRIMARY_PACKAGE" | "CARGO_TARGET_TMPDIR" | "CARGO_RUSTC_CURRENT_DIR" | "OUT_DIR"
        )
}
