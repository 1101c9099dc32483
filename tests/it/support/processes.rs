//! The machine's live processes, read from `/proc`, and the checks the tests make with
//! them after a stop or a kill: a process or a process group gone, no process left
//! working in a project. A killed process takes a moment to die, so every check polls
//! within a bound before it calls a process a survivor.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// A process that is not a zombie.
#[derive(Debug)]
pub struct LiveProcess {
    /// Its pid.
    pub pid: u32,
    /// Its process group.
    pub group: u32,
}

impl LiveProcess {
    /// Its working directory, when it can be read.
    pub fn cwd(&self) -> Option<PathBuf> {
        std::fs::read_link(format!("/proc/{}/cwd", self.pid)).ok()
    }

    /// Its command line, arguments separated by spaces.
    pub fn command_line(&self) -> String {
        std::fs::read(format!("/proc/{}/cmdline", self.pid))
            .map(|bytes| String::from_utf8_lossy(&bytes).replace('\0', " "))
            .unwrap_or_default()
    }
}

/// Every process that is not a zombie, this test's own included.
pub fn live_processes() -> Vec<LiveProcess> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
            // The command name is in parentheses and may contain anything.
            let after = &stat[stat.rfind(')')? + 1..];
            let mut fields = after.split_whitespace();
            let state = fields.next()?;
            let _ppid = fields.next()?;
            let group: u32 = fields.next()?.parse().ok()?;
            if state == "Z" || state == "X" {
                return None;
            }
            Some(LiveProcess { pid, group })
        })
        .collect()
}

/// Live processes other than this test working in `dir` or below it: pid and command
/// line.
pub fn processes_in(dir: &Path) -> Vec<(u32, String)> {
    let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    let me = std::process::id();
    live_processes()
        .into_iter()
        .filter(|process| {
            process.pid != me && process.cwd().is_some_and(|cwd| cwd.starts_with(&dir))
        })
        .map(|process| (process.pid, process.command_line()))
        .collect()
}

/// Live processes whose process group is `pgid`.
pub fn group_members(pgid: u32) -> Vec<u32> {
    live_processes()
        .into_iter()
        .filter(|process| process.group == pgid)
        .map(|process| process.pid)
        .collect()
}

/// `list()` once it is empty, or what it still lists after `limit` of polling.
pub fn left_after<T>(limit: Duration, list: impl Fn() -> Vec<T>) -> Vec<T> {
    let deadline = Instant::now() + limit;
    let mut left = list();
    while !left.is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
        left = list();
    }
    left
}

/// How long a killed process may take to be gone.
const DEATH: Duration = Duration::from_secs(5);

/// Whether process `pid` is gone, within five seconds.
pub fn process_gone(pid: u64) -> bool {
    left_after(DEATH, || {
        live_processes()
            .into_iter()
            .filter(|process| u64::from(process.pid) == pid)
            .collect()
    })
    .is_empty()
}

/// Whether every process of group `pgid` is gone, within five seconds.
pub fn group_gone(pgid: u64) -> bool {
    u32::try_from(pgid).is_ok_and(|pgid| left_after(DEATH, || group_members(pgid)).is_empty())
}

/// Fail if a process still works in the project `root` ten seconds on.
pub fn assert_no_process_left(root: &Path) {
    let left = left_after(Duration::from_secs(10), || processes_in(root));
    assert!(
        left.is_empty(),
        "processes of the run are still alive: {left:?}"
    );
}
