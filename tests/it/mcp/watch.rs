//! File watching: a change runs the build and restarts; a failing build keeps the server.

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::sync::mpsc;

use serde_json::json;

use super::support::{Supervisor, WAIT, error_message, events_of};

/// Read one line from the FIFO at `path` on a thread; the build blocks writing to it
/// until then, so receiving the line means the build has run to that point.
fn fifo_line(path: &Path) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    let path = path.to_owned();
    std::thread::spawn(move || {
        // Opening while the previous writer has not closed yet meets that writer's end of
        // file: open again until a line arrives (the receiver's timeout bounds the wait).
        for _ in 0..1_000 {
            let file = std::fs::File::open(&path).expect("open fifo");
            let mut line = String::new();
            let _ = std::io::BufReader::new(file).read_line(&mut line);
            if !line.is_empty() {
                let _ = tx.send(line);
                return;
            }
        }
    });
    rx
}

/// Write a line into the FIFO at `gate` once its reader (a build or a server start
/// waiting there) opens it. Opening a FIFO for writing waits for the reader: done on a
/// thread, bounded by WAIT.
fn open_gate(gate: &Path) {
    let (tx, rx) = mpsc::channel();
    let gate = gate.to_owned();
    std::thread::spawn(move || {
        let _ = tx.send(std::fs::write(&gate, "go\n"));
    });
    rx.recv_timeout(WAIT)
        .expect("the gate is read in time")
        .expect("open the gate");
}

/// Make a FIFO at each of `paths`.
fn fifos(paths: &[&Path]) {
    for fifo in paths {
        nix::unistd::mkfifo(*fifo, nix::sys::stat::Mode::from_bits_truncate(0o600))
            .expect("mkfifo");
    }
}

/// A watched `src` directory beside a build that says it started on the FIFO `started`,
/// then waits until the test opens the FIFO `gate`.
struct GatedBuild {
    work: tempfile::TempDir,
    src: PathBuf,
    started: PathBuf,
    gate: PathBuf,
    build: String,
}

impl GatedBuild {
    fn new() -> Self {
        let work = tempfile::tempdir().expect("tempdir");
        let src = work.path().join("src");
        std::fs::create_dir_all(&src).expect("mkdir");
        let started = work.path().join("started.fifo");
        let gate = work.path().join("gate.fifo");
        fifos(&[&started, &gate]);
        let build = format!(
            "echo started > '{started}'; read line < '{gate}'",
            started = started.display(),
            gate = gate.display()
        );
        GatedBuild {
            work,
            src,
            started,
            gate,
            build,
        }
    }
}

/// An initialized supervisor that watches `src` and runs `build` after a 100 ms quiet
/// spell.
fn watching(src: &Path, build: &str) -> Supervisor {
    let src = src.display().to_string();
    let mut s = Supervisor::start_with(
        &["--watch", &src, "--build", build, "--debounce", "100"],
        &[],
    );
    s.initialize();
    s
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
    let mut s = watching(&src, &build);
    let (pid1, _) = s.whoami();

    // Ignored directories do not count; a real change builds and restarts.
    std::fs::write(src.join("target/out.o"), "x").expect("write");
    let built = fifo_line(&fifo);
    std::fs::write(src.join("server.txt"), "v2").expect("write");
    assert_eq!(built.recv_timeout(WAIT).expect("build ran").trim(), "built");
    s.notification("notifications/tools/list_changed");
    let pid2 = s.assert_restarted(pid1, 2);

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
    assert_eq!(status["watched_paths"][0], src.display().to_string());
}

/// Changes that arrive while a build or restart is under way schedule exactly one more
/// round, however many there are.
#[test]
fn changes_during_a_build_schedule_exactly_one_more_round() {
    let GatedBuild {
        work: _work,
        src,
        started,
        gate,
        build,
    } = GatedBuild::new();
    let mut s = watching(&src, &build);

    let first = fifo_line(&started);
    std::fs::write(src.join("a.txt"), "a").expect("write");
    assert_eq!(
        first.recv_timeout(WAIT).expect("first build").trim(),
        "started"
    );
    // Two more changes while the first build runs, each seen before the build ends.
    std::fs::write(src.join("b.txt"), "b").expect("write");
    s.wait_stderr("b.txt) during the build: one more round follows it");
    std::fs::write(src.join("c.txt"), "c").expect("write");
    s.wait_stderr("c.txt) during the build: one more round follows it");
    let second = fifo_line(&started);
    open_gate(&gate);
    s.notification("notifications/tools/list_changed");
    assert_eq!(
        second.recv_timeout(WAIT).expect("second build").trim(),
        "started"
    );
    // The second round names the changes it is for.
    s.wait_stderr("b.txt and 1 more): running the build");
    open_gate(&gate);
    s.notification("notifications/tools/list_changed");
    let status = s.tool_json("server_status", json!({}));
    assert_eq!(status["restart_count"], 2, "{status}");
    assert_eq!(status["generation"], 3, "{status}");
    assert_eq!(status["build_running"], false, "{status}");
    assert_eq!(status["change_pending"], false, "{status}");
}

