//! `debussy clean`: the worktrees and branches phases running side by side left
//! behind, listed and removed; those whose work would be lost are kept unless forced.
//! debussy's own scratch worktrees (`.merge`, `.spare-N`) hold no work of their own and
//! go unless their run is live or paused.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::cli::{CleanArgs, GlobalArgs};
use crate::exit::{CommandResult, Exit, Failure};
use crate::git::GitCli;
use crate::git::worktree::{self, BRANCH_PREFIX, WORKTREES_DIR, Worktree};
use crate::state::{RunStatus, Store};

/// One phase's leftovers: its worktree (if still there) and branch (if still there).
struct Leftover {
    run_id: String,
    phase_id: String,
    worktree: Option<PathBuf>,
    branch: Option<String>,
}

/// Why a leftover is kept.
async fn kept_because(
    git: &GitCli,
    root: &Path,
    store: Option<&Store>,
    left: &Leftover,
    force: bool,
) -> Option<String> {
    let run = store.and_then(|store| store.run(&left.run_id).ok().flatten());
    match run.as_ref().map(|run| run.status) {
        Some(RunStatus::Running) => return Some("its run is running".into()),
        Some(RunStatus::Paused) if !force => {
            return Some("its run is paused: `debussy run PLAN --resume` continues it".into());
        }
        _ => {}
    }
    if force || left.phase_id.starts_with('.') {
        return None;
    }
    if let Some(path) = &left.worktree
        && git
            .run(path, &["status", "--porcelain"])
            .await
            .is_ok_and(|out| !out.is_empty())
    {
        return Some("its worktree has uncommitted changes".into());
    }
    if let Some(branch) = &left.branch {
        // Merged means: in the branch its run merges into (else the one checked out).
        let target = run
            .and_then(|run| run.start_branch)
            .map_or_else(|| "HEAD".to_owned(), |name| format!("refs/heads/{name}"));
        let merged = git
            .succeeds(root, &["merge-base", "--is-ancestor", branch, &target])
            .await;
        if !merged {
            let into = target
                .strip_prefix("refs/heads/")
                .unwrap_or("the current branch");
            return Some(format!("{branch} is not merged into {into}"));
        }
    }
    None
}

pub(super) async fn run(global: &GlobalArgs, args: &CleanArgs) -> CommandResult {
    let loaded = super::load_config(global, None)?;
    let root = loaded.project_root;
    let git = GitCli::new(loaded.config.git.timeout.duration());
    let (worktrees, branches) = worktree::leftovers(&git, &root)
        .await
        .map_err(Failure::failed)?;
    let dir = root.join(WORKTREES_DIR);
    let dir = dir.canonicalize().unwrap_or(dir);
    let mut leftovers: Vec<Leftover> = Vec::new();
    for path in worktrees {
        let mut parts = path.strip_prefix(&dir).unwrap_or(&path).iter();
        let (Some(run), Some(phase)) = (parts.next(), parts.next()) else {
            continue;
        };
        let (run_id, phase_id) = (run.to_string_lossy(), phase.to_string_lossy());
        leftovers.push(Leftover {
            branch: None,
            worktree: Some(path.clone()),
            run_id: run_id.into_owned(),
            phase_id: phase_id.into_owned(),
        });
    }
    for branch in branches {
        // A run's id is a UUID: a branch of the same shape under another name is the
        // user's, and never removed.
        let Some((run_id, phase_id)) = branch
            .strip_prefix(BRANCH_PREFIX)
            .and_then(|rest| rest.split_once("/phase-"))
            .filter(|(run_id, _)| uuid::Uuid::try_parse(run_id).is_ok())
        else {
            continue;
        };
        match leftovers
            .iter_mut()
            .find(|left| left.run_id == run_id && left.phase_id == phase_id)
        {
            Some(left) => left.branch = Some(branch.clone()),
            None => leftovers.push(Leftover {
                run_id: run_id.to_owned(),
                phase_id: phase_id.to_owned(),
                worktree: None,
                branch: Some(branch.clone()),
            }),
        }
    }
    if leftovers.is_empty() {
        super::render::print("no worktrees or branches of debussy runs to clean\n")?;
        return Ok(Exit::Success);
    }
    let store = Store::open_existing(&root).map_err(Failure::failed)?;
    let mut out = String::new();
    let mut failed = false;
    for left in &leftovers {
        let what = [
            left.worktree.as_ref().map(|p| p.display().to_string()),
            left.branch.clone(),
        ]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(" and ");
        let label = if left.phase_id.starts_with('.') {
            format!(
                "run {}: debussy's scratch worktree {what}",
                short(&left.run_id)
            )
        } else {
            format!(
                "run {} phase {}: {what}",
                short(&left.run_id),
                left.phase_id
            )
        };
        if let Some(why) = kept_because(&git, &root, store.as_ref(), left, args.force).await {
            let _ = writeln!(out, "kept     {label} ({why})");
            continue;
        }
        if args.dry_run {
            let _ = writeln!(out, "would remove {label}");
            continue;
        }
        let target = Worktree {
            path: left
                .worktree
                .clone()
                .unwrap_or_else(|| Worktree::of(&root, &left.run_id, &left.phase_id).path),
            branch: left
                .branch
                .clone()
                .unwrap_or_else(|| Worktree::of(&root, &left.run_id, &left.phase_id).branch),
        };
        match worktree::remove(&git, &root, &target).await {
            Ok(()) => {
                let _ = writeln!(out, "removed  {label}");
            }
            Err(err) => {
                failed = true;
                let _ = writeln!(out, "failed   {label}: {err}");
            }
        }
    }
    if out.contains("kept ") {
        out.push_str("kept leftovers hold work that is nowhere else; `debussy clean --force` removes them too\n");
    }
    super::render::print(&out)?;
    Ok(if failed { Exit::Failure } else { Exit::Success })
}

fn short(id: &str) -> &str {
    id.get(..8).unwrap_or(id)
}
