//! A fast-forward of the user's checkout that a kill cut short. `git merge --ff-only`
//! writes the new commit's files into the working tree, then the index, then moves the
//! branch. Killed before the index, it leaves the checkout on the old commit with some of
//! the new commit's files in it, which the next fast-forward refuses to overwrite
//! ("untracked working tree files would be overwritten by merge"); killed before the
//! branch moved, it leaves the new files staged, and the checkout reads as dirty.
//!
//! A path is taken for such a leftover only where the index holds either commit's
//! version and the working tree holds what git leaves there: exactly the new commit's
//! version (content and mode); for a file git was writing, the empty file it had
//! created, or no file at all where it had removed the old one first; no file where the
//! new commit deletes it. Setting such a path back to `HEAD` loses nothing: the new
//! commit holds the same bytes, and the merge that follows brings them again. A file
//! with any other content is the user's and is left alone.

use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use git2::build::CheckoutBuilder;
use git2::{Delta, DiffFile, FileMode, ObjectType, Oid};

use super::{GitError, Repo, op};

impl Repo {
    /// Set back the paths a fast-forward from `HEAD` to `to`, cut short in this checkout,
    /// left (see the module's documentation), so that the checkout is clean and the
    /// merge can be made again. The paths set back, in git's order; empty when `HEAD` is
    /// not an ancestor of `to` or nothing was left half done.
    ///
    /// # Errors
    /// When `HEAD` or `to` cannot be read, or the paths cannot be set back.
    pub fn undo_cut_short_fast_forward(&self, to: Oid) -> Result<Vec<String>, GitError> {
        let Some(head) = self.head_commit()? else {
            return Ok(Vec::new());
        };
        let leads_to = head != to
            && self
                .inner
                .graph_descendant_of(to, head)
                .map_err(op("compare two commits"))?;
        if !leads_to {
            return Ok(Vec::new());
        }
        let tree_of = |id: Oid| {
            self.inner
                .find_commit(id)
                .and_then(|commit| commit.tree())
                .map_err(op("read a commit's tree"))
        };
        let (old, new) = (tree_of(head)?, tree_of(to)?);
        let diff = self
            .inner
            .diff_tree_to_tree(Some(&old), Some(&new), None)
            .map_err(op("compare two commits"))?;
        let index = self.inner.index().map_err(op("read the index"))?;
        let odb = self.inner.odb().map_err(op("open the object database"))?;
        let mut left = Vec::new();
        for delta in diff.deltas() {
            let (before, after) = (delta.old_file(), delta.new_file());
            let Some(path) = after.path().or_else(|| before.path()) else {
                continue;
            };
            let staged = index.get_path(path, 0).map(|entry| entry.id);
            let index_holds_either = staged == version(&before) || staged == version(&after);
            let in_the_checkout = inside_real_directories(&self.root, path);
            let size = if after.exists() {
                odb.read_header(after.id()).map_or(0, |(size, _)| size)
            } else {
                0
            };
            let found = Found::at(&self.root.join(path), &after, size);
            if index_holds_either && in_the_checkout && found.is_left_by_git(delta.status()) {
                left.push((path.to_path_buf(), delta.status()));
            }
        }
        if left.is_empty() {
            return Ok(Vec::new());
        }
        let paths: Vec<&Path> = left.iter().map(|(path, _)| path.as_path()).collect();
        let head_object = self
            .inner
            .find_object(head, None)
            .map_err(op("read HEAD"))?;
        self.inner
            .reset_default(Some(&head_object), paths.iter().copied())
            .map_err(op("set the index back to HEAD"))?;
        for (path, status) in &left {
            if *status == Delta::Added {
                let file = self.root.join(path);
                std::fs::remove_file(&file)
                    .map_err(|source| GitError::SetBack { path: file, source })?;
            }
        }
        let mut checkout = CheckoutBuilder::new();
        checkout.force().disable_pathspec_match(true);
        for (path, status) in &left {
            if *status != Delta::Added {
                checkout.path(path);
            }
        }
        if left.iter().any(|(_, status)| *status != Delta::Added) {
            self.inner
                .checkout_head(Some(&mut checkout))
                .map_err(op("write HEAD's files back"))?;
        }
        Ok(left
            .into_iter()
            .map(|(path, _)| path.to_string_lossy().into_owned())
            .collect())
    }
}

/// Whether every directory above `path` in the checkout at `root` is a directory of its
/// own, not a link: a file reached through a link lies outside the checkout, and is
/// never touched.
fn inside_real_directories(root: &Path, path: &Path) -> bool {
    path.parent().is_none_or(|parent| {
        parent
            .ancestors()
            .filter(|dir| !dir.as_os_str().is_empty())
            .all(|dir| {
                std::fs::symlink_metadata(root.join(dir))
                    .is_ok_and(|meta| meta.file_type().is_dir())
            })
    })
}

/// The blob a side of a diff holds, `None` where the path is absent on that side.
fn version(file: &DiffFile<'_>) -> Option<Oid> {
    file.exists().then(|| file.id())
}

/// What the working tree holds at a path the fast-forward writes or deletes.
enum Found {
    /// No file.
    Absent,
    /// An empty regular file where the merge's is not empty.
    Empty,
    /// Exactly the merge's version: its blob, with its mode.
    Merges,
    /// Anything else: the user's.
    Other,
}

impl Found {
    /// What `file` holds, against `side`, the merge's side of the diff, whose blob is
    /// `size` bytes.
    fn at(file: &Path, side: &DiffFile<'_>, size: usize) -> Found {
        let Ok(meta) = std::fs::symlink_metadata(file) else {
            return Found::Absent;
        };
        if !side.exists() {
            return Found::Other;
        }
        let mode = side.mode();
        let hashed = if mode == FileMode::Link && meta.file_type().is_symlink() {
            std::fs::read_link(file).ok().and_then(|target| {
                Oid::hash_object(ObjectType::Blob, target.as_os_str().as_bytes()).ok()
            })
        } else if matches!(mode, FileMode::Blob | FileMode::BlobExecutable) && meta.is_file() {
            if meta.len() == 0 && size > 0 {
                return Found::Empty;
            }
            let executable = meta.permissions().mode() & 0o111 != 0;
            if executable == (mode == FileMode::BlobExecutable) {
                Oid::hash_file(ObjectType::Blob, file).ok()
            } else {
                None
            }
        } else {
            None
        };
        if hashed == Some(side.id()) {
            Found::Merges
        } else {
            Found::Other
        }
    }

    /// Whether this is what git leaves of a change of `status` it was killed making:
    /// the merge's version; for a file it adds or changes, the empty file it had
    /// created and not yet written; for a file it changes or deletes, nothing (git
    /// removes the old file before it writes the new one).
    fn is_left_by_git(&self, status: Delta) -> bool {
        matches!(
            (status, self),
            (Delta::Added, Found::Merges | Found::Empty)
                | (
                    Delta::Modified,
                    Found::Merges | Found::Empty | Found::Absent
                )
                | (Delta::Deleted, Found::Absent)
        )
    }
}

#[cfg(test)]
#[path = "cut_short_tests.rs"]
mod tests;
