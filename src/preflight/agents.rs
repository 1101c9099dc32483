//! The agent checks: the configured agent's program can be found and runs (and says its
//! version), and so can the program of every agent a phase names.

use std::path::Path;

use super::{Check, Target};
use crate::agent::{self, AgentError, BackendContext};
use crate::config::{AgentKind, Loaded};

/// The agent program can be found (and, for a real agent CLI, runs and says its version).
pub(super) fn agent_check(target: Target<'_>) -> Check {
    let config = target.loaded.config.clone();
    let backend = match agent::backend(
        &config,
        BackendContext {
            project_root: &target.loaded.project_root,
            plan_path: target.plan,
        },
    ) {
        Ok(backend) => backend,
        Err(err) => return agent_failure(&err),
    };
    let program = match backend.command("", &config.model) {
        Ok(command) => command.program,
        // Scenario problems have a check of their own.
        Err(AgentError::ScenarioMissing { .. } | AgentError::Scenario(_)) => {
            return Check::pass("agent", format!("{} (built in)", backend.name()));
        }
        Err(err) => return agent_failure(&err),
    };
    if config.agent.kind == AgentKind::Sim {
        return Check::pass(
            "agent",
            format!("{} ({})", backend.name(), program.display()),
        );
    }
    match version(&program) {
        Ok(version) => Check::pass("agent", format!("{} ({version})", program.display())),
        Err(why) => Check::fail(
            "agent",
            format!("{} does not run: {why}", program.display()),
            match config.agent.kind {
                AgentKind::Codex => agent::codex::INSTALL_HINT,
                AgentKind::Gemini => agent::gemini::INSTALL_HINT,
                AgentKind::Claude | AgentKind::Sim => agent::claude::INSTALL_HINT,
            },
        ),
    }
}

/// Whether the configured agent's program can be found (without running it), for a plan
/// at `plan`.
pub(crate) fn configured_agent_check(loaded: &Loaded, plan: &Path) -> Check {
    program_check(loaded, &loaded.config, plan).unwrap_or_else(|failure| failure)
}

/// For each phase that names an agent of its own (`**Agent:**`), whether its program can
/// be found: `run` refuses to start without it.
pub(crate) fn phase_agent_checks(loaded: &Loaded, plan: &crate::plan::Plan) -> Vec<Check> {
    let mut checks = Vec::new();
    for phase in &plan.phases {
        let Some(own) = crate::orchestrator::agents::phase_config(&loaded.config, phase) else {
            continue;
        };
        if own.agent.kind == loaded.config.agent.kind {
            continue;
        }
        let id = &phase.id;
        let check = match program_check(loaded, &own, &plan.master) {
            Ok(pass) => Check {
                detail: format!("phase {id}: {}", pass.detail),
                ..pass
            },
            Err(failure) => Check {
                detail: format!("phase {id}: {}", failure.detail),
                fix: failure.fix.map(|fix| {
                    format!("{fix} (a phase's own agent is looked up on PATH: `agent.command` is the configured agent's)")
                }),
                ..failure
            },
        };
        checks.push(check);
    }
    checks
}

/// Whether the program of the agent `config` names can be found: a pass naming it, or the
/// failure with its fix.
fn program_check(
    loaded: &Loaded,
    config: &crate::config::Config,
    plan: &Path,
) -> Result<Check, Check> {
    let backend = agent::backend(
        config,
        BackendContext {
            project_root: &loaded.project_root,
            plan_path: Some(plan),
        },
    );
    match backend.and_then(|backend| {
        let name = backend.name();
        backend
            .command("", &config.model)
            .map(|command| (name, command))
    }) {
        Ok((agent, command)) => Ok(Check::pass(
            "agent",
            format!("{agent} ({})", command.program.display()),
        )),
        Err(AgentError::ScenarioMissing { .. } | AgentError::Scenario(_)) => {
            Ok(Check::pass("agent", "sim (built in)"))
        }
        Err(err) => Err(agent_failure(&err)),
    }
}

fn agent_failure(err: &AgentError) -> Check {
    let help = match err {
        AgentError::ProgramNotFound { help, .. } => help.clone(),
        _ => "check `agent.kind` and `agent.command` (`debussy config` shows them)".to_owned(),
    };
    Check::fail("agent", err.to_string(), help)
}

/// `PROGRAM --version`'s first line, or why it could not be had.
fn version(program: &Path) -> Result<String, String> {
    let answer = super::probe::probe(program, &["--version"], &Default::default())?;
    let first = answer.stdout.lines().next().unwrap_or("").trim().to_owned();
    if answer.success && !first.is_empty() {
        Ok(first)
    } else {
        Err(format!(
            "`--version` exited with {}: {}",
            answer.status,
            answer.stderr.lines().next().unwrap_or("").trim()
        ))
    }
}
