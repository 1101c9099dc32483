//! Compliance: after an attempt, did the agent do what the phase demands, beyond saying so?
//!
//! Pure: the orchestrator gathers the facts (gate results, the notes file's text, the
//! subagents the session really invoked) and this module judges them. Findings carry a
//! severity; the verdict follows from them: nothing → pass; only low findings → accept
//! with a warning; two or more critical → a full retry; otherwise a targeted fix.

use std::collections::BTreeSet;
use std::fmt;
use std::path::PathBuf;

use crate::agent::DeniedCall;
use crate::words::plural;

/// Sections a phase's notes file must have.
pub const REQUIRED_NOTES_SECTIONS: [&str; 3] =
    ["## Summary", "## Key Decisions", "## Files Modified"];

/// How much a finding matters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    /// Cosmetic: accepted with a warning.
    Low,
    /// Must be fixed, but a targeted fix will do.
    High,
    /// The work itself is in doubt.
    Critical,
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Severity::Low => "low",
            Severity::High => "high",
            Severity::Critical => "critical",
        })
    }
}

/// One problem found, with what to do about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// How much it matters.
    pub severity: Severity,
    /// What is wrong.
    pub problem: String,
    /// What the agent should do.
    pub fix: String,
    /// The gate this finding is about, if it is about one.
    pub gate: Option<String>,
}

/// A gate's result as compliance sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GateOutcome {
    /// Gate name.
    pub name: String,
    /// The command that ran.
    pub command: String,
    /// Whether it passed.
    pub passed: bool,
    /// The end of its output, for the remediation prompt.
    pub output_tail: String,
}

/// The facts about one attempt.
#[derive(Debug, Clone, Default)]
pub struct Facts {
    /// Gate results, in the order they ran.
    pub gates: Vec<GateOutcome>,
    /// The notes output file the phase names, if any.
    pub notes_path: Option<PathBuf>,
    /// Its text, `None` when it does not exist.
    pub notes_text: Option<String>,
    /// Agents the phase marks as required.
    pub required_agents: Vec<String>,
    /// `subagent_type`s of the Task/agent tool calls the sessions really made.
    pub invoked_agents: BTreeSet<String>,
    /// Tool calls the agent's permission system refused.
    pub permission_denials: Vec<DeniedCall>,
}

/// What to do with an attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Everything checks out.
    Pass,
    /// Only low findings: accept, but warn.
    AcceptWithWarnings(Vec<Finding>),
    /// Some findings must be fixed; a new session fixes just those.
    TargetedFix(Vec<Finding>),
    /// The work is in doubt (two or more critical findings): redo the phase.
    FullRetry(Vec<Finding>),
}

impl Verdict {
    /// The findings behind the verdict.
    #[must_use]
    pub fn findings(&self) -> &[Finding] {
        match self {
            Verdict::Pass => &[],
            Verdict::AcceptWithWarnings(f) | Verdict::TargetedFix(f) | Verdict::FullRetry(f) => f,
        }
    }

    /// Which verdict it is, without the findings.
    #[must_use]
    pub fn kind(&self) -> VerdictKind {
        match self {
            Verdict::Pass => VerdictKind::Pass,
            Verdict::AcceptWithWarnings(_) => VerdictKind::AcceptWithWarnings,
            Verdict::TargetedFix(_) => VerdictKind::TargetedFix,
            Verdict::FullRetry(_) => VerdictKind::FullRetry,
        }
    }

    /// Whether the phase may be marked completed.
    #[must_use]
    pub fn accepts(&self) -> bool {
        matches!(self, Verdict::Pass | Verdict::AcceptWithWarnings(_))
    }
}

/// A [`Verdict`] without its findings, as the run's events carry it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum VerdictKind {
    /// Everything checks out.
    Pass,
    /// Only low findings: accepted, with warnings.
    AcceptWithWarnings,
    /// A session fixes the findings.
    TargetedFix,
    /// The phase is redone.
    FullRetry,
}

impl VerdictKind {
    /// The verdict in words: `pass`, `accept with warnings`, `targeted fix`, `full retry`.
    #[must_use]
    pub fn words(self) -> &'static str {
        match self {
            VerdictKind::Pass => "pass",
            VerdictKind::AcceptWithWarnings => "accept with warnings",
            VerdictKind::TargetedFix => "targeted fix",
            VerdictKind::FullRetry => "full retry",
        }
    }
}

