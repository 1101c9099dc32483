//! Making, parking, taking up and removing the worktrees phases run in, and listing what
//! runs left behind.

use std::path::{Path, PathBuf};

use crate::git::{GitCli, GitCommandError};

use super::{BRANCH_PREFIX, WORKTREES_DIR, Worktree};

/// Make (or, when a resumed run left it, reuse) `worktree` with its branch started from
/// `run_branch` (never from whatever the user's checkout is on now). True when it was
/// made now.
///
/// # Errors
/// When git cannot add the worktree.
pub async fn ensure(
    git: &GitCli,
    root: &Path,
    worktree: &Worktree,
    run_branch: &str,
) -> Result<bool, GitCommandError> {
    if worktree.path.join(".git").exists() && !unfinished(git, root, &worktree.path).await {
        return Ok(false);
    }
    forget_stale(git, root, &worktree.path).await;
    let path = worktree.path.to_string_lossy();
    let start = format!("refs/heads/{run_branch}");
    match git
        .run(
            root,
            &[
                "worktree",
                "add",
                "-q",
                "-b",
                &worktree.branch,
                &path,
                &start,
            ],
        )
        .await
    {
        Ok(_) => Ok(true),
        // The branch outlived its worktree (removed by hand, or a checkout that failed
        // half way: git keeps the branch it made): its work goes on there. When that
        // fails too, git's words for it say why; "the branch exists" would not.
        Err(_) if branch_exists(git, root, &worktree.branch).await => {
            let _ = git.run(root, &["worktree", "prune"]).await;
            git.run(root, &["worktree", "add", "-q", &path, &worktree.branch])
                .await?;
            Ok(true)
        }
        Err(err) => Err(err),
    }
}

/// Make (or reuse) the worktree at `path` the run merges in, detached at `tip`. Reused,
/// it is reset to that: a merge a killed debussy left there is abandoned first, and a
/// place that cannot be reset (a lock a killed git left) is made anew. It holds nothing
/// of anyone's: it is debussy's own scratch.
///
/// # Errors
/// When git cannot add it.
pub async fn ensure_merge_place(
    git: &GitCli,
    root: &Path,
    path: &Path,
    tip: &str,
) -> Result<(), GitCommandError> {
    if path.join(".git").exists() && !unfinished(git, root, path).await {
        super::abort_merge(git, path).await;
        let reset = match git
            .run(path, &["checkout", "-q", "-f", "--detach", tip])
            .await
        {
            Ok(_) => git
                .run(path, &["clean", "-q", "-f", "-d"])
                .await
                .map(|_| ()),
            Err(err) => Err(err),
        };
        if reset.is_ok() {
            return Ok(());
        }
        let _ = remove_dir(git, root, path).await;
    }
    forget_stale(git, root, path).await;
    git.run(
        root,
        &[
            "worktree",
            "add",
            "-q",
            "--detach",
            &path.to_string_lossy(),
            tip,
        ],
    )
    .await?;
    Ok(())
}

/// Whether the directory at `path`, which has a `.git`, is what a `git worktree add` or
/// `git worktree move` stopped half way leaves: git has no worktree on record there
/// (a move killed before it rewrote the record), or has one it is still making (`locked
/// initializing`). No session ever ran in such a directory: a phase's session starts
/// once its worktree is made. An unfinished one is removed, record and all, so that it
/// is made anew; a worktree on record is left as it is.
async fn unfinished(git: &GitCli, root: &Path, path: &Path) -> bool {
    let Ok(listed) = git.run(root, &["worktree", "list", "--porcelain"]).await else {
        return false;
    };
    let Ok(wanted) = std::fs::canonicalize(path) else {
        return true;
    };
    let record = listed.split("\n\n").find(|record| {
        record
            .lines()
            .filter_map(|line| line.strip_prefix("worktree "))
            .any(|listed| std::fs::canonicalize(listed).is_ok_and(|listed| listed == wanted))
    });
    match record {
        Some(record) if record.lines().any(|line| line == "locked initializing") => {
            let _ = remove_dir(git, root, path).await;
            true
        }
        Some(_) => false,
        None => true,
    }
}

/// A directory that is no worktree git keeps (no `.git`, or an unfinished one) is
/// removed, and git forgets it.
async fn forget_stale(git: &GitCli, root: &Path, path: &Path) {
    if path.exists() {
        let _ = std::fs::remove_dir_all(path);
        let _ = git.run(root, &["worktree", "prune"]).await;
    }
}

/// `git worktree remove` of the worktree at `path`, changes, untracked files and locks
/// and all.
async fn remove_dir(git: &GitCli, root: &Path, path: &Path) -> Result<(), GitCommandError> {
    git.run(
        root,
        &[
            "worktree",
            "remove",
            "--force",
            "--force",
            &path.to_string_lossy(),
        ],
    )
    .await
    .map(|_| ())
}

