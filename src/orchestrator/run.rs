//! [`run`]: one run of a plan from its lock to its summary, and what it needs to start
//! ([`RunSetup`]) or why it could not ([`RunError`]).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::agent::AgentBackend;
use crate::config::Loaded;
use crate::events::{
    Event, EventSender, PhaseInfo, PhaseState, PhaseSummary, RequestReceiver, RunSummary,
};
use crate::plan::{Phase, Plan, execution_order};
use crate::session::SessionSpec;
use crate::state::{RunRecord, RunStatus, StateError, Store};

use super::guards::Guards;
use super::selection::{self, History, Standing};
use super::{lock, orphans, runner, vcs};

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
}

/// Why a run could not start (once started, failures end up in the summary instead).
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum RunError {
    /// The git pre-flight refused.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Preflight(#[from] vcs::PreflightError),
    /// Another run of this project is live.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Locked(#[from] lock::LockError),
    /// The state store failed.
    #[error(transparent)]
    #[diagnostic(transparent)]
    State(#[from] StateError),
    /// The run to resume was interrupted and left uncommitted edits, most likely its
    /// agent's; debussy cannot tell them from the user's.
    #[error("the interrupted run left uncommitted changes in the working tree:\n{files}")]
    #[diagnostic(help(
        "they are most likely the killed agent's work: pass --allow-dirty to keep them in the resumed run (they are committed with its next checkpoint), or discard them with `git restore .` first"
    ))]
    InterruptedDirty {
        /// The files, one per line.
        files: String,
    },
    /// The plan's dependencies form a cycle.
    #[error("the plan's dependencies form a cycle: {0}")]
    #[diagnostic(help("run `debussy audit` on the plan for details"))]
    Cycle(String),
    /// The configuration cannot make an agent session.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Session(#[from] crate::session::SessionError),
    /// `--phase` names no phase.
    #[error("{0}")]
    UnknownPhase(String),
    /// The agent a phase names cannot be prepared.
    #[error("phase {phase}: {source}")]
    #[diagnostic(help("{}", agent_help(source)))]
    Agent {
        /// The phase.
        phase: String,
        /// Why.
        source: crate::agent::AgentError,
    },
    /// `.debussy/` could not be prepared.
    #[error("failed to prepare {path}")]
    Prepare {
        /// The path.
        path: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

impl RunError {
    /// Whether the error is the user's input (exit 2) rather than the work failing.
    #[must_use]
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            RunError::UnknownPhase(_)
                | RunError::Session(_)
                | RunError::Agent { .. }
                | RunError::Preflight(_)
                | RunError::InterruptedDirty { .. }
                | RunError::Locked(lock::LockError::Held { .. })
        )
    }
}

/// How to fix an agent that cannot be prepared: its own help, else a pointer to the
/// phase's `**Agent:**`.
fn agent_help(err: &crate::agent::AgentError) -> String {
    miette::Diagnostic::help(err).map_or_else(
        || "check the phase's `**Agent:**` line".to_owned(),
        |help| help.to_string(),
    )
}

