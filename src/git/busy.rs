//! The git commands running in a working tree, for telling a live `index.lock` from a
//! stale one when nobody has it open.
//!
//! git keeps its lock file open only while writing it. A `git commit` waiting for its
//! editor, or running a `pre-commit` hook (a linter, the test suite), has closed
//! `index.lock` and renames it over the index when the editor or hook returns: removing
//! the lock then breaks that commit ("cannot lock ref 'HEAD'") and mixes its staged
//! files into the next writer's index. Such a command runs from the top of its working
//! tree and waits for a child process, the editor or the hook; a git process idling with
//! no child, such as `git fsmonitor--daemon`, is not one of them, and neither is a
//! command that never writes the index waiting on its pager (`git log`, `git diff`).

use std::path::{Path, PathBuf};

use crate::process::procfs;

/// The `git` processes working in the working tree whose top directory is `worktree`
/// while a child of theirs runs (an editor, a hook), but for those that never write the
/// index ([`READS_ONLY`]). Empty where `/proc` cannot be read.
pub(crate) fn git_commands_in(worktree: &Path) -> Vec<u32> {
    let Ok(worktree) = worktree.canonicalize() else {
        return Vec::new();
    };
    let Some(processes) = procfs::processes() else {
        return Vec::new();
    };
    let mut parents = Vec::new();
    let mut git_in_tree = Vec::new();
    for (pid, dir) in processes {
        let Some(stat) = procfs::stat(&dir).filter(|stat| stat.is_live()) else {
            continue;
        };
        parents.push(stat.ppid);
        if procfs::command_name(&dir).is_some_and(|name| name == "git")
            && procfs::working_dir(&dir)
                .and_then(|cwd| top_of(&cwd))
                .is_some_and(|top| top == worktree)
            && !procfs::arguments(&dir).is_some_and(|args| reads_only(&args))
        {
            git_in_tree.push(pid);
        }
    }
    git_in_tree.retain(|pid| parents.contains(pid));
    git_in_tree
}

/// git commands that read the index but never write it, which a user leaves open in
/// their pager. An alias or any other command counts as one that may write.
const READS_ONLY: [&str; 12] = [
    "log",
    "show",
    "diff",
    "blame",
    "annotate",
    "shortlog",
    "whatchanged",
    "reflog",
    "grep",
    "help",
    "ls-files",
    "cat-file",
];

/// git's global options that take the next argument as their value.
const OPTIONS_WITH_VALUES: [&str; 5] = ["-C", "-c", "--git-dir", "--work-tree", "--namespace"];

/// Whether `git ARGS` (program first) runs one of [`READS_ONLY`].
fn reads_only(args: &[std::ffi::OsString]) -> bool {
    let mut rest = args.iter().skip(1).filter_map(|arg| arg.to_str());
    while let Some(arg) = rest.next() {
        if OPTIONS_WITH_VALUES.contains(&arg) {
            rest.next();
        } else if !arg.starts_with('-') {
            return READS_ONLY.contains(&arg);
        }
    }
    false
}

