//! `debussy-mcp`: the long-lived `debussy mcp supervise` and `debussy mcp bridge`
//! processes in a binary without the run loop, the HUD, git and SQLite. One of them runs
//! per MCP client and server for as long as the client does, so what it keeps resident
//! counts; `debussy mcp …` replaces itself with this binary when it is installed beside
//! `debussy`. It takes the same arguments as `debussy`, `mcp` included.

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use debussy::cli::{GlobalArgs, McpCommand};
use debussy::{commands, exit::Exit, logging};

/// The arguments `debussy` was given for an `mcp` command.
#[derive(Debug, Parser)]
#[command(name = "debussy", version, about, long_about = None, propagate_version = true)]
struct Cli {
    #[command(flatten)]
    global: GlobalArgs,

    #[command(subcommand)]
    command: Top,
}

#[derive(Debug, Subcommand)]
enum Top {
    /// MCP servers that survive restarts.
    #[command(subcommand)]
    Mcp(McpCommand),
}

fn main() -> ExitCode {
    // First: started as the reaper of a child, this process serves only that.
    if let Some(code) = debussy::process::reaper::run_if_reaper() {
        return code;
    }
    debussy::diagnostics::install_style();
    let cli = Cli::parse();
    logging::init(cli.global.log_settings());
    // The supervisor and the bridge run on a single-threaded runtime of their own; this
    // one only waits for them.
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("debussy: failed to start the async runtime: {err}");
            return ExitCode::from(Exit::Failure.code());
        }
    };
    let Top::Mcp(command) = cli.command;
    debussy::exit::exit_code(runtime.block_on(commands::dispatch_mcp(&cli.global, command)))
}
