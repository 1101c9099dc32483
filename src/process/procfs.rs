//! Reading Linux's `/proc`: the processes there are, each process's state, parent,
//! process group and start time, and the files it holds open. Every reader answers `None`
//! (or nothing) where `/proc` is unavailable, and skips a process that vanishes while it
//! is read.

use std::path::{Path, PathBuf};

/// Every process in `/proc`: its pid and its directory. `None` where `/proc` cannot be
/// read.
pub(crate) fn processes() -> Option<impl Iterator<Item = (u32, PathBuf)>> {
    let entries = std::fs::read_dir("/proc").ok()?;
    Some(entries.flatten().filter_map(|entry| {
        let pid = entry.file_name().to_str()?.parse::<u32>().ok()?;
        Some((pid, entry.path()))
    }))
}

/// What `/proc/<pid>/stat` says about a process, as far as debussy needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stat {
    /// The scheduling state letter: `R`, `S`, `Z` (a zombie), `X` (dead)…
    pub(crate) state: char,
    /// The parent's pid.
    pub(crate) ppid: u32,
    /// The process group.
    pub(crate) pgrp: i32,
    /// When it started, in clock ticks after boot (field 22).
    pub(crate) start: u64,
}

impl Stat {
    /// Whether the process can still act: neither a zombie nor dead.
    pub(crate) fn is_live(self) -> bool {
        self.state != 'Z' && self.state != 'X'
    }
}

/// The `stat` of the process whose `/proc` directory is `dir`.
pub(crate) fn stat(dir: &Path) -> Option<Stat> {
    parse_full_stat(&std::fs::read_to_string(dir.join("stat")).ok()?)
}

/// The `stat` of process `pid`.
pub(crate) fn stat_of(pid: u32) -> Option<Stat> {
    stat(&Path::new("/proc").join(pid.to_string()))
}

/// Whether the process has `target` open (one of its `fd` links points at it).
pub(crate) fn holds_open(dir: &Path, target: &Path) -> bool {
    std::fs::read_dir(dir.join("fd")).is_ok_and(|fds| {
        fds.flatten()
            .any(|fd| std::fs::read_link(fd.path()).is_ok_and(|link| link == target))
    })
}

/// Every field debussy reads from a `/proc/<pid>/stat` line. The command name is in
/// parentheses and may itself contain spaces and parentheses, so fields are counted
/// from the last `)`.
pub(crate) fn parse_full_stat(stat: &str) -> Option<Stat> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_ascii_whitespace().collect();
    // Field numbers count from 1 and include the pid and the name: state is field 3.
    let field = |n: usize| fields.get(n - 3).copied();
    Some(Stat {
        state: field(3)?.chars().next()?,
        ppid: field(4)?.parse().ok()?,
        pgrp: field(5)?.parse().ok()?,
        start: field(22)?.parse().ok()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_listed_with_its_group() {
        let me = std::process::id();
        let (_, dir) = processes()
            .expect("/proc")
            .find(|(pid, _)| *pid == me)
            .expect("this process");
        let me = stat(&dir).expect("stat");
        assert!(me.is_live(), "{}", me.state);
        assert_eq!(me.pgrp, nix::unistd::getpgrp().as_raw());
    }

    #[test]
    fn parses_stat_with_awkward_command_names() {
        assert_eq!(parse_full_stat("garbage"), None);
        let line = "77 (a) b (c)) S 5 70 70 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 4242 0";
        assert_eq!(
            parse_full_stat(line),
            Some(Stat {
                state: 'S',
                ppid: 5,
                pgrp: 70,
                start: 4242
            })
        );
        assert_eq!(parse_full_stat("1 (x) R 1 1"), None);
    }
}