/// Remove `worktree` and its branch.
///
/// # Errors
/// When git refuses; the worktree or branch is then left for `debussy clean`.
pub async fn remove(git: &GitCli, root: &Path, worktree: &Worktree) -> Result<(), GitCommandError> {
    if worktree.path.exists() {
        remove_dir(git, root, &worktree.path).await?;
    } else {
        let _ = git.run(root, &["worktree", "prune"]).await;
    }
    if let Err(err) = git.run(root, &["branch", "-D", &worktree.branch]).await
        && branch_exists(git, root, &worktree.branch).await
    {
        return Err(err);
    }
    // The run's directory goes with its last worktree.
    if let Some(run_dir) = worktree.path.parent() {
        let _ = std::fs::remove_dir(run_dir);
    }
    Ok(())
}

/// Keep a merged phase's worktree for a later phase: detach it, delete the phase's
/// branch, and move it to `spare`. Only the files that differ are rewritten when it is
/// taken up again, where a new worktree writes every file of the project.
///
/// # Errors
/// When git refuses; the caller removes the worktree instead.
pub async fn park(
    git: &GitCli,
    root: &Path,
    worktree: &Worktree,
    spare: &Path,
) -> Result<(), GitCommandError> {
    git.run(&worktree.path, &["checkout", "-q", "--detach"])
        .await?;
    if let Err(err) = git.run(root, &["branch", "-D", &worktree.branch]).await
        && branch_exists(git, root, &worktree.branch).await
    {
        return Err(err);
    }
    git.run(
        root,
        &[
            "worktree",
            "move",
            &worktree.path.to_string_lossy(),
            &spare.to_string_lossy(),
        ],
    )
    .await?;
    Ok(())
}

/// Take up the parked worktree `spare` as `worktree`, on its new branch made from
/// `run_branch`. A parked worktree holds no untracked files (its phase's commits took
/// everything git does not ignore); ignored ones (build caches) stay, as in a
/// developer's own tree.
///
/// # Errors
/// When git refuses; the caller makes a new worktree instead.
pub async fn adopt(
    git: &GitCli,
    root: &Path,
    spare: &Path,
    worktree: &Worktree,
    run_branch: &str,
) -> Result<(), GitCommandError> {
    git.run(
        root,
        &[
            "worktree",
            "move",
            &spare.to_string_lossy(),
            &worktree.path.to_string_lossy(),
        ],
    )
    .await?;
    let start = format!("refs/heads/{run_branch}");
    git.run(
        &worktree.path,
        &["checkout", "-q", "-f", "-B", &worktree.branch, &start],
    )
    .await?;
    Ok(())
}

/// Remove the parked worktrees at `paths` (they have no branch and nothing that is not
/// committed): their directories, then git's record of them, at once.
///
/// # Errors
/// When a directory cannot be removed or git cannot forget them.
pub async fn remove_parked(
    git: &GitCli,
    root: &Path,
    paths: &[PathBuf],
) -> Result<(), GitCommandError> {
    for path in paths {
        std::fs::remove_dir_all(path).map_err(|err| GitCommandError {
            command: "worktree remove".into(),
            message: format!("cannot remove {}: {err}", path.display()),
        })?;
        if let Some(run_dir) = path.parent() {
            let _ = std::fs::remove_dir(run_dir);
        }
    }
    git.run(root, &["worktree", "prune"]).await?;
    Ok(())
}

/// Whether `branch` exists.
pub async fn branch_exists(git: &GitCli, root: &Path, branch: &str) -> bool {
    git.succeeds(
        root,
        &[
            "rev-parse",
            "--verify",
            "--quiet",
            &format!("refs/heads/{branch}"),
        ],
    )
    .await
}

/// The worktrees under `.debussy/worktrees/` git knows of, and the `debussy/…` branches.
///
/// # Errors
/// When git cannot list them.
pub async fn leftovers(
    git: &GitCli,
    root: &Path,
) -> Result<(Vec<PathBuf>, Vec<String>), GitCommandError> {
    let _ = git.run(root, &["worktree", "prune"]).await;
    let dir = root.join(WORKTREES_DIR);
    let dir = dir.canonicalize().unwrap_or(dir);
    let worktrees = git
        .run(root, &["worktree", "list", "--porcelain"])
        .await?
        .lines()
        .filter_map(|line| line.strip_prefix("worktree "))
        .map(PathBuf::from)
        .filter(|path| path.starts_with(&dir))
        .collect();
    let branches = git
        .run(
            root,
            &[
                "for-each-ref",
                "--format=%(refname:short)",
                &format!("refs/heads/{BRANCH_PREFIX}"),
            ],
        )
        .await?
        .lines()
        .map(str::to_owned)
        .collect();
    Ok((worktrees, branches))
}
