//! The checks of the project itself: its configuration, its plan, the sim agent's
//! scenario, a writable run directory, and what the first commit would sweep up.

use std::path::{Path, PathBuf};

use crate::config::Loaded;
use crate::git::worktree::WORKTREES_DIR;
use crate::sim::{Scenario, ScenarioError};
use crate::state::STATE_DB;
use crate::words::plural;

use super::report::Check;

/// At most this many untracked paths are named in the warning.
const MAX_UNTRACKED_LISTED: usize = 20;

/// The configuration loaded, or the first problem with it (its help as the fix).
pub(crate) fn config_check(loaded: Result<&Loaded, &miette::Report>) -> Check {
    match loaded {
        Ok(loaded) => Check::pass(
            "config",
            format!("loaded for {}", loaded.project_root.display()),
        ),
        Err(report) => Check::fail(
            "config",
            report.to_string(),
            report.help().map_or_else(
                || "correct the file and key named above".to_owned(),
                |help| help.to_string(),
            ),
        ),
    }
}

/// Auto-commits would be safe: the check the orchestrator makes as a run starts
/// (a repository, a branch, no uncommitted tracked changes).
pub(crate) async fn git_check(root: PathBuf) -> Check {
    git_check_allowing(root, false).await
}

/// [`git_check`], with uncommitted changes allowed when `allow_dirty` (`--allow-dirty`).
pub(crate) async fn git_check_allowing(root: PathBuf, allow_dirty: bool) -> Check {
    match crate::git::vcs::preflight(root, allow_dirty).await {
        Ok(branch) if allow_dirty => Check::pass(
            "git",
            format!("on branch {branch} (--allow-dirty: uncommitted changes are kept)"),
        ),
        Ok(branch) => Check::pass(
            "git",
            format!("on branch {branch}, no uncommitted tracked changes"),
        ),
        Err(err) => {
            let fix = miette::Diagnostic::help(&err).map_or_else(
                || "run `git status` in the project to see what git says".to_owned(),
                |h| h.to_string(),
            );
            Check::fail("git", err.to_string(), fix)
        }
    }
}

/// Phases can run side by side (`jobs` above 1): the checks a parallel run makes as it
/// starts (auto-commit, a branch with a commit, git on PATH, the plan committed).
pub(crate) async fn jobs_check(
    root: PathBuf,
    plan: &crate::plan::Plan,
    config: &crate::config::Config,
) -> Check {
    match crate::orchestrator::side_by_side_ready(root, plan, config).await {
        Ok(branch) => Check::pass(
            "jobs",
            format!(
                "up to {} phases at once, each in its own worktree, merged into {branch}",
                match config.jobs {
                    crate::config::Jobs::AllReady => "all ready".to_owned(),
                    jobs => jobs.to_string(),
                }
            ),
        ),
        Err(err) => {
            let fix = miette::Diagnostic::help(&err)
                .map_or_else(|| "run with --jobs 1".to_owned(), |h| h.to_string());
            Check::fail("jobs", err.to_string(), fix)
        }
    }
}

/// The plan audit: `summary` is its summary line.
pub(crate) fn plan_check(passed: bool, summary: String) -> Check {
    if passed {
        Check::pass("plan", summary)
    } else {
        Check::fail(
            "plan",
            summary,
            "`debussy audit PLAN` lists each problem and its fix",
        )
    }
}

/// The sim scenario exists and every script in it is valid.
pub(super) fn scenario_check(path: &Path) -> Check {
    let text = match Scenario::read(path) {
        Ok(text) => text,
        Err(err) => {
            return Check::fail(
                "scenario",
                crate::error_chain::error_chain(&err),
                "write a scenario there (docs/sim-agent.md), or set `agent.scenario`",
            );
        }
    };
    match Scenario::check(&text, path) {
        Ok(scenario) => Check::pass(
            "scenario",
            format!(
                "{} ({} script{})",
                path.display(),
                scenario.scripts.len(),
                plural(scenario.scripts.len())
            ),
        ),
        Err(errors) => Check::fail(
            "scenario",
            scenario_errors(&errors),
            "correct each place named (the format: docs/sim-agent.md)",
        ),
    }
}

fn scenario_errors(errors: &[ScenarioError]) -> String {
    let mut out = if errors.len() >= Scenario::MAX_PROBLEMS {
        format!(
            "the first {} problems (fix them and check again):",
            errors.len()
        )
    } else {
        format!("{} problem{}:", errors.len(), plural(errors.len()))
    };
    for error in errors {
        out.push('\n');
        out.push_str(&error.to_string());
    }
    out
}