/// A build that succeeds while a restart asked for meanwhile (here by `restart_server`)
/// is still under way: that restart may start the code from before the build, so the
/// built files make one more round once it is over, named in its reason.
#[test]
fn a_build_that_ends_during_a_restart_makes_one_more_round() {
    let GatedBuild {
        work,
        src,
        started,
        gate,
        build,
    } = GatedBuild::new();
    let server_gate = work.path().join("server-gate.fifo");
    fifos(&[&server_gate]);
    // The first server starts at once; every later one waits for the test to let it.
    let once = work.path().join("started-once");
    let script = format!(
        "if [ -e '{once}' ]; then read line < '{server_gate}'; fi; touch '{once}'; exec '{server}'",
        once = once.display(),
        server_gate = server_gate.display(),
        server = super::support::test_server().display()
    );
    let src_flag = src.display().to_string();
    let mut s = Supervisor::start_command(
        &["--watch", &src_flag, "--build", &build, "--debounce", "100"],
        &["sh".to_owned(), "-c".to_owned(), script],
    );
    s.initialize();

    let first = fifo_line(&started);
    std::fs::write(src.join("a.txt"), "a").expect("write");
    assert_eq!(
        first.recv_timeout(WAIT).expect("the build").trim(),
        "started"
    );
    let restart = s.request(
        "tools/call",
        json!({"name": "restart_server", "arguments": {}}),
    );
    s.wait_stderr("restart requested (tool)");
    open_gate(&gate);
    s.wait_stderr("a.txt) while a restart is under way: one more round follows it");

    let second = fifo_line(&started);
    open_gate(&server_gate);
    let answer = s.response(&restart);
    assert!(answer.get("result").is_some(), "{answer}");
    assert_eq!(
        second.recv_timeout(WAIT).expect("the second build").trim(),
        "started"
    );
    s.wait_stderr("a.txt): running the build");
    open_gate(&gate);
    open_gate(&server_gate);
    s.wait_stderr("started the server (generation 3");
    let status = s.tool_json("server_status", json!({}));
    assert_eq!(status["generation"], 3, "{status}");
    assert_eq!(status["build_running"], false, "{status}");
    assert_eq!(status["change_pending"], false, "{status}");
}

/// A broken edit under `--watch`: the server crashes at start. The supervisor does not
/// loop: it waits for the next change, and the client, `server_status` and the audit
/// log all see the end of the server's stderr (the SyntaxError), which still passes
/// through to the supervisor's stderr. The fix brings the server back.
#[test]
fn a_crash_after_a_change_waits_for_the_next_change_and_shows_stderr() {
    let work = tempfile::tempdir().expect("tempdir");
    let src = work.path().join("src");
    std::fs::create_dir_all(&src).expect("mkdir");
    let code = src.join("server.txt");
    std::fs::write(&code, "ok").expect("write");
    let script = format!(
        "if grep -q broken '{code}'; then echo 'Traceback (most recent call last):' >&2; \
         echo '  File \"server.py\", line 3' >&2; \
         echo 'SyntaxError: invalid syntax' >&2; exit 1; fi; exec '{server}'",
        code = code.display(),
        server = super::support::test_server().display()
    );
    let src_arg = src.display().to_string();
    let mut s = Supervisor::start_command(
        &["--watch", &src_arg, "--debounce", "100"],
        &["sh".to_owned(), "-c".to_owned(), script],
    );
    s.initialize();
    std::fs::write(&code, "broken").expect("write");
    s.wait_stderr("waiting for the next change");
    let reply = s.call_tool("echo", json!({"text": "still there?"}));
    let message = error_message(&reply);
    assert!(message.contains("SyntaxError: invalid syntax"), "{reply}");
    assert!(message.contains("next change"), "{reply}");
    let status = s.tool_json("server_status", json!({}));
    assert_eq!(status["mode"], "degraded", "{status}");
    assert_eq!(status["crash_count"], 1, "{status}");
    let tail = status["last_stderr"].as_array().expect("last_stderr");
    assert_eq!(
        tail.last(),
        Some(&json!("SyntaxError: invalid syntax")),
        "{status}"
    );
    let audit = s.audit();
    assert_eq!(events_of(&audit, "server_started").len(), 2, "{audit:?}");
    let degraded = events_of(&audit, "degraded");
    assert_eq!(degraded.len(), 1, "{audit:?}");
    assert!(
        degraded[0]["stderr_tail"]
            .as_array()
            .is_some_and(|t| t.contains(&json!("SyntaxError: invalid syntax"))),
        "{}",
        degraded[0]
    );
    assert!(
        s.stderr().contains("SyntaxError: invalid syntax"),
        "{}",
        s.stderr()
    );

    std::fs::write(&code, "fixed").expect("write");
    s.notification("notifications/tools/list_changed");
    assert_eq!(s.tool_text("echo", json!({"text": "back"})), "back");
    assert_eq!(s.whoami().1, 3);
}
