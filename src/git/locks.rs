//! Lock files a killed debussy left in the repository's git directory, found and cleared
//! when a run starts after an interrupted one.
//!
//! git and libgit2 write `packed-refs`, an index, `HEAD`, `config` or a ref by creating
//! `NAME.lock`, writing it, and renaming it over `NAME`; whoever finds the lock there
//! refuses to write (`Unable to create '….lock': File exists`). A `git` child killed
//! outright, or libgit2 inside debussy when debussy itself gets SIGKILL, leaves the lock
//! for good, and every later command that writes the same file fails until someone
//! removes it. The reaper's SIGTERM lets a `git` child clean up, but not when it is
//! SIGKILLed after its grace, and nothing can clean up for debussy's own process.
//!
//! A lock is stale only when no process has it open (both git and libgit2 hold a lock
//! file open while they write it), no git command works in the tree of an `index.lock`
//! (a `git commit` waiting for its editor has closed the lock it will rename), *and* it
//! was last written before this run started. A lock a live process holds is never
//! removed: it is waited on for a bounded time (the killed run's own git commands are
//! being stopped by their reapers meanwhile), then reported. This module does not decide when to look: the
//! orchestrator does, once it knows an earlier run was interrupted.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use super::GitError;
use crate::process::procfs;

/// How deep below `refs/` a left lock is looked for (`refs/heads/debussy/RUN/phase-N.lock`
/// is four levels down).
const MAX_REF_DEPTH: usize = 16;

/// How often a lock a live process holds is looked at again while waiting for it.
const POLL: Duration = Duration::from_millis(50);

/// Remove the lock files in the git directory of the repository at `root` (and in the
/// administrative directories of its linked worktrees) that no process has open and that
/// were last written before `started`. A lock a live process holds is waited on for up to
/// `wait`. Returns the locks removed. Outside a repository there is nothing to do.
///
/// A lock with no holder written after `started` is left alone: it belongs to a git
/// command of this moment, between closing its lock and renaming it.
///
/// # Errors
/// [`GitError::LockInUse`] when a live process still holds a lock after `wait`;
/// [`GitError::RemoveLock`] when a stale one cannot be removed.
pub fn clear_left_locks(
    root: &Path,
    started: SystemTime,
    wait: Duration,
) -> Result<Vec<PathBuf>, GitError> {
    let Ok(repo) = git2::Repository::discover(root) else {
        return Ok(Vec::new());
    };
    let git_dir = repo.commondir().to_path_buf();
    drop(repo);
    let deadline = Instant::now() + wait;
    let mut removed = Vec::new();
    for lock in lock_files(&git_dir) {
        loop {
            let Some(holders) = users_of(&lock, &git_dir) else {
                // Without /proc nobody can tell a live lock from a stale one: leave it,
                // and git names it if it is in the way.
                tracing::debug!(
                    "cannot tell whether {} is in use: /proc is unreadable",
                    lock.display()
                );
                break;
            };
            if holders.is_empty() {
                if last_written(&lock).is_some_and(|written| written < started) {
                    remove(&lock)?;
                    removed.push(lock);
                }
                break;
            }
            if Instant::now() >= deadline {
                return Err(GitError::LockInUse {
                    path: lock,
                    pids: holders,
                });
            }
            std::thread::sleep(POLL);
        }
    }
    Ok(removed)
}

/// The processes that may still write `lock`: those that have it open, and for an
/// `index.lock` the git commands working in its tree (a `git commit` waiting for its
/// editor or a hook has closed the lock it will rename). `None` where `/proc` cannot be
/// read.
fn users_of(lock: &Path, git_dir: &Path) -> Option<Vec<u32>> {
    let holders = procfs::holders_of(lock)?;
    if !holders.is_empty() || lock.file_name().is_none_or(|name| name != "index.lock") {
        return Some(holders);
    }
    Some(
        lock.parent()
            .and_then(|admin| tree_of(admin, git_dir))
            .map(|tree| super::busy::git_commands_in(&tree))
            .unwrap_or_default(),
    )
}

