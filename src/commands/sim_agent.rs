//! `debussy __sim-agent SCENARIO --model M [--resume ID]`: the simulated agent's process
//! entry point.
//!
//! Reads the prompt from stdin (until EOF), plays the scenario's script for this session
//! (chosen by `DEBUSSY_PHASE_ID`, `DEBUSSY_ATTEMPT`, `DEBUSSY_RESTART`) and exits with the
//! script's code, or dies by the script's signal. A scenario that cannot be loaded is a
//! usage error (exit 2) printed on stderr, with nothing on stdout.

use std::io::Write;

use tokio::io::AsyncReadExt;

use crate::cli::SimAgentArgs;
use crate::exit::{CommandResult, Exit, Failure};
use crate::sim::Scenario;
use crate::sim::player::{self, PlayEnd, PlayerEnv};

pub(super) async fn run(args: SimAgentArgs) -> CommandResult {
    let scenario = Scenario::load(&args.scenario).map_err(Failure::usage)?;
    let mut prompt = String::new();
    tokio::io::stdin()
        .read_to_string(&mut prompt)
        .await
        .map_err(|err| Failure::usage(miette::miette!("read the prompt from stdin: {err}")))?;
    let mut env = PlayerEnv::from_process(&args.scenario, args.model, prompt)
        .map_err(|err| Failure::usage(miette::miette!("{err}")))?;
    env.resume = args.resume;
    let end = player::play(&scenario, &env, std::io::stdout())
        .await
        .map_err(|err| Failure::failed(miette::miette!("{err}")))?;
    let _ = std::io::stdout().flush();
    match end {
        PlayEnd::Exit(0) => Ok(Exit::Success),
        PlayEnd::Exit(code) => std::process::exit(code),
        PlayEnd::Signal(signal, code) => {
            let _ = std::io::stderr().flush();
            // Only reached if the signal did not kill us (it was blocked or ignored).
            let _ = nix::sys::signal::raise(signal);
            std::process::exit(code)
        }
    }
}
