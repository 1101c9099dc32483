//! `debussy audit`.

use crate::cli::{AuditArgs, GlobalArgs};
use crate::exit::{CommandResult, Failure};

pub(super) fn run(global: &GlobalArgs, args: &AuditArgs) -> CommandResult {
    let _ = (global, args);
    Err(Failure::usage(miette::miette!(
        "`debussy audit` is not available in this build"
    )))
}
