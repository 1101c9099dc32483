//! End-to-end tests of the process layer against real processes (`sh`, `sleep`, `cat`).
//!
//! Children announce readiness with a line; tests wait for that line, never sleep to
//! synchronise, and bound every wait with a timeout.

use std::future::Future;
use std::time::{Duration, Instant};

use super::*;

/// Upper bound for any single wait in these tests: a hang guard, not a measurement.
pub(super) const BOUND: Duration = Duration::from_secs(10);
pub(super) const SHORT: Duration = Duration::from_millis(300);

pub(super) async fn within<T>(what: &str, future: impl Future<Output = T>) -> T {
    match tokio::time::timeout(BOUND, future).await {
        Ok(value) => value,
        Err(_) => panic!("timed out waiting for {what}"),
    }
}

pub(super) fn sh(script: &str) -> ProcessCommand {
    ProcessCommand::new("sh").arg("-c").arg(script)
}

pub(super) fn text(line: &[u8]) -> String {
    String::from_utf8_lossy(line).into_owned()
}

/// `script` run with an agent's stop ladder of `grace`, once it has printed `ready`.
async fn ready_agent(script: &str, grace: Duration) -> Child {
    let mut child = sh(script)
        .stop_ladder(StopLadder::agent(grace))
        .spawn()
        .expect("spawn");
    assert_eq!(next_stdout_line(&mut child).await, "ready");
    child
}

/// Read events until a stdout line arrives; return it.
pub(super) async fn next_stdout_line(child: &mut Child) -> String {
    within("a stdout line", async {
        loop {
            match child.next_event().await {
                Some(ProcessEvent::Line {
                    stream: Stream::Stdout,
                    line,
                }) => return text(&line),
                Some(ProcessEvent::Exited(report)) => panic!("exited early: {report:?}"),
                Some(_) => {}
                None => panic!("events ended"),
            }
        }
    })
    .await
}

/// The child's events to its exit hold no leak report.
pub(super) async fn assert_nothing_leaked(child: &mut Child) {
    let events = all_events(child).await;
    assert!(
        !events.iter().any(|e| matches!(e, ProcessEvent::Leaked(_))),
        "{events:?}"
    );
}

/// Read every event up to and including `Exited`.
pub(super) async fn all_events(child: &mut Child) -> Vec<ProcessEvent> {
    within("the exit event", async {
        let mut events = Vec::new();
        while let Some(event) = child.next_event().await {
            let last = matches!(event, ProcessEvent::Exited(_));
            events.push(event);
            if last {
                break;
            }
        }
        events
    })
    .await
}

pub(super) fn lines_of(events: &[ProcessEvent], which: Stream) -> Vec<String> {
    events
        .iter()
        .filter_map(|event| match event {
            ProcessEvent::Line { stream, line } if *stream == which => Some(text(line)),
            _ => None,
        })
        .collect()
}

pub(super) fn exit_of(events: &[ProcessEvent]) -> ExitReport {
    match events.last() {
        Some(ProcessEvent::Exited(report)) => report.clone(),
        other => panic!("last event is not Exited: {other:?}"),
    }
}

/// True while `pid` exists and is not a zombie.
pub(super) fn is_alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat
                .rsplit(')')
                .next()
                .and_then(|rest| rest.split_whitespace().next())
                .unwrap_or("X");
            state != "Z" && state != "X"
        }
        Err(_) => false,
    }
}

pub(super) fn proc_state(pid: u32) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit(')')
        .next()
        .and_then(|rest| rest.split_whitespace().next())
        .map(str::to_owned)
}

