//! `debussy mcp supervise`.

use crate::cli::{GlobalArgs, SuperviseArgs};
use crate::exit::{CommandResult, Failure};

pub(super) async fn supervise(global: &GlobalArgs, args: SuperviseArgs) -> CommandResult {
    let _ = (global, args);
    Err(Failure::usage(miette::miette!(
        "`debussy mcp supervise` is not available in this build"
    )))
}
