//! [`run`]: one run of a plan from its lock to its summary, and what it needs to start
//! ([`RunSetup`]); why it could not is [`RunError`].

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::agent::AgentBackend;
use crate::config::Loaded;
use crate::events::{Event, EventSender, PhaseInfo, RequestReceiver, RunSummary};
use crate::plan::{Plan, execution_order};
use crate::session::SessionSpec;
use crate::state::{AgentGroup, RunRecord, RunStatus, StateError, Store};

use super::checkout::Checkout;
use super::context::RunContext;
use super::drive::Drive;
use super::error::RunError;
use super::guards::Guards;
use super::selection::{self, History, Standing};
use super::{lock, parallel, recover, resume};
use crate::git::vcs;
use crate::git::worktree;
use crate::process::{Leftover, kill_leftover_group};

/// How the user asked the run to treat history and the working tree.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// `--resume`: continue the latest unfinished run of this plan, skipping phases any
    /// earlier run completed.
    pub resume: bool,
    /// `--restart`: run every phase, ignoring the plan's statuses and earlier runs.
    pub ignore_history: bool,
    /// `--phase ID`: start at this phase.
    pub start_phase: Option<String>,
    /// `--allow-dirty`: run on a working tree with uncommitted tracked changes.
    pub allow_dirty: bool,
    /// The configuration flags and variables in effect (given now or reused from the
    /// resumed run); recorded with the run so a later `--resume` reuses them.
    pub started_with: crate::state::StartedWith,
}

/// Everything a run needs.
pub struct RunSetup {
    /// The effective configuration and project root.
    pub loaded: Loaded,
    /// The parsed (and audited) plan.
    pub plan: Plan,
    /// The agent backend sessions use.
    pub backend: Arc<dyn AgentBackend>,
    /// History and working-tree options.
    pub options: RunOptions,
    /// Where events go.
    pub events: EventSender,
    /// Where user requests come from.
    pub requests: RequestReceiver,
    /// The project's run lock ([`lock::take`]), taken before anything looked at the tree:
    /// a second run must be told about the live one, not that the live one's edits make
    /// the tree dirty.
    pub lock: lock::RunLock,
}

