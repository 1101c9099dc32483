//! The processes below the reaper, found in `/proc`, and killing all of them.
//!
//! The reaper is a child subreaper (`PR_SET_CHILD_SUBREAPER`): a process below it whose
//! parent dies is handed to the reaper, not to init. So every process the program started
//! stays a descendant of the reaper — through `setsid`, a double fork, a daemon that
//! detaches — and following parent links in `/proc` from the reaper finds it.

use std::collections::HashMap;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use crate::process::procfs;

/// A live process below the reaper, as found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Member {
    /// Its pid.
    pub(crate) pid: u32,
    /// Its start time, so a pid reused since it was found is never signalled.
    pub(crate) start: u64,
    /// Its process group.
    pub(crate) pgrp: i32,
}

/// Every live process below `root` (not `root` itself), parents before their children.
/// Empty where `/proc` cannot be read.
pub(crate) fn descendants(root: u32) -> Vec<Member> {
    let Some(processes) = procfs::processes() else {
        return Vec::new();
    };
    let table: Vec<(u32, procfs::Stat)> = processes
        .filter_map(|(pid, dir)| procfs::stat(&dir).map(|stat| (pid, stat)))
        .collect();
    below(root, &table)
}

/// The live processes below `root` in a table of `(pid, stat)`, parents first.
pub(crate) fn below(root: u32, table: &[(u32, procfs::Stat)]) -> Vec<Member> {
    let mut children: HashMap<u32, Vec<(u32, procfs::Stat)>> = HashMap::new();
    for &(pid, stat) in table {
        children.entry(stat.ppid).or_default().push((pid, stat));
    }
    let mut found = Vec::new();
    let mut queue = vec![root];
    while let Some(parent) = queue.pop() {
        for &(pid, stat) in children.get(&parent).map_or(&[][..], Vec::as_slice) {
            // A pid is its own parent only in a corrupt table; never loop on one.
            if pid == root || pid == parent {
                continue;
            }
            queue.push(pid);
            if stat.is_live() {
                found.push(Member {
                    pid,
                    start: stat.start,
                    pgrp: stat.pgrp,
                });
            }
        }
    }
    found
}

/// Send `signal` to `member` if it is still the process that was found.
pub(crate) fn signal_member(member: Member, signal: Signal) {
    let same = procfs::stat_of(member.pid).is_some_and(|stat| stat.start == member.start);
    if !same {
        return;
    }
    if let Ok(pid) = i32::try_from(member.pid) {
        // ESRCH: it exited meanwhile. Nothing else can fail for a process of ours.
        let _ = kill(Pid::from_raw(pid), signal);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stat(ppid: u32, state: char) -> procfs::Stat {
        procfs::Stat {
            state,
            ppid,
            pgrp: 1,
            start: 100 + u64::from(ppid),
        }
    }

    /// The pids `below` finds under `root` in `table`, in order.
    fn pids_below(root: u32, table: &[(u32, procfs::Stat)]) -> Vec<u32> {
        let mut pids: Vec<u32> = below(root, table).iter().map(|m| m.pid).collect();
        pids.sort_unstable();
        pids
    }

    #[test]
    fn finds_children_grandchildren_and_orphans_handed_to_the_root() {
        // 10 is the root; 11 its child; 12 a grandchild; 13 a process that left its
        // group and was handed to the root; 20 belongs to someone else.
        let table = [
            (10, stat(1, 'S')),
            (11, stat(10, 'S')),
            (12, stat(11, 'R')),
            (13, stat(10, 'S')),
            (14, stat(13, 'S')),
            (20, stat(1, 'S')),
            (21, stat(20, 'S')),
        ];
        assert_eq!(pids_below(10, &table), [11, 12, 13, 14]);
    }

    #[test]
    fn zombies_are_passed_through_but_not_listed() {
        let table = [(11, stat(10, 'Z')), (12, stat(11, 'S'))];
        assert_eq!(pids_below(10, &table), [12]);
    }

    #[test]
    fn a_corrupt_table_does_not_loop() {
        let table = [
            (11, stat(11, 'S')),
            (12, stat(10, 'S')),
            (10, stat(12, 'S')),
        ];
        assert_eq!(pids_below(10, &table), [12]);
    }

    #[test]
    fn this_process_is_below_its_parent() {
        let me = std::process::id();
        let parent = procfs::stat_of(me).expect("stat").ppid;
        assert!(descendants(parent).iter().any(|m| m.pid == me));
    }
}
