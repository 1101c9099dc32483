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

/// The command name of the process whose `/proc` directory is `dir` (`comm`: its
/// program's file name, cut to 15 bytes).
pub(crate) fn command_name(dir: &Path) -> Option<String> {
    let comm = std::fs::read_to_string(dir.join("comm")).ok()?;
    Some(comm.trim_end_matches('\n').to_owned())
}

/// The arguments of the process whose `/proc` directory is `dir`, its program first
/// (`cmdline`, at most 64 KiB of it).
pub(crate) fn arguments(dir: &Path) -> Option<Vec<std::ffi::OsString>> {
    use std::os::unix::ffi::OsStrExt as _;

    let bytes = crate::files::read_bytes_limited(&dir.join("cmdline"), 64 * 1024).ok()?;
    Some(
        bytes
            .split(|byte| *byte == 0)
            .filter(|arg| !arg.is_empty())
            .map(|arg| std::ffi::OsStr::from_bytes(arg).to_os_string())
            .collect(),
    )
}

/// The working directory of the process whose `/proc` directory is `dir`.
pub(crate) fn working_dir(dir: &Path) -> Option<PathBuf> {
    std::fs::read_link(dir.join("cwd")).ok()
}

/// Whether the process has `target` open (one of its `fd` links points at it).
pub(crate) fn holds_open(dir: &Path, target: &Path) -> bool {
    std::fs::read_dir(dir.join("fd")).is_ok_and(|fds| {
        fds.flatten()
            .any(|fd| std::fs::read_link(fd.path()).is_ok_and(|link| link == target))
    })
}

/// The processes that have `path` open, found through every process's `fd` links: who
/// is writing a lock file right now (git and libgit2 both hold a lock file open from
/// creating it until they rename or remove it). Empty when nobody has it open, or when it
/// no longer exists. `None` where `/proc` cannot be read, so nothing can be said.
///
/// Another user's processes do not show their descriptors: only processes this user may
/// inspect are seen.
pub(crate) fn holders_of(path: &Path) -> Option<Vec<u32>> {
    let processes = processes()?;
    let Ok(target) = path.canonicalize() else {
        return Some(Vec::new());
    };
    Some(
        processes
            .filter(|(_, dir)| holds_open(dir, &target))
            .map(|(pid, _)| pid)
            .collect(),
    )
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

/// A process holding a file open for writing, as a git command holds its lock; killed
/// when dropped. For the tests of what finds such holders.
#[cfg(test)]
pub(crate) struct FileHolder(std::process::Child);

#[cfg(test)]
impl FileHolder {
    /// Start one holding `path`, and wait until it does.
    pub(crate) fn of(path: &Path) -> FileHolder {
        use std::io::BufRead as _;
        let mut child = std::process::Command::new("sh")
            .arg("-c")
            .arg("exec 3>\"$1\"; echo ready; exec sleep 30")
            .arg("sh")
            .arg(path)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("sh");
        let mut ready = String::new();
        std::io::BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut ready)
            .expect("read");
        let holder = FileHolder(child);
        assert_eq!(ready.trim(), "ready");
        holder
    }

    /// Its process id.
    pub(crate) fn pid(&self) -> u32 {
        self.0.id()
    }
}

#[cfg(test)]
impl Drop for FileHolder {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
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
        assert_eq!(
            working_dir(&dir),
            Some(std::env::current_dir().expect("cwd"))
        );
        let name = command_name(&dir).expect("comm");
        assert!(
            !name.is_empty() && name.len() <= 15 && !name.contains('\n'),
            "{name:?}"
        );
        let me = stat(&dir).expect("stat");
        assert!(me.is_live(), "{}", me.state);
        assert_eq!(me.pgrp, nix::unistd::getpgrp().as_raw());
    }

    #[test]
    fn a_file_is_held_by_the_processes_that_have_it_open_and_by_no_other() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("packed-refs.lock");
        let me = std::process::id();

        let open = std::fs::File::create(&path).expect("create");
        // Through a path that is not canonical, as a caller may well name it.
        let roundabout = dir.path().join(".").join("packed-refs.lock");
        assert_eq!(holders_of(&roundabout), Some(vec![me]));

        drop(open);
        assert_eq!(
            holders_of(&path),
            Some(Vec::new()),
            "closed: nobody holds it"
        );
        std::fs::remove_file(&path).expect("remove");
        assert_eq!(holders_of(&path), Some(Vec::new()), "gone: nobody holds it");
    }

    #[test]
    fn a_file_another_process_holds_names_that_process() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("index.lock");
        let holder = FileHolder::of(&path);
        let pid = holder.pid();
        let held = holders_of(&path);
        drop(holder);
        assert_eq!(held, Some(vec![pid]));
        assert_eq!(holders_of(&path), Some(Vec::new()), "its holder is gone");
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
