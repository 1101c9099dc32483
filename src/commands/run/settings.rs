//! The run's configuration: files, `DEBUSSY_*` variables and flags, and on `--resume` the settings the run was started with.

use std::collections::BTreeMap;

use super::overrides;
use crate::cli::{GlobalArgs, RunArgs, RunOverrides};
use crate::exit::{Failure, to_stderr};
use crate::{orchestrator, plan};

/// The configuration inputs of this process, with `overrides` as the flags.
pub(super) fn load_options<'a>(
    global: &GlobalArgs,
    overrides: &'a RunOverrides,
) -> Result<crate::config::LoadOptions<'a>, Failure> {
    let cwd = std::env::current_dir().map_err(|err| {
        Failure::usage(miette::miette!("cannot read the current directory: {err}"))
    })?;
    crate::config::LoadOptions::from_process(cwd, global.config.clone(), Some(&overrides.values))
        .map_err(Failure::usage)
}

/// The configuration from files, `env` (the `DEBUSSY_*` variables) and `overrides`.
pub(super) fn load_config(
    global: &GlobalArgs,
    overrides: &RunOverrides,
    env: &BTreeMap<String, String>,
) -> Result<crate::config::Loaded, Failure> {
    let mut options = load_options(global, overrides)?;
    options.env.clone_from(env);
    crate::config::load(&options).map_err(Failure::usage)
}

/// On `--resume`, take the flags and `DEBUSSY_*` variables the resumed run was started
/// with for every one not given now. What to tell the user about it is returned, to be
/// said once the run holds the project's lock (a refused run says only why).
pub(super) fn reuse_started_with(
    args: &RunArgs,
    root: &std::path::Path,
    flags: &mut RunOverrides,
    env: &mut BTreeMap<String, String>,
) -> Result<Reused, Failure> {
    // A plan that does not load is reported by the inspection that follows.
    let Ok(plan) = plan::load(&args.plan) else {
        return Ok(Reused::Nothing);
    };
    let store = crate::state::Store::open_existing(root).map_err(Failure::failed)?;
    let resumable = match &store {
        Some(store) => orchestrator::resumable_run(store, &plan).map_err(Failure::failed)?,
        None => None,
    };
    let Some(run) = resumable else {
        let completed = match (&store, &args.phase) {
            (Some(store), None) => {
                orchestrator::completed_run(store, &plan).map_err(Failure::failed)?
            }
            _ => None,
        };
        return Ok(match completed {
            Some(run) => Reused::AlreadyComplete(format!(
                "debussy: run {} already completed every phase of this plan; nothing to resume (`debussy run {} --restart` runs it again)\n",
                run.id,
                args.plan.display()
            )),
            None => Reused::NoRunToResume,
        });
    };
    let mut reused = overrides::reuse(flags, &run.started_with.flags).map_err(Failure::usage)?;
    reused.extend(overrides::reuse_env(env, &run.started_with.env));
    if reused.is_empty() {
        return Ok(Reused::Nothing);
    }
    Ok(Reused::Settings(format!(
        "debussy: resuming run {} with the settings it was started with: {}\n",
        run.id,
        reused.join(" ")
    )))
}

/// What [`reuse_started_with`] found.
pub(super) enum Reused {
    /// Nothing to take: none was recorded, or every one is given again.
    Nothing,
    /// No unfinished run of the plan: a run killed before it recorded itself leaves
    /// nothing to resume, and the flags it was given are not known.
    NoRunToResume,
    /// Settings were taken, as this note says.
    Settings(String),
    /// Earlier runs completed every phase of the plan, as this note says: nothing is
    /// left to run, so no agent is needed.
    AlreadyComplete(String),
}

impl Reused {
    /// Whether settings were taken, so the configuration must be loaded again.
    pub(super) fn any(&self) -> bool {
        matches!(self, Reused::Settings(_))
    }

    /// Tell the user what was reused, or that a new run starts.
    pub(super) fn say(&self) {
        match self {
            Reused::Nothing => {}
            Reused::NoRunToResume => to_stderr(
                "debussy: no unfinished run of this plan to resume: a new run starts with the settings given now, skipping the phases earlier runs completed\n",
            ),
            Reused::Settings(note) | Reused::AlreadyComplete(note) => to_stderr(note),
        }
    }
}
