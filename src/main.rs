//! The `debussy` binary: parse arguments, set up logging, run the subcommand, exit.

use std::process::ExitCode;

use clap::Parser;
use debussy::{cli::Cli, commands, exit::Exit, logging};

fn main() -> ExitCode {
    // First: started as the reaper of a child, this process serves only that.
    if let Some(code) = debussy::process::reaper::run_if_reaper() {
        return code;
    }
    debussy::diagnostics::install_style();
    let cli = Cli::parse();
    logging::init(cli.global.log_settings());
    if matches!(cli.command, debussy::cli::Command::Mcp(_)) {
        commands::exec_lean_mcp();
    }
    // Two workers at least: the run's task calls git and SQLite inline (see `state`), and
    // a call waiting on another process must not hold the HUD or the session readers.
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get().max(2));
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            debussy::exit::to_stderr(&format!(
                "debussy: failed to start the async runtime: {err}\n"
            ));
            return ExitCode::from(Exit::Failure.code());
        }
    };
    debussy::exit::exit_code(runtime.block_on(commands::dispatch(cli)))
}
