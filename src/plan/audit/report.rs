//! What the audit reports: each [`Issue`] with its [`Severity`] and [`IssueCode`], and
//! the [`AuditReport`] with its [`Summary`], as text or JSON.

use serde::Serialize;
use std::fmt;
use std::path::Path;

use crate::plan::load::PlanError;
use crate::plan::model::Location;

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
    /// The phases (indices into [`Plan::phases`](crate::plan::Plan::phases)) the issue makes invalid.
    #[serde(skip)]
    pub phases: Vec<usize>,
}

impl Issue {
    pub(super) fn new(
        code: IssueCode,
        message: String,
        location: Location,
        suggestion: String,
    ) -> Self {
        Issue {
            severity: code.severity(),
            code,
            message,
            location,
            suggestion,
            phases: Vec::new(),
        }
    }

    pub(super) fn about(mut self, phases: impl IntoIterator<Item = usize>) -> Self {
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
                        crate::plan::load::MASTER_FILE
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
