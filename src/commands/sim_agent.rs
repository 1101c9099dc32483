//! `debussy __sim-agent`: the simulated agent's process entry point.

use crate::cli::SimAgentArgs;
use crate::exit::{CommandResult, Failure};

pub(super) async fn run(args: SimAgentArgs) -> CommandResult {
    let _ = args;
    Err(Failure::usage(miette::miette!(
        "the simulated agent is not available in this build"
    )))
}
