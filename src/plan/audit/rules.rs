//! The audit's rules, one function a kind of problem, each adding its issues.

use std::fmt;

use crate::plan::agents::AgentCatalog;
use crate::plan::model::{DependencyTarget, Location, PhaseFile, PhaseId, Plan, ProblemScope};
use crate::plan::topo::find_cycles;

use super::AuditContext;
use super::report::{Issue, IssueCode};

pub(super) fn parse_problems(plan: &Plan, issues: &mut Vec<Issue>) {
    for problem in &plan.problems {
        let (code, phases) = match problem.scope {
            ProblemScope::Master => (IssueCode::MasterParseError, Vec::new()),
            ProblemScope::Phase(index) => (IssueCode::PhaseParseError, vec![index]),
        };
        issues.push(
            Issue::new(
                code,
                problem.message.clone(),
                problem.location.clone(),
                problem.hint.clone(),
            )
            .about(phases),
        );
    }
}

const TABLE_EXAMPLE: &str =
    "| Phase | Title | Status |\n|-------|-------|--------|\n| 1 | [Setup](phase-1.md) | Pending |";

pub(super) fn no_phases(plan: &Plan, issues: &mut Vec<Issue>) {
    if !plan.phases.is_empty() {
        return;
    }
    let add_table = format!(
        "add a `## Phases` table with a `Phase` column of ids and a link to each phase file:\n{TABLE_EXAMPLE}"
    );
    let (message, location, help) = match (&plan.phases_table, &plan.phase_like) {
        (None, Some(marker)) => (
            format!(
                "{} looks like a phase file, not a master plan: it has no phases table",
                plan.master.display()
            ),
            marker.clone(),
            format!(
                "give the master plan that links it (the plan's `{}`, or its directory); a master plan holds the phases table",
                crate::plan::load::MASTER_FILE
            ),
        ),
        (None, None) => (
            format!(
                "{} has no phases table, so it lists no phases",
                plan.master.display()
            ),
            Location::file(&plan.master),
            add_table,
        ),
        (Some(table), _) => (
            "the phases table lists no phases".to_owned(),
            table.clone(),
            add_table,
        ),
    };
    issues.push(Issue::new(IssueCode::NoPhases, message, location, help));
}

pub(super) fn duplicate_ids(plan: &Plan, issues: &mut Vec<Issue>) {
    for (index, phase) in plan.phases.iter().enumerate() {
        let Some(first) = plan.phases[..index].iter().find(|p| p.id == phase.id) else {
            continue;
        };
        issues.push(
            Issue::new(
                IssueCode::DuplicatePhaseId,
                format!(
                    "phase id {} is used twice in the phases table (lines {} and {})",
                    phase.id,
                    first.row.line.unwrap_or(0),
                    phase.row.line.unwrap_or(0)
                ),
                phase.row.clone(),
                "give every phase its own id, and update the dependencies that name it".to_owned(),
            )
            .about([index]),
        );
    }
}

pub(super) fn phase_checks(
    plan: &Plan,
    index: usize,
    context: &AuditContext<'_>,
    issues: &mut Vec<Issue>,
) {
    let phase = &plan.phases[index];
    match &phase.file {
        PhaseFile::Loaded(_) => {}
        PhaseFile::NotFound(path) => {
            issues.push(
                Issue::new(
                    IssueCode::PhaseNotFound,
                    format!(
                        "phase {} links {}, which does not exist",
                        phase.id,
                        path.display()
                    ),
                    phase.row.clone(),
                    format!(
                        "create {} or fix the link in the phases table (links resolve from the master plan's directory)",
                        path.display()
                    ),
                )
                .about([index]),
            );
            return;
        }
        PhaseFile::Unreadable { path, reason } => {
            issues.push(
                Issue::new(
                    IssueCode::PhaseParseError,
                    format!(
                        "cannot read phase {}'s file {}: {reason}",
                        phase.id,
                        path.display()
                    ),
                    Location::file(path),
                    "a phase file must be a readable UTF-8 markdown file".to_owned(),
                )
                .about([index]),
            );
            return;
        }
        // Reported as MASTER_PARSE_ERROR on the row.
        PhaseFile::NoLink => return,
    }
    if phase.gates.is_empty() {
        issues.push(
            Issue::new(
                IssueCode::MissingGates,
                format!("phase {} ({}) has no gates", phase.id, phase.title),
                phase.location(),
                "add a `## Gates` section with one bullet per check (without gates nothing can tell \
                 that the phase is done), for example:\n## Gates\n- tests: `cargo test --all` passes"
                    .to_owned(),
            )
            .about([index]),
        );
    }
    for gate in &phase.gates {
        if gate.resolve(context.gates).is_none() {
            issues.push(
                Issue::new(
                    IssueCode::UnknownGate,
                    format!("gate `{}` of phase {} has no command", gate.name, phase.id),
                    gate.location.clone(),
                    format!(
                        "write the command as inline code in the bullet, or add `{name}` to the \
                         `gates` map of the configuration, for example:\n- {name}: `<command>` {criterion}",
                        name = gate.name,
                        criterion = if gate.criterion.is_empty() { "passes" } else { &gate.criterion },
                    ),
                )
                .about([index]),
            );
        }
    }
    if phase.notes_out.is_none() {
        issues.push(
            Issue::new(
                IssueCode::NoNotesOutput,
                format!("phase {} does not say where it writes its notes", phase.id),
                phase.location(),
                format!(
                    "add a notes step to its `## Process Wrapper` so later phases can read what this \
                     one learned:\n- [ ] Write notes to: `notes/NOTES_phase_{}.md`",
                    phase.id
                ),
            )
            .about([index]),
        );
    }
    for dep in &phase.depends_on {
        let missing = match &dep.target {
            DependencyTarget::Id(id) => plan.phase(id).is_none(),
            DependencyTarget::File(_) => true,
        };
        if missing {
            issues.push(
                Issue::new(
                    IssueCode::MissingDependency,
                    format!(
                        "phase {} depends on {}, which is not in the plan",
                        phase.id, dep.target
                    ),
                    dep.location.clone(),
                    format!(
                        "add it to the phases table of {}, or remove the dependency",
                        plan.master.display()
                    ),
                )
                .about([index]),
            );
        }
    }
}