/// The working tree whose index lives in the administrative directory `admin`: the
/// checkout around a `.git` directory, or the linked worktree its `gitdir` file names.
fn tree_of(admin: &Path, git_dir: &Path) -> Option<PathBuf> {
    if admin == git_dir {
        let checkout = git_dir.parent()?;
        return (git_dir.file_name()? == ".git").then(|| checkout.to_path_buf());
    }
    // One line; a FIFO or a huge file there is nobody's worktree.
    let gitdir = crate::files::read_text_limited(&admin.join("gitdir"), 64 * 1024).ok()?;
    Path::new(gitdir.trim_end()).parent().map(Path::to_path_buf)
}

/// Every `*.lock` regular file git or libgit2 could leave in `git_dir`: beside the files
/// they lock (`packed-refs.lock`, `index.lock`, `HEAD.lock`, `config.lock`…), below
/// `refs/`, and the same in each linked worktree's directory under `worktrees/`. Links are
/// never followed.
fn lock_files(git_dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut admin_dirs = vec![git_dir.to_path_buf()];
    if let Ok(worktrees) = std::fs::read_dir(git_dir.join("worktrees")) {
        admin_dirs.extend(
            worktrees
                .flatten()
                .filter(|entry| entry.file_type().is_ok_and(|kind| kind.is_dir()))
                .map(|entry| entry.path()),
        );
    }
    for dir in admin_dirs {
        locks_in(&dir, 0, 0, &mut found);
        locks_in(&dir.join("refs"), 0, MAX_REF_DEPTH, &mut found);
    }
    found
}

/// The `*.lock` regular files in `dir`, and in its subdirectories down to `max_depth`.
fn locks_in(dir: &Path, depth: usize, max_depth: usize, found: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.flatten().collect();
    entries.sort_by_key(std::fs::DirEntry::file_name);
    for entry in entries {
        // `file_type` does not follow a link: a link is neither a file nor a directory.
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        let path = entry.path();
        if kind.is_file() && path.extension().is_some_and(|ext| ext == "lock") {
            found.push(path);
        } else if kind.is_dir() && depth < max_depth {
            locks_in(&path, depth + 1, max_depth, found);
        }
    }
}

/// When `path` was last written, if the filesystem says.
fn last_written(path: &Path) -> Option<SystemTime> {
    std::fs::symlink_metadata(path).ok()?.modified().ok()
}