/// Wait (bounded) until `condition` holds, checking as the scheduler allows.
pub(super) async fn until(what: &str, condition: impl Fn() -> bool) {
    within(what, async {
        while !condition() {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    })
    .await;
}

/// A process debussy did not start that opens `pid`'s stdout through /proc and holds
/// it: killing the child's tree cannot close that pipe. Returns once it holds it; kill
/// and wait for it when done.
pub(super) fn outsider_holding_stdout_of(pid: &str) -> std::process::Child {
    let mut outsider = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "exec 3>/proc/{pid}/fd/1; echo held; exec sleep 100"
        ))
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("outsider");
    let mut held = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(outsider.stdout.take().expect("stdout")),
        &mut held,
    )
    .expect("read");
    assert_eq!(held, "held\n");
    outsider
}

pub(super) fn sig(signal: Signal) -> StopAction {
    StopAction::Signal(signal)
}

#[tokio::test]
async fn reads_stdout_and_stderr_lines_and_the_final_unterminated_one() {
    let mut child = sh("echo out1; echo err1 >&2; echo out2; printf 'tail'")
        .spawn()
        .expect("spawn");
    let events = all_events(&mut child).await;
    assert_eq!(lines_of(&events, Stream::Stdout), ["out1", "out2", "tail"]);
    assert_eq!(lines_of(&events, Stream::Stderr), ["err1"]);
    let report = exit_of(&events);
    assert_eq!(report.status, ExitStatus::Code(0));
    assert!(report.stop.is_none());
    assert_eq!(child.next_event().await, None);
}

#[tokio::test]
async fn utf8_split_across_writes_arrives_whole() {
    // Two separate writes cut "é" (c3 a9) and "🎵" (f0 9f 8e b5) in the middle.
    let mut child = sh(r"printf 'caf\303'; printf '\251 \360\237'; printf '\216\265\n'")
        .spawn()
        .expect("spawn");
    let events = all_events(&mut child).await;
    assert_eq!(lines_of(&events, Stream::Stdout), ["café 🎵"]);
}

#[tokio::test]
async fn over_long_lines_are_reported_and_skipped() {
    let mut child = sh(
        "echo before; head -c 100000 /dev/zero | tr '\\0' x; echo; echo after; \
                        head -c 5000 /dev/zero | tr '\\0' y",
    )
    .max_line_bytes(1000)
    .spawn()
    .expect("spawn");
    let events = all_events(&mut child).await;
    assert_eq!(lines_of(&events, Stream::Stdout), ["before", "after"]);
    let too_long: Vec<_> = events
        .iter()
        .filter(|e| {
            matches!(
                e,
                ProcessEvent::LineTooLong {
                    stream: Stream::Stdout,
                    limit: 1000,
                    ..
                }
            )
        })
        .collect();
    assert_eq!(too_long.len(), 2, "{events:?}");
    assert!(exit_of(&events).is_success());
}

#[tokio::test]
async fn stdin_payload_is_written_then_closed() {
    let mut child = ProcessCommand::new("cat")
        .stdin_payload("hello\nworld\n")
        .spawn()
        .expect("spawn");
    assert!(child.stdin().is_none(), "payload mode keeps stdin private");
    let events = all_events(&mut child).await;
    assert_eq!(lines_of(&events, Stream::Stdout), ["hello", "world"]);
    assert!(exit_of(&events).is_success());
}

#[tokio::test]
async fn large_stdin_payload_does_not_deadlock() {
    // Far more than a pipe buffer in both directions at once.
    let payload = b"0123456789abcdef\n".repeat(200_000);
    let mut child = ProcessCommand::new("cat")
        .stdin_payload(payload.clone())
        .spawn()
        .expect("spawn");
    let events = all_events(&mut child).await;
    assert_eq!(lines_of(&events, Stream::Stdout).len(), 200_000);
    assert!(exit_of(&events).is_success());
}

