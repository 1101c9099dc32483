//! The process-wide registry of live children: each one's reaper, so that the binary's
//! last-resort paths can have every child's tree killed at once.
//!
//! Every child is the leader of its own process group (pgid = its pid) below its own
//! reaper (`reaper/`). debussy never signals a child's group itself: it asks the reaper,
//! which signals only while the child is unreaped, so a reused number is never hit.

use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};

use super::reaper::{Request, Requests};
use super::role::{Busy, Role};

/// A child in the registry: how to reach its reaper, and what it is.
#[derive(Debug)]
struct Entry {
    requests: Requests,
    role: Role,
}

/// The children that have not been fully cleaned up yet, by the child's pid.
static LIVE: Mutex<BTreeMap<u32, Entry>> = Mutex::new(BTreeMap::new());

/// The roles of children being started, by a number of their own: a child's program
/// can run (a hook can take minutes) before its reaper has said its pid.
static STARTING: Mutex<BTreeMap<u64, Role>> = Mutex::new(BTreeMap::new());

/// Have every child debussy started and not yet cleaned up killed, with everything it
/// started (SIGKILL, through its reaper).
///
/// For the binary's last-resort paths (a third Ctrl-C, a fatal error before handles
/// can be dropped): the supervising tasks still collect the exits afterwards. Returns
/// how many children were asked for.
pub fn kill_all_groups() -> usize {
    live_registry()
        .values()
        .filter(|entry| entry.requests.send(Request::Kill))
        .count()
}

/// What the children not yet cleaned up are, added up: whether an agent runs, which git
/// hooks do. For words about a stop or a kill, said as it is asked for.
#[must_use]
pub fn busy() -> Busy {
    let mut roles: Vec<Role> = STARTING
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .values()
        .cloned()
        .collect();
    roles.extend(live_registry().values().map(|entry| entry.role.clone()));
    Busy::of(&roles)
}

/// A child being started, counted in [`busy`] as `role` until it is registered.
#[derive(Debug)]
pub(crate) struct Starting(u64);

impl Starting {
    /// A child that is `role` is about to start.
    pub(crate) fn new(role: Role) -> Starting {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let number = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        STARTING
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(number, role);
        Starting(number)
    }
}

impl Drop for Starting {
    fn drop(&mut self) {
        STARTING
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&self.0);
    }
}

/// The process group ids (the pids) of children that are running or not yet cleaned up.
#[must_use]
pub fn live_groups() -> Vec<u32> {
    live_registry().keys().copied().collect()
}

fn live_registry() -> std::sync::MutexGuard<'static, BTreeMap<u32, Entry>> {
    LIVE.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Keeps a child in the registry until it is cleaned up, and is the way requests reach
/// its reaper. Dropping it (with the reaper's reports) closes the reaper's socket, and
/// the reaper kills everything below it: so a supervising task dropped before the child
/// was cleaned up (runtime shutdown, a panic unwinding) takes the child's tree with it.
#[derive(Debug)]
pub(crate) struct GroupGuard {
    pid: u32,
    requests: Requests,
}

impl GroupGuard {
    /// Register the child `pid`, which is `role`, whose reaper takes `requests`.
    pub(crate) fn register(pid: u32, requests: Requests, role: Role) -> Self {
        live_registry().insert(
            pid,
            Entry {
                requests: requests.clone(),
                role,
            },
        );
        GroupGuard { pid, requests }
    }

    /// Ask the child's reaper for `request`. False when the reaper is gone.
    pub(crate) fn send(&self, request: Request) -> bool {
        self.requests.send(request)
    }

    /// The child was reaped and everything below it is gone: forget it.
    pub(crate) fn release(self) {}
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        live_registry().remove(&self.pid);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_being_started_is_busy_before_its_reaper_says_its_pid() {
        let starting = Starting::new(Role::Hook("pre-commit".into()));
        assert_eq!(busy().hooks, ["pre-commit"]);
        drop(starting);
        assert!(busy().hooks.is_empty());
    }
}
