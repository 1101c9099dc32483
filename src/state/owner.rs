//! Which process owns a run, and whether it still lives.
//!
//! A run records its owner's pid together with the process's start time (field 22 of
//! `/proc/PID/stat`, in clock ticks since boot). A pid alone is not enough: after a crash
//! the kernel may give the same pid to an unrelated process, so a run is only taken as
//! live when a process with that pid exists *and* started at the recorded time.

use std::path::Path;

/// A process identified so that pid reuse is detected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Owner {
    /// The process id.
    pub pid: u32,
    /// Its start time in clock ticks after boot (`/proc/PID/stat` field 22).
    pub start: u64,
}

impl Owner {
    /// This process.
    #[must_use]
    pub fn current() -> Option<Owner> {
        let pid = std::process::id();
        start_time(pid).map(|start| Owner { pid, start })
    }

    /// Whether the process still runs (a zombie counts as dead: it will never write again).
    #[must_use]
    pub fn is_alive(&self) -> bool {
        stat_fields(self.pid).is_some_and(|fields| {
            let state = fields.first().map(String::as_str);
            !matches!(state, Some("Z" | "X"))
                && fields.get(START_FIELD).and_then(|s| s.parse().ok()) == Some(self.start)
        })
    }
}

/// Index of the start time in the fields after the command name (field 22 counts from 1
/// and includes pid and comm).
const START_FIELD: usize = 22 - 3;

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
        let me = Owner::current().expect("this process has a stat");
        assert!(me.is_alive());
        let reused = Owner {
            start: me.start + 1,
            ..me
        };
        assert!(
            !reused.is_alive(),
            "a pid with another start time is another process"
        );
    }

    #[test]
    fn a_reaped_child_is_dead() {
        let mut child = std::process::Command::new("true").spawn().expect("spawn");
        let pid = child.id();
        let start = start_time(pid);
        child.wait().expect("wait");
        if let Some(start) = start {
            assert!(!Owner { pid, start }.is_alive());
        }
    }
}