#[tokio::test]
async fn piped_stdin_round_trips_lines_and_closes() {
    let mut child = ProcessCommand::new("cat")
        .stdin_piped()
        .spawn()
        .expect("spawn");
    let stdin = child.stdin().expect("piped stdin");
    within(
        "write",
        stdin.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1}\n"),
    )
    .await
    .expect("write");
    assert_eq!(
        next_stdout_line(&mut child).await,
        r#"{"jsonrpc":"2.0","id":1}"#
    );
    within("write", stdin.write_all(b"a\nb\n"))
        .await
        .expect("write");
    assert_eq!(next_stdout_line(&mut child).await, "a");
    assert_eq!(next_stdout_line(&mut child).await, "b");
    stdin.close();
    assert!(stdin.is_closed());
    let report = within("exit", child.wait()).await;
    assert!(report.is_success());
    assert!(matches!(
        stdin.write_all(b"late\n").await,
        Err(ProcessError::StdinClosed)
    ));
}

#[tokio::test]
async fn writing_to_an_exited_child_fails_cleanly() {
    let child = ProcessCommand::new("true")
        .stdin_piped()
        .spawn()
        .expect("spawn");
    let stdin = child.stdin().expect("piped stdin");
    within("exit", child.wait()).await;
    let big = vec![b'x'; 1 << 20];
    let result = within("write", stdin.write_all(&big)).await;
    assert!(
        matches!(
            result,
            Err(ProcessError::StdinClosed | ProcessError::StdinWrite { .. })
        ),
        "{result:?}"
    );
}

#[tokio::test]
async fn well_behaved_child_stops_on_sigint_quickly() {
    let mut child = sh("echo ready; exec sleep 100").spawn().expect("spawn");
    assert_eq!(next_stdout_line(&mut child).await, "ready");
    let started = Instant::now();
    let report = within("stop", child.stop()).await;
    let elapsed = started.elapsed();
    assert_eq!(report.status, ExitStatus::Signal(libc_sig(Signal::SIGINT)));
    let stop = report.stop.expect("stop report");
    assert_eq!(stop.actions, [sig(Signal::SIGINT)]);
    assert!(!stop.escalated);
    // Hang guard only; benches/process_stop.rs measures the real figure.
    assert!(elapsed < Duration::from_secs(2), "{elapsed:?}");
}

pub(super) fn libc_sig(signal: Signal) -> i32 {
    signal as i32
}

#[tokio::test]
async fn ladder_moves_to_sigterm_when_sigint_is_ignored() {
    let child = ready_agent(
        "trap '' INT; trap 'exit 7' TERM; echo ready; while :; do sleep 10; done",
        SHORT,
    )
    .await;
    let report = within("stop", child.stop()).await;
    assert_eq!(report.status, ExitStatus::Code(7));
    let stop = report.stop.expect("stop report");
    assert_eq!(stop.actions, [sig(Signal::SIGINT), sig(Signal::SIGTERM)]);
    assert!(stop.took >= SHORT, "{:?}", stop.took);
}

#[tokio::test]
async fn ladder_ends_in_sigkill_when_everything_is_ignored() {
    let mut child = ready_agent(
        "trap '' INT TERM; echo ready; while :; do sleep 10; done",
        Duration::from_millis(150),
    )
    .await;
    let report = within("stop", child.stop()).await;
    assert_eq!(report.status, ExitStatus::Signal(libc_sig(Signal::SIGKILL)));
    let stop = report.stop.expect("stop report");
    assert_eq!(
        stop.actions,
        [
            sig(Signal::SIGINT),
            sig(Signal::SIGTERM),
            sig(Signal::SIGKILL)
        ]
    );
    assert!(!stop.escalated);
    // The sleep in the loop ignored the signals too and was killed with the group.
    assert_nothing_leaked(&mut child).await;
}

#[tokio::test]
async fn a_stopped_child_is_continued_so_it_can_die() {
    let child = ready_agent("echo ready; exec sleep 100", Duration::from_secs(5)).await;
    let pid = child.pid();
    child.signal(Signal::SIGSTOP);
    until("the child to be stopped", || {
        proc_state(pid).as_deref() == Some("T")
    })
    .await;
    let report = within("stop", child.stop()).await;
    // SIGINT worked on the first step: SIGCONT let the frozen child handle it.
    assert_eq!(report.status, ExitStatus::Signal(libc_sig(Signal::SIGINT)));
    let stop = report.stop.expect("stop report");
    assert_eq!(stop.actions, [sig(Signal::SIGINT)]);
    assert!(stop.took < Duration::from_secs(5), "{:?}", stop.took);
}

