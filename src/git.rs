//! Git through libgit2: the pre-flight checks, the changed-files list a checkpoint shows,
//! and the auto-commits that make every phase and checkpoint recoverable.
//!
//! Everything here is blocking; async callers run it on `spawn_blocking`. Nothing here
//! decides *when* to commit: the orchestrator does.

mod hooks;

pub use hooks::HookFailure;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use git2::{DiffOptions, IndexAddOption, Oid, Repository, Signature, StatusOptions};

use crate::words::plural;

/// Errors from git operations, each saying what it was about.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum GitError {
    /// The directory is not inside a git repository.
    #[error("{} is not inside a git repository (run `git init` there, or pass --no-auto-commit)", .path.display())]
    NotARepository {
        /// The directory searched from.
        path: PathBuf,
    },
    /// The repository has no working tree.
    #[error("the repository at {} is bare; debussy needs a working tree", .path.display())]
    Bare {
        /// The repository's git directory.
        path: PathBuf,
    },
    /// Another process holds the index lock for longer than we are willing to wait.
    #[error(
        "{} is held by process {pids:?}; finish or stop that git command, then resume the run",
        .path.display()
    )]
    IndexLocked {
        /// The lock file.
        path: PathBuf,
        /// Processes that have it open.
        pids: Vec<u32>,
    },
    /// Removing a stale lock failed.
    #[error("failed to remove stale lock {}", .path.display())]
    RemoveLock {
        /// The lock file.
        path: PathBuf,
        /// Why removal failed.
        #[source]
        source: std::io::Error,
    },
    /// A commit hook refused the commit.
    #[error("the {} hook refused the commit ({}){}", .0.hook, .0.status, if .0.output.is_empty() { String::new() } else { format!(":\n{}", .0.output) })]
    Hook(HookFailure),
    /// The commit message file for the hooks could not be written or read back.
    #[error("failed to pass the commit message through {}", .path.display())]
    MessageFile {
        /// `.git/COMMIT_EDITMSG`.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// Any other libgit2 failure.
    #[error("git {action} failed")]
    Git {
        /// What was being done.
        action: &'static str,
        /// libgit2's error.
        #[source]
        source: git2::Error,
    },
}

/// Attach what was being done to a libgit2 error.
fn op(action: &'static str) -> impl FnOnce(git2::Error) -> GitError {
    move |source| GitError::Git { action, source }
}

/// Where `HEAD` points.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HeadState {
    /// A branch with no commit yet (a fresh `git init`): fine to commit onto.
    Unborn {
        /// The branch the first commit will create.
        branch: String,
    },
    /// A branch with at least one commit.
    Branch {
        /// Short branch name.
        name: String,
        /// The commit it points at.
        commit: Oid,
    },
    /// `HEAD` points at a commit, not a branch; commits would be lost.
    Detached {
        /// The commit `HEAD` points at.
        commit: Oid,
    },
}

/// How a file differs from the base commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeKind {
    /// New file (tracked or not).
    Added,
    /// Content or mode changed.
    Modified,
    /// Removed.
    Deleted,
    /// Type changed (file ↔ symlink).
    TypeChanged,
}

impl ChangeKind {
    /// One-letter code as `git status --short` would show it.
    #[must_use]
    pub fn letter(self) -> char {
        match self {
            ChangeKind::Added => 'A',
            ChangeKind::Modified => 'M',
            ChangeKind::Deleted => 'D',
            ChangeKind::TypeChanged => 'T',
        }
    }
}

/// One changed file with its line counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileChange {
    /// Path relative to the repository root, with `/` separators.
    pub path: String,
    /// What happened to it.
    pub kind: ChangeKind,
    /// Lines added (0 for binary files).
    pub insertions: usize,
    /// Lines removed (0 for binary files).
    pub deletions: usize,
}

/// Whose name a commit carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Identity {
    /// `user.name`/`user.email` from git config (or `GIT_AUTHOR_*`).
    Configured,
    /// No identity was configured; `debussy <debussy@localhost>` was used.
    Fallback,
}

