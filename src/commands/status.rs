//! `debussy status`.

use crate::cli::{GlobalArgs, StatusArgs};
use crate::exit::{CommandResult, Failure};

pub(super) fn run(global: &GlobalArgs, args: &StatusArgs) -> CommandResult {
    let _ = (global, args);
    Err(Failure::usage(miette::miette!(
        "`debussy status` is not available in this build"
    )))
}