/// debussy can write its state and the agent's commits: `.debussy/` and the directories
/// and database in it, and `.git/`.
pub(super) fn writable_check(root: &Path) -> Check {
    let mut problems = Vec::new();
    let state = root.join(".debussy");
    let own = [
        state.clone(),
        state.join("runs"),
        state.join("logs"),
        root.join(WORKTREES_DIR),
    ];
    // debussy's own directories must be real ones: a link is refused, never probed through.
    let link = own.iter().find(|dir| {
        dir.symlink_metadata()
            .is_ok_and(|meta| meta.file_type().is_symlink())
    });
    if let Some(link) = link {
        problems.push(format!(
            "{}: a symbolic link; debussy keeps its files only in real directories (remove it)",
            link.display()
        ));
    } else if let Err(err) = probe_write(&state) {
        problems.push(format!("{}: {err}", state.display()));
    } else {
        // Each is probed where it already is (a mount of its own may be read-only); one
        // still to be made is made in `.debussy/`, which was just written.
        for dir in own
            .iter()
            .skip(1)
            .filter(|dir| dir.symlink_metadata().is_ok())
        {
            if let Err(err) = probe_write(dir) {
                problems.push(format!("{}: {err}", dir.display()));
            }
        }
        if let Err(err) = probe_open_for_writing(&root.join(STATE_DB)) {
            problems.push(format!("{}: {err}", root.join(STATE_DB).display()));
        }
    }
    if let Ok(repo) = git2::Repository::discover(root)
        && let Err(err) = probe_write(repo.path())
    {
        problems.push(format!("{}: {err}", repo.path().display()));
    }
    if problems.is_empty() {
        Check::pass("writable", format!("{} can be written", root.display()))
    } else {
        Check::fail(
            "writable",
            format!("cannot write:\n{}", problems.join("\n")),
            "make each writable by your user (look for a file in the way, the owner and mode, a read-only mount)",
        )
    }
}

/// Open the state database, and the journal files beside it, for writing where they
/// exist, writing nothing: a file made read-only (or mounted so) stops every record.
fn probe_open_for_writing(db: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    for suffix in ["", "-wal", "-shm"] {
        let mut name = db.as_os_str().to_owned();
        name.push(suffix);
        let file = PathBuf::from(name);
        if file
            .symlink_metadata()
            .is_ok_and(|meta| meta.file_type().is_symlink())
        {
            return Err(std::io::Error::other(
                "a symbolic link; debussy never writes through links (remove it)",
            ));
        }
        match std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK)
            .open(&file)
        {
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
            opened => {
                opened?;
            }
        }
    }
    Ok(())
}

/// Create and remove a file in `dir` (creating `dir` when missing, as a run would).
fn probe_write(dir: &Path) -> std::io::Result<()> {
    let existed = dir.is_dir();
    std::fs::create_dir_all(dir)?;
    let probe = dir.join(format!(".debussy-write-check-{}", std::process::id()));
    // Created exclusively: whatever is in the way, a link included, is never written
    // through, and never removed unless this made it.
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)
        .map(drop);
    if written.is_ok() {
        let _ = std::fs::remove_file(&probe);
    }
    if !existed {
        let _ = std::fs::remove_dir(dir);
    }
    written
}

/// Untracked files that the first phase commit (`git add -A`) would sweep in; none
/// outside a repository.
pub(super) fn untracked_check(root: &Path, plan: Option<&Path>) -> Option<Check> {
    let Ok(repo) = git2::Repository::discover(root) else {
        return None;
    };
    let mut options = git2::StatusOptions::new();
    options
        .include_untracked(true)
        // A new directory is named once (and a big one is not walked); `.debussy/` is
        // opened below, as its files are named one by one.
        .recurse_untracked_dirs(false)
        .include_ignored(false);
    let Ok(statuses) = repo.statuses(Some(&mut options)) else {
        return Some(Check::warn(
            "untracked",
            "not checked: git cannot list the working tree's files",
            "run `git status` to see why",
        ));
    };
    let workdir = repo.workdir().map(Path::to_path_buf).unwrap_or_default();
    let paths: Vec<String> = statuses
        .iter()
        .filter(|entry| entry.status().is_wt_new())
        .filter_map(|entry| entry.path().ok().map(str::to_owned))
        .flat_map(|path| {
            if path == ".debussy/" {
                state_dir_files(&workdir.join(".debussy"))
            } else {
                vec![path]
            }
        })
        .filter(|path| !is_run_data(path))
        .collect();
    Some(untracked_verdict(
        &paths,
        plan.map(|p| relative(p, &workdir)).as_deref(),
    ))
}

