//! Reading Linux's `/proc`: the processes there are, each process's state and process
//! group, and the files it holds open. Every reader answers `None` (or nothing) where
//! `/proc` is unavailable, and skips a process that vanishes while it is read.

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

/// A process's scheduling state letter (`R`, `S`, `Z`…) and process group, from its
/// `stat` file.
pub(crate) fn state_and_group(dir: &Path) -> Option<(char, i32)> {
    parse_stat(&std::fs::read_to_string(dir.join("stat")).ok()?)
}

/// Whether the process has `target` open (one of its `fd` links points at it).
pub(crate) fn holds_open(dir: &Path, target: &Path) -> bool {
    std::fs::read_dir(dir.join("fd")).is_ok_and(|fds| {
        fds.flatten()
            .any(|fd| std::fs::read_link(fd.path()).is_ok_and(|link| link == target))
    })
}

/// State and process group from a `/proc/<pid>/stat` line. The command name is in
/// parentheses and may itself contain spaces and parentheses, so fields are counted
/// from the last `)`.
pub(crate) fn parse_stat(stat: &str) -> Option<(char, i32)> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_ascii_whitespace();
    let state = fields.next()?.chars().next()?;
    let _ppid = fields.next()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some((state, pgrp))
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
        let (state, group) = state_and_group(&dir).expect("stat");
        assert!(state != 'Z' && state != 'X', "{state}");
        assert_eq!(group, nix::unistd::getpgrp().as_raw());
    }

    #[test]
    fn parses_stat_with_awkward_command_names() {
        assert_eq!(
            parse_stat("1234 (sleep) S 1 1234 1234 0 -1 4194560"),
            Some(('S', 1234))
        );
        assert_eq!(parse_stat("77 (a) b (c)) Z 1 70 70 0"), Some(('Z', 70)));
        assert_eq!(parse_stat("garbage"), None);
        assert_eq!(parse_stat("1 (x) R 1"), None);
    }
}
