//! `debussy completions SHELL`: print a completion script on stdout.

use clap::{Command, CommandFactory};

use crate::cli::{Cli, CompletionsArgs};
use crate::exit::{CommandResult, Exit};

pub(super) fn run(args: &CompletionsArgs) -> CommandResult {
    let mut command = visible(&Cli::command());
    // Generated into memory first: clap_complete panics when its writer fails, and a
    // closed pipe must be a quiet exit.
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut command, "debussy", &mut script);
    super::render::print_exactly(&String::from_utf8_lossy(&script))?;
    Ok(Exit::Success)
}

/// `command` without its hidden subcommands (`__sim-agent`), which completion scripts
/// would otherwise offer: clap's generators list every subcommand.
fn visible(command: &Command) -> Command {
    let mut shown = Command::new("debussy")
        .version(env!("CARGO_PKG_VERSION"))
        .args(command.get_arguments().cloned())
        .subcommands(
            command
                .get_subcommands()
                .filter(|sub| !sub.is_hide_set())
                .cloned(),
        );
    if let Some(about) = command.get_about() {
        shown = shown.about(about.clone());
    }
    shown
}
