//! `debussy config`.

use crate::cli::{ConfigArgs, GlobalArgs};
use crate::exit::{CommandResult, Failure};

pub(super) fn run(global: &GlobalArgs, args: &ConfigArgs) -> CommandResult {
    let _ = (global, args);
    Err(Failure::usage(miette::miette!(
        "`debussy config` is not available in this build"
    )))
}