/// Execute the plan. Returns the summary (also sent as the last event).
///
/// # Errors
/// When the run cannot start: pre-flight refusal, state store failure, a dependency
/// cycle, an unknown `--phase`.
pub async fn run(setup: RunSetup) -> Result<RunSummary, RunError> {
    let RunSetup {
        loaded,
        plan,
        backend,
        options,
        events,
        requests,
        lock: mut run_lock,
    } = setup;
    // Git lock files written before this moment cannot be this run's.
    let started_at = std::time::SystemTime::now();
    let config = loaded.config;
    let root = loaded.project_root;
    let agent = crate::session::default_backend_settings(&config);
    let session = SessionSpec::from_config(&config, &agent, backend.clone(), "", &root, "")?;
    let phase_sessions = super::agents::phase_sessions(&config, &plan, &root)?;
    let store = Store::open(&root)?;
    store.keep_reserve();
    let plan_key = plan_key(&plan);
    // An agent whose debussy died may still be editing the tree: stop it before anything
    // looks at the tree, whether or not this run resumes that one.
    let mut leftover_warnings = Vec::new();
    let settled = store.settle_interrupted()?;
    for run in &settled {
        for &group in &run.agent_groups {
            leftover_warnings.extend(leftover_agent_warning(&run.id, group));
        }
        if !run.agent_groups.is_empty() {
            store.clear_agent_groups(&run.id)?;
        }
        // What left the agent's group (a `setsid` tool command, a daemon) outlives it
        // when the reaper died too; the run's mark in its environment still finds it.
        let groups: Vec<i32> = run.agent_groups.iter().map(|group| group.pgid()).collect();
        let strays = crate::process::stop_marked(crate::run_env::RUN_ID, &run.id, &groups);
        if strays > 0 {
            let (processes, were, them) = if strays == 1 {
                ("process", "was", "it")
            } else {
                ("processes", "were", "them")
            };
            leftover_warnings.push(format!(
                "{strays} {processes} started by interrupted run {} {were} still running outside its agent's process group; stopped {them}",
                run.id
            ));
        }
        recover::remove_stale_guards(&root, &run.id);
    }
    // Said to the user as the run's warnings once it starts; `-v` logs them here too.
    for message in &leftover_warnings {
        tracing::debug!("{message}");
    }
    let git = parallel::git_cli(&config);
    let mut checked_out = None;
    let resumable = if options.resume {
        resumable_run(&store, &plan)?
    } else {
        None
    };
    // A debussy killed mid-write (its own libgit2 commit, or a git command killed after
    // its grace) leaves a lock file that makes every later write of that file fail:
    // cleared before anything here writes to git, never while a live process holds it.
    let after_interrupted = !settled.is_empty()
        || resumable
            .as_ref()
            .is_some_and(|run| run.status == RunStatus::Interrupted);
    if after_interrupted {
        let removed = vcs::clear_left_locks(root.clone(), started_at)
            .await
            .map_err(vcs::PreflightError::Git)?;
        // A fast-forward of the checkout cut short by the kill left the merge's files
        // there, which would read as the user's edits.
        let merge_places = settled
            .iter()
            .map(|run| run.id.as_str())
            .chain(resumable.as_ref().map(|run| run.id.as_str()))
            .map(|id| worktree::merge_place(&root, id))
            .collect();
        let set_back = vcs::undo_cut_short_fast_forwards(root.clone(), merge_places)
            .await
            .map_err(vcs::PreflightError::Git)?;
        for message in removed.into_iter().chain(set_back) {
            tracing::debug!("{message}");
            leftover_warnings.push(message);
        }
    }
    // What the killed sessions of the run being resumed left in their trees is their
    // agents' work: it becomes a checkpoint before the tree is checked.
    let recovered = match &resumable {
        Some(run) if run.status == RunStatus::Interrupted && config.auto_commit => {
            recover::adopt_killed_work(&root, &store, run, &plan, &config).await?
        }
        _ => Default::default(),
    };
    if config.auto_commit {
        let paused_files: Vec<String> = resumable
            .iter()
            .flat_map(|run| run.pauses.values())
            .flat_map(|pause| pause.files.iter().cloned())
            .collect();
        match vcs::preflight(root.clone(), options.allow_dirty).await {
            Ok(branch) => checked_out = Some(branch),
            // The paused run's own uncommitted edits are its work, not the user's.
            Err(vcs::PreflightError::Dirty { .. })
                if !paused_files.is_empty()
                    && only_paused_files_dirty(root.clone(), paused_files).await =>
            {
                checked_out = vcs::current_branch(root.clone()).await;
            }
            Err(err) => return Err(err.into()),
        }
    }
    let order = execution_order(&plan).map_err(|cycles| {
        RunError::Cycle(
            cycles
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; "),
        )
    })?;
    let history = History {
        ignore: options.ignore_history,
        resume: options.resume,
        completed_before: if options.resume {
            done_before(&store, &plan_key, resumable.as_ref())?
        } else {
            Default::default()
        },
        start_at: options.start_phase.clone(),
    };
    let mut standings = selection::select(&order, &history).map_err(RunError::UnknownPhase)?;

    // The branch the run merges into and commits on: the one it started on.
    let started_on = resumable.as_ref().and_then(|run| run.start_branch.clone());
    let run_branch = if !config.jobs.side_by_side() {
        if let Some(run) = &resumable {
            parallel::no_worktrees_left(&git, &root, &run.id).await?;
        }
        if let (Some(started), Some(now)) = (&started_on, &checked_out)
            && started != now
        {
            return Err(RunError::BranchChanged {
                started: started.clone(),
                now: now.clone(),
            });
        }
        None
    } else {
        let checked = parallel::check(&root, &plan, &config, checked_out.clone()).await?;
        // Phases side by side merge into the run's own branch, whatever is checked out.
        Some(started_on.unwrap_or(checked))
    };
    // Where the run's branch is now: debussy's merges expect it there.
    let pool_branch = match &run_branch {
        Some(name) => match worktree::tip_of(&git, &root, name).await {
            Some(tip) => Some(worktree::RunBranch {
                name: name.clone(),
                tip,
            }),
            None => {
                return Err(RunError::Parallel {
                    problem: format!(
                        "the branch {name} the run merges into does not exist (any more)"
                    ),
                    help: format!(
                        "make it again where it should be (`git branch {name} COMMIT`), then resume"
                    ),
                });
            }
        },
        None => None,
    };
    let mut resume_points = BTreeMap::new();
    let mut ran_before = Duration::ZERO;
    let (run_id, resumed) = match resumable {
        Some(run) => {
            ran_before = Duration::try_from_secs_f64(run.active_secs).unwrap_or_default();
            resume_points = resume::points(&store, &run, &recovered)?;
            store.clear_pauses(&run.id)?;
            store.update_run(&run.id, RunStatus::Running, None, None)?;
            (run.id, true)
        }
        None => (store.create_run(&plan_key, &plan.title)?, false),
    };
    let found = match (&run_branch, resumed) {
        (Some(branch), true) => parallel::unmerged(&git, &root, &store, &run_id, branch).await?,
        _ => parallel::Unmerged::default(),
    };
    for id in found.waiting.keys().chain(&found.lost) {
        standings.insert(id.clone(), Standing::Pending);
    }
    for id in &found.by_hand {
        standings.insert(
            id.clone(),
            Standing::Skipped("completed, and merged by hand".into()),
        );
    }
    leftover_warnings.extend(found.warnings);
    if let Some(branch) = run_branch.as_ref().or(checked_out.as_ref()) {
        store.set_run_branch(&run_id, branch)?;
    }
    store.set_run_owner(&run_id, crate::state::Owner::current())?;
    let phase_ids: Vec<String> = order.iter().map(|p| p.id.as_str().to_owned()).collect();
    store.set_run_phases(&run_id, &phase_ids)?;
    store.set_run_started_with(&run_id, &options.started_with)?;
    if let Err(err) = run_lock.record(&run_id) {
        tracing::warn!(
            "could not name the run in {}: {err}",
            run_lock.path().display()
        );
    }

    let phases_info: Vec<PhaseInfo> = order
        .iter()
        .map(|phase| PhaseInfo {
            id: phase.id.as_str().to_owned(),
            title: phase.title.clone(),
            status: standings[phase.id.as_str()].state(),
        })
        .collect();
    let _ = events.send(Event::RunStarted {
        run_id: run_id.clone(),
        plan_title: plan.title.clone(),
        plan_path: plan.master.display().to_string(),
        phases: phases_info,
        agent: backend.name().to_owned(),
        model: config.model.clone(),
        context_threshold: config.context_threshold,
        max_restarts: config.max_restarts,
        resumed,
    });
    for message in leftover_warnings {
        let _ = events.send(Event::Warning { message });
    }
    for checkpoint in &recovered {
        let _ = events.send(Event::Committed {
            phase_id: checkpoint.phase.clone(),
            commit: checkpoint.commit.clone(),
            message: checkpoint.headline.clone(),
            files_changed: checkpoint.files.len(),
        });
        let _ = events.send(Event::Warning {
            message: format!(
                "phase {}: debussy was stopped while a session ran; the {} file{} its agent had changed ({}) were committed as a `{}` checkpoint, {}",
                checkpoint.phase,
                checkpoint.files.len(),
                if checkpoint.files.len() == 1 { "" } else { "s" },
                checkpoint.files.iter().take(5).cloned().collect::<Vec<_>>().join(", "),
                recover::RECOVERED,
                checkpoint.commit.get(..12).unwrap_or(&checkpoint.commit)
            ),
        });
    }

    let started = Instant::now();
    let spent_before = store.totals(&run_id, None)?.cost_usd;
    let guards = Guards::new(&config, spent_before, ran_before, started.into());
    let pool = super::pool::WorktreePool::new(git, &root, &run_id, pool_branch);
    let jobs = config.jobs.at_once(order.len());
    let checkout = match (&run_branch, checked_out) {
        (None, Some(branch)) => Some(Checkout::new(
            branch,
            vcs::head(root.clone()).await,
            vcs::stash_ids(root.clone()).await,
        )),
        _ => None,
    };
    let context = RunContext {
        checkout,
        config,
        root: root.clone(),
        plan: &plan,
        session,
        phase_sessions,
        store: &store,
        run_id: run_id.clone(),
        events: events.clone(),
        pool: &pool,
        no_space: std::cell::OnceCell::new(),
    };
    let drive = Drive {
        run: &context,
        order: order.clone(),
        standings,
        requests,
        resume_points,
        unmerged: found.waiting,
        guards,
        jobs,
        run_branch,
        summary: RunSummary {
            run_id: run_id.clone(),
            plan_path: plan.master.display().to_string(),
            commits: recovered.iter().map(|r| r.commit.clone()).collect(),
            ..RunSummary::default()
        },
    };
    let (mut summary, ending) = drive.run().await;
    let warn = |message: String| {
        tracing::debug!("{message}");
        let _ = events.send(Event::Warning { message });
    };
    if let Some(refused) = pool.drain().await {
        warn(format!(
            "could not remove a finished phase's worktree ({refused}); `debussy clean` removes it"
        ));
    }
    // The run's worktree directory goes once nothing is left in it (a worktree removed
    // by hand leaves it empty).
    let _ = std::fs::remove_dir(root.join(worktree::WORKTREES_DIR).join(&run_id));
    let mut run_error = ending.run_error;
    let paused_at = ending.paused_at;
    if let Some(hit) = &ending.limit {
        run_error = Some(format!("paused: {hit}"));
        summary.limit = Some(hit.key().to_owned());
        summary.raise_with = Some(hit.raise_hint());
    } else if let Some(full) = context.no_space.get() {
        summary.disk_full = true;
        run_error = Some(if paused_at.is_some() {
            format!("paused: {full}")
        } else {
            full.to_string()
        });
    }
    let status = if paused_at.is_some() {
        RunStatus::Paused
    } else if run_error.is_some() {
        RunStatus::Failed
    } else {
        RunStatus::Completed
    };
    let current = paused_at.clone().or(ending.stopped_at);
    // On a full disk these take the room the run kept for them; should they fail even
    // so (already said), the run's record reads "interrupted", which `--resume`
    // continues all the same.
    let could_not = |what: &str, err: StateError| {
        if !(summary.disk_full && err.is_out_of_space()) {
            warn(format!(
                "could not {what}: {}",
                crate::error_chain::error_chain(&err)
            ));
        }
    };
    if let Err(err) = store.update_run(&run_id, status, current.as_deref(), run_error.as_deref()) {
        could_not("record the run's end", err);
    }
    if let Err(err) = store.add_active_secs(&run_id, started.elapsed().as_secs_f64()) {
        could_not("record the run's time", err);
    }
    if let Err(err) = store.set_run_owner(&run_id, None) {
        could_not("record the run's end", err);
    }
    drop(run_lock);
    summary.status = status;
    summary.error = run_error;
    summary.duration_secs = started.elapsed().as_secs_f64();
    let _ = events.send(Event::RunFinished {
        summary: summary.clone(),
    });
    Ok(summary)
}

