//! The lifetime of a child's tree against real processes: grandchildren die with the
//! group, processes that left the group (`setsid`, a double fork) die with the child,
//! pipes held outside the tree are abandoned, and a dropped child, a panicking owner or a
//! shut down runtime takes the whole tree along.

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
    assert_nothing_leaked(&mut child).await;
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
    let leak = leak_of(&events);
    assert_eq!(leak.group_pids, [grandchild]);
    assert!(leak.open_pipes.is_empty(), "killing the group closed them");
    assert!(leak.to_string().contains(&grandchild.to_string()));
    until("the grandchild to be gone", || !is_alive(grandchild)).await;
    assert!(!live_groups().contains(&child.pid()));
}

/// The first leak event among `events`.
fn leak_of(events: &[ProcessEvent]) -> Leak {
    events
        .iter()
        .find_map(|e| match e {
            ProcessEvent::Leaked(leak) => Some(leak.clone()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no leak event in {events:?}"))
}

#[tokio::test]
async fn a_process_that_left_the_group_is_killed_when_the_child_ends() {
    // `setsid` takes the sleeper out of the group, and it holds our pipes: a group kill
    // cannot reach it, its reaper can. (Not a group leader, `setsid` does not fork, so
    // `$!` is the sleeper's pid.)
    let mut child = sh("setsid sleep 100 & echo $!")
        .leak_grace(Duration::from_millis(100))
        .spawn()
        .expect("spawn");
    let escapee: u32 = next_stdout_line(&mut child).await.parse().expect("pid");
    let events = all_events(&mut child).await;
    let leak = leak_of(&events);
    assert_eq!(leak.escaped_pids, [escapee], "{leak:?}");
    assert!(leak.group_pids.is_empty(), "{leak:?}");
    assert!(
        leak.open_pipes.is_empty(),
        "killing it closed them: {leak:?}"
    );
    assert!(
        !is_alive(escapee),
        "the process that left the group survived"
    );
    assert!(exit_of(&events).is_success());
}

#[tokio::test]
async fn a_double_forked_daemon_is_found_and_killed() {
    // The classic daemon: fork, setsid, fork again, and the middle process exits, so the
    // daemon's parent is gone at once. It is handed to the reaper, not to init.
    let mut child = sh(r#"sh -c 'setsid sh -c "sleep 100 & echo \$!" & wait'; exec sleep 100"#)
        .spawn()
        .expect("spawn");
    let daemon: u32 = next_stdout_line(&mut child).await.parse().expect("pid");
    let parent = procfs::stat_of(daemon).expect("the daemon runs").ppid;
    assert_ne!(parent, 1, "the daemon went to init");
    let report = within("kill", child.kill()).await;
    assert_eq!(report.status, ExitStatus::Signal(libc_sig(Signal::SIGKILL)));
    let events = all_events(&mut child).await;
    assert_eq!(leak_of(&events).escaped_pids, [daemon]);
    assert!(!is_alive(daemon), "the daemon survived");
}

#[tokio::test]
async fn pipes_held_outside_the_tree_are_abandoned() {
    a_held_stdout_is_abandoned(sh("echo $$; read line || :")).await;
}

/// A process debussy did not start opens the child's stdout through /proc: killing the
/// child's tree cannot close it, and the reader (task or inline) must not wait for it.
pub(super) async fn a_held_stdout_is_abandoned(command: ProcessCommand) {
    let mut child = command
        .stdin_piped()
        .leak_grace(Duration::from_millis(100))
        .spawn()
        .expect("spawn");
    let pid = next_stdout_line(&mut child).await;
    let mut outsider = outsider_holding_stdout_of(&pid);
    child.stdin().expect("stdin").close();
    let events = all_events(&mut child).await;
    let _ = outsider.kill();
    let _ = outsider.wait();
    let leak = leak_of(&events);
    assert_eq!(leak.open_pipes, [Stream::Stdout], "{leak:?}");
    assert!(
        leak.group_pids.is_empty() && leak.escaped_pids.is_empty(),
        "{leak:?}"
    );
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