/// The top directory of the working tree `dir` lies in: the nearest directory at or above
/// it with a `.git` entry (a directory, or the file a linked worktree has).
fn top_of(dir: &Path) -> Option<PathBuf> {
    dir.ancestors()
        .find(|dir| dir.join(".git").symlink_metadata().is_ok())
        .map(Path::to_path_buf)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::test_git::{CommitInEditor, git};

    #[test]
    fn a_commit_waiting_for_its_editor_works_in_its_tree_and_in_no_other() {
        let dir = tempfile::tempdir().expect("tempdir");
        let main = dir.path().join("main");
        std::fs::create_dir(&main).expect("mkdir");
        git(&main, &["init", "-q", "-b", "main"]);
        git(&main, &["config", "user.name", "t"]);
        git(&main, &["config", "user.email", "t@t"]);
        std::fs::write(main.join("a.txt"), "one\n").expect("write");
        git(&main, &["add", "a.txt"]);
        git(&main, &["commit", "-qm", "one"]);
        let nested = main.join(".debussy/worktrees/r1/1");
        let path = nested.to_str().expect("utf-8");
        git(&main, &["worktree", "add", "-q", "-b", "side", path]);

        std::fs::write(nested.join("a.txt"), "two\n").expect("write");
        let commit = CommitInEditor::start(&nested);
        assert_eq!(git_commands_in(&nested), vec![commit.pid()]);
        assert_eq!(
            git_commands_in(&main),
            Vec::<u32>::new(),
            "the nested tree is its own"
        );
        assert!(
            commit.finish("edited"),
            "the commit goes on when its editor returns"
        );
        assert_eq!(git_commands_in(&nested), Vec::<u32>::new());
    }

    #[test]
    fn commands_that_never_write_the_index_are_told_by_their_arguments() {
        let args = |line: &str| -> Vec<std::ffi::OsString> {
            line.split(' ').map(std::ffi::OsString::from).collect()
        };
        for reading in [
            "git log",
            "git --no-pager -C /repo diff --stat",
            "git -c core.pager=less show HEAD",
            "git --git-dir /r/.git blame a.rs",
        ] {
            assert!(reads_only(&args(reading)), "{reading}");
        }
        for writing in [
            "git commit",
            "git -c log.x=1 commit -m log",
            "git lg",
            "git",
            "git -C",
        ] {
            assert!(!reads_only(&args(writing)), "{writing}");
        }
    }

    #[test]
    fn a_log_waiting_on_a_child_is_not_counted() {
        use std::os::unix::process::CommandExt as _;

        let dir = tempfile::tempdir().expect("tempdir");
        git(dir.path(), &["init", "-q", "-b", "main"]);
        std::fs::write(dir.path().join("a.txt"), "one\n").expect("write");
        git(dir.path(), &["add", "a.txt"]);
        git(
            dir.path(),
            &[
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "commit",
                "-qm",
                "one",
            ],
        );
        // A `git log` with a child of its own, as one whose pager the user has not quit
        // (a pager needs a terminal; an external diff program is a child without one).
        let mut log = std::process::Command::new("git")
            .args(["-c", "diff.external=sleep 30 #", "log", "-p", "--ext-diff"])
            .current_dir(dir.path())
            .stdout(std::process::Stdio::null())
            .process_group(0)
            .spawn()
            .expect("git log");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let child_running = || {
            procfs::processes().is_some_and(|mut all| {
                all.any(|(_, proc_dir)| {
                    procfs::stat(&proc_dir).is_some_and(|stat| stat.ppid == log.id())
                })
            })
        };
        while !child_running() {
            assert!(
                std::time::Instant::now() < deadline,
                "the child never started"
            );
            std::thread::yield_now();
        }
        let counted = git_commands_in(dir.path());
        let group = nix::unistd::Pid::from_raw(i32::try_from(log.id()).expect("pid"));
        let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
        let _ = log.wait();
        assert_eq!(counted, Vec::<u32>::new());
    }

    #[test]
    fn a_git_process_with_no_child_is_not_counted() {
        let dir = tempfile::tempdir().expect("tempdir");
        git(dir.path(), &["init", "-q"]);
        // `git cat-file --batch` waits on its input, as a daemon does, with no child.
        let mut idle = std::process::Command::new("git")
            .args(["cat-file", "--batch"])
            .current_dir(dir.path())
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("git");
        {
            use std::io::{BufRead as _, Write as _};
            writeln!(idle.stdin.as_mut().expect("stdin"), "HEAD").expect("ask");
            let mut answer = String::new();
            std::io::BufReader::new(idle.stdout.as_mut().expect("stdout"))
                .read_line(&mut answer)
                .expect("read");
            assert_eq!(
                answer.trim(),
                "HEAD missing",
                "git runs, working in the tree"
            );
        }
        let counted = git_commands_in(dir.path());
        drop(idle.stdin.take());
        idle.wait().expect("wait");
        assert_eq!(counted, Vec::<u32>::new());
    }

    #[test]
    fn the_top_of_a_tree_is_found_from_below_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let below = dir.path().join("src/deep");
        std::fs::create_dir_all(&below).expect("mkdir");
        std::fs::write(dir.path().join(".git"), "gitdir: elsewhere\n").expect("write");
        assert_eq!(top_of(&below).as_deref(), Some(dir.path()));
    }
}
