//! The child's process group: the one place that signals it, asks who is still in it,
//! and keeps the process-wide registry of live groups.
//!
//! Every child is the leader of its own group (pgid = its pid), so one `killpg` reaches
//! the child and everything it started that did not leave the group (shell pipelines,
//! `npx` → `node`, `uv run` → `python`). Signalling the group and never the bare pid is
//! a choice kept in this one type (cf. nextest `runner/imp.rs`).

use std::collections::BTreeSet;
use std::sync::{Mutex, PoisonError};

use nix::errno::Errno;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

use super::procfs;
use super::watchdog::Watchdog;

/// Process groups of children that have not been fully cleaned up yet.
static LIVE_GROUPS: Mutex<BTreeSet<i32>> = Mutex::new(BTreeSet::new());

/// Send SIGKILL to every process group debussy has started and not yet cleaned up.
///
/// For the binary's last-resort paths (a third Ctrl-C, a fatal error before handles
/// can be dropped): the supervising tasks still reap the leaders afterwards. Returns
/// how many groups were signalled.
pub fn kill_all_groups() -> usize {
    // Signalled under the lock, so no group can be released (and its id reused) midway.
    let registry = live_registry();
    registry
        .iter()
        .filter(|pgid| Group(Pid::from_raw(**pgid)).signal(Signal::SIGKILL))
        .count()
}

/// The process group ids of children that are running or not yet cleaned up.
#[must_use]
pub fn live_groups() -> Vec<u32> {
    live_registry()
        .iter()
        .filter_map(|pgid| u32::try_from(*pgid).ok())
        .collect()
}

fn live_registry() -> std::sync::MutexGuard<'static, BTreeSet<i32>> {
    LIVE_GROUPS.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A process group, addressed by its id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Group(Pid);

/// Who is left in a group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Members {
    /// No live process (zombies waiting for their reaper do not count).
    Empty,
    /// Live processes, listed when the platform lets us enumerate them.
    Alive(Vec<u32>),
}

impl Group {
    /// The group led by `pid`.
    pub(crate) fn led_by(pid: u32) -> Self {
        Group(Pid::from_raw(i32::try_from(pid).unwrap_or(i32::MAX)))
    }

    /// Send `signal` to every process in the group. Returns false if the group no
    /// longer exists; other failures (which would be bugs) are logged.
    pub(crate) fn signal(self, signal: Signal) -> bool {
        match killpg(self.0, signal) {
            Ok(()) => true,
            Err(Errno::ESRCH) => false,
            Err(err) => {
                tracing::warn!(pgid = self.0.as_raw(), %signal, error = %err, "failed to signal process group");
                false
            }
        }
    }

    /// Which processes are still alive in the group.
    pub(crate) fn members(self) -> Members {
        match killpg(self.0, None) {
            Err(Errno::ESRCH) => Members::Empty,
            _ => match list_members(self.0.as_raw()) {
                Some(pids) if pids.is_empty() => Members::Empty,
                Some(pids) => Members::Alive(pids),
                None => Members::Alive(Vec::new()),
            },
        }
    }
}

/// Live (non-zombie) processes whose process group is `pgid`, from `/proc`; `None`
/// where `/proc` is not available.
fn list_members(pgid: i32) -> Option<Vec<u32>> {
    let mut pids: Vec<u32> = procfs::processes()?
        .filter(|(_, dir)| {
            procfs::state_and_group(dir)
                .is_some_and(|(state, group)| group == pgid && state != 'Z' && state != 'X')
        })
        .map(|(pid, _)| pid)
        .collect();
    pids.sort_unstable();
    Some(pids)
}

/// Keeps a group in the registry and kills it if dropped before the child was cleaned
/// up (the supervising task was dropped: runtime shutdown, or a panic unwinding). Its
/// [`Watchdog`] kills the group if debussy dies without dropping the guard (SIGKILL).
#[derive(Debug)]
pub(crate) struct GroupGuard {
    group: Group,
    done: bool,
    watchdog: Option<Watchdog>,
}

impl GroupGuard {
    /// Register `group` as live and start its watchdog.
    pub(crate) fn register(group: Group) -> Self {
        live_registry().insert(group.0.as_raw());
        GroupGuard {
            group,
            done: false,
            watchdog: Watchdog::start(group.0.as_raw()),
        }
    }

    /// The guarded group.
    pub(crate) fn group(&self) -> Group {
        self.group
    }

    /// The child was reaped and its group emptied: forget it, never signal it again
    /// (its id may be reused).
    pub(crate) fn release(mut self) {
        self.done = true;
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if !self.done {
            self.group.signal(Signal::SIGKILL);
        }
        // Disarmed only once the group is cleaned up or killed: until then, debussy
        // dying must still take the group with it.
        if let Some(watchdog) = &mut self.watchdog {
            watchdog.disarm();
        }
        live_registry().remove(&self.group.0.as_raw());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_group_that_never_existed_is_empty() {
        // Pid numbers near the top of the range are practically never allocated.
        let group = Group::led_by(4_194_000);
        assert_eq!(group.members(), Members::Empty);
        assert!(!group.signal(Signal::SIGCONT));
    }

    #[test]
    fn our_own_group_lists_us() {
        let own = nix::unistd::getpgrp();
        let me = u32::try_from(nix::unistd::getpid().as_raw()).expect("pid is positive");
        match Group(own).members() {
            Members::Alive(pids) => assert!(pids.contains(&me), "{me} not in {pids:?}"),
            Members::Empty => panic!("our own group cannot be empty"),
        }
    }
}
