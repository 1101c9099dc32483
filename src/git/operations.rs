//! A repository's working trees, the main one and the linked ones, as a branch debussy
//! merges into sees them: which tree has the branch checked out (its files must follow
//! the branch), and the git operation under way in any of them on the branch (a merge
//! with conflicts, a rebase stopped at a commit, a `git am`…). An operation sets the
//! branch it works on when it ends (a rebase to its result, and `git rebase --abort`
//! back to where it began), whatever moved the branch meanwhile: a commit debussy
//! delivered into the branch then breaks the rebase's end, or the abort drops it.

use std::path::{Path, PathBuf};

use git2::Repository;

use super::{GitError, Repo, op};
use crate::files::read_text_limited;

/// The most a one-line file of git's administrative directory may hold.
const SMALL_FILE: u64 = 64 * 1024;

/// An operation under way on a branch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BranchOperation {
    /// The working tree it is under way in.
    pub tree: PathBuf,
    /// What it is, e.g. `a rebase`.
    pub operation: &'static str,
    /// How to finish or abort it.
    pub finish: &'static str,
}

impl Repo {
    /// The operation under way on `branch` in any working tree of this repository (the
    /// main one or a linked one): in the tree that has the branch checked out, or in the
    /// one rebasing it (with `HEAD` detached meanwhile).
    ///
    /// # Errors
    /// When the repository's worktrees cannot be listed.
    pub fn operation_on(&self, branch: &str) -> Result<Option<BranchOperation>, GitError> {
        let reference = format!("refs/heads/{branch}");
        for (tree, repo) in opened_trees(&self.inner)? {
            if !has_checked_out(&repo, &reference)
                && rebased_branch(repo.path()).as_deref() != Some(reference.as_str())
            {
                continue;
            }
            if let Some((operation, finish)) = under_way(&repo) {
                return Ok(Some(BranchOperation {
                    tree,
                    operation,
                    finish,
                }));
            }
        }
        Ok(None)
    }

    /// The working tree of this repository, the main one or a linked one, that has
    /// `branch` checked out (git lets one at most): where a commit onto the branch must
    /// bring its files, or they read there as the reverse of the commit, staged for the
    /// next `git commit` to undo.
    ///
    /// # Errors
    /// When the repository's worktrees cannot be listed.
    pub fn checkout_of(&self, branch: &str) -> Result<Option<PathBuf>, GitError> {
        let reference = format!("refs/heads/{branch}");
        Ok(opened_trees(&self.inner)?
            .into_iter()
            .find(|(_, repo)| has_checked_out(repo, &reference))
            .map(|(tree, _)| tree))
    }

    /// The working trees of this repository that are on a branch, the main one and the
    /// linked ones, except those below `except` (where debussy keeps the phases' own).
    ///
    /// # Errors
    /// When the repository's worktrees cannot be listed.
    pub fn checkouts(&self, except: &Path) -> Result<Vec<Repo>, GitError> {
        let except = except
            .canonicalize()
            .unwrap_or_else(|_| except.to_path_buf());
        Ok(opened_trees(&self.inner)?
            .into_iter()
            .filter(|(tree, repo)| {
                !tree.starts_with(&except) && !repo.head_detached().unwrap_or(true)
            })
            .map(|(root, inner)| Repo { inner, root })
            .collect())
    }
}

/// Whether `HEAD` in `repo` is the branch `reference` (`refs/heads/…`).
fn has_checked_out(repo: &Repository, reference: &str) -> bool {
    repo.find_reference("HEAD")
        .ok()
        .and_then(|head| head.symbolic_target().ok().flatten().map(str::to_owned))
        .is_some_and(|target| target == reference)
}

/// [`trees`], each opened; those that cannot be opened (a linked worktree whose
/// directory is gone) are left out. Paths carry no trailing `/`.
fn opened_trees(repo: &Repository) -> Result<Vec<(PathBuf, Repository)>, GitError> {
    Ok(trees(repo)?
        .into_iter()
        .filter_map(|tree| {
            let repo = Repository::open(&tree).ok()?;
            Some((tree.components().collect(), repo))
        })
        .collect())
}

/// Every working tree of the repository `repo` belongs to: the main one (unless the
/// repository is bare), then the linked ones.
fn trees(repo: &Repository) -> Result<Vec<PathBuf>, GitError> {
    let main = Repository::open(repo.commondir()).map_err(op("open the main repository"))?;
    let mut trees: Vec<PathBuf> = main.workdir().map(Path::to_path_buf).into_iter().collect();
    let names = main.worktrees().map_err(op("list the worktrees"))?;
    for name in names.iter().flatten().flatten() {
        if let Ok(worktree) = main.find_worktree(name) {
            trees.push(worktree.path().to_path_buf());
        }
    }
    Ok(trees)
}