/// What [`Repo::commit_all`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommitOutcome {
    /// A commit was written.
    Committed {
        /// The new commit.
        id: Oid,
        /// Files that differ from the parent.
        files_changed: usize,
        /// Whose identity it carries.
        identity: Identity,
        /// A stale `index.lock` (no process held it) was removed first: when it was last
        /// written, if known.
        removed_stale_lock: Option<StaleLock>,
    },
    /// The tree equals `HEAD`'s: nothing was written.
    NothingToCommit,
}

/// A stale `.git/index.lock` that a commit removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StaleLock {
    /// When the lock file was last written, if the filesystem says.
    pub last_written: Option<std::time::SystemTime>,
}

/// The fallback identity for repositories without `user.name`/`user.email`.
const FALLBACK_NAME: &str = "debussy";
const FALLBACK_EMAIL: &str = "debussy@localhost";

/// A repository with a working tree.
pub struct Repo {
    inner: Repository,
    root: PathBuf,
}

impl std::fmt::Debug for Repo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Repo")
            .field("root", &self.root)
            .finish_non_exhaustive()
    }
}

impl Repo {
    /// Find the repository containing `path`.
    ///
    /// # Errors
    /// [`GitError::NotARepository`] when there is none, [`GitError::Bare`] without a work tree.
    pub fn discover(path: &Path) -> Result<Repo, GitError> {
        let inner = Repository::discover(path).map_err(|_| GitError::NotARepository {
            path: path.to_path_buf(),
        })?;
        let root = inner
            .workdir()
            .ok_or_else(|| GitError::Bare {
                path: inner.path().to_path_buf(),
            })?
            .to_path_buf();
        Ok(Repo { inner, root })
    }

