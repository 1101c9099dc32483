//! What changed in the working tree: since a commit (with line counts, for checkpoints)
//! or against the index (for the pre-flight check), and the diffstat that shows it.
//!
//! A file the index marks skip-worktree (outside a sparse checkout's cone, or set by
//! `git update-index --skip-worktree`) is, as git holds, what the index says, whatever
//! the working tree has there; libgit2 would call every such file deleted.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt as _;
use std::path::Path;

use git2::{DiffOptions, IndexEntryExtendedFlag, Oid, Status, StatusOptions};

use super::{GitError, Repo, op};
use crate::words::plural;

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

impl Repo {
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
        self.status_paths(&mut options, |status| {
            !status.is_ignored() && !status.is_wt_new()
        })
    }

    /// Files that differ from `HEAD` in the index or the work tree, untracked ones
    /// included and ignored ones not: what a commit of everything would take.
    ///
    /// # Errors
    /// When the status cannot be computed.
    pub fn uncommitted_files(&self) -> Result<Vec<String>, GitError> {
        let mut options = StatusOptions::new();
        options
            .include_untracked(true)
            .recurse_untracked_dirs(true)
            .include_ignored(false)
            .include_unmodified(false)
            .exclude_submodules(true);
        self.status_paths(&mut options, |status| !status.is_ignored())
    }

    /// The paths git's status lists under `options` whose status `keep` accepts.
    fn status_paths(
        &self,
        options: &mut StatusOptions,
        keep: impl Fn(git2::Status) -> bool,
    ) -> Result<Vec<String>, GitError> {
        let statuses = self.inner.statuses(Some(options)).map_err(op("status"))?;
        let skipped = self.skip_worktree_paths()?;
        let worktree = Status::WT_NEW
            | Status::WT_MODIFIED
            | Status::WT_DELETED
            | Status::WT_TYPECHANGE
            | Status::WT_RENAMED;
        Ok(statuses
            .iter()
            .filter_map(|entry| {
                let mut status = entry.status();
                if skipped.contains_key(entry.path_bytes()) {
                    status.remove(worktree);
                    if status.is_empty() {
                        return None;
                    }
                }
                keep(status).then(|| entry.path().ok().map(str::to_owned))?
            })
            .collect())
    }

    /// The paths the index marks skip-worktree, with the blob it holds for each.
    fn skip_worktree_paths(&self) -> Result<HashMap<Vec<u8>, Oid>, GitError> {
        let index = self.inner.index().map_err(op("read the index"))?;
        Ok(index
            .iter()
            .filter(|entry| {
                IndexEntryExtendedFlag::from_bits_truncate(entry.flags_extended).is_skip_worktree()
            })
            .map(|entry| (entry.path, entry.id))
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
        let skipped = self.skip_worktree_paths()?;
        let mut changes = Vec::with_capacity(diff.deltas().len());
        for (index, delta) in diff.deltas().enumerate() {
            // The index's version of a skip-worktree file is its version here.
            if let Some(path) = delta.old_file().path_bytes()
                && let Some(held) = skipped.get(path)
            {
                let based = tree
                    .as_ref()
                    .and_then(|tree| tree.get_path(Path::new(OsStr::from_bytes(path))).ok())
                    .map(|entry| entry.id());
                if based == Some(*held) {
                    continue;
                }
            }
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
}

/// Render changes as a `git diff --stat`-like block, one file a line, then a total line.
#[must_use]
pub fn diffstat(changes: &[FileChange]) -> String {
    use std::fmt::Write as _;
    // Paths past 100 bytes are left unaligned: a format width over 65,535 panics.
    let width = changes
        .iter()
        .map(|c| c.path.len())
        .max()
        .unwrap_or(0)
        .min(100);
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
