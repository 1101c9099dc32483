//! The git worktrees and branches phases run in when they run side by side (`jobs` > 1),
//! and the merges that bring their work back to the run's branch.
//!
//! These are git's own commands (`git worktree`, `git merge`, `git commit`), run on
//! blocking threads: the merges, their hooks and their conflicts are exactly the ones the
//! user gets finishing a merge by hand with the commands debussy prints.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Where the worktrees of runs live, relative to the project root.
pub const WORKTREES_DIR: &str = ".debussy/worktrees";
/// The prefix of the branches phases run on.
pub const BRANCH_PREFIX: &str = "debussy/";

/// A phase's worktree and branch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Worktree {
    /// The worktree's directory: `.debussy/worktrees/<run>/<phase>`.
    pub path: PathBuf,
    /// Its branch: `debussy/<run-id>/phase-<id>`.
    pub branch: String,
}

impl Worktree {
    /// The worktree and branch of `phase_id` in `run_id`.
    #[must_use]
    pub fn of(root: &Path, run_id: &str, phase_id: &str) -> Worktree {
        Worktree {
            path: root.join(WORKTREES_DIR).join(run_id).join(phase_id),
            branch: format!("{BRANCH_PREFIX}{run_id}/phase-{phase_id}"),
        }
    }
}

/// A git command that failed, in git's words.
#[derive(Debug, Clone, thiserror::Error, miette::Diagnostic)]
#[error("`git {command}` failed: {message}")]
pub struct GitCommandError {
    /// The command, without `git`.
    pub command: String,
    /// What git printed (or why it could not run).
    pub message: String,
}

/// How merging a phase's branch into the run's branch went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MergeOutcome {
    /// Merged; `fast_forward` when no merge commit was needed.
    Merged {
        /// The run branch's new tip.
        commit: String,
        /// Whether the branch was fast-forwarded.
        fast_forward: bool,
    },
    /// The branch brought nothing new (its phase changed nothing).
    UpToDate,
    /// Both sides changed the same lines of these files; the merge was aborted.
    Conflict(Vec<String>),
}

/// Run `git args…` in `dir`; its trimmed stdout, or git's error.
pub(crate) fn git(dir: &Path, args: &[&str]) -> Result<String, GitCommandError> {
    let output = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_EDITOR", "true")
        .env("LC_ALL", "C")
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|err| GitCommandError {
            command: args.join(" "),
            message: if err.kind() == std::io::ErrorKind::NotFound {
                "git is not installed or not on PATH; phases running side by side need it".into()
            } else {
                err.to_string()
            },
        })?;
    if output.status.success() {
        return Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned());
    }
    let mut message = String::from_utf8_lossy(&output.stderr).trim().to_owned();
    if message.is_empty() {
        message = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    }
    Err(GitCommandError {
        command: args.join(" "),
        message,
    })
}

/// `-c user.name=… -c user.email=…` when the repository has no identity, so commits are
/// made as debussy, as its own commits are.
fn identity(dir: &Path) -> Vec<&'static str> {
    if git(dir, &["config", "user.email"]).is_ok() || std::env::var_os("GIT_AUTHOR_EMAIL").is_some()
    {
        Vec::new()
    } else {
        vec![
            "-c",
            "user.name=debussy",
            "-c",
            "user.email=debussy@localhost",
        ]
    }
}

/// Make (or, when a resumed run left it, reuse) `worktree` with its branch started from
/// the run branch's current `HEAD`. True when it was made now.
///
/// # Errors
/// When git cannot add the worktree.
pub fn ensure(root: &Path, worktree: &Worktree) -> Result<bool, GitCommandError> {
    if worktree.path.join(".git").exists() {
        return Ok(false);
    }
    if worktree.path.exists() {
        // A directory without its `.git` is not a worktree any more: git forgets it.
        let _ = std::fs::remove_dir_all(&worktree.path);
        let _ = git(root, &["worktree", "prune"]);
    }
    let path = worktree.path.to_string_lossy();
    match git(
        root,
        &["worktree", "add", "-b", &worktree.branch, &path, "HEAD"],
    ) {
        Ok(_) => Ok(true),
        // The branch outlived its worktree (removed by hand): its work goes on there.
        Err(err) if branch_exists(root, &worktree.branch) => {
            let _ = git(root, &["worktree", "prune"]);
            git(root, &["worktree", "add", &path, &worktree.branch]).map_err(|_| err)?;
            Ok(true)
        }
        Err(err) => Err(err),
    }
}