/// Remove `lock`; one already gone is fine.
fn remove(lock: &Path) -> Result<(), GitError> {
    match std::fs::remove_file(lock) {
        Err(err) if err.kind() != std::io::ErrorKind::NotFound => Err(GitError::RemoveLock {
            path: lock.to_path_buf(),
            source: err,
        }),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use std::process::{Command, Stdio};

    use super::*;
    use crate::git::test_git::{self, CommitInEditor};
    use crate::process::procfs::FileHolder;

    /// A repository with one linked worktree; its git directory.
    fn repository(dir: &Path) -> PathBuf {
        let git = |args: &[&str]| {
            let status = Command::new("git")
                .args(args)
                .current_dir(dir)
                .env("GIT_CONFIG_GLOBAL", "/dev/null")
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .expect("git");
            assert!(status.success(), "git {args:?}");
        };
        git(&["init", "-q", "-b", "main"]);
        git(&[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "start",
        ]);
        git(&["worktree", "add", "-q", "-b", "debussy/r1/phase-1", "wt"]);
        dir.join(".git")
    }

    #[test]
    fn finds_the_locks_git_leaves_and_nothing_else() {
        let dir = tempfile::tempdir().expect("tempdir");
        let git_dir = repository(dir.path());
        let admin = git_dir.join("worktrees/wt");
        let planted = [
            git_dir.join("HEAD.lock"),
            git_dir.join("index.lock"),
            git_dir.join("packed-refs.lock"),
            git_dir.join("refs/heads/debussy/r1/phase-1.lock"),
            admin.join("index.lock"),
        ];
        for lock in &planted {
            std::fs::write(lock, "").expect("plant");
        }
        // Not locks, or not files: left out.
        std::fs::write(git_dir.join("objects/x.lock"), "").expect("plant");
        std::fs::create_dir(git_dir.join("dir.lock")).expect("plant");
        std::os::unix::fs::symlink(dir.path().join("elsewhere"), git_dir.join("link.lock"))
            .expect("plant");

        let mut found = lock_files(&git_dir);
        found.sort();
        let mut expected = planted.to_vec();
        expected.sort();
        assert_eq!(found, expected);
    }

    #[test]
    fn removes_unheld_locks_older_than_the_run_and_keeps_newer_ones() {
        let dir = tempfile::tempdir().expect("tempdir");
        let git_dir = repository(dir.path());
        let old = [
            git_dir.join("packed-refs.lock"),
            git_dir.join("worktrees/wt/index.lock"),
        ];
        for lock in &old {
            std::fs::write(lock, "").expect("plant");
        }
        let started = SystemTime::now() + Duration::from_secs(1);
        let removed =
            clear_left_locks(&dir.path().join("wt"), started, Duration::ZERO).expect("clear");
        assert_eq!(removed.len(), 2, "{removed:?}");
        for lock in &old {
            assert!(!lock.exists(), "{} removed", lock.display());
        }

        // Written after the run started: a git command of this moment's, not the dead run's.
        std::fs::write(git_dir.join("index.lock"), "").expect("plant");
        let started = SystemTime::now() - Duration::from_secs(60);
        let removed = clear_left_locks(dir.path(), started, Duration::ZERO).expect("clear");
        assert_eq!(removed, Vec::<PathBuf>::new());
        assert!(git_dir.join("index.lock").exists());
    }

    #[test]
    fn a_lock_a_live_process_holds_is_reported_and_left() {
        let dir = tempfile::tempdir().expect("tempdir");
        let git_dir = repository(dir.path());
        let lock = git_dir.join("packed-refs.lock");
        let holder = FileHolder::of(&lock);
        let started = SystemTime::now() + Duration::from_secs(1);

        let err =
            clear_left_locks(dir.path(), started, Duration::from_millis(100)).expect_err("held");
        match &err {
            GitError::LockInUse { path, pids } => {
                assert_eq!(path, &lock);
                assert_eq!(pids, &[holder.pid()]);
            }
            other => panic!("{other:?}"),
        }
        assert!(err.to_string().contains("packed-refs.lock"), "{err}");
        assert!(lock.exists());

        drop(holder);
        let removed = clear_left_locks(dir.path(), started, Duration::ZERO).expect("clear");
        assert_eq!(removed, vec![lock.clone()]);
        assert!(!lock.exists());
    }

    #[test]
    fn an_index_lock_a_commit_in_its_editor_keeps_is_reported_and_left() {
        let dir = tempfile::tempdir().expect("tempdir");
        let git_dir = repository(dir.path());
        for tree in [dir.path().to_path_buf(), dir.path().join("wt")] {
            std::fs::write(tree.join("a.txt"), "one\n").expect("write");
            test_git::git(&tree, &["add", "a.txt"]);
        }
        let user = CommitInEditor::start(dir.path());
        let in_worktree = CommitInEditor::start(&dir.path().join("wt"));
        let started = SystemTime::now() + Duration::from_secs(1);

        let err =
            clear_left_locks(dir.path(), started, Duration::from_millis(100)).expect_err("busy");
        match &err {
            GitError::LockInUse { path, pids } => {
                assert_eq!(path, &git_dir.join("index.lock"));
                assert_eq!(pids, &[user.pid()]);
            }
            other => panic!("{other:?}"),
        }
        assert!(user.finish("the user's"), "the user's commit is not broken");

        let err =
            clear_left_locks(dir.path(), started, Duration::from_millis(100)).expect_err("busy");
        match &err {
            GitError::LockInUse { path, pids } => {
                assert_eq!(path, &git_dir.join("worktrees/wt/index.lock"));
                assert_eq!(pids, &[in_worktree.pid()]);
            }
            other => panic!("{other:?}"),
        }
        assert!(in_worktree.finish("the worktree's"));
        assert_eq!(
            clear_left_locks(dir.path(), started, Duration::ZERO).expect("clear"),
            Vec::<PathBuf>::new()
        );
    }

    #[test]
    fn outside_a_repository_there_is_nothing_to_clear() {
        let dir = tempfile::tempdir().expect("tempdir");
        assert_eq!(
            clear_left_locks(dir.path(), SystemTime::now(), Duration::ZERO).expect("clear"),
            Vec::<PathBuf>::new()
        );
    }
}