    /// The working tree's root directory.
    #[must_use]
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The git operation left half done in this repository (a merge with conflicts, a
    /// rebase stopped at a commit, …), as `(what, how to finish or abort it)`; `None`
    /// when the repository is in its normal state.
    #[must_use]
    pub fn operation_in_progress(&self) -> Option<(&'static str, &'static str)> {
        use git2::RepositoryState as State;
        match self.inner.state() {
            State::Clean => None,
            State::Merge => Some((
                "a merge",
                "finish it with `git commit` after resolving the conflicts, or `git merge --abort`",
            )),
            State::Revert | State::RevertSequence => Some((
                "a revert",
                "finish it with `git revert --continue`, or `git revert --abort`",
            )),
            State::CherryPick | State::CherryPickSequence => Some((
                "a cherry-pick",
                "finish it with `git cherry-pick --continue`, or `git cherry-pick --abort`",
            )),
            State::Bisect => Some(("a bisect", "end it with `git bisect reset`")),
            State::Rebase
            | State::RebaseInteractive
            | State::RebaseMerge
            | State::ApplyMailboxOrRebase => Some((
                "a rebase",
                "finish it with `git rebase --continue`, or `git rebase --abort`",
            )),
            State::ApplyMailbox => Some((
                "a `git am`",
                "finish it with `git am --continue`, or `git am --abort`",
            )),
        }
    }

    /// Where `HEAD` points.
    ///
    /// # Errors
    /// When `HEAD` cannot be read.
    pub fn head(&self) -> Result<HeadState, GitError> {
        let detached = self.inner.head_detached().map_err(op("read HEAD"))?;
        match self.inner.head() {
            Ok(head) => {
                let commit = head.peel_to_commit().map_err(op("read HEAD"))?.id();
                if detached {
                    Ok(HeadState::Detached { commit })
                } else {
                    let name = head.shorthand().unwrap_or("HEAD").to_owned();
                    Ok(HeadState::Branch { name, commit })
                }
            }
            Err(err) if err.code() == git2::ErrorCode::UnbornBranch => {
                let target = self
                    .inner
                    .find_reference("HEAD")
                    .ok()
                    .and_then(|r| r.symbolic_target().ok().flatten().map(str::to_owned))
                    .unwrap_or_default();
                let branch = target
                    .strip_prefix("refs/heads/")
                    .unwrap_or(&target)
                    .to_owned();
                Ok(HeadState::Unborn { branch })
            }
            Err(err) => Err(op("read HEAD")(err)),
        }
    }

    /// The commit `HEAD` points at, `None` on an unborn branch.
    ///
    /// # Errors
    /// When `HEAD` cannot be read.
    pub fn head_commit(&self) -> Result<Option<Oid>, GitError> {
        Ok(match self.head()? {
            HeadState::Unborn { .. } => None,
            HeadState::Branch { commit, .. } | HeadState::Detached { commit } => Some(commit),
        })
    }

    /// Tracked files with uncommitted changes (staged or not). Untracked and ignored
    /// files are not listed: they cannot be lost by a commit.
    ///
    /// # Errors
    /// When the status cannot be computed.
    pub fn dirty_tracked_files(&self) -> Result<Vec<String>, GitError> {
        let mut options = StatusOptions::new();
        options
            .include_untracked(false)
            .include_ignored(false)
            .include_unmodified(false);
        let statuses = self
            .inner
            .statuses(Some(&mut options))
            .map_err(op("status"))?;
        Ok(statuses
            .iter()
            .filter(|entry| !entry.status().is_ignored() && !entry.status().is_wt_new())
            .filter_map(|entry| entry.path().ok().map(str::to_owned))
            .collect())
    }

    /// Every file that differs between `base` (a commit; `None` = the empty tree) and
    /// the working tree, untracked files included and ignored ones excluded, with line
    /// counts: `git add -A && git diff --stat base` without touching the index.
    ///
    /// # Errors
    /// When `base` is not a commit or the diff fails.
    pub fn changes_since(&self, base: Option<Oid>) -> Result<Vec<FileChange>, GitError> {
        let tree = base
            .map(|id| self.inner.find_commit(id).and_then(|c| c.tree()))
            .transpose()
            .map_err(op("read base commit"))?;
        let mut options = DiffOptions::new();
        options
            .include_untracked(true)
            .recurse_untracked_dirs(true)
            .show_untracked_content(true)
            .include_typechange(true);
        let diff = self
            .inner
            .diff_tree_to_workdir_with_index(tree.as_ref(), Some(&mut options))
            .map_err(op("diff"))?;
        let mut changes = Vec::with_capacity(diff.deltas().len());
        for (index, delta) in diff.deltas().enumerate() {
            let kind = match delta.status() {
                git2::Delta::Added | git2::Delta::Untracked | git2::Delta::Copied => {
                    ChangeKind::Added
                }
                git2::Delta::Deleted => ChangeKind::Deleted,
                git2::Delta::Typechange => ChangeKind::TypeChanged,
                _ => ChangeKind::Modified,
            };
            let file = if kind == ChangeKind::Deleted {
                delta.old_file()
            } else {
                delta.new_file()
            };
            let Some(path) = file.path() else { continue };
            let (insertions, deletions) = match git2::Patch::from_diff(&diff, index) {
                Ok(Some(patch)) => patch
                    .line_stats()
                    .map(|(_, add, del)| (add, del))
                    .unwrap_or((0, 0)),
                _ => (0, 0),
            };
            changes.push(FileChange {
                path: path.to_string_lossy().replace('\\', "/"),
                kind,
                insertions,
                deletions,
            });
        }
        Ok(changes)
    }

    /// Stage everything (`git add -A`: new, modified and deleted files, `.gitignore`
    /// respected) and commit it with `message` on the current branch. Skips when the
    /// tree equals `HEAD`'s. Works on an unborn branch.
    ///
    /// An `index.lock` no process has open (left by a killed agent) is removed with a
    /// warning; one that a live process holds is waited on for up to `lock_wait`.
    ///
    /// # Errors
    /// [`GitError::IndexLocked`] if the lock stays held; libgit2 failures otherwise.
    pub fn commit_all(
        &self,
        message: &str,
        lock_wait: Duration,
        run_hooks: bool,
    ) -> Result<CommitOutcome, GitError> {
        let removed_stale_lock = self.clear_index_lock(lock_wait)?;
        let mut index = self.inner.index().map_err(op("open index"))?;
        index
            .add_all(["*"], IndexAddOption::DEFAULT, None)
            .map_err(op("stage files"))?;
        index
            .update_all(["*"], None)
            .map_err(op("stage deletions"))?;
        index.write().map_err(op("write index"))?;
        let mut tree_id = index.write_tree().map_err(op("write tree"))?;

        let parent = match self.head_commit()? {
            Some(id) => Some(self.inner.find_commit(id).map_err(op("read HEAD commit"))?),
            None => None,
        };
        let parent_tree = parent.as_ref().map(git2::Commit::tree_id);
        let unchanged = match parent_tree {
            Some(parent_tree) => parent_tree == tree_id,
            None => index.is_empty(),
        };
        if unchanged {
            return Ok(CommitOutcome::NothingToCommit);
        }
        let files_changed = {
            let tree = self.inner.find_tree(tree_id).map_err(op("read tree"))?;
            let old = parent
                .as_ref()
                .map(git2::Commit::tree)
                .transpose()
                .map_err(op("read tree"))?;
            self.inner
                .diff_tree_to_tree(old.as_ref(), Some(&tree), None)
                .map_err(op("diff"))?
                .deltas()
                .len()
        };
        let mut message = message.to_owned();
        let hooks = run_hooks.then(|| hooks::Hooks::of(&self.inner, &self.root));
        if let Some(hooks) = &hooks {
            hooks.run("pre-commit", &[]).map_err(GitError::Hook)?;
            // The hook may have staged more (a formatter): commit what the index holds now.
            index.read(true).map_err(op("re-read the index"))?;
            tree_id = index.write_tree().map_err(op("write tree"))?;
            let message_file = self.inner.path().join("COMMIT_EDITMSG");
            std::fs::write(&message_file, &message).map_err(|source| GitError::MessageFile {
                path: message_file.clone(),
                source,
            })?;
            hooks
                .run("commit-msg", &[message_file.as_os_str()])
                .map_err(GitError::Hook)?;
            message =
                std::fs::read_to_string(&message_file).map_err(|source| GitError::MessageFile {
                    path: message_file.clone(),
                    source,
                })?;
        }
        let (author, committer, identity) = self.identity()?;
        let tree = self.inner.find_tree(tree_id).map_err(op("read tree"))?;
        let parents: Vec<&git2::Commit<'_>> = parent.iter().collect();
        let id = self
            .inner
            .commit(Some("HEAD"), &author, &committer, &message, &tree, &parents)
            .map_err(op("commit"))?;
        if let Some(hooks) = &hooks
            && let Err(failure) = hooks.run("post-commit", &[])
        {
            // As git does: the commit stands whatever post-commit says.
            tracing::warn!(
                "the post-commit hook failed ({}): {}",
                failure.status,
                failure.output
            );
        }
        Ok(CommitOutcome::Committed {
            id,
            files_changed,
            identity,
            removed_stale_lock,
        })
    }

    /// The configured author and committer, else the fallback identity.
    fn identity(&self) -> Result<(Signature<'static>, Signature<'static>, Identity), GitError> {
        match (
            self.inner.author_from_env(),
            self.inner.committer_from_env(),
        ) {
            (Ok(author), Ok(committer)) => Ok((author, committer, Identity::Configured)),
            _ => {
                let fallback =
                    Signature::now(FALLBACK_NAME, FALLBACK_EMAIL).map_err(op("make signature"))?;
                Ok((fallback.clone(), fallback, Identity::Fallback))
            }
        }
    }

    /// Remove a stale `index.lock`, or wait for a live one to go away.
    /// Returns the stale lock that was removed, if any.
    fn clear_index_lock(&self, lock_wait: Duration) -> Result<Option<StaleLock>, GitError> {
        let lock = self.inner.path().join("index.lock");
        let deadline = Instant::now() + lock_wait;
        loop {
            if !lock.exists() {
                return Ok(None);
            }
            let holders = lock_holders(&lock);
            if holders.is_empty() {
                let last_written = std::fs::metadata(&lock)
                    .and_then(|meta| meta.modified())
                    .ok();
                std::fs::remove_file(&lock)
                    .or_else(|err| {
                        if err.kind() == std::io::ErrorKind::NotFound {
                            Ok(())
                        } else {
                            Err(err)
                        }
                    })
                    .map_err(|source| GitError::RemoveLock {
                        path: lock.clone(),
                        source,
                    })?;
                return Ok(Some(StaleLock { last_written }));
            }
            if Instant::now() >= deadline {
                return Err(GitError::IndexLocked {
                    path: lock,
                    pids: holders,
                });
            }
            // A live git command usually holds the lock for milliseconds; poll until the
            // deadline rather than failing on the first look.
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// Processes that have `path` open, found through `/proc/*/fd`. Empty where `/proc` is
/// unavailable, which treats the lock as stale: the agent that could hold it was killed.
fn lock_holders(path: &Path) -> Vec<u32> {
    let Ok(target) = path.canonicalize() else {
        return Vec::new();
    };
    let Some(processes) = crate::process::procfs::processes() else {
        return Vec::new();
    };
    processes
        .filter(|(_, dir)| crate::process::procfs::holds_open(dir, &target))
        .map(|(pid, _)| pid)
        .collect()
}

/// Render changes as a `git diff --stat`-like block, one file a line, then a total line.
#[must_use]
pub fn diffstat(changes: &[FileChange]) -> String {
    use std::fmt::Write as _;
    let width = changes.iter().map(|c| c.path.len()).max().unwrap_or(0);
    let mut out = String::new();
    for change in changes {
        let _ = writeln!(
            out,
            "{} {:width$} | +{} -{}",
            change.kind.letter(),
            change.path,
            change.insertions,
            change.deletions
        );
    }
    let insertions: usize = changes.iter().map(|c| c.insertions).sum();
    let deletions: usize = changes.iter().map(|c| c.deletions).sum();
    let files = changes.len();
    let _ = write!(
        out,
        "{files} file{} changed, {insertions} insertion{}(+), {deletions} deletion{}(-)",
        plural(files),
        plural(insertions),
        plural(deletions)
    );
    out
}

#[cfg(test)]
mod tests {
    use std::fs;

    use super::*;

    /// A repository in a temp dir with a local identity, so the user's config never matters.
    fn repo() -> (tempfile::TempDir, Repo) {
        let dir = tempfile::tempdir().expect("tempdir");
        let raw = Repository::init(dir.path()).expect("init");
        let mut config = raw.config().expect("config");
        config.set_str("user.name", "Test").expect("name");
        config
            .set_str("user.email", "test@example.com")
            .expect("email");
        let repo = Repo::discover(dir.path()).expect("discover");
        (dir, repo)
    }

    const WAIT: Duration = Duration::from_secs(2);

    fn hook(dir: &Path, name: &str, script: &str) {
        use std::os::unix::fs::PermissionsExt as _;
        let path = dir.join(name);
        fs::create_dir_all(dir).expect("hooks dir");
        fs::write(&path, format!("#!/bin/sh\n{script}\n")).expect("hook");
        fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).expect("chmod");
    }

    fn last_message(repo: &Repo) -> String {
        let head = repo.head_commit().expect("head").expect("a commit");
        repo.inner
            .find_commit(head)
            .expect("commit")
            .message()
            .unwrap_or_default()
            .to_owned()
    }

    #[test]
    fn a_failing_pre_commit_hook_refuses_the_commit_with_its_output() {
        let (dir, repo) = repo();
        hook(
            &dir.path().join(".git/hooks"),
            "pre-commit",
            "echo 'lint: trailing whitespace in a.txt' >&2; exit 1",
        );
        fs::write(dir.path().join("a.txt"), "one \n").expect("write");
        let err = repo.commit_all("work", WAIT, true).expect_err("refused");
        let text = err.to_string();
        assert!(
            text.contains("the pre-commit hook refused the commit (exit code 1)")
                && text.contains("lint: trailing whitespace in a.txt"),
            "{text}"
        );
        assert_eq!(repo.head_commit().expect("head"), None, "nothing committed");
        // Off, the hook is not run and the commit is made.
        assert!(matches!(
            repo.commit_all("work", WAIT, false).expect("commit"),
            CommitOutcome::Committed { .. }
        ));
    }

    #[test]
    fn commit_msg_edits_the_message_and_pre_commit_may_stage_more() {
        let (dir, repo) = repo();
        let hooks = dir.path().join("ci-hooks");
        repo.inner
            .config()
            .expect("config")
            .set_str("core.hooksPath", "ci-hooks")
            .expect("hooksPath");
        hook(
            &hooks,
            "pre-commit",
            "echo generated > gen.txt && git add gen.txt",
        );
        hook(
            &hooks,
            "commit-msg",
            "printf '\\nSigned-off-by: hook\\n' >> \"$1\"",
        );
        hook(&hooks, "post-commit", "exit 3");
        fs::write(dir.path().join("a.txt"), "one\n").expect("write");
        let CommitOutcome::Committed { id, .. } =
            repo.commit_all("work", WAIT, true).expect("commit")
        else {
            panic!("nothing committed")
        };
        assert_eq!(last_message(&repo), "work\nSigned-off-by: hook\n");
        let tree = repo
            .inner
            .find_commit(id)
            .expect("commit")
            .tree()
            .expect("tree");
        assert!(
            tree.get_name("gen.txt").is_some(),
            "what pre-commit staged is committed"
        );
    }

    #[test]
    fn unborn_branch_is_reported_and_committable() {
        let (dir, repo) = repo();
        assert!(matches!(
            repo.head().expect("head"),
            HeadState::Unborn { .. }
        ));
        assert_eq!(
            repo.commit_all("empty", WAIT, true).expect("commit"),
            CommitOutcome::NothingToCommit
        );
        fs::write(dir.path().join("a.txt"), "one\n").expect("write");
        let CommitOutcome::Committed {
            files_changed,
            identity,
            ..
        } = repo.commit_all("first", WAIT, true).expect("commit")
        else {
            panic!("expected a commit")
        };
        assert_eq!((files_changed, identity), (1, Identity::Configured));
        assert!(matches!(
            repo.head().expect("head"),
            HeadState::Branch { .. }
        ));
    }

    #[test]
    fn commit_all_stages_new_modified_and_deleted_but_not_ignored() {
        let (dir, repo) = repo();
        fs::write(dir.path().join(".gitignore"), "secret.txt\n").expect("write");
        fs::write(dir.path().join("keep.txt"), "1\n").expect("write");
        fs::write(dir.path().join("gone.txt"), "1\n").expect("write");
        repo.commit_all("base", WAIT, true).expect("commit");

        fs::write(dir.path().join("keep.txt"), "1\n2\n").expect("write");
        fs::remove_file(dir.path().join("gone.txt")).expect("rm");
        fs::create_dir(dir.path().join("new")).expect("mkdir");
        fs::write(dir.path().join("new/file.rs"), "fn main() {}\n").expect("write");
        fs::write(dir.path().join("secret.txt"), "token\n").expect("write");
        let CommitOutcome::Committed { files_changed, .. } =
            repo.commit_all("work", WAIT, true).expect("commit")
        else {
            panic!("expected a commit")
        };
        assert_eq!(files_changed, 3);
        assert!(repo.dirty_tracked_files().expect("status").is_empty());
        let head = repo
            .inner
            .head()
            .expect("head")
            .peel_to_tree()
            .expect("tree");
        assert!(
            head.get_path(Path::new("secret.txt")).is_err(),
            "ignored file was committed"
        );
        assert!(
            head.get_path(Path::new("gone.txt")).is_err(),
            "deletion was not staged"
        );
        assert_eq!(
            repo.commit_all("again", WAIT, true).expect("commit"),
            CommitOutcome::NothingToCommit
        );
    }

    #[test]
    fn changes_since_lists_untracked_files_with_line_counts() {
        let (dir, repo) = repo();
        fs::write(dir.path().join("a.txt"), "1\n2\n3\n").expect("write");
        repo.commit_all("base", WAIT, true).expect("commit");
        let base = repo.head_commit().expect("head");
        fs::write(dir.path().join("a.txt"), "1\n3\n4\n5\n").expect("write");
        fs::write(dir.path().join("b.txt"), "x\ny\n").expect("write");
        let mut changes = repo.changes_since(base).expect("diff");
        changes.sort_by(|a, b| a.path.cmp(&b.path));
        assert_eq!(
            changes,
            [
                FileChange {
                    path: "a.txt".into(),
                    kind: ChangeKind::Modified,
                    insertions: 2,
                    deletions: 1
                },
                FileChange {
                    path: "b.txt".into(),
                    kind: ChangeKind::Added,
                    insertions: 2,
                    deletions: 0
                },
            ]
        );
        assert_eq!(
            diffstat(&changes),
            "M a.txt | +2 -1\nA b.txt | +2 -0\n2 files changed, 4 insertions(+), 1 deletion(-)"
        );
        // Changes committed mid-phase still count against the phase's base.
        repo.commit_all("checkpoint", WAIT, true).expect("commit");
        assert_eq!(repo.changes_since(base).expect("diff").len(), 2);
    }

    #[test]
    fn dirty_tracked_files_ignores_untracked() {
        let (dir, repo) = repo();
        fs::write(dir.path().join("a.txt"), "1\n").expect("write");
        repo.commit_all("base", WAIT, true).expect("commit");
        fs::write(dir.path().join("untracked.txt"), "1\n").expect("write");
        assert!(repo.dirty_tracked_files().expect("status").is_empty());
        fs::write(dir.path().join("a.txt"), "2\n").expect("write");
        assert_eq!(repo.dirty_tracked_files().expect("status"), ["a.txt"]);
    }

    #[test]
    fn detached_head_is_reported() {
        let (dir, repo) = repo();
        fs::write(dir.path().join("a.txt"), "1\n").expect("write");
        repo.commit_all("base", WAIT, true).expect("commit");
        let id = repo.head_commit().expect("head").expect("commit");
        repo.inner.set_head_detached(id).expect("detach");
        assert_eq!(
            repo.head().expect("head"),
            HeadState::Detached { commit: id }
        );
    }

    #[test]
    fn stale_index_lock_is_removed() {
        let (dir, repo) = repo();
        fs::write(dir.path().join("a.txt"), "1\n").expect("write");
        fs::write(dir.path().join(".git/index.lock"), "").expect("lock");
        let CommitOutcome::Committed {
            removed_stale_lock, ..
        } = repo.commit_all("after kill", WAIT, true).expect("commit")
        else {
            panic!("expected a commit")
        };
        assert!(removed_stale_lock.is_some_and(|lock| lock.last_written.is_some()));
    }

    #[test]
    fn live_index_lock_fails_after_waiting() {
        let (dir, repo) = repo();
        fs::write(dir.path().join("a.txt"), "1\n").expect("write");
        let lock_path = dir.path().join(".git/index.lock");
        let _held = fs::File::create(&lock_path).expect("lock");
        let err = repo
            .commit_all("blocked", Duration::from_millis(200), true)
            .expect_err("must fail");
        let GitError::IndexLocked { pids, .. } = &err else {
            panic!("wrong error: {err}")
        };
        assert!(pids.contains(&std::process::id()));
        assert!(err.to_string().contains("index.lock"));
    }

    #[test]
    fn not_a_repository_says_how_to_fix_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let err = Repo::discover(dir.path()).expect_err("no repo");
        assert!(err.to_string().contains("git init"), "{err}");
    }
}
