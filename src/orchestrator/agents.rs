//! The agent and model each phase runs with: the configured ones, or the phase file's
//! `**Agent:**` and `**Model:**`.
//!
//! A phase naming another agent kind runs that agent with its own defaults (its program
//! on `PATH`, no `agent.args`, which were written for the configured agent); `agent.env`,
//! the permissions and every other setting stay. A phase naming only a model keeps the
//! configured agent. Each such phase gets its own [`SessionSpec`], made and checked before
//! anything runs, so a missing program stops the run at once with its install command.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use crate::agent::{self, AgentError, BackendContext};
use crate::config::Config;
use crate::plan::{Phase, Plan};
use crate::session::SessionSpec;

use super::run::RunError;

/// The configuration a phase runs with, when it differs from the run's.
#[must_use]
pub fn phase_config(config: &Config, phase: &Phase) -> Option<Config> {
    if phase.agent.is_none() && phase.model.is_none() {
        return None;
    }
    let mut own = config.clone();
    if let Some(kind) = phase.agent
        && kind != config.agent.kind
    {
        own.agent.kind = kind;
        own.agent.command = None;
        own.agent.args = Vec::new();
        own.model = kind.default_model().to_owned();
    }
    if let Some(model) = &phase.model {
        own.model.clone_from(model);
    }
    Some(own)
}

/// The session settings of every phase that names its own agent or model, by phase id.
///
/// # Errors
/// [`RunError::Agent`] when a phase's agent cannot be prepared (its program is missing).
pub(super) fn phase_sessions(
    config: &Config,
    plan: &Plan,
    root: &Path,
) -> Result<BTreeMap<String, SessionSpec>, RunError> {
    let mut sessions = BTreeMap::new();
    for phase in &plan.phases {
        let Some(own) = phase_config(config, phase) else {
            continue;
        };
        let fail = |source: AgentError| RunError::Agent {
            phase: phase.id.as_str().to_owned(),
            source,
        };
        let backend = agent::backend(
            &own,
            BackendContext {
                project_root: root,
                plan_path: Some(&plan.master),
            },
        )
        .map_err(fail)?;
        match backend.command("", &own.model) {
            Ok(_) | Err(AgentError::ScenarioMissing { .. } | AgentError::Scenario(_)) => {}
            Err(err) => return Err(fail(err)),
        }
        let spec = SessionSpec::from_config(&own, Arc::from(backend), "", root, "")?;
        sessions.insert(phase.id.as_str().to_owned(), spec);
    }
    Ok(sessions)
}
