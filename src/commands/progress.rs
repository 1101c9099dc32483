//! `debussy progress`.

use crate::cli::{GlobalArgs, ProgressArgs};
use crate::exit::{CommandResult, Failure};

pub(super) fn run(global: &GlobalArgs, args: ProgressArgs) -> CommandResult {
    let _ = (global, args);
    Err(Failure::usage(miette::miette!(
        "`debussy progress` is not available in this build"
    )))
}
