//! Pre-flight checks: what `debussy run` needs before anything is recorded, found all
//! at once rather than one failed run at a time. `run`, `run --dry-run` and
//! `debussy doctor` share them.
//!
//! Each check is a [`Check`]: a name, a [`Verdict`], what was found and, when it is not
//! a pass, how to fix it. Gathering facts (resolving the agent program, reading the
//! scenario, probing directories, asking git) is the only I/O; turning facts into checks
//! is pure.

use std::path::Path;

use crate::agent;
use crate::config::{AgentKind, Loaded};

mod agents;
mod hooks;
mod login;
mod probe;
mod project;
mod report;
#[cfg(test)]
mod tests;

use agents::agent_check;
pub(crate) use agents::{configured_agent_check, phase_agent_checks};
pub(crate) use project::{config_check, git_check, git_check_allowing, jobs_check, plan_check};
use project::{scenario_check, tracked_run_data_check, untracked_check, writable_check};
pub(crate) use report::{Check, Report, Verdict};

/// What the checks look at.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Target<'a> {
    /// The effective configuration and project root.
    pub(crate) loaded: &'a Loaded,
    /// The master plan about to run, if any (the sim scenario defaults to its folder).
    pub(crate) plan: Option<&'a Path>,
    /// Whether run data is written and work committed here (not for `--dry-run`'s own
    /// sake: it reports what `run` would find).
    pub(crate) auto_commit: bool,
}

/// Run every check for `target`.
pub(crate) fn check(target: Target<'_>) -> Report {
    let config = &target.loaded.config;
    let root = &target.loaded.project_root;
    let mut checks = Vec::new();
    let agent = agent_check(target);
    let runs = agent.verdict == Verdict::Pass;
    checks.push(agent);
    if runs && let Some(claude) = login::claude_command(target) {
        checks.push(login::claude_login_check(&claude));
        checks.extend(hooks::hooks_check(target, &claude));
    }
    if config.agent.kind == AgentKind::Sim {
        if target.plan.is_none() && config.agent.scenario.is_none() {
            checks.push(Check::warn(
                "scenario",
                "not checked: it is found beside the plan, and no plan was given",
                "name the plan (`debussy doctor PLAN`), or set `agent.scenario`",
            ));
        } else {
            let scenario =
                agent::sim::scenario_path(config.agent.scenario.as_deref(), root, target.plan);
            checks.push(scenario_check(&scenario));
        }
    }
    checks.push(writable_check(root));
    if target.auto_commit {
        // Outside a repository the git check says so, with its fix.
        checks.extend(untracked_check(root, target.plan));
        checks.extend(tracked_run_data_check(root));
    }
    Report { checks }
}
