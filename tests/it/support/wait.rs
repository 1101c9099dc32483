//! [`wait_until`]: the one bounded poll the tests use for what no event announces (a file
//! another process writes, a process gone, a record in another process's store), and
//! [`pid_in`], a pid another process writes to a file.

use std::path::Path;
use std::str::FromStr;
use std::time::{Duration, Instant};

/// Poll `done` every 10 ms until it holds; fail the test, naming `what`, past `limit`.
pub fn wait_until(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !done() {
        assert!(
            Instant::now() < deadline,
            "{what} did not happen within {limit:?}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The pid another process writes to `path`, once it is there; fail the test past `limit`.
pub fn pid_in<T: FromStr>(path: &Path, limit: Duration) -> T {
    let mut pid = None;
    wait_until(
        &format!("a pid written to {}", path.display()),
        limit,
        || {
            pid = std::fs::read_to_string(path)
                .ok()
                .and_then(|text| text.trim().parse().ok());
            pid.is_some()
        },
    );
    pid.expect("a pid")
}
