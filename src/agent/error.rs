//! Why an agent could not be prepared.

use std::path::PathBuf;

/// Why an agent could not be prepared.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum AgentError {
    /// The agent program is not on `PATH` (or not at the configured path).
    #[error("agent program `{program}` not found ({searched})")]
    #[diagnostic(code(debussy::agent::not_found), help("{help}"))]
    ProgramNotFound {
        /// What was looked for.
        program: String,
        /// Where it was looked for, in words (`searched PATH=/usr/bin:/bin`).
        searched: String,
        /// How to fix it.
        help: String,
    },
    /// The running debussy executable could not be located (needed by the sim agent).
    #[error("locate the debussy executable for the simulated agent")]
    #[diagnostic(
        code(debussy::agent::current_exe),
        help("set `agents.sim.command` to the path of the debussy binary")
    )]
    CurrentExe(#[source] std::io::Error),
    /// The sim agent has no scenario to play.
    #[error("sim scenario file {} not found", path.display())]
    #[diagnostic(
        code(debussy::agent::no_scenario),
        help(
            "write a scenario (see docs/sim-agent.md) at that path, or set `agent.scenario` in the configuration"
        )
    )]
    ScenarioMissing {
        /// The path that was tried.
        path: PathBuf,
    },
    /// The agent cannot resume a stopped session (for the agent-written handoff).
    #[error("the {agent} agent cannot resume a stopped session")]
    #[diagnostic(code(debussy::agent::cannot_resume), help("set `handoff: mechanical`"))]
    CannotResume {
        /// The backend's name.
        agent: &'static str,
    },
    /// The sim agent's scenario is invalid.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Scenario(#[from] crate::sim::ScenarioError),
}