/// Execute the plan. Returns the summary (also sent as the last event).
///
/// # Errors
/// When the run cannot start: another run of the project is live, pre-flight refusal,
/// state store failure, a dependency cycle, an unknown `--phase`.
pub async fn run(setup: RunSetup) -> Result<RunSummary, RunError> {
    let RunSetup {
        loaded,
        plan,
        backend,
        options,
        events,
        requests,
    } = setup;
    let config = loaded.config;
    let root = loaded.project_root;
    let session = SessionSpec::from_config(&config, backend.clone(), "", &root, "")?;
    let phase_sessions = super::agents::phase_sessions(&config, &plan, &root)?;
    // Taken first: a second run must be told about the live one, not that the live one's
    // edits make the tree dirty.
    let mut run_lock = lock::RunLock::acquire(&root)?;
    let store = Store::open(&root)?;
    let plan_key = plan_key(&plan);
    // An agent whose debussy died may still be editing the tree: stop it before anything
    // looks at the tree, whether or not this run resumes that one.
    let mut leftover_warnings = Vec::new();
    for run in store.settle_interrupted()? {
        if let Some(pgid) = run.agent_pgid {
            leftover_warnings.extend(leftover_agent_warning(&run.id, pgid));
            store.set_agent_group(&run.id, None)?;
        }
    }
    for message in &leftover_warnings {
        tracing::warn!("{message}");
    }
    let resumable = if options.resume {
        resumable_run(&store, &plan)?
    } else {
        None
    };
    if config.auto_commit {
        let paused_files = resumable
            .as_ref()
            .and_then(|run| run.pause.as_ref())
            .map(|pause| pause.files.clone())
            .unwrap_or_default();
        match vcs::preflight(root.clone(), options.allow_dirty).await {
            Ok(_) => {}
            // The paused run's own uncommitted edits are its work, not the user's.
            Err(vcs::PreflightError::Dirty { .. })
                if !paused_files.is_empty()
                    && only_paused_files_dirty(root.clone(), paused_files).await => {}
            Err(vcs::PreflightError::Dirty { files })
                if resumable
                    .as_ref()
                    .is_some_and(|run| run.status == RunStatus::Interrupted) =>
            {
                return Err(RunError::InterruptedDirty { files });
            }
            Err(err) => return Err(err.into()),
        }
    }
    vcs::ignore_run_data(&root).map_err(|source| RunError::Prepare {
        path: root.join(".debussy").display().to_string(),
        source,
    })?;

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
            store.completed_phases(&plan_key)?
        } else {
            Default::default()
        },
        start_at: options.start_phase.clone(),
    };
    let mut standings = selection::select(&order, &history).map_err(RunError::UnknownPhase)?;

    let mut resume_point = None;
    let mut ran_before = Duration::ZERO;
    let (run_id, resumed) = match resumable {
        Some(run) => {
            ran_before = Duration::try_from_secs_f64(run.active_secs).unwrap_or_default();
            if let (Some(pause), Some(phase)) = (run.pause.clone(), run.current_phase.clone()) {
                resume_point = Some(runner::ResumePoint {
                    phase,
                    pause,
                    reason: run.error.clone(),
                });
                store.set_pause(&run.id, None)?;
            }
            store.update_run(&run.id, RunStatus::Running, None, None)?;
            (run.id, true)
        }
        None => (store.create_run(&plan_key, &plan.title)?, false),
    };
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

    let started = Instant::now();
    let spent_before = store.totals(&run_id, None)?.cost_usd;
    let guards = Guards::new(&config, spent_before, ran_before, started.into());
    let mut runner = runner::Runner {
        config,
        root,
        plan: &plan,
        session,
        phase_sessions,
        store,
        run_id: run_id.clone(),
        events,
        requests,
        flags: runner::Flags::default(),
        summary: RunSummary {
            run_id: run_id.clone(),
            plan_path: plan.master.display().to_string(),
            ..RunSummary::default()
        },
        resume_point,
        agent_group: None,
        no_restart: None,
        guards,
    };
    let mut run_error: Option<String> = None;
    let mut paused_at: Option<String> = None;
    // The phase the run stopped in (or, completed, its last), as recorded and reported.
    let mut stopped_at: Option<String> = None;
    let total = order.len();
    for (index, phase) in order.iter().enumerate() {
        let id = phase.id.as_str().to_owned();
        if let Standing::Skipped(reason) = &standings[&id] {
            runner.emit(Event::PhaseSkipped {
                phase_id: id.clone(),
                reason: reason.clone(),
            });
            runner
                .summary
                .phases
                .push(skipped_summary(phase, PhaseState::Skipped));
            continue;
        }
        if let Some(reason) = selection::dropped_dependency(phase, &standings) {
            runner.emit(Event::PhaseSkipped {
                phase_id: id.clone(),
                reason: reason.clone(),
            });
            standings.insert(id.clone(), Standing::Dropped(reason));
            runner
                .summary
                .phases
                .push(skipped_summary(phase, PhaseState::Skipped));
            continue;
        }
        let unmet = selection::unmet_dependencies(phase, &standings);
        if !unmet.is_empty() {
            let error = format!("blocked: {}", unmet.join("; "));
            runner.emit(Event::PhaseFinished {
                phase_id: id.clone(),
                status: PhaseState::Blocked,
                attempts: 0,
                restarts: 0,
                error: Some(error.clone()),
            });
            standings.insert(id.clone(), Standing::Blocked);
            runner
                .summary
                .phases
                .push(skipped_summary(phase, PhaseState::Blocked));
            run_error = Some(format!("phase {id} {error}"));
            stopped_at = Some(id);
            break;
        }
        stopped_at = Some(id.clone());
        let result = runner.run_phase(phase, index + 1, total).await;
        runner.summary.phases.push(result.summary.clone());
        standings.insert(id.clone(), result.standing.clone());
        match result.standing {
            Standing::Completed
            | Standing::Skipped(_)
            | Standing::Dropped(_)
            | Standing::Pending => {}
            Standing::Paused => {
                paused_at = Some(id);
                break;
            }
            Standing::Failed | Standing::Blocked => {
                run_error = Some(format!(
                    "phase {id} {}: {}",
                    result.standing.state(),
                    result
                        .error
                        .unwrap_or_else(|| "see the attempts above".into())
                ));
                break;
            }
        }
    }

    let blocked_later = selection::dependents_of_unfinished(&order, &standings);
    let done: Vec<String> = runner.summary.phases.iter().map(|p| p.id.clone()).collect();
    for phase in order
        .iter()
        .filter(|p| !done.iter().any(|id| id == p.id.as_str()))
    {
        let status = if blocked_later.contains(phase.id.as_str()) {
            PhaseState::Blocked
        } else {
            PhaseState::NotRun
        };
        runner.summary.phases.push(skipped_summary(phase, status));
    }

    if let Some(hit) = &runner.flags.limit {
        run_error = Some(format!("paused: {hit}"));
        runner.summary.limit = Some(hit.key().to_owned());
        runner.summary.raise_with = Some(hit.raise_hint());
    }
    let status = if paused_at.is_some() {
        RunStatus::Paused
    } else if run_error.is_some() {
        RunStatus::Failed
    } else {
        RunStatus::Completed
    };
    let current = paused_at.clone().or(stopped_at);
    if let Err(err) =
        runner
            .store
            .update_run(&run_id, status, current.as_deref(), run_error.as_deref())
    {
        runner.warn(format!("could not record the run's end: {err}"));
    }
    if let Err(err) = runner
        .store
        .add_active_secs(&run_id, started.elapsed().as_secs_f64())
    {
        runner.warn(format!("could not record the run's time: {err}"));
    }
    if let Err(err) = runner.store.set_run_owner(&run_id, None) {
        runner.warn(format!("could not record the run's end: {err}"));
    }
    drop(run_lock);
    runner.summary.status = status;
    runner.summary.error = run_error;
    runner.summary.duration_secs = started.elapsed().as_secs_f64();
    let summary = runner.summary.clone();
    runner.emit(Event::RunFinished {
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
fn leftover_agent_warning(run_id: &str, pgid: i32) -> Option<String> {
    match orphans::kill_leftover_group(pgid) {
        orphans::Leftover::Gone => None,
        orphans::Leftover::Killed => Some(format!(
            "the agent of interrupted run {run_id} (process group {pgid}) was still running; killed it before starting"
        )),
        orphans::Leftover::Unkillable(errno) => Some(format!(
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

fn skipped_summary(phase: &Phase, status: PhaseState) -> PhaseSummary {
    PhaseSummary {
        id: phase.id.as_str().to_owned(),
        title: phase.title.clone(),
        status,
        ..PhaseSummary::default()
    }
}