/// Judge an attempt.
#[must_use]
pub fn check(facts: &Facts) -> Verdict {
    let findings = findings(facts);
    let critical = findings
        .iter()
        .filter(|f| f.severity == Severity::Critical)
        .count();
    if findings.is_empty() {
        Verdict::Pass
    } else if findings.iter().all(|f| f.severity == Severity::Low) {
        Verdict::AcceptWithWarnings(findings)
    } else if critical >= 2 {
        Verdict::FullRetry(findings)
    } else {
        Verdict::TargetedFix(findings)
    }
}

fn findings(facts: &Facts) -> Vec<Finding> {
    let mut findings = Vec::new();
    for gate in facts.gates.iter().filter(|g| !g.passed) {
        findings.push(Finding {
            severity: Severity::Critical,
            problem: format!("gate `{}` failed: `{}`", gate.name, gate.command),
            fix: format!(
                "make `{}` pass, then run it yourself to confirm",
                gate.command
            ),
            gate: Some(gate.name.clone()),
        });
    }
    if let Some(path) = &facts.notes_path {
        match &facts.notes_text {
            None => findings.push(Finding {
                severity: Severity::High,
                problem: format!("the notes file {} was not written", path.display()),
                fix: format!(
                    "write {} with the sections {}",
                    path.display(),
                    REQUIRED_NOTES_SECTIONS.join(", ")
                ),
                gate: None,
            }),
            Some(text) => {
                let missing: Vec<&str> = REQUIRED_NOTES_SECTIONS
                    .iter()
                    .copied()
                    .filter(|s| !has_heading(text, s))
                    .collect();
                if !missing.is_empty() {
                    findings.push(Finding {
                        severity: Severity::Low,
                        problem: format!(
                            "the notes file {} lacks {}",
                            path.display(),
                            missing.join(", ")
                        ),
                        fix: format!("add {} to {}", missing.join(", "), path.display()),
                        gate: None,
                    });
                }
            }
        }
    }
    for agent in &facts.required_agents {
        if !facts.invoked_agents.contains(agent) {
            findings.push(Finding {
                severity: Severity::High,
                problem: format!("the required agent `{agent}` was never invoked"),
                fix: format!("invoke the `{agent}` agent (Task tool, subagent_type `{agent}`) and act on its result"),
                gate: None,
            });
        }
    }
    if let Some(finding) = denials_finding(facts) {
        findings.push(finding);
    }
    findings
}

/// Tools whose refusal means the agent could not write its work.
const EDIT_TOOLS: [&str; 4] = ["Write", "Edit", "MultiEdit", "NotebookEdit"];

/// Refused tool calls: a configuration problem the agent cannot fix, so the fix is for the
/// person running the plan. It matters (high) when an edit was refused or a gate failed;
/// otherwise the work got done without those calls and it is a warning (low).
fn denials_finding(facts: &Facts) -> Option<Finding> {
    if facts.permission_denials.is_empty() {
        return None;
    }
    let calls: Vec<String> = facts
        .permission_denials
        .iter()
        .map(|call| format!("`{}`", call.describe()))
        .collect();
    let mut rules: Vec<String> = facts
        .permission_denials
        .iter()
        .map(DeniedCall::suggested_rule)
        .collect();
    rules.dedup();
    let rules: BTreeSet<String> = rules.into_iter().collect();
    let rules: Vec<String> = rules.into_iter().map(|rule| format!("`{rule}`")).collect();
    let severity = if facts.gates.iter().any(|g| !g.passed)
        || facts
            .permission_denials
            .iter()
            .any(|call| EDIT_TOOLS.contains(&call.tool_name.as_str()))
    {
        Severity::High
    } else {
        Severity::Low
    };
    Some(Finding {
        severity,
        problem: format!(
            "the agent was refused {} tool call{}: {} (add {} to `agent.allowed_tools`)",
            calls.len(),
            plural(calls.len()),
            calls.join(", "),
            rules.join(", ")
        ),
        fix: "do the work without the refused tool calls; the person running the plan can allow them in `agent.allowed_tools` in .debussy/config.yaml (or with `agent.permissions: bypass`)".to_owned(),
        gate: None,
    })
}

