//! Before a phase's branch is merged: every commit the phase made must be on it.
//!
//! The agent works in its worktree with git at hand. It may have run `git checkout -b x`
//! or `git checkout --detach` (debussy's own commits then went where `HEAD` went, not on
//! the phase's branch), `git reset --hard` or `git commit --amend` (leaving commits
//! behind), or `git stash` (taking work out of the tree). A merge of the branch as it is
//! would drop that work silently, and once the worktree goes, so would git.
//!
//! [`secure`] looks at what the worktree's `HEAD` pointed at since the phase started (its
//! reflog) and at the stashes made there:
//! - `HEAD` moved on from the branch (a new branch, a detached `HEAD`, with commits on
//!   top): the branch is fast-forwarded to it and `HEAD` put back on the branch;
//! - a commit left behind whose changes are all in the branch anyway (amended, redone)
//!   is kept in the branch's history with a commit that changes nothing;
//! - anything else (`HEAD` somewhere the branch's commits are not, a commit or a stash
//!   whose changes are not on the branch, uncommitted changes) is [`Unsaved`]: named,
//!   kept where it is with the worktree, and left to a human. Nothing is merged then.

use std::path::{Path, PathBuf};

use git2::Oid;

use crate::git::{GitCli, GitCommandError, GitError, HeadState, Repo, short_id};

use super::Worktree;
use crate::git::vcs::blocking;

/// Seconds before the phase's start still counted as the phase's (clock steps, the
/// worktree being made just before its first attempt is recorded).
const SINCE_SLACK: i64 = 5;

/// What securing a phase's work did, for the user to be told.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Salvaged {
    /// What was brought back onto the branch, one sentence each.
    pub notes: Vec<String>,
    /// The branch's tip now: what will be merged.
    pub tip: String,
}

/// Work of the phase that is not on its branch and that debussy cannot bring there
/// without a human deciding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unsaved {
    /// The phase's work is in these places, each described for a person.
    Work(Vec<String>),
    /// Git could not be asked or refused, in its words.
    Git(String),
}

impl std::fmt::Display for Unsaved {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unsaved::Work(places) => write!(
                f,
                "the phase's work is not all on its branch: {}",
                places.join("; ")
            ),
            Unsaved::Git(message) => f.write_str(message),
        }
    }
}

impl From<GitCommandError> for Unsaved {
    fn from(err: GitCommandError) -> Self {
        Unsaved::Git(err.to_string())
    }
}

/// What the worktree holds beyond its branch, read with libgit2.
struct Survey {
    head: HeadState,
    tip: Option<Oid>,
    uncommitted: Vec<String>,
}

/// Make sure every commit `worktree`'s phase made since `since` (seconds since the
/// epoch) is on its branch, bringing back what can be brought back without changing
/// the tree its gates passed on. `run_tip` is the run branch's tip: work already there
/// is not the phase's to bring.
///
/// # Errors
/// [`Unsaved`] naming what is not on the branch.
pub async fn secure(
    git: &GitCli,
    worktree: &Worktree,
    run_tip: &str,
    since: i64,
) -> Result<Salvaged, Unsaved> {
    let since = since - SINCE_SLACK;
    let path = worktree.path.clone();
    let branch = worktree.branch.clone();
    let survey = read(&path, move |repo| {
        let tip = repo.tip(&format!("refs/heads/{branch}"))?;
        Ok(Survey {
            head: repo.head()?,
            tip,
            uncommitted: repo.uncommitted_files()?,
        })
    })
    .await?;
    let mut notes = Vec::new();
    if !survey.uncommitted.is_empty() {
        return Err(Unsaved::Work(vec![format!(
            "uncommitted changes in its worktree {} ({})",
            worktree.path.display(),
            listed(&survey.uncommitted)
        )]));
    }
    let run_tip = Oid::from_str(run_tip).map_err(|err| Unsaved::Git(err.to_string()))?;
    let tip = match bring_head_back(git, worktree, &survey, run_tip).await? {
        Some((tip, note)) => {
            notes.extend(note);
            tip
        }
        None => {
            return Err(Unsaved::Work(vec![format!(
                "its worktree has no commit on {}",
                worktree.branch
            )]));
        }
    };
    let branch = worktree.branch.clone();
    let LeftBehind { kept, unsaved } =
        left_behind(git, &worktree.path, &branch, tip, run_tip, since).await?;
    if !unsaved.is_empty() {
        return Err(Unsaved::Work(unsaved));
    }
    let mut tip = tip;
    if !kept.is_empty() {
        let branch = worktree.branch.clone();
        let count = kept.len();
        let message = format!(
            "debussy: keep the commits left behind on {branch}\n\nTheir changes are all in this branch already; they stay in its history.\n\n{}",
            kept.iter()
                .map(|(id, summary)| format!("- {id} {summary}"))
                .collect::<Vec<_>>()
                .join("\n")
        );
        let ids: Vec<Oid> = kept.iter().map(|(id, _)| *id).collect();
        let git = *git;
        tip = read(&worktree.path, move |repo| {
            repo.keep_in_history(&git, &branch, &ids, &message)
        })
        .await?;
        notes.push(format!(
            "{count} commit{} left behind on {} (their changes already on it) kept in its history",
            if count == 1 { "" } else { "s" },
            worktree.branch
        ));
    }
    Ok(Salvaged {
        notes,
        tip: tip.to_string(),
    })
}

