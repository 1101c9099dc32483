//! The agent and model each phase runs with: the configured ones, or the phase file's
//! `**Agent:**` and `**Model:**`.
//!
//! A phase naming another agent kind runs that kind's own profile (`agents.<kind>`: its
//! program, arguments, environment, permissions, model and window), never the default
//! kind's program. A phase naming only a model keeps the configured agent. Each such
//! phase gets its own [`SessionSpec`], made and checked before anything runs, so a
//! missing program stops the run at once with its install command.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use crate::agent::{self, AgentError, BackendContext, BackendSettings};
use crate::config::Config;
use crate::plan::{Phase, Plan};
use crate::session::SessionSpec;

use super::error::RunError;

/// The agent a phase runs, when it differs from the run's: the kind its `**Agent:**`
/// names, with that kind's profile, running the model its `**Model:**` names.
#[must_use]
pub fn phase_agent(config: &Config, phase: &Phase) -> Option<BackendSettings> {
    if phase.agent.is_none() && phase.model.is_none() {
        return None;
    }
    let settings =
        crate::session::backend_settings(config, phase.agent.unwrap_or(config.agent.kind));
    Some(match &phase.model {
        Some(model) => settings.with_model(model.clone()),
        None => settings,
    })
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
        let Some(own) = phase_agent(config, phase) else {
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
        let spec = SessionSpec::from_config(config, &own, Arc::from(backend), "", root, "")?;
        sessions.insert(phase.id.as_str().to_owned(), spec);
    }
    Ok(sessions)
}
