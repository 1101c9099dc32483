//! A run's use of git: the pre-flight checks and the commits, run on blocking
//! threads so libgit2 never stalls the event loop.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::{
    CommitOutcome, Conflict, FileChange, GitCli, GitError, HeadState, HookPolicy, Identity, Repo,
    StaleLock, short_id,
};

/// How long the check that git can sign may take: long enough for a person to answer
/// the signing agent's passphrase prompt.
const SIGNING_CHECK_TIMEOUT: Duration = Duration::from_secs(120);
/// How long a commit waits for another process's `index.lock`.
const LOCK_WAIT: Duration = Duration::from_secs(10);
/// How long a run starting after an interrupted one waits for a git lock file a live
/// process holds: the interrupted run's own git commands are stopped by their reapers
/// within a second, and a user's command usually holds a lock for milliseconds.
const LEFT_LOCK_WAIT: Duration = Duration::from_secs(5);
/// The most dirty files named when refusing a dirty tree.
const MAX_DIRTY_LISTED: usize = 10;

/// Why a run cannot start with auto-commit on.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum PreflightError {
    /// Git itself failed.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Git(#[from] GitError),
    /// The working tree has uncommitted changes to tracked files.
    #[error("the working tree has uncommitted changes:\n{files}")]
    #[diagnostic(help(
        "commit or stash them first so debussy's commits hold only the agent's work, or pass --allow-dirty (or --no-auto-commit)"
    ))]
    Dirty {
        /// The files, one per line.
        files: String,
    },
    /// A merge, rebase, cherry-pick, revert or bisect is half done: committing now would
    /// record its conflict markers and leave its state behind.
    #[error("{operation} is in progress in {}", .root.display())]
    #[diagnostic(help("{finish}; then run debussy again"))]
    OperationInProgress {
        /// What is in progress, e.g. `a merge`.
        operation: &'static str,
        /// How to finish or abort it.
        finish: &'static str,
        /// The repository's working tree.
        root: PathBuf,
    },
    /// `commit.gpgSign` is on and git cannot sign.
    #[error("commit.gpgSign is on, and git cannot sign a commit here: {reason}")]
    #[diagnostic(help(
        "make the signing key usable without a prompt (unlock it in ssh-agent or gpg-agent, or fix user.signingKey), or turn signing off here (`git config commit.gpgSign false`), or pass --no-auto-commit"
    ))]
    CannotSign {
        /// What git said.
        reason: String,
    },
    /// `HEAD` is detached; commits would not be on any branch.
    #[error("HEAD is detached at {commit}; debussy's commits would not be on any branch")]
    #[diagnostic(help(
        "check out a branch first: `git switch -c debussy-run` (or pass --no-auto-commit)"
    ))]
    Detached {
        /// The commit HEAD points at.
        commit: String,
    },
}

/// Check that auto-commits are safe: a repository, a branch (unborn is fine), a signing
/// key git can use when `commit.gpgSign` is on, and no uncommitted tracked changes
/// unless `allow_dirty`. Returns the branch name.
///
/// # Errors
/// As [`PreflightError`].
pub async fn preflight(root: PathBuf, allow_dirty: bool) -> Result<String, PreflightError> {
    process_started();
    blocking(move || {
        let repo = Repo::discover(&root)?;
        // Before anything else, and whatever --allow-dirty says: a commit now would take
        // the conflict markers and leave MERGE_HEAD (or the rebase) behind.
        if let Some((operation, finish)) = repo.operation_in_progress() {
            return Err(PreflightError::OperationInProgress {
                operation,
                finish,
                root: repo.root().to_path_buf(),
            });
        }
        let branch = match repo.head()? {
            HeadState::Detached { commit } => {
                return Err(PreflightError::Detached {
                    commit: commit.to_string(),
                });
            }
            HeadState::Unborn { branch } | HeadState::Branch { name: branch, .. } => branch,
        };
        repo.check_index()?;
        match repo.check_signing(&GitCli::new(SIGNING_CHECK_TIMEOUT)) {
            Ok(()) => {}
            Err(GitError::Command(err)) => {
                return Err(PreflightError::CannotSign {
                    reason: err.message,
                });
            }
            Err(err) => return Err(err.into()),
        }
        if !allow_dirty {
            let dirty = repo.dirty_tracked_files()?;
            if !dirty.is_empty() {
                let mut files: Vec<String> = dirty
                    .iter()
                    .take(MAX_DIRTY_LISTED)
                    .map(|f| format!("  {f}"))
                    .collect();
                if dirty.len() > MAX_DIRTY_LISTED {
                    files.push(format!("  … and {} more", dirty.len() - MAX_DIRTY_LISTED));
                }
                return Err(PreflightError::Dirty {
                    files: files.join("\n"),
                });
            }
        }
        Ok(branch)
    })
    .await
}

