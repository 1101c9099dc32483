//! Processes a dead run left running outside every group it recorded: those that left the
//! agent's process group and session (Claude Code starts its Bash commands with `setsid`;
//! agents start daemons), when the reaper that kills them died with debussy (a
//! `kill -9` of every debussy process, the OOM killer). Each process of a run inherits the
//! run's mark in its environment (`DEBUSSY_RUN_ID`), unless it cleared its environment,
//! and that finds them.

use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

use super::identity::ProcessIdentity;
use super::procfs;

/// The most of a process's environment read.
const ENVIRON_LIMIT: u64 = 1024 * 1024;

/// How long the marked processes have to exit after SIGTERM before they are killed: as
/// the reaper gives them, so git removes its lock files.
const TERM_GRACE: Duration = Duration::from_millis(500);

/// How often the grace checks whether they are gone.
const POLL: Duration = Duration::from_millis(20);

/// Stop every process whose environment holds `var=value`, other than this process, its
/// ancestors and the members of `killed_groups` (groups just killed, whose members may
/// not be reaped yet): SIGTERM, then SIGKILL for those still there after a grace. Only a
/// process still the one found (its start time) is signalled. Returns how many there
/// were.
#[must_use]
pub fn stop_marked(var: &str, value: &str, killed_groups: &[i32]) -> usize {
    let marked: Vec<ProcessIdentity> = marked(format!("{var}={value}").as_bytes())
        .into_iter()
        .filter(|process| {
            procfs::stat_of(process.pid).is_none_or(|stat| !killed_groups.contains(&stat.pgrp))
        })
        .collect();
    for process in &marked {
        process.signal(Signal::SIGTERM);
    }
    let deadline = Instant::now() + TERM_GRACE;
    while marked.iter().any(ProcessIdentity::is_alive) && Instant::now() < deadline {
        std::thread::sleep(POLL);
    }
    for process in &marked {
        process.signal(Signal::SIGKILL);
    }
    marked.len()
}

/// The live processes whose environment has the entry `entry` (`VAR=value`), but this
/// process and its ancestors.
fn marked(entry: &[u8]) -> Vec<ProcessIdentity> {
    let spared = ancestry();
    let Some(processes) = procfs::processes() else {
        return Vec::new();
    };
    processes
        .filter(|(pid, _)| !spared.contains(pid))
        .filter_map(|(pid, dir)| {
            let found = ProcessIdentity::of(pid)?;
            let environ =
                crate::files::read_bytes_limited(&dir.join("environ"), ENVIRON_LIMIT).ok()?;
            environ
                .split(|byte| *byte == 0)
                .any(|held| held == entry)
                .then_some(found)
        })
        .filter(ProcessIdentity::is_alive)
        .collect()
}

/// This process and every process above it.
fn ancestry() -> Vec<u32> {
    let mut chain = vec![std::process::id()];
    while let Some(stat) = chain.last().and_then(|pid| procfs::stat_of(*pid)) {
        if stat.ppid == 0 || chain.contains(&stat.ppid) {
            break;
        }
        chain.push(stat.ppid);
    }
    chain
}

#[cfg(test)]
mod tests {
    use std::process::Command;

    use super::*;

    #[test]
    fn marked_processes_are_stopped_whatever_group_or_session_they_are_in() {
        let mark = format!("test-{}", uuid::Uuid::new_v4());
        let spawn = |script: &str| {
            Command::new("setsid")
                .args(["sh", "-c", script])
                .env("DEBUSSY_TEST_MARK", &mark)
                .spawn()
                .expect("spawn")
        };
        let mut plain = spawn("exec sleep 60");
        let mut stubborn = spawn("trap '' TERM; sleep 60 & wait");
        let mut unmarked = Command::new("sleep").arg("60").spawn().expect("spawn");
        let found = || marked(format!("DEBUSSY_TEST_MARK={mark}").as_bytes()).len();
        let deadline = Instant::now() + Duration::from_secs(10);
        while found() < 3 && Instant::now() < deadline {
            std::thread::sleep(POLL);
        }
        assert_eq!(found(), 3, "two shells and a sleep");

        assert_eq!(stop_marked("DEBUSSY_TEST_MARK", &mark, &[]), 3);
        assert!(plain.wait().is_ok_and(|status| !status.success()));
        assert!(stubborn.wait().is_ok_and(|status| !status.success()));
        assert_eq!(found(), 0, "the background sleep is gone too");
        assert!(
            unmarked.try_wait().expect("try_wait").is_none(),
            "left alone"
        );
        unmarked.kill().expect("kill");
        let _ = unmarked.wait();
    }
}
