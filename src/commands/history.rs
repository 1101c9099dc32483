//! `debussy history`.

use crate::cli::{GlobalArgs, HistoryArgs};
use crate::exit::{CommandResult, Failure};

pub(super) fn run(global: &GlobalArgs, args: &HistoryArgs) -> CommandResult {
    let _ = (global, args);
    Err(Failure::usage(miette::miette!(
        "`debussy history` is not available in this build"
    )))
}