/// Set back what a fast-forward of the checkout at `root` (or of a linked worktree of the
/// user's), cut short when an interrupted run was killed, left in it (see
/// [`Repo::undo_cut_short_fast_forward`]). `merge_places` are the interrupted runs' merge
/// worktrees: the `HEAD` of each is the merge its run was bringing into the checkout. Returns what was said about each, for the run's
/// warnings.
///
/// # Errors
/// When the repository or a merge place's `HEAD` cannot be read, or setting back fails.
pub async fn undo_cut_short_fast_forwards(
    root: PathBuf,
    merge_places: Vec<PathBuf>,
) -> Result<Vec<String>, GitError> {
    blocking(move || {
        let Ok(repo) = Repo::discover(&root) else {
            return Ok(Vec::new());
        };
        let merges: Vec<git2::Oid> = merge_places
            .iter()
            .filter_map(|place| git2::Repository::open(place).ok()?.head().ok()?.target())
            .collect();
        let mut said = Vec::new();
        // The merge went into whichever tree had the run's branch checked out: the user's
        // checkout, or a linked worktree of theirs.
        for checkout in repo.checkouts(&root.join(super::worktree::WORKTREES_DIR))? {
            let HeadState::Branch { name, .. } = checkout.head()? else {
                continue;
            };
            let place = if checkout.root().components().eq(repo.root().components()) {
                "the checkout".to_owned()
            } else {
                format!("the worktree {}", checkout.root().display())
            };
            for &merge in &merges {
                let set_back = checkout.undo_cut_short_fast_forward(merge)?;
                if !set_back.is_empty() {
                    let them = if set_back.len() == 1 { "it" } else { "them" };
                    said.push(format!(
                        "set back {} in {place} to {name}'s last commit: the interrupted run was killed while fast-forwarding {name} to {} and left {them} as that merge has {them}; the run merges again",
                        set_back.join(", "),
                        &merge.to_string()[..12],
                    ));
                }
            }
        }
        Ok(said)
    })
    .await
}

/// Remove the git lock files an interrupted run left in the repository at `root` (see
/// [`super::clear_left_locks`]): those no process has open, last written before `started`.
/// Returns what was said about each, for the run's warnings.
///
/// # Errors
/// [`GitError::LockInUse`] when a live process keeps one open; [`GitError::RemoveLock`].
pub async fn clear_left_locks(
    root: PathBuf,
    started: std::time::SystemTime,
) -> Result<Vec<String>, GitError> {
    blocking(move || {
        let removed = super::clear_left_locks(&root, started, LEFT_LOCK_WAIT)?;
        Ok(removed
            .iter()
            .map(|lock| {
                let shown = lock.strip_prefix(&root).unwrap_or(lock);
                format!(
                    "removed {}, a git lock file the interrupted run left behind (no process had it open); git commands that write there work again",
                    shown.display()
                )
            })
            .collect())
    })
    .await
}

/// The commit `HEAD` points at (`None` on an unborn branch or outside a repository).
pub async fn head(root: PathBuf) -> Option<git2::Oid> {
    blocking(move || Repo::discover(&root).ok()?.head_commit().ok().flatten()).await
}

