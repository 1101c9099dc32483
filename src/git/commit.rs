//! Committing everything as the user's identity (or debussy's fallback), with the
//! repository's hooks, signed when `commit.gpgSign` asks for it, and clearing an
//! `index.lock` a killed agent left behind. `git add -A` stages (libgit2 runs no clean
//! filter and knows no sparse checkout); libgit2 writes the commit, or git when it must
//! be signed.

use std::os::unix::ffi::OsStrExt as _;
use std::path::Path;
use std::time::{Duration, Instant};

use git2::{Oid, Signature};

use super::{GitCli, GitError, HookPolicy, Repo, hooks, op};

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
/// The same, as git's `-c` settings.
const FALLBACK_USER_NAME: &str = "user.name=debussy";
const FALLBACK_USER_EMAIL: &str = "user.email=debussy@localhost";

impl Repo {
    /// Stage everything with `git add -A` run by `git` (new, modified and deleted files,
    /// as git stages them: `.gitignore`, clean filters such as Git LFS's and a sparse
    /// checkout respected) and commit it with `message` on the current branch. Skips
    /// when the tree equals `HEAD`'s. Works on an unborn branch.
    ///
    /// An `index.lock` no process has open (left by a killed agent) is removed with a
    /// warning; one that a live process holds, or that a git command working in this tree
    /// may still rename, is waited on for up to `lock_wait`.
    ///
    /// # Errors
    /// [`GitError::IndexLocked`] if the lock stays held; [`GitError::OperationUnderWay`]
    /// for a merge, rebase or the like half done; [`GitError::Unmerged`] for other
    /// conflicts; git's or libgit2's failures otherwise.
    pub fn commit_all(
        &self,
        message: &str,
        git: &GitCli,
        lock_wait: Duration,
        hooks: HookPolicy,
    ) -> Result<CommitOutcome, GitError> {
        let removed_stale_lock = self.clear_index_lock(lock_wait)?;
        // A merge, cherry-pick or rebase half done (by the agent, in a phase's worktree
        // as in the checkout): `git add -A` would stage its markers as resolved, and the
        // commit would drop the merge's second parent.
        self.check_no_operation()?;
        // Conflicts no operation will finish (a `git stash pop` or `git apply --3way`
        // that conflicted): the same markers.
        let conflicts = self.conflicts()?;
        if !conflicts.is_empty() {
            return Err(GitError::Unmerged {
                paths: conflicts
                    .into_iter()
                    .map(|conflict| conflict.path)
                    .collect(),
            });
        }
        git.run_blocking(&self.root, &["add", "-A"]).map_err(
            |err| match uncommitted_repository(&err.message) {
                Some(path) => GitError::EmbeddedRepository { paths: vec![path] },
                None => err.into(),
            },
        )?;
        let mut index = self.inner.index().map_err(op("open index"))?;
        index.read(true).map_err(op("read the index"))?;
        let parent = match self.head_commit()? {
            Some(id) => Some(self.inner.find_commit(id).map_err(op("read HEAD commit"))?),
            None => None,
        };
        let embedded = new_gitlinks(&index, parent.as_ref(), &submodule_paths(&self.root))?;
        if !embedded.is_empty() {
            // Unstaged again: once its `.git` is gone, `git add -A` takes its files, where
            // it would keep a staged gitlink.
            let mut unstage = vec!["rm", "-q", "-r", "-f", "--cached", "--ignore-unmatch", "--"];
            unstage.extend(embedded.iter().map(String::as_str));
            git.run_blocking(&self.root, &unstage)?;
            return Err(GitError::EmbeddedRepository { paths: embedded });
        }
        let mut tree_id = index.write_tree().map_err(op("write tree"))?;

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
        let hooks = match hooks {
            HookPolicy::Skip => None,
            HookPolicy::Run { timeout } => Some(hooks::Hooks::of(&self.inner, &self.root, timeout)),
        };
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
        let identity = self.identity();
        let parents: Vec<Oid> = parent.iter().map(git2::Commit::id).collect();
        let id = self.write_commit(git, "HEAD", tree_id, &parents, &message)?;
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

    /// Whose identity commits here carry: the configured one (`user.name` and
    /// `user.email`, or `GIT_AUTHOR_*` and `GIT_COMMITTER_*`), else debussy's fallback.
    pub(super) fn identity(&self) -> Identity {
        let configured =
            self.inner.author_from_env().is_ok() && self.inner.committer_from_env().is_ok();
        if configured {
            Identity::Configured
        } else {
            Identity::Fallback
        }
    }

    /// The `-c` settings git needs to commit here: the fallback identity when none is
    /// configured, else none.
    fn identity_settings(&self) -> &'static [&'static str] {
        match self.identity() {
            Identity::Configured => &[],
            Identity::Fallback => &["-c", FALLBACK_USER_NAME, "-c", FALLBACK_USER_EMAIL],
        }
    }

