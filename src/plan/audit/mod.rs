//! The audit: checks a loaded plan and reports issues, each with a severity, a code, a
//! message, a `file:line` location and a suggestion.
//!
//! Errors stop a run: MASTER_NOT_FOUND, MASTER_PARSE_ERROR, NO_PHASES, PHASE_NOT_FOUND,
//! PHASE_PARSE_ERROR, MISSING_GATES, UNKNOWN_GATE, CIRCULAR_DEPENDENCY, MISSING_AGENT,
//! DUPLICATE_PHASE_ID. Warnings do not (unless `--strict`): NO_NOTES_OUTPUT,
//! MISSING_DEPENDENCY. Pure: the available agents and gate commands are given.

use std::collections::BTreeMap;

use super::agents::AgentCatalog;
use super::model::Plan;

mod report;
mod rules;
#[cfg(test)]
mod tests;

pub use report::{AuditReport, Issue, IssueCode, JsonReport, Severity, Summary};
use rules::{cycles, duplicate_ids, missing_agents, no_phases, parse_problems, phase_checks};

/// What the audit needs besides the plan.
#[derive(Debug, Clone, Copy)]
pub struct AuditContext<'a> {
    /// The `gates` config map: default commands by gate name.
    pub gates: &'a BTreeMap<String, String>,
    /// The agents a run can use.
    pub agents: &'a AgentCatalog,
}

/// Audit a loaded plan.
#[must_use]
pub fn audit(plan: &Plan, context: &AuditContext<'_>) -> AuditReport {
    let mut issues = Vec::new();
    parse_problems(plan, &mut issues);
    no_phases(plan, &mut issues);
    duplicate_ids(plan, &mut issues);
    for (index, _) in plan.phases.iter().enumerate() {
        phase_checks(plan, index, context, &mut issues);
    }
    missing_agents(plan, context.agents, &mut issues);
    cycles(plan, &mut issues);
    // Errors first; within a severity, discovery (plan) order.
    issues.sort_by_key(|issue| issue.severity == Severity::Warning);
    let errors = issues
        .iter()
        .filter(|i| i.severity == Severity::Error)
        .count();
    let phases_valid = plan
        .phases
        .iter()
        .enumerate()
        .filter(|(index, phase)| {
            phase.file.is_loaded()
                && !issues
                    .iter()
                    .any(|i| i.severity == Severity::Error && i.phases.contains(index))
        })
        .count();
    AuditReport {
        summary: Summary {
            master_plan: plan.title.clone(),
            phases_found: plan.phases.len(),
            phases_valid,
            gates_total: plan.phases.iter().map(|p| p.gates.len()).sum(),
            errors,
            warnings: issues.len() - errors,
        },
        issues,
    }
}
