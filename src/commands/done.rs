//! `debussy done`.

use crate::cli::{DoneArgs, GlobalArgs};
use crate::exit::{CommandResult, Failure};

pub(super) fn run(global: &GlobalArgs, args: DoneArgs) -> CommandResult {
    let _ = (global, args);
    Err(Failure::usage(miette::miette!(
        "`debussy done` is not available in this build"
    )))
}
