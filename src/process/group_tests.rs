//! The process group's lifetime against real processes: grandchildren die with the group,
//! pipes held outside it are abandoned, and a dropped child, a panicking owner or a shut
//! down runtime takes its whole group along.

use std::time::{Duration, Instant};

use super::*;

use super::tests::*;

#[tokio::test]
async fn grandchildren_die_with_the_group_on_kill() {
    let mut child = sh("sleep 100 & echo $!; wait").spawn().expect("spawn");
    let grandchild: u32 = next_stdout_line(&mut child).await.parse().expect("pid");
    assert!(is_alive(grandchild));
    let report = within("kill", child.kill()).await;
    assert_eq!(report.status, ExitStatus::Signal(libc_sig(Signal::SIGKILL)));
    until("the grandchild to be gone", || !is_alive(grandchild)).await;
    let events = all_events(&mut child).await;
    assert!(
        !events.iter().any(|e| matches!(e, ProcessEvent::Leaked(_))),
        "{events:?}"
    );
}

#[tokio::test]
async fn a_grandchild_left_in_the_group_is_reported_and_killed() {
    // The grandchild ignores SIGINT and says so only once it does; the ladder's SIGINT
    // ends sh but not the grandchild, which keeps stdout open.
    let mut child = sh(r#"sh -c 'trap "" INT; echo $$; exec sleep 100' & wait"#)
        .stop_ladder(StopLadder::agent(Duration::from_secs(5)))
        .spawn()
        .expect("spawn");
    let grandchild: u32 = next_stdout_line(&mut child).await.parse().expect("pid");
    let report = within("stop", child.stop()).await;
    assert_eq!(report.status, ExitStatus::Signal(libc_sig(Signal::SIGINT)));
    let events = all_events(&mut child).await;
    let leak = events
        .iter()
        .find_map(|e| match e {
            ProcessEvent::Leaked(leak) => Some(leak.clone()),
            _ => None,
        })
        .expect("a leak event");
    assert_eq!(leak.group_pids, [grandchild]);
    assert!(leak.open_pipes.is_empty(), "killing the group closed them");
    assert!(leak.to_string().contains(&grandchild.to_string()));
    until("the grandchild to be gone", || !is_alive(grandchild)).await;
    assert!(!live_groups().contains(&child.pid()));
}

#[tokio::test]
async fn pipes_held_outside_the_group_are_abandoned() {
    // `setsid` takes the sleeper out of our group: it cannot be killed with it, but its
    // hold on our pipes must not keep us waiting. (Not a group leader, `setsid` does not
    // fork, so `$!` is the sleeper's pid.)
    let mut child = sh("setsid sleep 100 & echo $!")
        .leak_grace(Duration::from_millis(100))
        .spawn()
        .expect("spawn");
    let escapee: u32 = next_stdout_line(&mut child).await.parse().expect("pid");
    let events = all_events(&mut child).await;
    let escapee_pid = nix::unistd::Pid::from_raw(i32::try_from(escapee).expect("pid"));
    let _ = nix::sys::signal::kill(escapee_pid, Signal::SIGKILL);
    let leak = events
        .iter()
        .find_map(|e| match e {
            ProcessEvent::Leaked(leak) => Some(leak.clone()),
            _ => None,
        })
        .expect("a leak event");
    assert_eq!(leak.open_pipes, [Stream::Stdout, Stream::Stderr]);
    assert!(leak.group_pids.is_empty(), "{leak:?}");
    assert!(exit_of(&events).is_success());
}

#[tokio::test]
async fn dropping_the_child_kills_the_whole_group() {
    let mut child = sh("sleep 100 & echo $!; wait").spawn().expect("spawn");
    let grandchild: u32 = next_stdout_line(&mut child).await.parse().expect("pid");
    let control = child.control();
    let pid = child.pid();
    assert!(live_groups().contains(&pid));
    drop(child);
    until("the grandchild to be gone", || !is_alive(grandchild)).await;
    until("the child to be gone", || !is_alive(pid)).await;
    let report = within("wait", control.wait()).await;
    assert_eq!(report.status, ExitStatus::Signal(libc_sig(Signal::SIGKILL)));
    assert!(report.stop.expect("stop").escalated);
    until("the group to be unregistered", || {
        !live_groups().contains(&pid)
    })
    .await;
}

#[tokio::test]
async fn a_panicking_owner_takes_its_children_down() {
    let (pid_tx, pid_rx) = tokio::sync::oneshot::channel();
    let task = tokio::spawn(async move {
        let mut child = sh("sleep 100 & echo $!; wait").spawn().expect("spawn");
        let grandchild: u32 = next_stdout_line(&mut child).await.parse().expect("pid");
        let _ = pid_tx.send((child.pid(), grandchild));
        panic!("the owner fails while the child runs");
    });
    let (pid, grandchild) = within("pids", pid_rx).await.expect("pids sent");
    assert!(within("the task", task).await.is_err(), "the task panicked");
    until("the child to be gone", || !is_alive(pid)).await;
    until("the grandchild to be gone", || !is_alive(grandchild)).await;
}

#[test]
fn runtime_shutdown_kills_children_it_was_running() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let (pid, grandchild) = runtime.block_on(async {
        let mut child = sh("sleep 100 & echo $!; wait").spawn().expect("spawn");
        let grandchild: u32 = next_stdout_line(&mut child).await.parse().expect("pid");
        let pid = child.pid();
        // Parked in a task that never ends: only the runtime's shutdown drops it.
        tokio::spawn(async move {
            let _owned = child;
            std::future::pending::<()>().await;
        });
        (pid, grandchild)
    });
    drop(runtime);
    let deadline = Instant::now() + BOUND;
    while is_alive(pid) || is_alive(grandchild) {
        assert!(Instant::now() < deadline, "children survived the runtime");
        std::thread::sleep(Duration::from_millis(2));
    }
}
