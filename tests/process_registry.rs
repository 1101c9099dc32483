//! `kill_all_groups` kills every child group in the process, so it gets a test binary
//! of its own: nothing else runs children here, even under plain `cargo test`, which runs
//! a binary's tests as threads of one process.

#[path = "it/support/command.rs"]
mod command;
#[path = "it/support/wait.rs"]
mod wait;

use std::time::Duration;

use debussy::process::{
    ExitStatus, ProcessCommand, ProcessEvent, Signal, Stream, kill_all_groups, live_groups,
};

use wait::pid_in;

const BOUND: Duration = Duration::from_secs(10);

async fn ready(child: &mut debussy::process::Child) {
    let wait = async {
        while let Some(event) = child.next_event().await {
            if let ProcessEvent::Line {
                stream: Stream::Stdout,
                ..
            } = event
            {
                return;
            }
        }
        panic!("exited before its ready line");
    };
    tokio::time::timeout(BOUND, wait)
        .await
        .expect("ready line in time");
}

#[tokio::test]
async fn kill_all_groups_kills_every_live_child() {
    let command = ProcessCommand::new("sh")
        .arg("-c")
        .arg("trap '' INT TERM; echo ready; while :; do sleep 10; done");
    let mut first = command.spawn().expect("spawn");
    let mut second = command.spawn().expect("spawn");
    ready(&mut first).await;
    ready(&mut second).await;
    let live = live_groups();
    assert!(
        live.contains(&first.pid()) && live.contains(&second.pid()),
        "{live:?}"
    );

    assert_eq!(kill_all_groups(), 2);

    let sigkill = ExitStatus::Signal(Signal::SIGKILL as i32);
    for child in [&first, &second] {
        let report = tokio::time::timeout(BOUND, child.wait())
            .await
            .expect("reaped in time");
        assert_eq!(report.status, sigkill);
    }
    // The supervising tasks unregister the groups once they are cleaned up.
    tokio::time::timeout(BOUND, async {
        while !live_groups().is_empty() {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    })
    .await
    .expect("groups unregistered");
}

/// Whether `pid` is gone (a zombie counts as gone) within the bound.
fn gone_within(pid: i32) -> bool {
    let deadline = std::time::Instant::now() + BOUND;
    loop {
        let state = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|stat| {
                stat.rsplit_once(')')
                    .and_then(|(_, rest)| rest.split_whitespace().next().map(str::to_owned))
            });
        if matches!(state.as_deref(), None | Some("Z" | "X")) {
            return true;
        }
        if std::time::Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Run `sh -c server` below `debussy mcp supervise` in `dir`, wait for the pid the
/// script writes to `pid_file`, SIGKILL debussy, and return that pid.
fn sigkill_the_owner_of(dir: &std::path::Path, server: &str, pid_file: &std::path::Path) -> i32 {
    let mut owner = command::debussy(dir, &["mcp", "supervise", "--", "sh", "-c", server])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn");
    let pid: i32 = pid_in(pid_file, BOUND);
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(owner.id()).expect("pid")),
        Signal::SIGKILL,
    )
    .expect("SIGKILL");
    let _ = owner.wait();
    pid
}

/// The pids of `pids` still running after the bound; those are killed.
fn outliving(pids: impl IntoIterator<Item = i32>) -> Vec<i32> {
    let outlived: Vec<i32> = pids.into_iter().filter(|pid| !gone_within(*pid)).collect();
    for pid in &outlived {
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(*pid), Signal::SIGKILL);
    }
    outlived
}

#[test]
fn what_a_child_started_in_a_session_of_its_own_dies_with_a_sigkilled_owner() {
    // `debussy mcp supervise` owns an MCP server that starts a helper with `setsid`, the
    // way a server starts a daemon. SIGKILL runs none of debussy's code: the helper's
    // reaper must still see debussy go and kill it.
    let dir = tempfile::tempdir().expect("tempdir");
    let pid_file = dir.path().join("helper.pid");
    let server = format!(
        "setsid sh -c 'echo $$ > {}; exec sleep 300' </dev/null >/dev/null 2>&1 & exec cat",
        pid_file.display()
    );
    let helper = sigkill_the_owner_of(dir.path(), &server, &pid_file);
    assert_eq!(
        outliving([helper]),
        [] as [i32; 0],
        "the helper outlived its SIGKILLed owner"
    );
}

#[test]
fn what_a_sigkilled_owner_ran_gets_sigterm_first_to_clean_up() {
    // git removes its lock files on SIGTERM; SIGKILLed mid-command it leaves
    // `.git/packed-refs.lock` behind and every later `git branch -D` fails. This program
    // cleans up the same way, on SIGTERM. (Its stderr goes nowhere: the shell reports the
    // `sleep` killed with it there, and its reader, debussy, is gone.)
    let dir = tempfile::tempdir().expect("tempdir");
    let pid_file = dir.path().join("server.pid");
    let lock = dir.path().join("held.lock");
    let server = format!(
        "exec 2>/dev/null; trap 'rm -f {lock}; exit 0' TERM; touch {lock}; echo $$ > {pid}; while :; do sleep 1; done",
        lock = lock.display(),
        pid = pid_file.display()
    );
    let server = sigkill_the_owner_of(dir.path(), &server, &pid_file);
    assert_eq!(
        outliving([server]),
        [] as [i32; 0],
        "the server outlived its SIGKILLed owner"
    );
    assert!(
        !lock.exists(),
        "the server was killed without the chance to remove its lock"
    );
}

#[test]
fn what_a_sigkilled_owner_ran_dies_even_when_it_ignores_sigterm() {
    // The grace after SIGTERM is bounded: a program that ignores it, and starts another
    // process when asked, is killed all the same.
    let dir = tempfile::tempdir().expect("tempdir");
    let pid_file = dir.path().join("server.pid");
    let late = dir.path().join("late.pid");
    let server = format!(
        "exec 2>/dev/null; trap 'sh -c \"echo \\$\\$ > {late}; exec sleep 300\" &' TERM; echo $$ > {pid}; while :; do sleep 1; done",
        late = late.display(),
        pid = pid_file.display()
    );
    let server = sigkill_the_owner_of(dir.path(), &server, &pid_file);
    let mut pids = outliving([server]);
    // The helper, if it got as far as writing its pid before the kill.
    pids.extend(outliving(
        std::fs::read_to_string(&late)
            .ok()
            .and_then(|text| text.trim().parse::<i32>().ok()),
    ));
    assert_eq!(
        pids,
        [] as [i32; 0],
        "outlived the SIGKILLed owner (the server ignores SIGTERM and starts a helper on it)"
    );
}