    /// Whether commits here are signed (`commit.gpgSign`).
    fn signs_commits(&self) -> bool {
        self.inner
            .config()
            .and_then(|config| config.get_bool("commit.gpgSign"))
            .unwrap_or(false)
    }

    /// Where commits are signed, sign one that nothing refers to (of the empty tree; git
    /// prunes it in time): a key git cannot use is found before a run, not at its first
    /// commit, and a passphrase the signing agent asks for is asked while someone is
    /// there.
    ///
    /// # Errors
    /// [`GitError::Command`] in git's words when it cannot sign.
    pub fn check_signing(&self, git: &GitCli) -> Result<(), GitError> {
        if !self.signs_commits() {
            return Ok(());
        }
        let empty = self
            .inner
            .treebuilder(None)
            .and_then(|tree| tree.write())
            .map_err(op("write the empty tree"))?
            .to_string();
        let mut args = self.identity_settings().to_vec();
        args.extend(["commit-tree", &empty, "-S", "-m", "debussy: signing check"]);
        git.run_blocking(&self.root, &args)?;
        Ok(())
    }

    /// Write the commit of `tree` on `parents` with `message`, and move `reference` (a
    /// branch, or `HEAD` for its branch) to it from the first parent. libgit2 writes it,
    /// in process, and refuses if the reference moved meanwhile; where `commit.gpgSign`
    /// asks for a signature, which libgit2 cannot make, git does (see
    /// [`Repo::write_signed_commit`]).
    ///
    /// # Errors
    /// When a parent cannot be read, or the commit cannot be written or git refuses it.
    pub(super) fn write_commit(
        &self,
        git: &GitCli,
        reference: &str,
        tree: Oid,
        parents: &[Oid],
        message: &str,
    ) -> Result<Oid, GitError> {
        if self.signs_commits() {
            return self.write_signed_commit(git, reference, tree, parents, message);
        }
        let (author, committer) = match (
            self.inner.author_from_env(),
            self.inner.committer_from_env(),
        ) {
            (Ok(author), Ok(committer)) => (author, committer),
            _ => {
                let fallback =
                    Signature::now(FALLBACK_NAME, FALLBACK_EMAIL).map_err(op("make signature"))?;
                (fallback.clone(), fallback)
            }
        };
        let tree = self.inner.find_tree(tree).map_err(op("read tree"))?;
        let parents = parents
            .iter()
            .map(|id| self.inner.find_commit(*id))
            .collect::<Result<Vec<_>, _>>()
            .map_err(op("read a commit"))?;
        let parents: Vec<&git2::Commit<'_>> = parents.iter().collect();
        self.inner
            .commit(
                Some(reference),
                &author,
                &committer,
                message,
                &tree,
                &parents,
            )
            .map_err(op("commit"))
    }

    /// [`Repo::write_commit`] signed, as `git commit` signs: `git commit-tree -S` writes
    /// it (the message passes through `COMMIT_EDITMSG`, as git's own does), and `git
    /// update-ref` moves `reference`, refusing if it moved meanwhile.
    fn write_signed_commit(
        &self,
        git: &GitCli,
        reference: &str,
        tree: Oid,
        parents: &[Oid],
        message: &str,
    ) -> Result<Oid, GitError> {
        let message_file = self.inner.path().join("COMMIT_EDITMSG");
        std::fs::write(&message_file, message).map_err(|source| GitError::MessageFile {
            path: message_file.clone(),
            source,
        })?;
        let tree = tree.to_string();
        let parent_ids: Vec<String> = parents.iter().map(Oid::to_string).collect();
        let message_path = message_file.to_string_lossy();
        let mut args = self.identity_settings().to_vec();
        args.extend(["commit-tree", &tree, "-S"]);
        for parent in &parent_ids {
            args.extend(["-p", parent]);
        }
        args.extend(["-F", &message_path]);
        let written = git.run_blocking(&self.root, &args)?;
        let id = Oid::from_str(&written).map_err(op("read the commit git wrote"))?;
        let subject = message.lines().next().unwrap_or_default();
        let reflog = match parents.first() {
            Some(_) => format!("commit: {subject}"),
            None => format!("commit (initial): {subject}"),
        };
        let new = id.to_string();
        let old = parent_ids
            .first()
            .map_or_else(|| Oid::ZERO_SHA1.to_string(), String::clone);
        git.run_blocking(
            &self.root,
            &["update-ref", "-m", &reflog, reference, &new, &old],
        )?;
        Ok(id)
    }