/// The branch a rebase (or `git am`) under way in the working tree whose git directory
/// is `admin` will set when it ends: `refs/heads/…`.
fn rebased_branch(admin: &Path) -> Option<String> {
    ["rebase-merge", "rebase-apply"].iter().find_map(|dir| {
        let name = read_text_limited(&admin.join(dir).join("head-name"), SMALL_FILE).ok()?;
        Some(name.trim_end().to_owned())
    })
}

/// The operation left half done in `repo`, as `(what, how to finish or abort it)`.
pub(super) fn under_way(repo: &Repository) -> Option<(&'static str, &'static str)> {
    use git2::RepositoryState as State;
    match repo.state() {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::test_git::git;

    /// A repository on `main` with two commits, and `side` one commit back.
    fn repository(dir: &Path) -> Repo {
        git(dir, &["init", "-q", "-b", "main"]);
        for (key, value) in [("user.name", "T"), ("user.email", "t@example.com")] {
            git(dir, &["config", key, value]);
        }
        for text in ["one", "two"] {
            std::fs::write(dir.join("a.txt"), text).expect("write");
            git(dir, &["add", "a.txt"]);
            git(dir, &["commit", "-qm", text]);
        }
        git(dir, &["branch", "side", "HEAD~1"]);
        Repo::discover(dir).expect("discover")
    }

    #[test]
    fn a_rebase_stopped_midway_is_under_way_on_the_branch_it_rebases() {
        let dir = tempfile::tempdir().expect("tempdir");
        let repo = repository(dir.path());
        assert_eq!(repo.operation_on("main").expect("look"), None);

        let stopped = std::process::Command::new("git")
            .args(["rebase", "-q", "-i", "HEAD~1"])
            .current_dir(dir.path())
            .env("GIT_SEQUENCE_EDITOR", "sed -i 1s/^pick/edit/")
            .output()
            .expect("git");
        assert!(stopped.status.success(), "{stopped:?}");
        let under_way = repo.operation_on("main").expect("look").expect("a rebase");
        assert_eq!(under_way.operation, "a rebase");
        assert_eq!(under_way.tree, dir.path().canonicalize().expect("path"));
        assert_eq!(repo.operation_on("side").expect("look"), None);

        git(dir.path(), &["rebase", "--abort"]);
        assert_eq!(repo.operation_on("main").expect("look"), None);
    }

    #[test]
    fn a_fifo_where_a_rebase_names_its_branch_is_no_rebase_and_no_hang() {
        let dir = tempfile::tempdir().expect("tempdir");
        repository(dir.path());
        git(dir.path(), &["switch", "-q", "side"]);
        let state = dir.path().join(".git/rebase-merge");
        std::fs::create_dir(&state).expect("mkdir");
        nix::unistd::mkfifo(&state.join("head-name"), nix::sys::stat::Mode::S_IRWXU)
            .expect("mkfifo");
        let root = dir.path().to_path_buf();
        let (sender, answer) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let repo = Repo::discover(&root).expect("discover");
            let _ = sender.send(repo.operation_on("main").expect("look"));
        });
        let under_way = answer
            .recv_timeout(std::time::Duration::from_secs(10))
            .expect("answered without waiting for a writer");
        assert_eq!(under_way, None);
    }

    #[test]
    fn a_merge_left_in_a_linked_worktree_is_under_way_on_its_branch() {
        let dir = tempfile::tempdir().expect("tempdir");
        let repo = repository(dir.path());
        let linked = dir.path().join("linked");
        git(
            dir.path(),
            &[
                "worktree",
                "add",
                "-q",
                linked.to_str().expect("utf-8"),
                "side",
            ],
        );
        std::fs::write(linked.join("a.txt"), "three").expect("write");
        git(&linked, &["commit", "-qam", "three"]);
        let merged = std::process::Command::new("git")
            .args(["merge", "-q", "main"])
            .current_dir(&linked)
            .output()
            .expect("git");
        assert!(!merged.status.success(), "the merge conflicts");

        let under_way = repo.operation_on("side").expect("look").expect("a merge");
        assert_eq!(under_way.operation, "a merge");
        assert_eq!(under_way.tree, linked.canonicalize().expect("path"));
        assert_eq!(repo.operation_on("main").expect("look"), None);
    }
}