/// The run `--resume` continues: the latest run of `plan`, unless it completed.
///
/// # Errors
/// On state store failure.
pub fn resumable_run(store: &Store, plan: &Plan) -> Result<Option<RunRecord>, StateError> {
    Ok(store
        .runs(Some(&plan_key(plan)), 1)?
        .into_iter()
        .find(|run| run.status != RunStatus::Completed))
}

/// The run of `plan` that left nothing for `--resume`: the latest run, when it completed
/// and the runs of the plan together completed every one of its phases (none added
/// since).
///
/// # Errors
/// On state store failure.
pub fn completed_run(store: &Store, plan: &Plan) -> Result<Option<RunRecord>, StateError> {
    let key = plan_key(plan);
    let Some(latest) = store.runs(Some(&key), 1)?.into_iter().next() else {
        return Ok(None);
    };
    if latest.status != RunStatus::Completed {
        return Ok(None);
    }
    let done = done_before(store, &key, None)?;
    let every_phase = plan.phases.iter().all(|p| done.contains(p.id.as_str()));
    Ok(every_phase.then_some(latest))
}

/// The phases `--resume` would take as done in a run of `plan` now (what the dry run
/// shows as skipped).
///
/// # Errors
/// On a state store failure.
pub fn done_on_resume(
    store: &Store,
    plan: &Plan,
) -> Result<std::collections::BTreeSet<String>, StateError> {
    let resumable = resumable_run(store, plan)?;
    done_before(store, &plan_key(plan), resumable.as_ref())
}

