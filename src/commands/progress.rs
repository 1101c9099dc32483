//! `debussy progress`: the agent logs a finished step, which the checkpoint of a later
//! restart lists as done.

use crate::cli::{GlobalArgs, ProgressArgs};
use crate::exit::{CommandResult, Exit, Failure};
use crate::terminal_safe::clipped;

pub(super) fn run(global: &GlobalArgs, args: ProgressArgs) -> CommandResult {
    let (env, store) = super::agent_report::run_store(global, "progress")?;
    let step = args.step.join(" ");
    if step.trim().is_empty() {
        return Err(Failure::usage(miette::miette!(
            "the progress step is empty"
        )));
    }
    let phase = super::agent_report::phase(
        &store,
        &env,
        args.phase,
        "debussy progress --phase 2 \"what you did\"",
    )?;
    store
        .record_progress(&env.run_id, &phase, step.trim())
        .map_err(Failure::failed)?;
    // The agent reads this back into its context: a long step is not said twice.
    crate::exit::to_stdout(&format!(
        "recorded progress for phase {}: {}\n",
        phase,
        clipped(step.trim(), 300)
    ));
    Ok(Exit::Success)
}
