//! `debussy completions SHELL`: print a completion script on stdout.

use clap::CommandFactory;

use crate::cli::{Cli, CompletionsArgs};
use crate::exit::{CommandResult, Exit};

pub(super) fn run(args: &CompletionsArgs) -> CommandResult {
    let mut command = Cli::command();
    // Generated into memory first: clap_complete panics when its writer fails, and a
    // closed pipe must be a quiet exit.
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut command, "debussy", &mut script);
    super::render::print(&String::from_utf8_lossy(&script))?;
    Ok(Exit::Success)
}