/// The stashes of `root`'s repository now, by commit: git dates them to the second, so a
/// stash made just before a run reads as made during its first second.
pub async fn stash_ids(root: PathBuf) -> Vec<git2::Oid> {
    blocking(move || {
        let stashes = Repo::discover(&root).ok()?.stashes_since(i64::MIN).ok()?;
        Some(stashes.into_iter().map(|stash| stash.commit).collect())
    })
    .await
    .unwrap_or_default()
}

/// The branch checked out in `root`; `None` with `HEAD` detached or outside a
/// repository.
pub async fn current_branch(root: PathBuf) -> Option<String> {
    blocking(move || match Repo::discover(&root).ok()?.head().ok()? {
        HeadState::Unborn { branch } | HeadState::Branch { name: branch, .. } => Some(branch),
        HeadState::Detached { .. } => None,
    })
    .await
}

/// The stashes made in `root` since `since` (seconds since the epoch) on `branch`, but
/// for those `known` before then, whose changes the branch's tip does not hold, each
/// named with how to get it back:
/// work taken out of the checkout (an agent's `git stash` it never popped, or a pop
/// that conflicted) that a phase's commit would not hold.
///
/// # Errors
/// When the stash list or a commit cannot be read.
pub async fn stashed_off(
    root: PathBuf,
    branch: String,
    since: i64,
    known: Vec<git2::Oid>,
) -> Result<Vec<String>, GitError> {
    blocking(move || {
        let repo = Repo::discover(&root)?;
        let Some(tip) = repo.head_commit()? else {
            return Ok(Vec::new());
        };
        Ok(repo
            .stashes_off(since, &branch, &[], tip)?
            .iter()
            .filter(|stash| !known.contains(&stash.commit))
            .map(|stash| {
                format!(
                    "{} holds changes that are not on {branch}: `git stash apply {}`, then resume the run with --allow-dirty (what it brings back is the phase's work), or `git stash drop` it",
                    stash.name(),
                    short_id(stash.commit)
                )
            })
            .collect())
    })
    .await
}

/// The submodules of `root` whose tracked files were changed and not committed there,
/// each named with its files and what to do: a commit of the project records only the
/// commit a submodule is at, so the changes are in none of debussy's commits.
///
/// # Errors
/// When the submodules cannot be listed.
pub async fn uncommitted_in_submodules(root: PathBuf) -> Result<Vec<String>, GitError> {
    blocking(move || {
        let repo = Repo::discover(&root)?;
        Ok(repo
            .uncommitted_submodules()?
            .iter()
            .map(|submodule| {
                let path = crate::process::shell_quote(&submodule.path);
                format!(
                    "submodule {} has changes not committed there ({}): commit them in it (`git -C {path} commit -am …`), then resume the run with --allow-dirty (the submodule's new commit is the phase's work), or undo them (`git -C {path} checkout -- .`)",
                    submodule.path,
                    submodule.files.join(", ")
                )
            })
            .collect())
    })
    .await
}

/// Files changed since `base`, untracked included (empty outside a repository).
pub async fn changes_since(root: PathBuf, base: Option<git2::Oid>) -> Vec<FileChange> {
    blocking(move || {
        Repo::discover(&root)
            .and_then(|repo| repo.changes_since(base))
            .unwrap_or_else(|err| {
                tracing::warn!("could not list changed files: {err}");
                Vec::new()
            })
    })
    .await
}

/// A commit that was made.
#[derive(Debug, Clone)]
pub struct Commit {
    /// Its id.
    pub id: String,
    /// Files in it.
    pub files_changed: usize,
    /// What was said about a stale `.git/index.lock` removed before it, if any.
    pub stale_lock: Option<String>,
}

/// When this process started, to tell a lock left before the run from one left during it.
fn process_started() -> std::time::SystemTime {
    static STARTED: std::sync::OnceLock<std::time::SystemTime> = std::sync::OnceLock::new();
    *STARTED.get_or_init(std::time::SystemTime::now)
}

