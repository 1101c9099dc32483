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
/// with for every one not given now, saying which were reused. True when any was.
pub(super) fn reuse_started_with(
    args: &RunArgs,
    root: &std::path::Path,
    flags: &mut RunOverrides,
    env: &mut BTreeMap<String, String>,
) -> Result<bool, Failure> {
    // A plan that does not load is reported by the inspection that follows.
    let Ok(plan) = plan::load(&args.plan) else {
        return Ok(false);
    };
    let store = crate::state::Store::open_existing(root).map_err(Failure::failed)?;
    let resumable = match &store {
        Some(store) => orchestrator::resumable_run(store, &plan).map_err(Failure::failed)?,
        None => None,
    };
    let Some(run) = resumable else {
        // A run killed before it recorded itself leaves nothing to resume, and the
        // flags it was given are not known: say so rather than start anew in silence.
        to_stderr(
            "debussy: no unfinished run of this plan to resume: a new run starts with the settings given now, skipping the phases earlier runs completed\n",
        );
        return Ok(false);
    };
    let mut reused = overrides::reuse(flags, &run.started_with.flags).map_err(Failure::usage)?;
    reused.extend(overrides::reuse_env(env, &run.started_with.env));
    if reused.is_empty() {
        return Ok(false);
    }
    to_stderr(&format!(
        "debussy: resuming run {} with the settings it was started with: {}\n",
        run.id,
        reused.join(" ")
    ));
    Ok(true)
}
