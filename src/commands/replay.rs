//! `debussy replay`.

use crate::cli::{GlobalArgs, ReplayArgs};
use crate::exit::{CommandResult, Failure};

pub(super) fn run(global: &GlobalArgs, args: &ReplayArgs) -> CommandResult {
    let _ = (global, args);
    Err(Failure::usage(miette::miette!(
        "`debussy replay` is not available in this build"
    )))
}
