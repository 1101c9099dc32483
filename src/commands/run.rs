//! `debussy run`.

use crate::cli::{GlobalArgs, RunArgs};
use crate::exit::{CommandResult, Failure};

pub(super) async fn run(global: &GlobalArgs, args: RunArgs) -> CommandResult {
    let _ = (global, args);
    Err(Failure::usage(miette::miette!(
        "`debussy run` is not available in this build"
    )))
}
