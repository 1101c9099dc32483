//! What a work tree's history holds beyond a branch: the commits its `HEAD` pointed at
//! (its reflog), the stashes made there, and whether a stash's changes are already in a
//! commit's tree. The questions debussy asks before it merges a phase's branch, so that
//! an agent that moved `HEAD`, reset, committed elsewhere or stashed loses nothing; how
//! commits descend from each other is asked of git (see `ancestry.rs`).

use git2::Oid;

use super::{GitCli, GitError, Repo, op};

/// A stash entry (`refs/stash`, shared by every worktree of the repository).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stash {
    /// Its place in `git stash list` now: `stash@{index}`.
    pub index: usize,
    /// The stash commit.
    pub commit: Oid,
    /// Its message, e.g. `WIP on main: 1a2b3c4 add parser`.
    pub message: String,
    /// The commit `HEAD` was at when it was made (the stash's first parent).
    pub base: Option<Oid>,
}

impl Stash {
    /// The branch it was made on, from its message (`None` for a detached `HEAD`).
    #[must_use]
    pub fn branch(&self) -> Option<&str> {
        let rest = self
            .message
            .strip_prefix("WIP on ")
            .or_else(|| self.message.strip_prefix("On "))?;
        let (branch, _) = rest.split_once(": ")?;
        (branch != "(no branch)").then_some(branch)
    }

    /// It, for a person: `stash@{0} (1a2b3c4d5e6f "WIP on main: …")`.
    #[must_use]
    pub fn name(&self) -> String {
        format!(
            "stash@{{{}}} ({} \"{}\")",
            self.index,
            super::short_id(self.commit),
            self.message
        )
    }
}

impl Repo {
    /// The stashes made since `since` on `branch` (named so in their message, or, made
    /// on no branch, based on a commit of `history`) whose changes are not all in `tip`:
    /// work taken out of the tree that the branch does not hold.
    ///
    /// # Errors
    /// When the stash list or a commit cannot be read.
    pub fn stashes_off(
        &self,
        since: i64,
        branch: &str,
        history: &[Oid],
        tip: Oid,
    ) -> Result<Vec<Stash>, GitError> {
        let mut off = Vec::new();
        for stash in self.stashes_since(since)? {
            let ours = match stash.branch() {
                Some(name) => name == branch,
                None => stash.base.is_some_and(|base| history.contains(&base)),
            };
            if ours && !self.stash_adds_nothing(tip, stash.commit)? {
                off.push(stash);
            }
        }
        Ok(off)
    }

    /// The commits this work tree's `HEAD` pointed at since `since` (seconds since the
    /// epoch), newest first, each once: its reflog. Empty when reflogs are off.
    ///
    /// # Errors
    /// When the reflog cannot be read.
    pub fn head_history(&self, since: i64) -> Result<Vec<Oid>, GitError> {
        let reflog = self
            .inner
            .reflog("HEAD")
            .map_err(op("read HEAD's reflog"))?;
        let mut seen = Vec::new();
        for entry in reflog.iter() {
            if entry.committer().when().seconds() < since {
                continue;
            }
            for id in [entry.id_new(), entry.id_old()] {
                if !id.is_zero() && !seen.contains(&id) {
                    seen.push(id);
                }
            }
        }
        Ok(seen)
    }

    /// The stashes made since `since` (seconds since the epoch), newest first.
    ///
    /// # Errors
    /// When the stash's reflog cannot be read.
    pub fn stashes_since(&self, since: i64) -> Result<Vec<Stash>, GitError> {
        let reflog = self
            .inner
            .reflog("refs/stash")
            .map_err(op("read the stash list"))?;
        let mut stashes = Vec::new();
        for (index, entry) in reflog.iter().enumerate() {
            if entry.committer().when().seconds() < since {
                continue;
            }
            let commit = entry.id_new();
            let base = self
                .inner
                .find_commit(commit)
                .ok()
                .and_then(|c| c.parent_id(0).ok());
            stashes.push(Stash {
                index,
                commit,
                message: entry
                    .message_bytes()
                    .map(|bytes| String::from_utf8_lossy(bytes).into_owned())
                    .unwrap_or_default(),
                base,
            });
        }
        Ok(stashes)
    }

    /// Whether applying the stash `stash` onto `base` would leave `base`'s tree as it
    /// is (its changes, untracked files included, are all there already).
    ///
    /// # Errors
    /// When a commit is missing or the merge cannot be computed.
    pub fn stash_adds_nothing(&self, base: Oid, stash: Oid) -> Result<bool, GitError> {
        let base = self.inner.find_commit(base).map_err(op("read a commit"))?;
        let stash = self.inner.find_commit(stash).map_err(op("read a stash"))?;
        let base_tree = base.tree().map_err(op("read a tree"))?;
        // Its tracked changes are those of its work-tree commit against its first parent.
        if let Ok(parent) = stash.parent(0) {
            let ancestor = parent.tree().map_err(op("read a tree"))?;
            let theirs = stash.tree().map_err(op("read a tree"))?;
            let mut index = self
                .inner
                .merge_trees(&ancestor, &base_tree, &theirs, None)
                .map_err(op("merge trees in memory"))?;
            if index.has_conflicts()
                || index
                    .write_tree_to(&self.inner)
                    .map_err(op("write a merged tree"))?
                    != base.tree_id()
            {
                return Ok(false);
            }
        }
        // Untracked files, when stashed, are the third parent's tree.
        if let Ok(untracked) = stash.parent(2) {
            let tree = untracked.tree().map_err(op("read a tree"))?;
            let mut all_there = true;
            tree.walk(git2::TreeWalkMode::PreOrder, |dir, entry| {
                if entry.kind() == Some(git2::ObjectType::Blob) {
                    let path = format!("{dir}{}", entry.name().unwrap_or_default());
                    let same = base_tree
                        .get_path(std::path::Path::new(&path))
                        .is_ok_and(|there| there.id() == entry.id());
                    if !same {
                        all_there = false;
                        return git2::TreeWalkResult::Abort;
                    }
                }
                git2::TreeWalkResult::Ok
            })
            .or_else(|err| {
                if err.code() == git2::ErrorCode::User {
                    Ok(())
                } else {
                    Err(err)
                }
            })
            .map_err(op("read a stash's untracked files"))?;
            if !all_there {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Record `kept` as merged into `branch` without changing its tree: a commit whose
    /// tree is the branch tip's and whose parents are the tip and `kept`, so they stay
    /// reachable from the branch. Returns the new tip.
    ///
    /// # Errors
    /// When the branch cannot be read, or git refuses the commit.
    pub fn keep_in_history(
        &self,
        git: &GitCli,
        branch: &str,
        kept: &[Oid],
        message: &str,
    ) -> Result<Oid, GitError> {
        let reference = format!("refs/heads/{branch}");
        let tip = self
            .inner
            .refname_to_id(&reference)
            .map_err(op("read a branch"))?;
        let tree = self
            .inner
            .find_commit(tip)
            .map_err(op("read a commit"))?
            .tree_id();
        let mut parents = vec![tip];
        parents.extend_from_slice(kept);
        self.write_commit(git, &reference, tree, &parents, message)
    }

    /// The first line of a commit's message, for naming it to a person.
    #[must_use]
    pub fn summary_of(&self, id: Oid) -> String {
        self.inner
            .find_commit(id)
            .ok()
            .and_then(|commit| {
                commit
                    .summary_bytes()
                    .map(|bytes| String::from_utf8_lossy(bytes).into_owned())
            })
            .unwrap_or_default()
    }
}
