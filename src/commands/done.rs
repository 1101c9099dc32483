//! `debussy done`: the agent reports that a phase is finished, blocked or failed.

use crate::cli::{DoneArgs, DoneStatus, GlobalArgs};
use crate::exit::{CommandResult, Exit, Failure};
use crate::state::CompletionStatus;

pub(super) fn run(global: &GlobalArgs, args: DoneArgs) -> CommandResult {
    let (env, store) = super::agent_report::run_store(global, "done")?;
    let phase = super::agent_report::phase(
        &store,
        &env,
        args.phase.or(args.phase_pos),
        "debussy done --phase 2",
    )?;
    let status = match args
        .status
        .or(args.status_pos)
        .unwrap_or(DoneStatus::Completed)
    {
        DoneStatus::Completed => CompletionStatus::Completed,
        DoneStatus::Blocked => CompletionStatus::Blocked,
        DoneStatus::Failed => CompletionStatus::Failed,
    };
    store
        .record_completion(&env.run_id, &phase, status, args.reason.as_deref())
        .map_err(Failure::failed)?;
    match &args.reason {
        Some(reason) => {
            crate::exit::to_stdout(&format!("recorded: phase {phase} {status} ({reason})\n"));
        }
        None => crate::exit::to_stdout(&format!("recorded: phase {phase} {status}\n")),
    }
    Ok(Exit::Success)
}
