//! The agent checks: the program of each agent the plan runs can be found and runs (and
//! says its version). That is the configured agent, and every other kind a phase names
//! (`**Agent:**`), each with its own profile (`agents.<kind>`).

use std::collections::BTreeMap;
use std::path::Path;

use super::{Check, Target};
use crate::agent::{self, AgentError, BackendContext, BackendSettings};
use crate::config::{AgentKind, Loaded};

/// Whether a check runs the program to ask its version, or only finds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Depth {
    /// Find the program on `PATH` (or at its configured path).
    Find,
    /// Also run `PROGRAM --version` (real agent CLIs only).
    Run,
}

/// The configured agent's program can be found (and, for a real agent CLI, runs and says
/// its version).
pub(super) fn agent_check(target: Target<'_>) -> Check {
    let settings = crate::session::default_backend_settings(&target.loaded.config);
    kind_check(target.loaded, &settings, target.plan, Depth::Run)
}

/// Whether the configured agent's program can be found (without running it), for a plan
/// at `plan`.
pub(crate) fn configured_agent_check(loaded: &Loaded, plan: &Path) -> Check {
    let settings = crate::session::default_backend_settings(&loaded.config);
    kind_check(loaded, &settings, Some(plan), Depth::Find)
}

/// For each other agent kind that phases name (`**Agent:**`), whether its profile's
/// program can be found and runs: `run` refuses to start without it. One check per
/// kind, naming its phases.
pub(crate) fn phase_agent_checks(loaded: &Loaded, plan: &crate::plan::Plan) -> Vec<Check> {
    let config = &loaded.config;
    let mut phases: BTreeMap<AgentKind, Vec<String>> = BTreeMap::new();
    for phase in &plan.phases {
        if let Some(kind) = phase.agent.filter(|kind| *kind != config.agent.kind) {
            phases.entry(kind).or_default().push(phase.id.to_string());
        }
    }
    phases
        .into_iter()
        .map(|(kind, ids)| {
            let settings = crate::session::backend_settings(config, kind);
            let check = kind_check(loaded, &settings, Some(&plan.master), Depth::Run);
            let which = format!(
                "phase{} {}",
                crate::words::plural(ids.len()),
                ids.join(", ")
            );
            Check {
                detail: format!("{which}: {}", check.detail),
                ..check
            }
        })
        .collect()
}

/// The check of one agent kind's profile: its program found (and run, at
/// [`Depth::Run`]), or why not and how to fix it.
fn kind_check(
    loaded: &Loaded,
    settings: &BackendSettings,
    plan: Option<&Path>,
    depth: Depth,
) -> Check {
    let backend = match agent::backend(
        settings,
        BackendContext {
            project_root: &loaded.project_root,
            plan_path: plan,
        },
    ) {
        Ok(backend) => backend,
        Err(err) => return agent_failure(&err, settings.kind),
    };
    let program = match backend.command("", &settings.model) {
        Ok(command) => command.program,
        // Scenario problems have a check of their own.
        Err(AgentError::ScenarioMissing { .. } | AgentError::Scenario(_)) => {
            return Check::pass("agent", format!("{} (built in)", backend.name()));
        }
        Err(err) => return agent_failure(&err, settings.kind),
    };
    if settings.kind == AgentKind::Sim || depth == Depth::Find {
        return Check::pass(
            "agent",
            format!("{} ({})", backend.name(), program.display()),
        );
    }
    match version(&program, backend.version_env()) {
        Ok(version) => Check::pass(
            "agent",
            format!("{} ({}, {version})", backend.name(), program.display()),
        ),
        Err(why) => Check::fail(
            "agent",
            format!("{} does not run: {why}", program.display()),
            install_hint(settings.kind),
        ),
    }
}

fn install_hint(kind: AgentKind) -> &'static str {
    match kind {
        AgentKind::Codex => agent::codex::INSTALL_HINT,
        AgentKind::Gemini => agent::gemini::INSTALL_HINT,
        AgentKind::Claude | AgentKind::Sim => agent::claude::INSTALL_HINT,
    }
}

fn agent_failure(err: &AgentError, kind: AgentKind) -> Check {
    let help = match err {
        AgentError::ProgramNotFound { help, .. } => help.clone(),
        _ => {
            format!("check `agent.kind` and `agents.{kind}.command` (`debussy config` shows them)")
        }
    };
    Check::fail("agent", err.to_string(), help)
}

/// `PROGRAM --version`'s first line, asked with `env`, or why it could not be had.
fn version(program: &Path, env: &[(&str, &str)]) -> Result<String, String> {
    let env: BTreeMap<String, String> = env
        .iter()
        .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
        .collect();
    let answer = super::probe::probe(program, &["--version"], &env)?;
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
