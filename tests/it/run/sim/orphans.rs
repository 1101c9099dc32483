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
