//! The conflicts of a merge in progress, as git's index holds them: which paths are still
//! unmerged and what kind of conflict each is. A conflict is resolved when its path has no
//! unmerged entry left, never because a file has no markers: binary files, deletions,
//! renames and submodules leave no markers at all.

use git2::IndexConflict;

use super::{GitError, Repo, op};

/// What kind of conflict a path has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConflictKind {
    /// Both sides changed the lines of a text file: git wrote markers into it, and a file
    /// with the markers gone (edited by hand) settles it.
    Text,
    /// Both sides changed a binary file: there are no markers, one version (or a new one)
    /// has to be chosen and staged.
    Binary,
    /// One side changed or added the path, the other deleted or renamed it.
    DeletedOnOneSide,
    /// A submodule's commit differs on the two sides.
    Submodule,
    /// The two sides made different kinds of thing of it (a file and a symlink).
    TypeChanged,
}

impl ConflictKind {
    /// Whether a file edited until it holds no markers settles the conflict; every other
    /// kind must be settled in the index (`git add`, `git rm`) by whoever resolves it.
    #[must_use]
    pub fn settled_by_editing(self) -> bool {
        self == ConflictKind::Text
    }
}

impl std::fmt::Display for ConflictKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ConflictKind::Text => "conflicting edits",
            ConflictKind::Binary => "a binary file changed on both sides",
            ConflictKind::DeletedOnOneSide => {
                "changed on one side, deleted or renamed on the other"
            }
            ConflictKind::Submodule => "a submodule at different commits",
            ConflictKind::TypeChanged => "a different kind of file on each side",
        })
    }
}

/// One unmerged path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflict {
    /// Its path, relative to the work tree.
    pub path: String,
    /// What kind of conflict it is.
    pub kind: ConflictKind,
}

/// Mode of a submodule (a gitlink) in the index.
const GITLINK: u32 = 0o160_000;
/// The file-type bits of an index mode.
const TYPE_BITS: u32 = 0o170_000;

impl Repo {
    /// The paths the index holds as unmerged, with their kind; empty when nothing is in
    /// conflict (or no merge is under way).
    ///
    /// # Errors
    /// When the index cannot be read.
    pub fn conflicts(&self) -> Result<Vec<Conflict>, GitError> {
        let mut index = self.inner.index().map_err(op("read the index"))?;
        // As git left it on disk, not as this handle last read it.
        index.read(false).map_err(op("read the index"))?;
        if !index.has_conflicts() {
            return Ok(Vec::new());
        }
        let mut conflicts = Vec::new();
        for conflict in index.conflicts().map_err(op("read the conflicts"))? {
            let conflict = conflict.map_err(op("read the conflicts"))?;
            let Some(path) = conflict_path(&conflict) else {
                continue;
            };
            conflicts.push(Conflict {
                path,
                kind: self.kind_of(&conflict),
            });
        }
        conflicts.sort_by(|a, b| a.path.cmp(&b.path));
        conflicts.dedup_by(|a, b| a.path == b.path);
        Ok(conflicts)
    }

    fn kind_of(&self, conflict: &IndexConflict) -> ConflictKind {
        let sides = [&conflict.ancestor, &conflict.our, &conflict.their];
        if sides
            .into_iter()
            .flatten()
            .any(|entry| entry.mode == GITLINK)
        {
            return ConflictKind::Submodule;
        }
        let (Some(our), Some(their)) = (&conflict.our, &conflict.their) else {
            return ConflictKind::DeletedOnOneSide;
        };
        if our.mode & TYPE_BITS != their.mode & TYPE_BITS {
            return ConflictKind::TypeChanged;
        }
        let binary = [our, their].iter().any(|entry| {
            self.inner
                .find_blob(entry.id)
                .map_or(true, |blob| blob.is_binary())
        });
        if binary {
            ConflictKind::Binary
        } else {
            ConflictKind::Text
        }
    }
}

/// The path a conflict is about, from whichever side has it.
fn conflict_path(conflict: &IndexConflict) -> Option<String> {
    [&conflict.our, &conflict.their, &conflict.ancestor]
        .into_iter()
        .flatten()
        .next()
        .map(|entry| String::from_utf8_lossy(&entry.path).into_owned())
}