/// Words for a removed stale lock: whether it predates this run, and its age.
fn describe_stale_lock(lock: StaleLock, started: std::time::SystemTime) -> String {
    match lock.last_written {
        Some(written) if written < started => {
            let age = std::time::SystemTime::now()
                .duration_since(written)
                .map(|age| format!(", last written {}s ago", age.as_secs()))
                .unwrap_or_default();
            format!(
                "removed a stale .git/index.lock that predates this run (no process held it{age}); a git command was killed or crashed before debussy started"
            )
        }
        _ => "removed a stale .git/index.lock left during this run by a stopped process (no process held it)".to_owned(),
    }
}

/// Whether and how debussy's commits run the repository's hooks (`git.run_hooks`,
/// `git.timeout`).
#[must_use]
pub fn hook_policy(git: &crate::config::GitConfig) -> HookPolicy {
    if git.run_hooks {
        HookPolicy::Run {
            timeout: git.timeout.duration(),
        }
    } else {
        HookPolicy::Skip
    }
}

/// Where a commit in the project's own checkout must land: on the branch the run
/// commits on, with the commit debussy last left it at still in its history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OnBranch {
    /// The branch the run commits on.
    pub branch: String,
    /// Where debussy last left it: its tip when the run started, then each commit
    /// debussy made there.
    pub after: Option<git2::Oid>,
}

/// Check that a commit made in `root` now lands as `on` says: the checkout on the
/// branch, no merge or rebase half done, and what debussy left there still in the
/// branch's history, as is or with all its changes (an amend, a rebase).
///
/// # Errors
/// [`GitError::OffBranch`], [`GitError::OperationUnderWay`] or
/// [`GitError::LeftHistory`]; when git fails.
pub async fn check_on_branch(root: &Path, git: GitCli, on: &OnBranch) -> Result<(), GitError> {
    let head = {
        let (root, branch) = (root.to_path_buf(), on.branch.clone());
        blocking(move || {
            let repo = Repo::discover(&root)?;
            repo.check_commits_on(&branch)?;
            repo.head_commit()
        })
        .await?
    };
    let (Some(after), Some(head)) = (on.after, head) else {
        return Ok(());
    };
    if git.is_ancestor(root, after, head).await? || git.adds_nothing(root, head, after).await? {
        return Ok(());
    }
    Err(GitError::LeftHistory {
        commit: short_id(after),
        branch: on.branch.clone(),
        head: short_id(head),
    })
}

/// Commit everything (`git add -A`, run by `git`) with `message`, running the
/// repository's commit hooks as `hooks` says; `None` when nothing changed. With `on`,
/// only where [`check_on_branch`] allows.
///
/// # Errors
/// When git fails (a held index lock, a broken repository); as [`check_on_branch`]
/// says.
pub async fn commit_all(
    root: PathBuf,
    message: String,
    git: GitCli,
    hooks: HookPolicy,
    on: Option<OnBranch>,
) -> Result<Option<Commit>, GitError> {
    if let Some(on) = &on {
        check_on_branch(&root, git, on).await?;
    }
    let started = process_started();
    blocking(move || {
        let repo = Repo::discover(&root)?;
        match repo.commit_all(&message, &git, LOCK_WAIT, hooks)? {
            CommitOutcome::NothingToCommit => Ok(None),
            CommitOutcome::Committed { id, files_changed, identity, removed_stale_lock } => {
                if identity == Identity::Fallback {
                    tracing::warn!(
                        "git has no user.name/user.email here; committed as debussy <debussy@localhost>"
                    );
                }
                let stale_lock = removed_stale_lock.map(|lock| describe_stale_lock(lock, started));
                Ok(Some(Commit { id: id.to_string(), files_changed, stale_lock }))
            }
        }
    })
    .await
}

/// Fill the commit message template.
#[must_use]
pub fn commit_message(template: &str, phase_id: &str, phase_name: &str, status: &str) -> String {
    template
        .replace("{phase_id}", phase_id)
        .replace("{phase_name}", phase_name)
        .replace("{status}", status)
}

/// What `debussy init` writes to `.debussy/.gitignore` (a file the user owns and may
/// commit; runs never edit it): run data is never committed, `config.yaml` can be.
pub const RUN_DATA_IGNORE: &str = "# Run data written by debussy; config.yaml is meant to be committed.\nstate.db*\nruns/\nlogs/\nmcp/\nworktrees/\n";

