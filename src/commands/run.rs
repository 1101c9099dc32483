//! `debussy run`.

mod dry_run;

use crate::cli::{GlobalArgs, RunArgs};
use crate::exit::{CommandResult, Failure};

pub(super) async fn run(global: &GlobalArgs, args: RunArgs) -> CommandResult {
    if args.dry_run {
        return dry_run::run(global, &args);
    }
    Err(Failure::usage(miette::miette!(
        "`debussy run` is not available in this build"
    )))
}
