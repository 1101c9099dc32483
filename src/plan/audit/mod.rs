//! The audit: checks a loaded plan and reports issues, each with a severity, a code, a
//! message, a `file:line` location and a suggestion.
//!
//! Errors stop a run: MASTER_NOT_FOUND, MASTER_PARSE_ERROR, NO_PHASES, PHASE_NOT_FOUND,
//! PHASE_PARSE_ERROR, MISSING_GATES, UNKNOWN_GATE, CIRCULAR_DEPENDENCY, MISSING_AGENT,
//! DUPLICATE_PHASE_ID. Warnings do not (unless `--strict`): NO_NOTES_OUTPUT,
//! MISSING_DEPENDENCY. Pure: the available agents and gate commands are given.

use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use super::agents::AgentCatalog;
use super::load::PlanError;
use super::model::{DependencyTarget, Location, PhaseFile, PhaseId, Plan, ProblemScope};
use super::topo::find_cycles;

/// How serious an issue is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// The plan cannot be run as written.
    Error,
    /// The plan can run, but something is probably wrong.
    Warning,
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
        })
    }
}

/// What an issue is about (documented in `docs/plan-format.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum IssueCode {
    /// The master plan file does not exist.
    MasterNotFound,
    /// The master plan cannot be read, or a row of its phases table cannot be understood.
    MasterParseError,
    /// The master plan lists no phases.
    NoPhases,
    /// A phase file linked from the master plan does not exist.
    PhaseNotFound,
    /// A phase file cannot be read, or a field in it cannot be understood.
    PhaseParseError,
    /// A phase has no gates.
    MissingGates,
    /// A gate has no command (none in the plan, none in the `gates` config map).
    UnknownGate,
    /// Phases depend on each other in a cycle.
    CircularDependency,
    /// A required agent is neither built in nor defined by an agent file.
    MissingAgent,
    /// Two rows of the phases table use the same id.
    DuplicatePhaseId,
    /// A phase does not say where it writes its notes.
    NoNotesOutput,
    /// A phase depends on a phase that is not in the plan.
    MissingDependency,
}

impl IssueCode {
    /// The code as reports print it (`MISSING_GATES`).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            IssueCode::MasterNotFound => "MASTER_NOT_FOUND",
            IssueCode::MasterParseError => "MASTER_PARSE_ERROR",
            IssueCode::NoPhases => "NO_PHASES",
            IssueCode::PhaseNotFound => "PHASE_NOT_FOUND",
            IssueCode::PhaseParseError => "PHASE_PARSE_ERROR",
            IssueCode::MissingGates => "MISSING_GATES",
            IssueCode::UnknownGate => "UNKNOWN_GATE",
            IssueCode::CircularDependency => "CIRCULAR_DEPENDENCY",
            IssueCode::MissingAgent => "MISSING_AGENT",
            IssueCode::DuplicatePhaseId => "DUPLICATE_PHASE_ID",
            IssueCode::NoNotesOutput => "NO_NOTES_OUTPUT",
            IssueCode::MissingDependency => "MISSING_DEPENDENCY",
        }
    }

    /// How serious issues with this code are.
    #[must_use]
    pub fn severity(self) -> Severity {
        match self {
            IssueCode::NoNotesOutput | IssueCode::MissingDependency => Severity::Warning,
            _ => Severity::Error,
        }
    }
}

impl fmt::Display for IssueCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One finding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Issue {
    /// How serious.
    pub severity: Severity,
    /// What kind.
    pub code: IssueCode,
    /// What is wrong.
    pub message: String,
    /// Where (`file:line`).
    pub location: Location,
    /// How to fix it.
    pub suggestion: String,
    /// The phases (indices into [`Plan::phases`]) the issue makes invalid.
    #[serde(skip)]
    pub phases: Vec<usize>,
}

impl Issue {
    fn new(code: IssueCode, message: String, location: Location, suggestion: String) -> Self {
        Issue {
            severity: code.severity(),
            code,
            message,
            location,
            suggestion,
            phases: Vec::new(),
        }
    }

    fn about(mut self, phases: impl IntoIterator<Item = usize>) -> Self {
        self.phases.extend(phases);
        self
    }
}

/// The counts at the top of a report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Summary {
    /// The plan's title (the path, when the master plan could not be read).
    pub master_plan: String,
    /// Rows in the phases table.
    pub phases_found: usize,
    /// Phases whose file was read and that have no error.
    pub phases_valid: usize,
    /// Gates across all phases.
    pub gates_total: usize,
    /// Issues of severity error.
    pub errors: usize,
    /// Issues of severity warning.
    pub warnings: usize,
}

/// The result of auditing a plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditReport {
    /// The counts.
    pub summary: Summary,
    /// The issues, errors first, each group in plan order.
    pub issues: Vec<Issue>,
}

/// A report as `debussy audit --format json` prints it.
#[derive(Debug, Serialize)]
pub struct JsonReport<'a> {
    /// Whether the audit passes (with `--strict`, warnings fail it too).
    pub passed: bool,
    /// The counts.
    pub summary: &'a Summary,
    /// The issues.
    pub issues: &'a [Issue],
}

impl AuditReport {
    /// Whether the plan passes: no errors, and with `strict` no warnings either.
    #[must_use]
    pub fn passed(&self, strict: bool) -> bool {
        self.summary.errors == 0 && (!strict || self.summary.warnings == 0)
    }

    /// The report in its JSON shape.
    #[must_use]
    pub fn to_json(&self, strict: bool) -> JsonReport<'_> {
        JsonReport {
            passed: self.passed(strict),
            summary: &self.summary,
            issues: &self.issues,
        }
    }

    /// The report for a master plan that could not be read; `nearby` is the existing
    /// plan a missing path most likely meant.
    #[must_use]
    pub fn unreadable(error: &PlanError, nearby: Option<&Path>) -> Self {
        let issue = match error {
            PlanError::NotFound { path } => Issue::new(
                IssueCode::MasterNotFound,
                format!("master plan {} does not exist", path.display()),
                Location::file(path),
                match nearby {
                    Some(nearby) => format!("did you mean {}?", nearby.display()),
                    None => format!(
                        "check the path; a plan directory must hold a `{}` with a `## Phases` table",
                        super::load::MASTER_FILE
                    ),
                },
            ),
            PlanError::Read { path, source } => Issue::new(
                IssueCode::MasterParseError,
                format!("cannot read master plan {}: {source}", path.display()),
                Location::file(path),
                "the master plan must be a readable UTF-8 markdown file".to_owned(),
            ),
        };
        let path = match error {
            PlanError::NotFound { path } | PlanError::Read { path, .. } => path,
        };
        AuditReport {
            summary: Summary {
                master_plan: path.display().to_string(),
                phases_found: 0,
                phases_valid: 0,
                gates_total: 0,
                errors: 1,
                warnings: 0,
            },
            issues: vec![issue],
        }
    }
}

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

fn parse_problems(plan: &Plan, issues: &mut Vec<Issue>) {
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

fn no_phases(plan: &Plan, issues: &mut Vec<Issue>) {
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
                super::load::MASTER_FILE
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

fn duplicate_ids(plan: &Plan, issues: &mut Vec<Issue>) {
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

fn phase_checks(plan: &Plan, index: usize, context: &AuditContext<'_>, issues: &mut Vec<Issue>) {
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

fn missing_agents(plan: &Plan, agents: &AgentCatalog, issues: &mut Vec<Issue>) {
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

fn cycles(plan: &Plan, issues: &mut Vec<Issue>) {
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

#[cfg(test)]
mod tests;