/// debussy's run data tracked by git (committed by hand before a run could keep it out):
/// each run writes it, so the tree is never clean again and commits would carry it. The
/// fix untracks it and keeps the files. `None` outside a repository.
pub(super) fn tracked_run_data_check(root: &Path) -> Option<Check> {
    let repo = git2::Repository::discover(root).ok()?;
    let workdir = repo.workdir()?;
    let place = relative(root, workdir);
    let prefix = if place.is_empty() {
        String::new()
    } else {
        format!("{place}/")
    };
    let index = repo.index().ok()?;
    let mut tracked: Vec<String> = index
        .iter()
        .filter_map(|entry| String::from_utf8(entry.path).ok())
        .filter_map(|path| {
            let own = path.strip_prefix(&prefix)?;
            is_run_data(own).then(|| run_data_root(own).to_owned())
        })
        .collect();
    tracked.dedup();
    if tracked.is_empty() {
        return None;
    }
    let paths: Vec<String> = tracked
        .iter()
        .map(|path| crate::process::shell_quote(path))
        .collect();
    Some(Check::fail(
        "run data",
        format!(
            "debussy's run data is tracked by git: {}; every run writes it, so the tree is never clean and commits would take it",
            tracked.join(", ")
        ),
        format!(
            "untrack it, keeping the files: `git rm -r -q --cached -- {}` and commit; debussy keeps it out of git from then on",
            paths.join(" ")
        ),
    ))
}

/// The run-data entry of `.debussy/` that `path` (from the project) is in: the directory
/// for `runs/x`, the file itself for `state.db-wal`.
fn run_data_root(path: &str) -> &str {
    let rest = path.strip_prefix(".debussy/").unwrap_or(path);
    match rest.split_once('/') {
        Some((dir, _)) => &path[..".debussy/".len() + dir.len()],
        None => path,
    }
}

/// The entries of an untracked `.debussy/`, as paths from the work tree (`.debussy/x`,
/// `.debussy/dir/`), sorted.
fn state_dir_files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                format!(".debussy/{name}/")
            } else {
                format!(".debussy/{name}")
            }
        })
        .collect();
    names.sort();
    names
}

/// The check for these untracked paths, as git names them (a new directory once, with a
/// trailing `/`; files of `.debussy/` each, where `config.yaml` is the one people miss).
/// Pure. A path is marked as the plan when it is the plan or a directory holding it.
pub(super) fn untracked_verdict(paths: &[String], plan: Option<&str>) -> Check {
    if paths.is_empty() {
        return Check::pass("untracked", "no untracked files");
    }
    let mut detail = format!(
        "{} untracked path{} would go into the first phase commit:",
        paths.len(),
        plural(paths.len())
    );
    for path in paths.iter().take(MAX_UNTRACKED_LISTED) {
        detail.push_str("\n  ");
        detail.push_str(path);
        let holds_plan = plan.is_some_and(|plan| {
            plan == path || (path.ends_with('/') && plan.starts_with(path.as_str()))
        });
        if holds_plan {
            detail.push_str("  (the plan)");
        }
    }
    if paths.len() > MAX_UNTRACKED_LISTED {
        detail.push_str(&format!(
            "\n  … and {} more",
            paths.len() - MAX_UNTRACKED_LISTED
        ));
    }
    Check::warn(
        "untracked",
        detail,
        "commit them first (`git add … && git commit`), or list them in .gitignore",
    )
}

/// debussy's own run data, which the run keeps out of git (in the repository's
/// `info/exclude`): a path one of its patterns (`state.db*`, `runs/`, …) covers.
pub(super) fn is_run_data(path: &str) -> bool {
    let Some(rest) = path.strip_prefix(".debussy/") else {
        return false;
    };
    crate::git::vcs::RUN_DATA
        .iter()
        .any(|pattern| match pattern.strip_suffix('*') {
            Some(stem) => rest.starts_with(stem),
            None => rest == *pattern || (pattern.ends_with('/') && rest.starts_with(pattern)),
        })
}

fn relative(path: &Path, workdir: &Path) -> String {
    let absolute: PathBuf = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let base = std::fs::canonicalize(workdir).unwrap_or_else(|_| workdir.to_path_buf());
    absolute
        .strip_prefix(&base)
        .unwrap_or(&absolute)
        .to_string_lossy()
        .into_owned()
}