/// Put `HEAD` back on the phase's branch when the agent moved it on: fast-forward the
/// branch to it. The branch's tip (and what was done, if anything); `None` when neither
/// the branch nor `HEAD` has a commit. Commits `HEAD` took along from the run's branch
/// (at `run_tip`: other phases' merges) were not made there, and are not counted.
async fn bring_head_back(
    git: &GitCli,
    worktree: &Worktree,
    survey: &Survey,
    run_tip: Oid,
) -> Result<Option<(Oid, Option<String>)>, Unsaved> {
    let (head, place) = match &survey.head {
        HeadState::Branch { name, commit } if *name == worktree.branch => {
            return Ok(Some((*commit, None)));
        }
        HeadState::Branch { name, commit } => (*commit, format!("branch {name}")),
        HeadState::Detached { commit } => (*commit, "a detached HEAD".to_owned()),
        HeadState::Unborn { .. } => return Ok(survey.tip.map(|tip| (tip, None))),
    };
    let tip = survey.tip;
    let behind = match tip {
        Some(tip) => !git.is_ancestor(&worktree.path, tip, head).await?,
        None => false,
    };
    if behind {
        return Err(Unsaved::Work(vec![format!(
            "the agent moved its worktree's HEAD to {place} ({}), which does not hold the commits on {}; choose what to keep, put it on {} (`git -C {} checkout {}` then `git merge` what you keep) and resume",
            short_id(head),
            worktree.branch,
            worktree.branch,
            crate::process::shell_quote(&worktree.path.to_string_lossy()),
            worktree.branch
        )]));
    }
    let reference = format!("refs/heads/{}", worktree.branch);
    let head_hex = head.to_string();
    let mut update = vec!["update-ref", reference.as_str(), head_hex.as_str()];
    let old = tip.map(|tip| tip.to_string());
    if let Some(old) = &old {
        update.push(old);
    }
    git.run(&worktree.path, &update).await?;
    git.run(&worktree.path, &["symbolic-ref", "HEAD", &reference])
        .await?;
    let count = match tip {
        Some(tip) if tip != head => git
            .only_in(&worktree.path, &[head], &[tip, run_tip])
            .await?
            .len(),
        _ => 0,
    };
    let moved = match count {
        0 => String::new(),
        count => format!(
            ", with {count} commit{} made there",
            crate::words::plural(count)
        ),
    };
    Ok(Some((
        head,
        Some(format!(
            "the agent had moved its worktree to {place}{moved}: brought back onto {}",
            worktree.branch
        )),
    )))
}

/// What the phase left off its branch.
#[derive(Debug, Default)]
struct LeftBehind {
    /// Commits whose changes are all in the branch already, with their summaries: kept
    /// in its history.
    kept: Vec<(Oid, String)>,
    /// Commits and stashes whose changes are not, described for a person.
    unsaved: Vec<String>,
}

/// The commits `HEAD` pointed at since `since` and the stashes made on the branch that
/// are on neither the branch (`tip`) nor the run's branch.
async fn left_behind(
    git: &GitCli,
    path: &Path,
    branch: &str,
    tip: Oid,
    run_tip: Oid,
    since: i64,
) -> Result<LeftBehind, Unsaved> {
    let history = read(path, move |repo| repo.head_history(since)).await?;
    let stray = git.only_in(path, &history, &[tip, run_tip]).await?;
    // Children first: a commit whose descendant is kept or named is covered by it.
    let mut tips: Vec<Oid> = Vec::new();
    for id in stray {
        let mut covered = false;
        for later in &tips {
            if git.is_ancestor(path, id, *later).await? {
                covered = true;
                break;
            }
        }
        if !covered {
            tips.push(id);
        }
    }
    let mut kept = Vec::new();
    let mut apart = Vec::new();
    for id in tips {
        if git.adds_nothing(path, tip, id).await? {
            kept.push(id);
        } else {
            apart.push(id);
        }
    }
    let branch = branch.to_owned();
    read(path, move |repo| {
        let mut found = LeftBehind {
            kept: kept.into_iter().map(|id| (id, repo.summary_of(id))).collect(),
            unsaved: apart
                .into_iter()
                .map(|id| {
                    format!(
                        "commit {} \"{}\", left behind by a reset, an amend or a checkout, has changes that are not on {branch}",
                        short_id(id),
                        repo.summary_of(id)
                    )
                })
                .collect(),
        };
        for stash in repo.stashes_off(since, &branch, &history, tip)? {
            found.unsaved.push(format!(
                "{} holds changes that are not on {branch}: `git stash apply {}` in the worktree, commit, then resume (or `git stash drop` it)",
                stash.name(),
                short_id(stash.commit)
            ));
        }
        Ok(found)
    })
    .await
}

/// Run a libgit2 reading of the repository at `path` on a blocking thread.
async fn read<T: Send + 'static>(
    path: &Path,
    work: impl FnOnce(&Repo) -> Result<T, GitError> + Send + 'static,
) -> Result<T, Unsaved> {
    let path: PathBuf = path.to_path_buf();
    blocking(move || Repo::discover(&path).and_then(|repo| work(&repo)))
        .await
        .map_err(|err| Unsaved::Git(crate::error_chain::error_chain(&err)))
}

/// Up to ten paths, then how many more.
fn listed(paths: &[String]) -> String {
    let mut shown: Vec<String> = paths.iter().take(10).cloned().collect();
    if paths.len() > 10 {
        shown.push(format!("… and {} more", paths.len() - 10));
    }
    shown.join(", ")
}
