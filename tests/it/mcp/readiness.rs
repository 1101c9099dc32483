//! A daemon that never becomes ready is not left behind: the bridge stops it, with or
//! without `--stop-daemon-on-exit`, and the client's request gets an error.

use std::time::{Duration, Instant};

use super::bridge::Stage;
use super::support::{WAIT, alive, initialize_params};

fn a_daemon_that_never_opens_its_port_is_stopped(flags: &[&str]) {
    let stage = Stage::new();
    // Every start fails its check; a short backoff lets the bridge give up in seconds.
    let [flag, config] =
        stage.config("mcp:\n  max_crashes: 2\n  crash_backoff:\n    first: 0.05\n");
    let mut all = vec![flag.as_str(), config.as_str(), "--ready-timeout", "1s"];
    all.extend_from_slice(flags);
    let mut bridge = stage.bridge_command(&all, &["sleep".to_owned(), "60".to_owned()]);
    let id = bridge.request("initialize", initialize_params("2025-11-25"));
    let reply = bridge.response(&id);
    assert!(reply.get("error").is_some(), "{reply}");
    let pids = stage.recorded_pids();
    assert!(!pids.is_empty(), "no daemon was recorded");
    let deadline = Instant::now() + WAIT;
    while pids.iter().any(|pid| alive(*pid)) {
        assert!(
            Instant::now() < deadline,
            "the daemon that failed its readiness check still runs: {pids:?}; {}",
            bridge.stderr()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = bridge.close();
}

#[test]
fn a_daemon_that_fails_readiness_is_stopped() {
    a_daemon_that_never_opens_its_port_is_stopped(&[]);
}

#[test]
fn a_daemon_that_fails_readiness_is_stopped_with_stop_daemon_on_exit() {
    a_daemon_that_never_opens_its_port_is_stopped(&["--stop-daemon-on-exit"]);
}