/// debussy's run data in `.debussy/`, as ignore patterns relative to it.
pub const RUN_DATA: &[&str] = &["state.db*", "runs/", "logs/", "mcp/", "worktrees/"];

/// The line that opens debussy's block in `info/exclude`.
const EXCLUDE_HEADER: &str = "# debussy's run data (state, transcripts, logs, worktrees)";

/// Make sure `.debussy/`'s run data (state, logs, session transcripts, worktrees) is never
/// committed by `git add -A`, while `.debussy/config.yaml` still can be, without editing
/// any file of the user's: the patterns go into the repository's `info/exclude`, which
/// git never tracks and every worktree of the repository shares, anchored at the
/// project's place in the repository. Nothing to do outside a repository.
///
/// # Errors
/// When `info/exclude` cannot be read or written (or is not a regular file).
pub fn ignore_run_data(root: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(root.join(".debussy"))?;
    let Ok(repo) = git2::Repository::discover(root) else {
        return Ok(());
    };
    let Some(workdir) = repo.workdir() else {
        return Ok(());
    };
    let place = place_in(workdir, root);
    let mut prefix = String::from("/");
    for part in place.components() {
        prefix.push_str(&escape_pattern(&part.as_os_str().to_string_lossy()));
        prefix.push('/');
    }
    let wanted: Vec<String> = RUN_DATA
        .iter()
        .map(|pattern| format!("{prefix}.debussy/{pattern}"))
        .collect();
    let info = repo.commondir().join("info");
    std::fs::create_dir_all(&info)?;
    let exclude = info.join("exclude");
    let present = match crate::files::read_text_limited(&exclude, crate::files::CONFIG_LIMIT) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(err) => return Err(err),
    };
    let missing: Vec<&String> = wanted
        .iter()
        .filter(|line| !present.lines().any(|have| have.trim_end() == line.as_str()))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let mut block = String::new();
    if !present.is_empty() && !present.ends_with('\n') {
        block.push('\n');
    }
    block.push_str(EXCLUDE_HEADER);
    block.push('\n');
    for line in missing {
        block.push_str(line);
        block.push('\n');
    }
    std::io::Write::write_all(
        &mut crate::files::open_private_append(&exclude)?,
        block.as_bytes(),
    )
}

/// Where the project at `root` sits in its repository: the path from the working tree's
/// top level to it, empty when the project is the top level (or outside a repository).
/// A phase's worktree holds the whole repository; the project's copy there is this path
/// joined to the worktree.
pub async fn project_place(root: PathBuf) -> PathBuf {
    blocking(move || {
        let repo = git2::Repository::discover(&root).ok()?;
        Some(place_in(repo.workdir()?, &root))
    })
    .await
    .unwrap_or_default()
}

/// The path from `workdir` (a working tree's top level) to `project` inside it, both
/// taken as they are on disk (through symbolic links); empty when it is not inside.
fn place_in(workdir: &Path, project: &Path) -> PathBuf {
    let canonical = |path: &Path| path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    canonical(project)
        .strip_prefix(canonical(workdir))
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

/// A path component as a literal in a gitignore pattern.
fn escape_pattern(part: &str) -> String {
    let mut out = String::with_capacity(part.len());
    for c in part.chars() {
        if matches!(c, '*' | '?' | '[' | '\\' | '!' | '#') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// What git's index holds as unmerged in `dir`, by kind.
///
/// # Errors
/// When the repository or its index cannot be read.
pub async fn conflicts_in(dir: PathBuf) -> Result<Vec<Conflict>, GitError> {
    blocking(move || Repo::discover(&dir).and_then(|repo| repo.conflicts())).await
}

/// Run `work` on a blocking thread, passing its panic on.
pub(crate) async fn blocking<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> T {
    match tokio::task::spawn_blocking(work).await {
        Ok(value) => value,
        Err(err) => std::panic::resume_unwind(err.into_panic()),
    }
}

#[cfg(test)]
#[path = "vcs_tests.rs"]
mod tests;
