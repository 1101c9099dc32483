//! `debussy init`.

use crate::cli::{GlobalArgs, InitArgs};
use crate::exit::{CommandResult, Failure};

pub(super) fn run(global: &GlobalArgs, args: &InitArgs) -> CommandResult {
    let _ = (global, args);
    Err(Failure::usage(miette::miette!(
        "`debussy init` is not available in this build"
    )))
}
