//! Work left inside a repository's submodules. A commit of the project (`git add -A`)
//! records a submodule as the commit it is at, never the files changed in its own work
//! tree: edits an agent made there, and left uncommitted, are in no commit debussy makes.

use git2::{Repository, StatusOptions, SubmoduleIgnore, SubmoduleStatus};

use super::{GitError, Repo, op};

/// A submodule whose work tree has changes to its tracked files that are not committed
/// there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UncommittedSubmodule {
    /// Its path in the project's work tree.
    pub path: String,
    /// The files changed, from the submodule's root, in git's order.
    pub files: Vec<String>,
}

impl Repo {
    /// The submodules whose tracked files were changed and not committed there
    /// (untracked files in them, such as build output, are left out).
    ///
    /// # Errors
    /// When the submodules cannot be listed.
    pub fn uncommitted_submodules(&self) -> Result<Vec<UncommittedSubmodule>, GitError> {
        let submodules = self.inner.submodules().map_err(op("list the submodules"))?;
        let mut changed = Vec::new();
        for submodule in submodules {
            let Some(path) = submodule.path().to_str().map(str::to_owned) else {
                continue;
            };
            let Ok(status) = self.inner.submodule_status(
                submodule.name().unwrap_or(&path),
                SubmoduleIgnore::Untracked,
            ) else {
                continue;
            };
            let edited = SubmoduleStatus::WD_INDEX_MODIFIED | SubmoduleStatus::WD_WD_MODIFIED;
            if !status.intersects(edited) {
                continue;
            }
            let Ok(inner) = submodule.open() else {
                continue;
            };
            changed.push(UncommittedSubmodule {
                files: changed_files(&inner),
                path,
            });
        }
        Ok(changed)
    }
}

/// The tracked files changed (staged or not) in `repo`'s work tree.
fn changed_files(repo: &Repository) -> Vec<String> {
    let mut options = StatusOptions::new();
    options.include_untracked(false).include_ignored(false);
    let Ok(statuses) = repo.statuses(Some(&mut options)) else {
        return Vec::new();
    };
    statuses
        .iter()
        .filter(|entry| !entry.status().is_empty())
        .filter_map(|entry| entry.path().ok().map(str::to_owned))
        .collect()
}
