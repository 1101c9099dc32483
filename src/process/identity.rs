//! A process identified so that pid reuse is detected: its pid together with its start
//! time (field 22 of `/proc/PID/stat`, in clock ticks since boot).
//!
//! A pid alone is not enough to find a process again: once it exits the kernel may give
//! the same number to an unrelated process. Anything debussy records to signal later (a
//! run's owner, an agent's process group, a bridge daemon) is recorded as a
//! [`ProcessIdentity`] and signalled only while [`ProcessIdentity::is_alive`] holds.

use std::path::Path;

use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;

/// A process as recorded: its pid and when it started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcessIdentity {
    /// The process id.
    pub pid: u32,
    /// Its start time in clock ticks after boot (`/proc/PID/stat` field 22).
    pub start: u64,
}

/// Index of the start time in the fields after the command name (field 22 counts from 1
/// and includes pid and comm).
const START_FIELD: usize = 22 - 3;

impl ProcessIdentity {
    /// The process `pid` as it is now, if it exists.
    #[must_use]
    pub fn of(pid: u32) -> Option<ProcessIdentity> {
        start_time(pid).map(|start| ProcessIdentity { pid, start })
    }

    /// This process.
    #[must_use]
    pub fn current() -> Option<ProcessIdentity> {
        ProcessIdentity::of(std::process::id())
    }

    /// Whether the recorded process still runs: a process with this pid exists, started
    /// at the recorded time, and is not a zombie (a zombie will never act again).
    #[must_use]
    pub fn is_alive(&self) -> bool {
        stat_fields(self.pid).is_some_and(|fields| {
            let state = fields.first().map(String::as_str);
            !matches!(state, Some("Z" | "X"))
                && fields.get(START_FIELD).and_then(|s| s.parse().ok()) == Some(self.start)
        })
    }

    /// Send `signal` to the process, only if it is still the recorded one. Returns whether
    /// the signal was sent.
    pub fn signal(&self, signal: Signal) -> bool {
        self.is_alive() && raw_pid(self.pid).is_some_and(|pid| kill(pid, signal).is_ok())
    }

    /// Send `signal` to the process group this process leads, only if the leader is still
    /// the recorded process. Returns whether the signal was sent.
    ///
    /// A group outlives its leader; once the leader is gone its number may name another
    /// group, so a group whose recorded leader is gone is left alone.
    pub fn signal_group(&self, signal: Signal) -> bool {
        self.is_alive() && raw_pid(self.pid).is_some_and(|pid| killpg(pid, signal).is_ok())
    }
}

fn raw_pid(pid: u32) -> Option<Pid> {
    i32::try_from(pid)
        .ok()
        .filter(|&p| p > 0)
        .map(Pid::from_raw)
}

/// The start time of process `pid`, if it exists.
#[must_use]
pub fn start_time(pid: u32) -> Option<u64> {
    stat_fields(pid)?.get(START_FIELD)?.parse().ok()
}

/// The fields of `/proc/PID/stat` after the command name, which may hold spaces and
/// parentheses itself, hence the split at the last `)`.
fn stat_fields(pid: u32) -> Option<Vec<String>> {
    let stat =
        std::fs::read_to_string(Path::new("/proc").join(pid.to_string()).join("stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    Some(rest.split_whitespace().map(str::to_owned).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_alive_and_a_different_start_time_is_not() {
        let me = ProcessIdentity::current().expect("this process has a stat");
        assert!(me.is_alive());
        let reused = ProcessIdentity {
            start: me.start + 1,
            ..me
        };
        assert!(
            !reused.is_alive(),
            "a pid with another start time is another process"
        );
        assert!(
            !reused.signal(Signal::SIGCONT),
            "a reused pid is never signalled"
        );
    }

    #[test]
    fn a_reaped_child_is_dead() {
        let mut child = std::process::Command::new("true").spawn().expect("spawn");
        let pid = child.id();
        let identity = ProcessIdentity::of(pid);
        child.wait().expect("wait");
        if let Some(identity) = identity {
            assert!(!identity.is_alive());
        }
    }

    #[test]
    fn a_live_recorded_process_is_signalled() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .expect("spawn");
        let identity = ProcessIdentity::of(child.id()).expect("identity");
        assert!(identity.signal(Signal::SIGKILL));
        let status = child.wait().expect("wait");
        assert!(!status.success());
    }
}
