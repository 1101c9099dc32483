//! `debussy show [RUN] [PHASE] [--attempt N]`: what happened in one attempt at a phase.
//! The prompt and checkpoint each session was given, a summary of each transcript (turns,
//! tool calls by tool, the last thing said), the gates with their output, the commits
//! and the progress steps. Read from `.debussy/state.db` and the run directory.

use crate::cli::{GlobalArgs, ReportFormat, ShowArgs};
use crate::exit::{CommandResult, Exit, Failure};

use super::render::print;

mod collect;
mod text;
mod transcript;

use collect::{collect, find_run, pick};
use text::render;

pub(super) fn run(global: &GlobalArgs, args: &ShowArgs) -> CommandResult {
    let (root, store) = super::report::recorded_runs(global)?;
    let run = find_run(&store, args.run.as_deref(), &root)?;
    let executions = store.executions_of(&run).map_err(Failure::failed)?;
    let (attempt, attempts) = pick(&executions, &run, args)?;
    let shown = collect(&store, &run, &attempt, attempts, &root).map_err(Failure::failed)?;
    match args.format {
        ReportFormat::Json => super::report::print_json(&shown)?,
        ReportFormat::Text => print(&render(&shown))?,
    }
    Ok(Exit::Success)
}
