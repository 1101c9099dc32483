//! `debussy completions SHELL`: print a completion script on stdout.

use clap::CommandFactory;

use crate::cli::{Cli, CompletionsArgs};
use crate::exit::{CommandResult, Exit};

pub(super) fn run(args: &CompletionsArgs) -> CommandResult {
    let mut command = Cli::command();
    clap_complete::generate(args.shell, &mut command, "debussy", &mut std::io::stdout());
    Ok(Exit::Success)
}