pub(super) fn missing_agents(plan: &Plan, agents: &AgentCatalog, issues: &mut Vec<Issue>) {
    // agent name → (first mention, phases requiring it), in order of first mention.
    let mut required: Vec<(&str, &Location, Vec<usize>)> = Vec::new();
    for (index, phase) in plan.phases.iter().enumerate() {
        for agent in &phase.required_agents {
            match required.iter_mut().find(|(name, _, _)| *name == agent.name) {
                Some((_, _, phases)) => phases.push(index),
                None => required.push((&agent.name, &agent.location, vec![index])),
            }
        }
    }
    for (name, location, phases) in required {
        if agents.find(name).is_some() {
            continue;
        }
        let ids: Vec<&PhaseId> = phases.iter().map(|&i| &plan.phases[i].id).collect();
        let searched: Vec<String> = agents
            .dirs()
            .iter()
            .map(|d| d.display().to_string())
            .collect();
        issues.push(
            Issue::new(
                IssueCode::MissingAgent,
                format!(
                    "{} {} require{} agent `{name}`, which is not built into Claude Code and has no agent file",
                    if ids.len() == 1 { "phase" } else { "phases" },
                    join(&ids),
                    if ids.len() == 1 { "s" } else { "" },
                ),
                location.clone(),
                format!(
                    "create {}, or remove the requirement; agent files are searched in:\n{}",
                    plan.dir().join(".claude").join("agents").join(format!("{name}.md")).display(),
                    if searched.is_empty() { "(no directories)".to_owned() } else { searched.join("\n") }
                ),
            )
            .about(phases),
        );
    }
}

pub(super) fn cycles(plan: &Plan, issues: &mut Vec<Issue>) {
    for cycle in find_cycles(plan) {
        let indices: Vec<usize> = cycle
            .0
            .iter()
            .filter_map(|id| plan.phases.iter().position(|p| &p.id == id))
            .collect();
        // Each step of the cycle is one dependency the user could remove.
        let steps: Vec<(usize, &PhaseId)> = indices
            .iter()
            .enumerate()
            .map(|(at, &from)| (from, &cycle.0[(at + 1) % cycle.0.len()]))
            .collect();
        let edge_location = |from: usize, to: &PhaseId| {
            let phase = &plan.phases[from];
            phase
                .depends_on
                .iter()
                .find(|d| d.target == DependencyTarget::Id(to.clone()))
                .map_or_else(|| phase.location(), |d| d.location.clone())
        };
        let choices: Vec<String> = steps
            .iter()
            .map(|&(from, to)| {
                format!(
                    "phase {} on phase {to} ({})",
                    plan.phases[from].id,
                    edge_location(from, to)
                )
            })
            .collect();
        let Some(&(first_from, first_to)) = steps.first() else {
            continue;
        };
        issues.push(
            Issue::new(
                IssueCode::CircularDependency,
                format!("circular dependency: {cycle}"),
                edge_location(first_from, first_to),
                format!(
                    "phases in a cycle can never start; remove one of these dependencies: {}",
                    choices.join("; ")
                ),
            )
            .about(indices),
        );
    }
}

fn join<T: fmt::Display>(items: &[T]) -> String {
    match items {
        [] => String::new(),
        [one] => one.to_string(),
        [init @ .., last] => format!(
            "{} and {last}",
            init.iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}
