//! [`wait_until`]: the one bounded poll the tests use for what no event announces (a file
//! another process writes, a process gone, a record in another process's store).

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