/// Remove `worktree` and its branch.
///
/// # Errors
/// When git refuses; the worktree or branch is then left for `debussy clean`.
pub fn remove(root: &Path, worktree: &Worktree) -> Result<(), GitCommandError> {
    if worktree.path.exists() {
        git(
            root,
            &[
                "worktree",
                "remove",
                "--force",
                "--force",
                &worktree.path.to_string_lossy(),
            ],
        )?;
    } else {
        let _ = git(root, &["worktree", "prune"]);
    }
    if let Err(err) = git(root, &["branch", "-D", &worktree.branch])
        && branch_exists(root, &worktree.branch)
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
pub fn park(root: &Path, worktree: &Worktree, spare: &Path) -> Result<(), GitCommandError> {
    git(&worktree.path, &["checkout", "-q", "--detach"])?;
    if let Err(err) = git(root, &["branch", "-D", &worktree.branch])
        && branch_exists(root, &worktree.branch)
    {
        return Err(err);
    }
    git(
        root,
        &[
            "worktree",
            "move",
            &worktree.path.to_string_lossy(),
            &spare.to_string_lossy(),
        ],
    )?;
    Ok(())
}

/// Take up the parked worktree `spare` as `worktree`, on its new branch made from
/// `run_branch`. A parked worktree holds no untracked files (its phase's commits took
/// everything git does not ignore); ignored ones (build caches) stay, as in a
/// developer's own tree.
///
/// # Errors
/// When git refuses; the caller makes a new worktree instead.
pub fn adopt(
    root: &Path,
    spare: &Path,
    worktree: &Worktree,
    run_branch: &str,
) -> Result<(), GitCommandError> {
    git(
        root,
        &[
            "worktree",
            "move",
            &spare.to_string_lossy(),
            &worktree.path.to_string_lossy(),
        ],
    )?;
    git(
        &worktree.path,
        &["checkout", "-q", "-f", "-B", &worktree.branch, run_branch],
    )?;
    Ok(())
}

/// Remove the parked worktrees at `paths` (they have no branch and nothing that is not
/// committed): their directories, then git's record of them, at once.
///
/// # Errors
/// When a directory cannot be removed or git cannot forget them.
pub fn remove_parked(root: &Path, paths: &[PathBuf]) -> Result<(), GitCommandError> {
    for path in paths {
        std::fs::remove_dir_all(path).map_err(|err| GitCommandError {
            command: "worktree remove".into(),
            message: format!("cannot remove {}: {err}", path.display()),
        })?;
        if let Some(run_dir) = path.parent() {
            let _ = std::fs::remove_dir(run_dir);
        }
    }
    git(root, &["worktree", "prune"])?;
    Ok(())
}

/// Merge `branch` into the branch checked out in `root` with `message` (a fast-forward
/// when possible). A conflict aborts the merge, leaving `root` as it was.
///
/// # Errors
/// When git fails for another reason than a conflict (the merge is aborted then too).
pub fn merge(
    root: &Path,
    branch: &str,
    message: &str,
    run_hooks: bool,
) -> Result<MergeOutcome, GitCommandError> {
    let mut args = identity(root);
    args.extend(["merge", "--no-edit", "-m", message]);
    if !run_hooks {
        args.push("--no-verify");
    }
    args.push(branch);
    match git(root, &args) {
        Ok(said)
            if said
                .lines()
                .any(|line| line.starts_with("Already up to date")) =>
        {
            Ok(MergeOutcome::UpToDate)
        }
        Ok(said) => Ok(MergeOutcome::Merged {
            fast_forward: said.lines().any(|line| line.starts_with("Fast-forward")),
            commit: git(root, &["rev-parse", "HEAD"])?,
        }),
        Err(err) => {
            let conflicted = conflicted_files(root);
            // Whatever went wrong, the run branch's tree is left as it was.
            let _ = git(root, &["merge", "--abort"]);
            if conflicted.is_empty() {
                Err(err)
            } else {
                Ok(MergeOutcome::Conflict(conflicted))
            }
        }
    }
}

/// Start merging `run_branch` into the worktree's branch, leaving conflicts in its files
/// for the agent to resolve. The conflicted files; empty when it merged cleanly.
///
/// # Errors
/// When git fails for another reason than a conflict.
pub fn merge_into_worktree(
    worktree: &Path,
    run_branch: &str,
    message: &str,
) -> Result<Vec<String>, GitCommandError> {
    let mut args = identity(worktree);
    args.extend([
        "merge",
        "--no-edit",
        "--no-verify",
        "-m",
        message,
        run_branch,
    ]);
    match git(worktree, &args) {
        Ok(_) => Ok(Vec::new()),
        Err(err) => {
            let conflicted = conflicted_files(worktree);
            if conflicted.is_empty() {
                let _ = git(worktree, &["merge", "--abort"]);
                Err(err)
            } else {
                Ok(conflicted)
            }
        }
    }
}

/// Files still holding conflict markers (`<<<<<<<`, `=======`, `>>>>>>>` lines) among
/// `files` in `dir`.
#[must_use]
pub fn files_with_markers(dir: &Path, files: &[String]) -> Vec<String> {
    files
        .iter()
        .filter(|file| {
            std::fs::read_to_string(dir.join(file)).is_ok_and(|text| {
                text.lines().any(|line| {
                    line.starts_with("<<<<<<< ")
                        || line.starts_with(">>>>>>> ")
                        || line == "<<<<<<<"
                        || line == ">>>>>>>"
                })
            })
        })
        .cloned()
        .collect()
}

/// Conclude the merge in progress in `worktree` with everything in its tree.
///
/// # Errors
/// When git refuses the commit.
pub fn conclude_merge(worktree: &Path, run_hooks: bool) -> Result<String, GitCommandError> {
    git(worktree, &["add", "-A"])?;
    let mut args = identity(worktree);
    args.extend(["commit", "--no-edit"]);
    if !run_hooks {
        args.push("--no-verify");
    }
    git(worktree, &args)?;
    git(worktree, &["rev-parse", "HEAD"])
}

/// Abandon the merge in progress in `worktree`, if any.
pub fn abort_merge(worktree: &Path) {
    if git(
        worktree,
        &["rev-parse", "--verify", "--quiet", "MERGE_HEAD"],
    )
    .is_ok()
    {
        let _ = git(worktree, &["merge", "--abort"]);
    }
}

/// Whether `branch`'s tip is already on the branch checked out in `root`.
#[must_use]
pub fn is_merged(root: &Path, branch: &str) -> bool {
    git(root, &["merge-base", "--is-ancestor", branch, "HEAD"]).is_ok()
}

/// Whether `branch` exists.
#[must_use]
pub fn branch_exists(root: &Path, branch: &str) -> bool {
    git(
        root,
        &[
            "rev-parse",
            "--verify",
            "--quiet",
            &format!("refs/heads/{branch}"),
        ],
    )
    .is_ok()
}

fn conflicted_files(dir: &Path) -> Vec<String> {
    git(dir, &["diff", "--name-only", "--diff-filter=U"])
        .map(|out| out.lines().map(str::to_owned).collect())
        .unwrap_or_default()
}

/// The worktrees under `.debussy/worktrees/` git knows of, and the `debussy/…` branches.
///
/// # Errors
/// When git cannot list them.
pub fn leftovers(root: &Path) -> Result<(Vec<PathBuf>, Vec<String>), GitCommandError> {
    let _ = git(root, &["worktree", "prune"]);
    let dir = root.join(WORKTREES_DIR);
    let dir = dir.canonicalize().unwrap_or(dir);
    let worktrees = git(root, &["worktree", "list", "--porcelain"])?
        .lines()
        .filter_map(|line| line.strip_prefix("worktree "))
        .map(PathBuf::from)
        .filter(|path| path.starts_with(&dir))
        .collect();
    let branches = git(
        root,
        &[
            "for-each-ref",
            "--format=%(refname:short)",
            &format!("refs/heads/{BRANCH_PREFIX}"),
        ],
    )?
    .lines()
    .map(str::to_owned)
    .collect();
    Ok((worktrees, branches))
}

/// The commands that finish a merge debussy could not, by hand.
#[must_use]
pub fn finish_by_hand(root: &Path, worktree: &Worktree, resume: &str) -> String {
    format!(
        "cd {root}\n  git merge {branch}\n  # resolve the conflicts, `git add` the files, then:\n  git commit --no-edit\n  git worktree remove {path}\n  git branch -d {branch}\n  {resume}",
        root = root.display(),
        branch = worktree.branch,
        path = worktree.path.display(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repo() -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        git(root, &["init", "-q", "-b", "main"]).expect("init");
        for (key, value) in [("user.name", "T"), ("user.email", "t@example.com")] {
            git(root, &["config", key, value]).expect("config");
        }
        std::fs::write(root.join("a.txt"), "one\ntwo\nthree\n").expect("write");
        git(root, &["add", "-A"]).expect("add");
        git(root, &["commit", "-qm", "base"]).expect("commit");
        dir
    }

    fn commit_in(dir: &Path, file: &str, text: &str) {
        std::fs::write(dir.join(file), text).expect("write");
        git(dir, &["add", "-A"]).expect("add");
        git(dir, &["commit", "-qm", file]).expect("commit");
    }

    #[test]
    fn a_phase_branch_fast_forwards_then_merges_then_conflicts() {
        let dir = repo();
        let root = dir.path();
        let first = Worktree::of(root, "r1", "2");
        let second = Worktree::of(root, "r1", "3");
        let third = Worktree::of(root, "r1", "4");
        for wt in [&first, &second, &third] {
            assert!(ensure(root, wt).expect("add"), "made now");
            assert!(!ensure(root, wt).expect("again"), "reused");
        }
        commit_in(&first.path, "b.txt", "b\n");
        commit_in(&second.path, "c.txt", "c\n");
        commit_in(&third.path, "a.txt", "one\nTWO\nthree\n");

        let ff = merge(root, &first.branch, "merge 2", true).expect("merge");
        assert!(
            matches!(
                ff,
                MergeOutcome::Merged {
                    fast_forward: true,
                    ..
                }
            ),
            "{ff:?}"
        );
        let merged = merge(root, &second.branch, "merge 3", true).expect("merge");
        assert!(
            matches!(
                merged,
                MergeOutcome::Merged {
                    fast_forward: false,
                    ..
                }
            ),
            "{merged:?}"
        );
        assert_eq!(
            git(root, &["log", "-1", "--format=%s"]).expect("log"),
            "merge 3"
        );
        assert!(root.join("b.txt").exists() && root.join("c.txt").exists());

        commit_in(root, "a.txt", "one\nzwei\nthree\n");
        let conflict = merge(root, &third.branch, "merge 4", true).expect("merge");
        assert_eq!(conflict, MergeOutcome::Conflict(vec!["a.txt".into()]));
        assert_eq!(
            std::fs::read_to_string(root.join("a.txt")).expect("read"),
            "one\nzwei\nthree\n",
            "the aborted merge leaves the run branch as it was"
        );

        let files = merge_into_worktree(&third.path, "main", "merge main").expect("start");
        assert_eq!(files, ["a.txt"]);
        assert_eq!(files_with_markers(&third.path, &files), ["a.txt"]);
        std::fs::write(third.path.join("a.txt"), "one\nzwei TWO\nthree\n").expect("resolve");
        assert!(files_with_markers(&third.path, &files).is_empty());
        conclude_merge(&third.path, true).expect("conclude");
        let merged = merge(root, &third.branch, "merge 4", true).expect("merge");
        assert!(matches!(merged, MergeOutcome::Merged { .. }), "{merged:?}");
        assert!(is_merged(root, &third.branch));

        // A parked worktree is taken up by the next phase on a new branch.
        let spare = root.join(WORKTREES_DIR).join("r1").join(".spare-1");
        park(root, &first, &spare).expect("park");
        assert!(!branch_exists(root, &first.branch) && !first.path.exists());
        let fifth = Worktree::of(root, "r1", "5");
        adopt(root, &spare, &fifth, "main").expect("adopt");
        assert_eq!(
            std::fs::read_to_string(fifth.path.join("a.txt")).expect("read"),
            "one\nzwei TWO\nthree\n",
            "the adopted worktree holds the run branch's files"
        );
        assert_eq!(
            git(&fifth.path, &["branch", "--show-current"]).expect("branch"),
            fifth.branch
        );
        let parked = root.join(WORKTREES_DIR).join("r1").join(".spare-2");
        park(root, &fifth, &parked).expect("park");
        remove_parked(root, &[parked]).expect("remove parked");

        let idle = Worktree::of(root, "r1", "6");
        ensure(root, &idle).expect("add");
        assert_eq!(
            merge(root, &idle.branch, "merge 6", true).expect("merge"),
            MergeOutcome::UpToDate,
            "a phase that changed nothing"
        );
        remove(root, &idle).expect("remove");

        let (worktrees, branches) = leftovers(root).expect("list");
        assert_eq!(worktrees.len(), 2, "{worktrees:?}");
        assert_eq!(branches.len(), 2, "{branches:?}");
        for wt in [&second, &third] {
            remove(root, wt).expect("remove");
        }
        assert_eq!(leftovers(root).expect("list"), (Vec::new(), Vec::new()));
        assert!(!root.join(WORKTREES_DIR).join("r1").exists());
    }
}