/// The phases `--resume` takes as done: those some run of the plan completed, except the
/// ones the resumed run itself took up again and did not complete (a `--restart` or
/// `--phase` run redoing them); those go on where it left them.
fn done_before(
    store: &Store,
    plan_key: &str,
    resumed: Option<&RunRecord>,
) -> Result<std::collections::BTreeSet<String>, StateError> {
    let mut done = store.completed_phases(plan_key)?;
    if let Some(run) = resumed {
        let mut latest = BTreeMap::new();
        for execution in store.executions(&run.id)? {
            latest.insert(execution.phase_id, execution.status);
        }
        for (phase, status) in latest {
            if status != crate::state::ExecutionStatus::Completed {
                done.remove(&phase);
            }
        }
    }
    Ok(done)
}

/// Whether every uncommitted tracked change is one of the paused run's own files.
async fn only_paused_files_dirty(root: PathBuf, paused: Vec<String>) -> bool {
    tokio::task::spawn_blocking(move || {
        crate::git::Repo::discover(&root)
            .and_then(|repo| repo.dirty_tracked_files())
            .is_ok_and(|dirty| dirty.iter().all(|file| paused.contains(file)))
    })
    .await
    .unwrap_or(false)
}

/// Kill what is left of an interrupted run's agent, saying so.
fn leftover_agent_warning(run_id: &str, group: AgentGroup) -> Option<String> {
    let pgid = group.pgid();
    match kill_leftover_group(group) {
        Leftover::Gone | Leftover::Reused => None,
        Leftover::Unverified => Some(format!(
            "the agent of interrupted run {run_id} was process group {pgid}, and that number names a running process again; it was recorded by an older debussy without its start time, so it was left alone: check with `ps -o pid,lstart,cmd -g {pgid}`"
        )),
        Leftover::Killed => Some(format!(
            "the agent of interrupted run {run_id} (process group {pgid}) was still running; killed it before starting"
        )),
        Leftover::Unkillable(errno) => Some(format!(
            "the agent of interrupted run {run_id} (process group {pgid}) is still running and could not be killed ({errno}); stop it yourself: kill -KILL -{pgid}"
        )),
    }
}

/// How runs of a plan are recognised across invocations: its absolute master path.
fn plan_key(plan: &Plan) -> String {
    std::path::absolute(&plan.master)
        .unwrap_or_else(|_| PathBuf::from(&plan.master))
        .display()
        .to_string()
}