/// Whether `text` has the markdown heading `heading` on a line of its own
/// (case-insensitive, trailing text allowed: `## Summary of work` counts).
fn has_heading(text: &str, heading: &str) -> bool {
    text.lines().any(|line| {
        let line = line.trim().to_lowercase();
        line.starts_with(&heading.to_lowercase())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn denied(tool: &str, input: serde_json::Value) -> DeniedCall {
        DeniedCall {
            tool_name: tool.into(),
            tool_use_id: None,
            tool_input: input,
        }
    }

    #[test]
    fn refused_calls_are_a_finding_that_names_the_rule_to_add() {
        let facts = Facts {
            gates: vec![gate("tests", true)],
            permission_denials: vec![
                denied("Bash", serde_json::json!({"command": "npm test"})),
                denied("Bash", serde_json::json!({"command": "npm test -- -u"})),
            ],
            ..Facts::default()
        };
        let Verdict::AcceptWithWarnings(findings) = check(&facts) else {
            panic!("gates passed and nothing was edited: a warning");
        };
        assert_eq!(
            findings[0].problem,
            "the agent was refused 2 tool calls: `Bash: npm test`, `Bash: npm test -- -u` (add `Bash(npm test:*)` to `agent.allowed_tools`)"
        );
    }

    #[test]
    fn a_refused_edit_or_a_failed_gate_makes_refusals_high() {
        let edit = Facts {
            permission_denials: vec![denied("Write", serde_json::json!({"file_path": "a.py"}))],
            ..Facts::default()
        };
        assert_eq!(findings(&edit)[0].severity, Severity::High);
        let failed_gate = Facts {
            gates: vec![gate("tests", false)],
            permission_denials: vec![denied("Bash", serde_json::json!({"command": "pytest"}))],
            ..Facts::default()
        };
        assert!(
            findings(&failed_gate)
                .iter()
                .any(|f| f.severity == Severity::High && f.problem.contains("refused"))
        );
    }

    fn gate(name: &str, passed: bool) -> GateOutcome {
        GateOutcome {
            name: name.into(),
            command: format!("run-{name}"),
            passed,
            output_tail: String::new(),
        }
    }

    const GOOD_NOTES: &str = "# Notes\n## Summary\nx\n## Key Decisions\ny\n## Files Modified\nz\n";

    fn facts() -> Facts {
        Facts {
            gates: vec![gate("tests", true)],
            notes_path: Some("notes/phase-1.md".into()),
            notes_text: Some(GOOD_NOTES.into()),
            required_agents: vec!["task-validator".into()],
            invoked_agents: ["task-validator".to_owned()].into(),
            permission_denials: Vec::new(),
        }
    }

    #[test]
    fn everything_in_order_passes() {
        assert_eq!(check(&facts()), Verdict::Pass);
        assert_eq!(check(&Facts::default()), Verdict::Pass);
    }

    #[test]
    fn one_failed_gate_asks_for_a_targeted_fix() {
        let mut f = facts();
        f.gates.push(gate("lint", false));
        let verdict = check(&f);
        assert!(matches!(verdict, Verdict::TargetedFix(_)), "{verdict:?}");
        assert!(verdict.findings()[0].problem.contains("`lint`"));
        assert!(!verdict.accepts());
    }

    #[test]
    fn two_critical_findings_ask_for_a_full_retry() {
        let mut f = facts();
        f.gates = vec![gate("tests", false), gate("lint", false)];
        assert!(matches!(check(&f), Verdict::FullRetry(findings) if findings.len() == 2));
    }

    #[test]
    fn missing_notes_file_must_be_fixed() {
        let mut f = facts();
        f.notes_text = None;
        let verdict = check(&f);
        assert!(matches!(&verdict, Verdict::TargetedFix(v) if v[0].severity == Severity::High));
        assert!(verdict.findings()[0].fix.contains("## Key Decisions"));
    }

    #[test]
    fn notes_missing_sections_are_accepted_with_a_warning() {
        let mut f = facts();
        f.notes_text = Some("## summary of the work\n## Files Modified\n".into());
        let verdict = check(&f);
        assert!(verdict.accepts());
        let Verdict::AcceptWithWarnings(findings) = verdict else {
            panic!("not a warning")
        };
        assert_eq!(findings.len(), 1);
        assert!(findings[0].problem.contains("## Key Decisions"));
        assert!(
            !findings[0].problem.contains("## Summary"),
            "headings match case-insensitively"
        );
    }

    #[test]
    fn a_required_agent_must_really_be_invoked() {
        let mut f = facts();
        f.invoked_agents.clear();
        f.invoked_agents.insert("general-purpose".into());
        let verdict = check(&f);
        assert!(
            matches!(&verdict, Verdict::TargetedFix(v) if v[0].problem.contains("task-validator"))
        );
    }
}
