//! Load, discover agents, audit: the one call `debussy audit` and `debussy run` make
//! before anything else.

use std::collections::BTreeMap;
use std::path::Path;

use super::agents::{AgentCatalog, agent_dirs};
use super::audit::{AuditContext, AuditReport, audit};
use super::load::load;
use super::model::Plan;

/// A plan and its audit.
#[derive(Debug, Clone)]
pub struct Inspection {
    /// The plan, unless its master plan could not be read.
    pub plan: Option<Plan>,
    /// The audit of the plan (or of the failure to read it).
    pub report: AuditReport,
    /// The agents that were available to the audit.
    pub agents: AgentCatalog,
}

/// Read the plan at `master` (a master plan file, or a directory holding
/// `MASTER_PLAN.md`), find the agents available from `project_root` and the plan's
/// directory, and audit the plan against them and the `gates` config map.
#[must_use]
pub fn inspect(master: &Path, gates: &BTreeMap<String, String>, project_root: &Path) -> Inspection {
    match load(master) {
        Ok(plan) => {
            let dirs = agent_dirs(project_root, plan.dir());
            tracing::debug!(master = %plan.master.display(), phases = plan.phases.len(), "plan loaded");
            for phase in &plan.phases {
                tracing::debug!(
                    phase = %phase.id,
                    file = ?phase.file,
                    gates = phase.gates.len(),
                    tasks = phase.tasks.len(),
                    agents = ?phase.required_agents.iter().map(|a| &a.name).collect::<Vec<_>>(),
                    "phase parsed"
                );
                for gate in &phase.gates {
                    let command = gate.resolve(gates).map(|c| c.command);
                    tracing::debug!(phase = %phase.id, gate = %gate.name, ?command, "gate");
                }
            }
            tracing::debug!(?dirs, "searching agent directories");
            let agents = AgentCatalog::discover(dirs);
            let mut report = audit(
                &plan,
                &AuditContext {
                    gates,
                    agents: &agents,
                },
            );
            if plan.phase_like.is_some()
                && let Some(master) = super::nearby::master_beside(&plan.master)
            {
                for issue in &mut report.issues {
                    if issue.code == super::audit::IssueCode::NoPhases {
                        issue.suggestion = format!("did you mean {}?", master.display());
                    }
                }
            }
            Inspection {
                plan: Some(plan),
                report,
                agents,
            }
        }
        Err(error) => {
            let nearby = match &error {
                super::load::PlanError::NotFound { .. } => super::nearby::nearby(master),
                super::load::PlanError::Read { .. } => None,
            };
            Inspection {
                plan: None,
                report: AuditReport::unreadable(&error, nearby.as_deref()),
                agents: AgentCatalog::default(),
            }
        }
    }
}