#[tokio::test]
async fn mcp_ladder_closes_stdin_first() {
    let mut child = ProcessCommand::new("cat")
        .stdin_piped()
        .stop_ladder(StopLadder::mcp(
            Duration::from_secs(5),
            Duration::from_secs(5),
        ))
        .spawn()
        .expect("spawn");
    let stdin = child.stdin().expect("stdin");
    stdin.write_all(b"ping\n").await.expect("write");
    assert_eq!(next_stdout_line(&mut child).await, "ping");
    let report = within("stop", child.stop()).await;
    assert!(report.is_success(), "{report:?}");
    assert_eq!(report.stop.expect("stop").actions, [StopAction::CloseStdin]);
    assert!(stdin.is_closed());
}

#[tokio::test]
async fn mcp_ladder_terminates_a_child_that_ignores_eof() {
    let mut child = sh("trap 'exit 3' TERM; echo ready; while :; do sleep 10; done")
        .stdin_piped()
        .stop_ladder(StopLadder::mcp(
            Duration::from_millis(150),
            Duration::from_secs(5),
        ))
        .spawn()
        .expect("spawn");
    assert_eq!(next_stdout_line(&mut child).await, "ready");
    let report = within("stop", child.stop()).await;
    assert_eq!(report.status, ExitStatus::Code(3));
    assert_eq!(
        report.stop.expect("stop").actions,
        [StopAction::CloseStdin, sig(Signal::SIGTERM)]
    );
}

#[tokio::test]
async fn stop_is_idempotent_and_kill_escalates() {
    let child = ready_agent(
        "trap '' INT TERM; echo ready; while :; do sleep 10; done",
        Duration::from_secs(30),
    )
    .await;
    let control = child.control();
    let first = tokio::spawn({
        let control = control.clone();
        async move { control.stop().await }
    });
    until("the ladder to start", || control.state().is_stopping()).await;
    // A second stop joins the first; it does not restart or escalate the ladder.
    child.request_stop();
    assert!(control.is_running());
    let started = Instant::now();
    let killed = within("kill", child.kill()).await;
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(killed.status, ExitStatus::Signal(libc_sig(Signal::SIGKILL)));
    let stop = killed.stop.clone().expect("stop");
    assert_eq!(stop.actions, [sig(Signal::SIGINT), sig(Signal::SIGKILL)]);
    assert!(stop.escalated);
    let joined = within("first stop", first).await.expect("join");
    assert_eq!(joined, killed);
    // After the exit everything returns the same record and signals nothing.
    assert_eq!(within("stop again", child.stop()).await, killed);
    child.signal(Signal::SIGTERM);
    assert_eq!(child.state(), ProcessState::Exited(killed));
}

#[tokio::test]
async fn stop_after_a_natural_exit_reports_no_stop() {
    let child = sh("exit 5").spawn().expect("spawn");
    let natural = within("wait", child.wait()).await;
    assert_eq!(natural.status, ExitStatus::Code(5));
    let stopped = within("stop", child.stop()).await;
    assert_eq!(stopped, natural);
    assert!(stopped.stop.is_none());
}

#[tokio::test]
async fn a_consumer_that_drops_events_never_blocks_the_child() {
    let mut child = sh("head -c 20000000 /dev/zero | tr '\\0' 'x' | fold -w 100; \
                        head -c 2000000 /dev/zero | tr '\\0' 'y' | fold -w 100 >&2")
    .event_capacity(4)
    .spawn()
    .expect("spawn");
    drop(child.take_events());
    assert_eq!(child.next_event().await, None);
    let report = within("exit", child.wait()).await;
    assert!(report.is_success());
}