    /// Remove a stale `index.lock` (no process holds it and no git command works in the
    /// tree: a git command was killed), or wait up to `lock_wait` for a live one to go
    /// away. Returns the stale lock that was removed, if any.
    ///
    /// # Errors
    /// [`GitError::IndexLocked`] if the lock stays held; [`GitError::RemoveLock`] when a
    /// stale one cannot be removed.
    pub fn clear_index_lock(&self, lock_wait: Duration) -> Result<Option<StaleLock>, GitError> {
        let lock = self.inner.path().join("index.lock");
        let deadline = Instant::now() + lock_wait;
        loop {
            if !lock.exists() {
                return Ok(None);
            }
            let holders = index_lock_users(&lock, self.inner.workdir());
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

/// The processes that may still write the `index.lock` at `lock` of the working tree
/// `tree`: those that have it open, else the git commands working in the tree (a `git
/// commit` in its editor or a hook has closed it). Empty where `/proc` is unavailable,
/// which treats the lock as stale: the agent that could hold it was killed.
fn index_lock_users(lock: &Path, tree: Option<&Path>) -> Vec<u32> {
    let holders = crate::process::procfs::holders_of(lock).unwrap_or_default();
    match tree {
        Some(tree) if holders.is_empty() => super::busy::git_commands_in(tree),
        _ => holders,
    }
}

/// The directory of a repository with no commit yet that `git add` refused to stage ("error:
/// 'app/' does not have a commit checked out").
fn uncommitted_repository(said: &str) -> Option<String> {
    let line = said
        .lines()
        .find(|line| line.ends_with("does not have a commit checked out"))?;
    let (_, quoted) = line.split_once('\'')?;
    let (path, _) = quoted.rsplit_once('\'')?;
    Some(path.trim_end_matches('/').to_owned())
}

/// The paths `.gitmodules` in `root` declares submodules at.
fn submodule_paths(root: &Path) -> Vec<String> {
    let Ok(config) = git2::Config::open(&root.join(".gitmodules")) else {
        return Vec::new();
    };
    let Ok(mut entries) = config.entries(Some(r"submodule\..*\.path")) else {
        return Vec::new();
    };
    let mut paths = Vec::new();
    while let Some(Ok(entry)) = entries.next() {
        if let Ok(path) = entry.value() {
            paths.push(path.trim_end_matches('/').to_owned());
        }
    }
    paths
}

/// The directories `index` holds as commits of repositories of their own (gitlinks) that
/// neither `head` nor `.gitmodules` (`submodules`) has: git repositories made inside the
/// work tree since, whose files a commit would not hold. A submodule the agent added
/// (`git submodule add`) is declared, and its commit lives where its URL says.
fn new_gitlinks(
    index: &git2::Index,
    head: Option<&git2::Commit<'_>>,
    submodules: &[String],
) -> Result<Vec<String>, GitError> {
    const GITLINK: u32 = 0o160_000;
    let tree = head
        .map(git2::Commit::tree)
        .transpose()
        .map_err(op("read tree"))?;
    Ok(index
        .iter()
        .filter(|entry| entry.mode == GITLINK)
        .filter(|entry| {
            let path = Path::new(std::ffi::OsStr::from_bytes(&entry.path));
            tree.as_ref()
                .and_then(|tree| tree.get_path(path).ok())
                .is_none_or(|known| known.filemode() != 0o160_000)
        })
        .map(|entry| String::from_utf8_lossy(&entry.path).into_owned())
        .filter(|path| !submodules.contains(path))
        .collect())
}
