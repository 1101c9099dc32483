//! One module per subcommand. Commands parse nothing themselves: they take the clap types,
//! call into the library layers, print results and map outcomes to [`Exit`](crate::exit::Exit) codes.

mod agent_report;
mod audit;
mod clean;
mod completions;
mod config;
mod doctor;
mod done;
mod history;
mod hook;
mod init;
mod mcp;
mod progress;
mod render;
mod replay;
mod report;
mod run;
mod show;
mod sim_agent;
mod status;

use crate::cli::{Cli, Command, McpCommand};
use crate::exit::CommandResult;

/// Run the subcommand the user asked for.
pub async fn dispatch(cli: Cli) -> CommandResult {
    let global = &cli.global;
    match cli.command {
        Command::Run(args) => run::run(global, args).await,
        Command::Audit(args) => audit::run(global, &args),
        Command::Status(args) => status::run(global, &args),
        Command::History(args) => history::run(global, &args),
        Command::Clean(args) => clean::run(global, &args).await,
        Command::Init(args) => init::run(global, &args),
        Command::Done(args) => done::run(global, args),
        Command::Progress(args) => progress::run(global, args),
        Command::Replay(args) => replay::run(global, &args),
        Command::Config(args) => config::run(global, &args),
        Command::Completions(args) => completions::run(&args),
        Command::Doctor(args) => doctor::run(global, &args).await,
        Command::Show(args) => show::run(global, &args),
        Command::Mcp(command) => dispatch_mcp(global, command).await,
        Command::SimAgent(args) => sim_agent::run(args).await,
        Command::Hook(args) => hook::run(&args),
    }
}

/// Run a `debussy mcp …` command: what `debussy` does when the lean `debussy-mcp`
/// binary is not installed beside it, and all `debussy-mcp` does.
pub async fn dispatch_mcp(global: &crate::cli::GlobalArgs, command: McpCommand) -> CommandResult {
    match command {
        McpCommand::Supervise(args) => mcp::supervise(global, args).await,
        McpCommand::Bridge(args) => mcp::bridge(global, args).await,
    }
}

pub use mcp::exec_lean_mcp;

/// Load the effective configuration for a command: files, environment and, for `run`,
/// the flags the user typed. Errors are usage errors (exit 2).
pub(crate) fn load_config(
    global: &crate::cli::GlobalArgs,
    overrides: Option<&crate::cli::RunOverrides>,
) -> Result<crate::config::Loaded, crate::exit::Failure> {
    let options = load_options(global, overrides)?;
    crate::config::load(&options).map_err(crate::exit::Failure::usage)
}

/// The inputs of [`load_config`], taken from the running process.
fn load_options<'a>(
    global: &crate::cli::GlobalArgs,
    overrides: Option<&'a crate::cli::RunOverrides>,
) -> Result<crate::config::LoadOptions<'a>, crate::exit::Failure> {
    let cwd = std::env::current_dir().map_err(|err| {
        crate::exit::Failure::usage(miette::miette!("cannot read the current directory: {err}"))
    })?;
    crate::config::LoadOptions::from_process(
        cwd,
        global.config.clone(),
        overrides.map(|o| &o.values),
    )
    .map_err(crate::exit::Failure::usage)
}