#[tokio::test]
async fn floods_on_both_pipes_are_drained_together() {
    let mut child = sh("i=0; while [ $i -lt 3000 ]; do \
                          echo \"out $i\"; echo \"err $i\" >&2; i=$((i+1)); done")
    .event_capacity(8)
    .spawn()
    .expect("spawn");
    let events = all_events(&mut child).await;
    assert_eq!(lines_of(&events, Stream::Stdout).len(), 3000);
    assert_eq!(lines_of(&events, Stream::Stderr).len(), 3000);
    assert_eq!(lines_of(&events, Stream::Stderr)[2999], "err 2999");
}

#[tokio::test]
async fn env_and_cwd_are_applied() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut child = sh("echo \"$DEBUSSY_T_ADDED|${HOME-unset}|$(pwd)\"")
        .env("DEBUSSY_T_ADDED", "yes")
        .env_remove("HOME")
        .current_dir(dir.path())
        .spawn()
        .expect("spawn");
    let line = next_stdout_line(&mut child).await;
    let canonical = dir.path().canonicalize().expect("canonical");
    assert_eq!(line, format!("yes|unset|{}", canonical.display()));
}

#[tokio::test]
async fn spawn_errors_say_what_was_looked_for() {
    let missing = ProcessCommand::new("debussy-no-such-program")
        .env("PATH", "/nonexistent-a:/nonexistent-b")
        .spawn()
        .expect_err("must fail");
    assert!(
        matches!(&missing, ProcessError::ProgramNotFound { program, searched }
            if program == "debussy-no-such-program" && searched.contains("/nonexistent-a:/nonexistent-b")),
        "{missing:?}"
    );
    assert_eq!(
        missing.to_string(),
        "start `debussy-no-such-program`: program not found \
         (searched PATH=/nonexistent-a:/nonexistent-b)"
    );

    let dir = tempfile::tempdir().expect("temp dir");
    let relative = ProcessCommand::new("./nope.sh")
        .current_dir(dir.path())
        .spawn()
        .expect_err("must fail");
    assert!(
        relative.to_string().contains("no file at") && relative.to_string().contains("nope.sh"),
        "{relative}"
    );

    let script = dir.path().join("not-exec.sh");
    std::fs::write(&script, "#!/bin/sh\necho hi\n").expect("write");
    let denied = ProcessCommand::new(&script).spawn().expect_err("must fail");
    assert!(
        matches!(&denied, ProcessError::NotExecutable { path, .. } if *path == script),
        "{denied:?}"
    );

    let interp = dir.path().join("bad-interp.sh");
    std::fs::write(&interp, "#!/no/such/interpreter\necho hi\n").expect("write");
    make_executable(&interp);
    let bad = ProcessCommand::new(&interp).spawn().expect_err("must fail");
    assert!(
        matches!(&bad, ProcessError::InterpreterNotFound { interpreter, .. }
            if interpreter == "/no/such/interpreter"),
        "{bad:?}"
    );

    let cwd = ProcessCommand::new("true")
        .current_dir(dir.path().join("missing-dir"))
        .spawn()
        .expect_err("must fail");
    assert!(matches!(cwd, ProcessError::MissingCwd { .. }), "{cwd:?}");
}

fn make_executable(path: &std::path::Path) {
    use std::os::unix::fs::PermissionsExt;
    let mut permissions = std::fs::metadata(path).expect("metadata").permissions();
    permissions.set_mode(0o755);
    std::fs::set_permissions(path, permissions).expect("chmod");
}

#[tokio::test]
async fn inherited_stderr_produces_no_events() {
    let mut child = sh("echo 'inherited stderr line from a test child' >&2; echo out")
        .inherit_stderr()
        .spawn()
        .expect("spawn");
    let events = all_events(&mut child).await;
    assert_eq!(lines_of(&events, Stream::Stdout), ["out"]);
    assert!(lines_of(&events, Stream::Stderr).is_empty());
    assert!(exit_of(&events).is_success());
}
