//! A process group that a dead owner recorded (an interrupted run's agent): find it and
//! kill it — only while the number still names that group. The orchestrator calls this
//! before it resumes a run, so a leftover agent is not still working the tree.
//!
//! The agent's own reaper kills it when debussy dies, so a group left here means the
//! reaper died too (the OOM killer, a `kill -9` of every debussy process). A group number
//! is its leader's pid, which the kernel gives out again once the leader is gone and the
//! group is empty. So the leader is recorded with its start time, and the group is
//! signalled only when
//!
//! - its leader still runs with the recorded start time: it is the agent; or
//! - no process has the leader's pid, yet the group lives: a number in use as a process
//!   group is never given to a new process, so the group is still the one the agent
//!   led, outliving it.
//!
//! A leader with another start time is another process that got the number: it is left
//! alone. So is a group recorded without its leader's start time (by an older version)
//! whose number names a live process: nothing tells whether it is still the agent.

use nix::errno::Errno;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

use serde::Serialize;

use super::identity::ProcessIdentity;
use super::procfs;

/// A process group as a process that has since died recorded it: the group's number is
/// its leader's pid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordedGroup {
    /// The leader's pid and start time: the group can be told from a later one that got
    /// the same number.
    Identified(ProcessIdentity),
    /// A group recorded by a version that kept only its number.
    Unidentified(i32),
}

impl Serialize for RecordedGroup {
    /// As the process group id.
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_i32(self.pgid())
    }
}

impl RecordedGroup {
    /// The process group id.
    #[must_use]
    pub fn pgid(self) -> i32 {
        match self {
            RecordedGroup::Identified(leader) => i32::try_from(leader.pid).unwrap_or(0),
            RecordedGroup::Unidentified(pgid) => pgid,
        }
    }
}

/// What became of a recorded group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Leftover {
    /// No process of the group lives.
    Gone,
    /// The group lived and was killed.
    Killed,
    /// The group's number now names another process: it was left alone.
    Reused,
    /// A group recorded without its leader's start time, whose number names a live
    /// process: it may or may not be the agent, so it was left alone.
    Unverified,
    /// The group lives but could not be signalled (another user's, say).
    Unkillable(Errno),
}

/// Kill every process of the recorded group if it is still the one recorded and any of
/// it lives. Never signals group 0 or 1, nor this process's own group, which a corrupt
/// record could name.
pub fn kill_leftover_group(group: RecordedGroup) -> Leftover {
    let pgid = group.pgid();
    if pgid <= 1 || Pid::from_raw(pgid) == nix::unistd::getpgrp() {
        return Leftover::Gone;
    }
    let leader = procfs::stat_of(pgid.unsigned_abs()).filter(|stat| stat.is_live());
    match (group, leader) {
        (RecordedGroup::Identified(recorded), Some(now)) if now.start != recorded.start => {
            Leftover::Reused
        }
        (RecordedGroup::Unidentified(_), Some(_)) => Leftover::Unverified,
        // The recorded leader itself, or no leader: whatever is left of its group.
        _ => kill_group(Pid::from_raw(pgid)),
    }
}

fn kill_group(group: Pid) -> Leftover {
    match killpg(group, None) {
        Err(Errno::ESRCH) => Leftover::Gone,
        Err(errno) => Leftover::Unkillable(errno),
        Ok(()) => match killpg(group, Signal::SIGKILL) {
            Ok(()) | Err(Errno::ESRCH) => Leftover::Killed,
            Err(errno) => Leftover::Unkillable(errno),
        },
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::process::CommandExt;
    use std::process::{Child, Command};

    use super::*;

    fn leader() -> Child {
        Command::new("sleep")
            .arg("60")
            .process_group(0)
            .spawn()
            .expect("spawn sleep")
    }

    fn identity(child: &Child) -> ProcessIdentity {
        ProcessIdentity::of(child.id()).expect("identity")
    }

    #[test]
    fn a_live_group_is_killed_and_a_dead_one_is_gone() {
        let mut child = leader();
        let recorded = RecordedGroup::Identified(identity(&child));
        assert_eq!(kill_leftover_group(recorded), Leftover::Killed);
        let status = child.wait().expect("wait");
        assert!(!status.success(), "sleep was killed");
        assert_eq!(kill_leftover_group(recorded), Leftover::Gone);
    }

    #[test]
    fn a_process_that_took_the_leaders_number_is_left_alone() {
        // What pid reuse looks like: the number names a live process that started at
        // another time than the recorded leader.
        let mut innocent = leader();
        let now = identity(&innocent);
        let recorded = RecordedGroup::Identified(ProcessIdentity {
            start: now.start.saturating_sub(1),
            ..now
        });
        assert_eq!(kill_leftover_group(recorded), Leftover::Reused);
        assert!(
            ProcessIdentity::is_alive(&now),
            "the process that took the number was signalled"
        );
        innocent.kill().expect("kill");
        innocent.wait().expect("wait");
    }

    #[test]
    fn a_group_that_outlived_its_leader_is_killed() {
        // The leader exits at once; its child stays in the group. The number cannot have
        // been given out again while the group lives.
        let mut leader = Command::new("sh")
            .arg("-c")
            .arg("sleep 60 & echo $!")
            .process_group(0)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("spawn");
        let recorded = RecordedGroup::Identified(identity(&leader));
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(leader.stdout.take().expect("stdout")),
            &mut line,
        )
        .expect("read");
        let member: u32 = line.trim().parse().expect("pid");
        leader.wait().expect("the leader exits");
        assert_eq!(kill_leftover_group(recorded), Leftover::Killed);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while procfs::stat_of(member).is_some_and(procfs::Stat::is_live) {
            assert!(std::time::Instant::now() < deadline, "the member survived");
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }

    #[test]
    fn a_number_recorded_without_a_start_time_is_not_signalled_while_it_names_a_process() {
        let mut child = leader();
        let pgid = i32::try_from(child.id()).expect("pid");
        assert_eq!(
            kill_leftover_group(RecordedGroup::Unidentified(pgid)),
            Leftover::Unverified
        );
        assert!(identity(&child).is_alive());
        child.kill().expect("kill");
        child.wait().expect("wait");
        assert_eq!(
            kill_leftover_group(RecordedGroup::Unidentified(pgid)),
            Leftover::Gone
        );
    }
}
