//! [`Repo`]: the repository around the project, where `HEAD` points, and whether a
//! merge, rebase or similar is under way.

use std::path::{Path, PathBuf};

use git2::{Oid, Repository};

use super::{GitError, op};

/// What to do about a repository libgit2 cannot open.
const UNSUPPORTED_REPOSITORY: &str = "libgit2, which debussy commits with, cannot open this repository (a SHA-256 repository is one it cannot open yet); run with --no-auto-commit to work without debussy's commits";
/// What to do about an index libgit2 cannot read.
const UNSUPPORTED_INDEX: &str = "a split index (`core.splitIndex`) is one libgit2, which debussy commits with, cannot read: join it with `git config core.splitIndex false && git update-index --no-split-index`, or run with --no-auto-commit";

/// Why libgit2 could not open a repository searched for from `path`.
fn not_opened(path: &Path, err: &git2::Error) -> GitError {
    let path = path.to_path_buf();
    match err.code() {
        git2::ErrorCode::NotFound => GitError::NotARepository { path },
        git2::ErrorCode::Owner => GitError::NotOwned {
            path: owned_path(err.message()).unwrap_or(path),
        },
        _ => GitError::Unsupported {
            path,
            reason: err.message().to_owned(),
            help: UNSUPPORTED_REPOSITORY,
        },
    }
}

/// The repository named in libgit2's "repository path '…' is not owned by current user":
/// the directory `safe.directory` must name, which may be above the one searched from.
fn owned_path(message: &str) -> Option<PathBuf> {
    let (_, rest) = message.split_once('\'')?;
    let (path, _) = rest.rsplit_once('\'')?;
    Some(PathBuf::from(path))
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

/// A repository with a working tree.
pub struct Repo {
    pub(super) inner: Repository,
    pub(super) root: PathBuf,
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
    /// [`GitError::NotARepository`] when there is none, [`GitError::NotOwned`] when it is
    /// another user's and not trusted, [`GitError::Unsupported`] when libgit2 cannot open
    /// it, [`GitError::Bare`] without a work tree.
    pub fn discover(path: &Path) -> Result<Repo, GitError> {
        let inner = Repository::discover(path).map_err(|err| not_opened(path, &err))?;
        let root = inner
            .workdir()
            .ok_or_else(|| GitError::Bare {
                path: inner.path().to_path_buf(),
            })?
            .to_path_buf();
        // A linked worktree whose record in the repository is empty (a `git worktree
        // move` killed while rewriting it) opens with the process's own directory as
        // its working tree: committing there would take the wrong files.
        if !root.is_absolute() {
            return Err(GitError::LostWorktree {
                path: path.to_path_buf(),
                record: inner.path().join("gitdir"),
            });
        }
        Ok(Repo { inner, root })
    }

    /// Check that libgit2 can read the index: it cannot read a split one
    /// (`core.splitIndex`), which git can.
    ///
    /// # Errors
    /// [`GitError::Unsupported`] saying how to join the index.
    pub fn check_index(&self) -> Result<(), GitError> {
        self.inner
            .index()
            .map(|_| ())
            .map_err(|err| GitError::Unsupported {
                // libgit2's working tree ends in a `/`, which the message does not want.
                path: self.root.components().collect(),
                reason: format!("its index: {}", err.message()),
                help: UNSUPPORTED_INDEX,
            })
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
        super::operations::under_way(&self.inner)
    }

    /// Check that no git operation is half done in this working tree.
    ///
    /// # Errors
    /// [`GitError::OperationUnderWay`], naming it and the tree.
    pub fn check_no_operation(&self) -> Result<(), GitError> {
        match self.operation_in_progress() {
            Some((operation, finish)) => Err(GitError::OperationUnderWay {
                operation,
                finish,
                tree: self.root.components().collect(),
            }),
            None => Ok(()),
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

    /// Check that a commit made now lands on `branch`, the one a run commits on: the
    /// checkout is still on it, and no merge, rebase or similar is half done there.
    /// Someone who switched the checkout mid-run (or an agent that did) would otherwise
    /// find the run's work committed on their branch, or on none.
    ///
    /// # Errors
    /// [`GitError::OperationUnderWay`], [`GitError::OffBranch`] or
    /// [`GitError::BranchGone`]; when `HEAD` cannot be read.
    pub fn check_commits_on(&self, branch: &str) -> Result<(), GitError> {
        self.check_no_operation()?;
        let now = match self.head()? {
            HeadState::Unborn { branch: name } | HeadState::Branch { name, .. } => {
                if name == branch {
                    return Ok(());
                }
                if self.tip(&format!("refs/heads/{branch}"))?.is_none() {
                    return Err(GitError::BranchGone {
                        expected: branch.to_owned(),
                        now: name,
                    });
                }
                format!("is on {name}")
            }
            HeadState::Detached { commit } => {
                format!("has HEAD detached at {}", super::short_id(commit))
            }
        };
        Err(GitError::OffBranch {
            expected: branch.to_owned(),
            now,
        })
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

    /// The commit `reference` (e.g. `refs/heads/main`) points at; `None` when it does
    /// not exist.
    ///
    /// # Errors
    /// When the reference exists but cannot be read.
    pub fn tip(&self, reference: &str) -> Result<Option<Oid>, GitError> {
        match self.inner.refname_to_id(reference) {
            Ok(id) => Ok(Some(id)),
            Err(err) if err.code() == git2::ErrorCode::NotFound => Ok(None),
            Err(err) => Err(op("read a reference")(err)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// libgit2's refusal of another user's repository (seen from a repository `chown`ed to
    /// `nobody`) names the directory git's `safe.directory` wants, which may be above the
    /// one debussy searched from.
    #[test]
    fn another_users_repository_is_named_with_the_directory_to_trust() {
        let refusal = git2::Error::new(
            git2::ErrorCode::Owner,
            git2::ErrorClass::Config,
            "repository path '/srv/project' is not owned by current user",
        );
        let err = not_opened(Path::new("/srv/project/src"), &refusal);
        let GitError::NotOwned { path } = &err else {
            panic!("{err:?}");
        };
        assert_eq!(path, Path::new("/srv/project"));
        let help = miette::Diagnostic::help(&err).expect("help").to_string();
        assert!(
            help.contains("git config --global --add safe.directory /srv/project"),
            "{help}"
        );
        let missing = git2::Error::new(
            git2::ErrorCode::NotFound,
            git2::ErrorClass::Repository,
            "could not find repository",
        );
        assert!(matches!(
            not_opened(Path::new("/srv"), &missing),
            GitError::NotARepository { .. }
        ));
    }
}
