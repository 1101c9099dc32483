//! File watching: a change runs the build and restarts; a failing build keeps the server.

use std::io::BufRead;
use std::path::Path;
use std::sync::mpsc;

use serde_json::json;

use crate::support::{Supervisor, WAIT, events_of};

/// Read one line from the FIFO at `path` on a thread; the build blocks writing to it
/// until then, so receiving the line means the build has run to that point.
fn fifo_line(path: &Path) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    let path = path.to_owned();
    std::thread::spawn(move || {
        let file = std::fs::File::open(&path).expect("open fifo");
        let mut line = String::new();
        let _ = std::io::BufReader::new(file).read_line(&mut line);
        let _ = tx.send(line);
    });
    rx
}

#[test]
fn a_change_builds_and_restarts_and_a_failed_build_keeps_the_server() {
    let work = tempfile::tempdir().expect("tempdir");
    let src = work.path().join("src");
    std::fs::create_dir_all(src.join("target")).expect("mkdir");
    std::fs::write(src.join("server.txt"), "v1").expect("write");
    let fifo = work.path().join("build.fifo");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).expect("mkfifo");
    let broken = work.path().join("broken");
    // The outcome is decided before the build reports on the FIFO, so the test may
    // change `broken` as soon as it has read the report.
    let build = format!(
        "echo building >&2; if [ -f '{broken}' ]; then echo failed > '{fifo}'; exit 1; fi; echo built > '{fifo}'",
        fifo = fifo.display(),
        broken = broken.display()
    );
    let src_arg = src.display().to_string();
    let mut s = Supervisor::start_with(
        &["--watch", &src_arg, "--build", &build, "--debounce", "100"],
        &[],
    );
    s.initialize();
    let (pid1, _) = s.whoami();

    // Ignored directories do not count; a real change builds and restarts.
    std::fs::write(src.join("target/out.o"), "x").expect("write");
    let built = fifo_line(&fifo);
    std::fs::write(src.join("server.txt"), "v2").expect("write");
    assert_eq!(built.recv_timeout(WAIT).expect("build ran").trim(), "built");
    s.notification("notifications/tools/list_changed");
    let (pid2, generation) = s.whoami();
    assert_ne!(pid1, pid2);
    assert_eq!(generation, 2);

    // A failing build keeps the running server.
    std::fs::write(&broken, "").expect("write");
    let built = fifo_line(&fifo);
    std::fs::write(src.join("server.txt"), "v3").expect("write");
    assert_eq!(
        built.recv_timeout(WAIT).expect("build ran").trim(),
        "failed"
    );
    // Saving by rename (as many editors do) counts as a change too.
    std::fs::remove_file(&broken).expect("remove");
    let built = fifo_line(&fifo);
    std::fs::write(src.join(".server.txt.swp"), "v4").expect("write");
    std::fs::rename(src.join(".server.txt.swp"), src.join("server.txt")).expect("rename");
    assert_eq!(built.recv_timeout(WAIT).expect("build ran").trim(), "built");
    s.notification("notifications/tools/list_changed");
    let (pid3, generation) = s.whoami();
    assert_ne!(pid2, pid3);
    // Exactly one restart since the last: the failed build restarted nothing.
    assert_eq!(generation, 3);

    let audit = s.audit();
    assert_eq!(events_of(&audit, "build_failed").len(), 1, "{audit:?}");
    let requested = events_of(&audit, "restart_requested");
    assert_eq!(requested.len(), 2);
    assert!(requested.iter().all(|r| r["source"] == "watch"));
    assert!(s.stderr().contains("build failed"), "{}", s.stderr());
    assert!(s.stderr().contains("building"), "{}", s.stderr());
    let status = s.tool_json("server_status", json!({}));
    assert_eq!(status["watched_paths"][0], src_arg);
}
