//! Shared by `debussy done` and `debussy progress`: find the run an agent belongs to,
//! open its project's state store, and settle the phase the report is about.

use crate::cli::GlobalArgs;
use crate::exit::Failure;
use crate::run_env::{self, RunEnv};
use crate::state::Store;

/// The run this process was started by, and its project's store.
pub(super) fn run_store(global: &GlobalArgs, command: &str) -> Result<(RunEnv, Store), Failure> {
    let Some(mut env) = RunEnv::from_process() else {
        return Err(Failure::usage(miette::miette!(
            help = "run it from the agent session that `debussy run` started; that session's \
                    environment carries the run id",
            "`debussy {command}` reports to a running plan, but {} is not set",
            run_env::RUN_ID
        )));
    };
    if env.project_root.as_os_str().is_empty() {
        env.project_root = super::load_config(global, None)?.project_root;
    }
    let store = Store::open_existing(&env.project_root)
        .map_err(Failure::failed)?
        .ok_or_else(|| {
            Failure::usage(miette::miette!(
                "no debussy state in {} (expected .debussy/state.db)",
                env.project_root.display()
            ))
        })?;
    let known = store.run(&env.run_id).map_err(Failure::failed)?;
    if known.is_none() {
        return Err(Failure::usage(miette::miette!(
            "run {} is not recorded in {}",
            env.run_id,
            store.path().display()
        )));
    }
    Ok((env, store))
}

/// The phase a report is about: the one `given` (blank is none), else the session's own,
/// as the run spells it ([`check_phase`]). `usage` is how the command is typed with a
/// phase, for the hint when there is none.
pub(super) fn phase(
    store: &Store,
    env: &RunEnv,
    given: Option<String>,
    usage: &str,
) -> Result<String, Failure> {
    let phase = given
        .filter(|p| !p.trim().is_empty())
        .or_else(|| (!env.phase_id.is_empty()).then(|| env.phase_id.clone()))
        .ok_or_else(|| {
            Failure::usage(miette::miette!(
                help = format!("pass the phase id: `{usage}`"),
                "no phase given and none known from the environment"
            ))
        })?;
    check_phase(store, &env.run_id, &phase)
}

/// Refuse a phase the run does not have (runs recorded before phases were kept accept
/// any). Returns the phase id as the run spells it (`Phase 2` → `2`).
fn check_phase(store: &Store, run_id: &str, phase: &str) -> Result<String, Failure> {
    let run = store
        .run(run_id)
        .map_err(Failure::failed)?
        .ok_or_else(|| Failure::usage(miette::miette!("run {run_id} is not recorded")))?;
    if run.phase_ids.is_empty() {
        return Ok(phase.to_owned());
    }
    let wanted = crate::plan::PhaseId::parse(phase).map(|id| id.as_str().to_owned());
    match run
        .phase_ids
        .iter()
        .find(|id| Some(id.as_str()) == wanted.as_deref() || id.as_str() == phase)
    {
        Some(id) => Ok(id.clone()),
        None => Err(Failure::usage(miette::miette!(
            help = format!("pass one of the run's phases: {}", run.phase_ids.join(", ")),
            "phase {phase} is not a phase of run {run_id} (its phases: {})",
            run.phase_ids.join(", ")
        ))),
    }
}
