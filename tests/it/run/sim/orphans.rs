//! A recorded agent process group is signalled only while its number still names the
//! agent: after pid reuse, the process that got the number is left alone.

use std::os::unix::process::CommandExt as _;
use std::time::Duration;

use super::kit::{LiveRun, sleeping_project};
use crate::support::project::wait_exit;

/// The start time of process `pid` (field 22 of its stat).
fn start_of(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("stat");
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .expect("stat")
        .1
        .split_whitespace()
        .collect();
    fields[19].parse().expect("start time")
}

/// A process of the test's own, killed however the test ends.
struct Innocent(std::process::Child);

impl Drop for Innocent {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_process_that_took_the_recorded_agents_number_is_not_killed_on_the_next_run() {
    let project = sleeping_project();
    let mut live = LiveRun::start(&project, &[]);
    let agent = u32::try_from(live.agent_pid).expect("pid");
    let recorded_start = start_of(agent);
    live.signal(nix::sys::signal::Signal::SIGKILL);
    assert_eq!(wait_exit(&mut live.child, Duration::from_secs(30)), -1);

    // An innocent process, the leader of its own group, takes the agent's number: the
    // recorded group now names it, with the agent's start time.
    let mut innocent = Innocent(
        std::process::Command::new("sleep")
            .arg("300")
            .process_group(0)
            .spawn()
            .expect("spawn"),
    );
    let innocent_pid = innocent.0.id();
    assert_ne!(start_of(innocent_pid), recorded_start);
    let db = rusqlite::Connection::open(project.root().join(".debussy/state.db")).expect("db");
    let updated = db
        .execute(
            "UPDATE phase_agents SET pgid = ?1, leader_start = ?2",
            rusqlite::params![innocent_pid, i64::try_from(recorded_start).expect("start")],
        )
        .expect("update");
    assert_eq!(updated, 1, "the running phase's agent group was recorded");
    drop(db);

    // Any `debussy run` settles interrupted runs and kills what their agents left.
    let output = project
        .command(&["run", "plan/MASTER_PLAN.md", "--agent", "sim"])
        .output()
        .expect("run");
    let alive = innocent.0.try_wait().expect("try_wait").is_none();
    assert!(
        alive,
        "the process that took the agent's number was killed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    // The interrupted run was settled: its recorded groups are forgotten.
    let db = rusqlite::Connection::open(project.root().join(".debussy/state.db")).expect("db");
    let left: i64 = db
        .query_row("SELECT COUNT(*) FROM phase_agents", [], |row| row.get(0))
        .expect("count");
    assert_eq!(left, 0);
}

/// debussy and its reaper killed together (`pkill -9 -f debussy`): nothing is left to
/// stop a process the agent started in a session of its own (as Claude Code starts its
/// Bash commands). The next run finds it by the run's mark in its environment and stops
/// it, saying so.
/// A process the test made debussy's agent start, killed however the test ends (only
/// while it is still that process).
struct Stray(Option<debussy::process::ProcessIdentity>);

impl Drop for Stray {
    fn drop(&mut self) {
        if let Some(stray) = &self.0 {
            stray.signal(nix::sys::signal::Signal::SIGKILL);
        }
    }
}

#[test]
fn a_process_that_left_the_agents_group_is_stopped_once_debussy_and_its_reaper_died() {
    use nix::sys::signal::Signal;
    let project = crate::support::project::Project::new();
    project.write(".gitignore", "started\n");
    let stray = "setsid sh -c 'echo $$ > .git/stray.pid; exec sleep 300' \
                 < /dev/null > /dev/null 2>&1 &";
    project.plan(
        &[("1", "N/A", "test -f started")],
        &crate::support::scenario::Scenario::new().script(
            crate::support::scenario::Script::phase("1")
                .turn(
                    crate::support::scenario::Turn::say("working")
                        .percent(10)
                        .bash(stray)
                        .bash("if [ ! -f started ]; then touch started; sleep 60; fi"),
                )
                .turn(crate::support::scenario::Turn::notes("1"))
                .turn(crate::support::scenario::Turn::done()),
        ),
    );
    let mut live = LiveRun::start(&project, &[]);
    let agent = u32::try_from(live.agent_pid).expect("pid");
    let reaper = std::fs::read_to_string(format!("/proc/{agent}/stat"))
        .expect("stat")
        .rsplit_once(')')
        .and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse::<i32>().ok())
        .expect("the agent's parent");
    let reaper = nix::unistd::Pid::from_raw(reaper);
    // Stopped first, so it cannot act on debussy's end: both die at once.
    nix::sys::signal::kill(reaper, Signal::SIGSTOP).expect("stop the reaper");
    live.signal(Signal::SIGKILL);
    nix::sys::signal::kill(reaper, Signal::SIGKILL).expect("kill the reaper");
    assert_eq!(wait_exit(&mut live.child, Duration::from_secs(30)), -1);
    let pid: u32 = std::fs::read_to_string(project.root().join(".git/stray.pid"))
        .expect("the stray's pid")
        .trim()
        .parse()
        .expect("a pid");
    // Killed however the test ends.
    let _stray = Stray(debussy::process::ProcessIdentity::of(pid));
    assert!(
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .is_ok_and(|stat| !stat.contains(") Z ")),
        "the stray outlived debussy and its reaper"
    );

    let (code, events) = project.run(&["--resume"]);
    assert_eq!(code, 0, "{events:#?}");
    let said = serde_json::to_string(&events).expect("json");
    assert!(
        said.contains("1 process started by interrupted run")
            && said.contains("still running outside its agent's process group"),
        "{events:#?}"
    );
    crate::support::wait::wait_until("the stray to be gone", Duration::from_secs(10), || {
        crate::support::processes::process_gone(u64::from(pid))
    });
}
