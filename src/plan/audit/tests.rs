//! One test per audit code, on small in-memory plans.

use std::collections::{BTreeMap, HashMap};
use std::io;
use std::path::{Path, PathBuf};

use super::*;
use crate::plan::load::{PlanError, assemble};

/// A phase file with a gate, a notes output and nothing else.
const GOOD: &str = "# Phase\n\n## Process Wrapper\n- [ ] Write notes to: `notes/n.md`\n\n## Gates\n- tests: `cargo test` passes\n";

fn table(rows: &[(&str, &str)]) -> String {
    let mut master =
        String::from("# Demo - Master Plan\n\n| Phase | Title | Status |\n|---|---|---|\n");
    for (id, file) in rows {
        master.push_str(&format!("| {id} | [Phase {id}]({file}) | Pending |\n"));
    }
    master
}

fn plan(master: &str, files: &[(&str, &str)]) -> Plan {
    let files: HashMap<PathBuf, String> = files
        .iter()
        .map(|(p, t)| (Path::new("plan").join(p), (*t).to_owned()))
        .collect();
    assemble(Path::new("plan/MASTER_PLAN.md"), master, |path: &Path| {
        files
            .get(path)
            .cloned()
            .ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))
    })
}

fn run(plan: &Plan, agents: &[&str]) -> AuditReport {
    let gates: BTreeMap<String, String> = [("ruff".to_owned(), "ruff check .".to_owned())].into();
    let catalog = AgentCatalog::from_files(
        vec![PathBuf::from("plan/.claude/agents")],
        agents.iter().map(|a| {
            (
                (*a).to_owned(),
                PathBuf::from(format!("plan/.claude/agents/{a}.md")),
            )
        }),
    );
    audit(
        plan,
        &AuditContext {
            gates: &gates,
            agents: &catalog,
        },
    )
}

/// The audit of a plan whose one phase, `p1.md`, reads `text`.
fn audit_one(text: &str) -> AuditReport {
    run(&plan(&table(&[("1", "p1.md")]), &[("p1.md", text)]), &[])
}

fn codes(report: &AuditReport) -> Vec<(&'static str, String)> {
    report
        .issues
        .iter()
        .map(|i| (i.code.as_str(), i.location.to_string()))
        .collect()
}

fn only(report: &AuditReport, code: IssueCode) -> &Issue {
    let found: Vec<&Issue> = report.issues.iter().filter(|i| i.code == code).collect();
    assert_eq!(found.len(), 1, "{:#?}", report.issues);
    found[0]
}

#[test]
fn a_good_plan_passes_with_counts() {
    let p = plan(
        &table(&[("1", "p1.md"), ("2", "p2.md")]),
        &[("p1.md", GOOD), ("p2.md", GOOD)],
    );
    let report = run(&p, &[]);
    assert!(report.issues.is_empty(), "{:#?}", report.issues);
    assert!(report.passed(true));
    assert_eq!(
        report.summary,
        Summary {
            master_plan: "Demo".into(),
            phases_found: 2,
            phases_valid: 2,
            gates_total: 2,
            errors: 0,
            warnings: 0
        }
    );
}

#[test]
fn master_not_found_and_unreadable() {
    let missing = PlanError::NotFound {
        path: PathBuf::from("x/MASTER_PLAN.md"),
    };
    let report = AuditReport::unreadable(&missing, None);
    assert_eq!(
        codes(&report),
        [("MASTER_NOT_FOUND", "x/MASTER_PLAN.md".to_owned())]
    );
    assert!(report.issues[0].suggestion.starts_with("check the path"));
    let near = AuditReport::unreadable(&missing, Some(Path::new("y/MASTER_PLAN.md")));
    assert_eq!(near.issues[0].suggestion, "did you mean y/MASTER_PLAN.md?");
    assert_eq!(report.summary.errors, 1);
    assert!(!report.passed(false));
    let report = AuditReport::unreadable(
        &PlanError::Read {
            path: PathBuf::from("m.md"),
            source: io::Error::new(
                io::ErrorKind::InvalidData,
                "stream did not contain valid UTF-8",
            ),
        },
        None,
    );
    assert_eq!(report.issues[0].code, IssueCode::MasterParseError);
    assert!(report.issues[0].message.contains("UTF-8"));
}

#[test]
fn master_parse_error_points_at_the_row() {
    let master = "| Phase | Title |\n|---|---|\n| one | [A](a.md) |\n| 2 | [B](p2.md) |\n";
    let report = run(&plan(master, &[("p2.md", GOOD)]), &[]);
    let issue = only(&report, IssueCode::MasterParseError);
    assert_eq!(issue.location.to_string(), "plan/MASTER_PLAN.md:3");
    assert!(issue.message.contains("`one`"));
    assert_eq!(report.summary.phases_found, 1);
}

#[test]
fn no_phases_without_a_table_or_rows() {
    let report = run(
        &plan("# Freeform plan\n\n### Phase: Database\n\nprose\n", &[]),
        &[],
    );
    let issue = only(&report, IssueCode::NoPhases);
    assert_eq!(issue.location.to_string(), "plan/MASTER_PLAN.md");
    assert!(issue.message.contains("no phases table"));
    assert!(
        issue
            .suggestion
            .contains("| 1 | [Setup](phase-1.md) | Pending |")
    );
    let report = run(&plan(&table(&[]), &[]), &[]);
    let issue = only(&report, IssueCode::NoPhases);
    assert_eq!(issue.location.to_string(), "plan/MASTER_PLAN.md:3");
}

#[test]
fn phase_not_found_points_at_the_master_row() {
    let p = plan(
        &table(&[("1", "p1.md"), ("2", "missing.md")]),
        &[("p1.md", GOOD)],
    );
    let report = run(&p, &[]);
    let issue = only(&report, IssueCode::PhaseNotFound);
    assert_eq!(issue.location.to_string(), "plan/MASTER_PLAN.md:6");
    assert!(issue.message.contains("plan/missing.md"));
    assert_eq!(report.summary.phases_valid, 1);
}

#[test]
fn phase_parse_errors_from_fields_and_unreadable_files() {
    let bad_status = GOOD.replace("# Phase\n", "# Phase\n\n**Status:** Someday\n");
    let report = audit_one(&bad_status);
    let issue = only(&report, IssueCode::PhaseParseError);
    assert_eq!(issue.location.to_string(), "plan/p1.md:3");
    assert_eq!(report.summary.phases_valid, 0);

    let p = assemble(Path::new("m.md"), &table(&[("1", "p1.md")]), |_: &Path| {
        Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            "permission denied",
        ))
    });
    let report = run(&p, &[]);
    let issue = only(&report, IssueCode::PhaseParseError);
    assert_eq!(issue.location.to_string(), "p1.md");
    assert!(issue.message.contains("permission denied"));
}

#[test]
fn missing_gates() {
    let no_gates = "# Phase\n\n- [ ] Write notes to: `n.md`\n";
    let report = audit_one(no_gates);
    let issue = only(&report, IssueCode::MissingGates);
    assert_eq!(issue.location.to_string(), "plan/p1.md:1");
    assert!(issue.suggestion.contains("## Gates"));
}

#[test]
fn unknown_gate_without_plan_or_config_command() {
    let text = GOOD.replace(
        "- tests: `cargo test` passes\n",
        "- ruff: 0 errors\n- security: no high issues\n",
    );
    let report = audit_one(&text);
    let issue = only(&report, IssueCode::UnknownGate);
    assert_eq!(issue.location.to_string(), "plan/p1.md:8");
    assert!(issue.message.contains("`security`"));
    assert!(issue.suggestion.contains("`gates` map"));
    assert_eq!(report.summary.gates_total, 2);
}

#[test]
fn circular_dependency_names_the_cycle() {
    let dep = |on: &str| {
        GOOD.replace(
            "# Phase\n",
            &format!("# Phase\n\n**Depends On:** [Phase {on}](p{on}.md)\n"),
        )
    };
    let p = plan(
        &table(&[("1", "p1.md"), ("2", "p2.md"), ("3", "p3.md")]),
        &[
            ("p1.md", &dep("3")),
            ("p2.md", &dep("1")),
            ("p3.md", &dep("2")),
        ],
    );
    let report = run(&p, &[]);
    let issue = only(&report, IssueCode::CircularDependency);
    assert_eq!(issue.message, "circular dependency: 1 -> 3 -> 2 -> 1");
    assert_eq!(issue.location.to_string(), "plan/p1.md:3");
    assert!(
        issue
            .suggestion
            .contains("phase 1 on phase 3 (plan/p1.md:3)")
    );
    assert!(
        issue
            .suggestion
            .contains("phase 2 on phase 1 (plan/p2.md:3)")
    );
    assert_eq!(report.summary.phases_valid, 0);
}

#[test]
fn missing_agent_unless_built_in_or_defined() {
    let text = GOOD.replace(
        "## Process Wrapper\n",
        "## Process Wrapper\n- [ ] **AGENT:doc-sync-manager** - sync\n- [ ] **AGENT:Explore** - look\n- [ ] **AGENT:reviewer**\n",
    );
    let p = plan(
        &table(&[("1", "p1.md"), ("2", "p2.md")]),
        &[("p1.md", &text), ("p2.md", &text)],
    );
    let report = run(&p, &["reviewer"]);
    let issue = only(&report, IssueCode::MissingAgent);
    assert_eq!(issue.location.to_string(), "plan/p1.md:4");
    assert!(
        issue
            .message
            .starts_with("phases 1 and 2 require agent `doc-sync-manager`"),
        "{}",
        issue.message
    );
    assert!(
        issue
            .suggestion
            .contains("plan/.claude/agents/doc-sync-manager.md")
    );
    assert!(
        issue
            .suggestion
            .ends_with("searched in:\nplan/.claude/agents")
    );
    assert!(run(&p, &["reviewer", "doc-sync-manager"]).passed(true));
}

#[test]
fn duplicate_phase_id() {
    let p = plan(
        &table(&[("1", "p1.md"), ("1", "p2.md")]),
        &[("p1.md", GOOD), ("p2.md", GOOD)],
    );
    let report = run(&p, &[]);
    let issue = only(&report, IssueCode::DuplicatePhaseId);
    assert_eq!(issue.location.to_string(), "plan/MASTER_PLAN.md:6");
    assert!(issue.message.contains("lines 5 and 6"));
    assert_eq!(report.summary.phases_valid, 1);
}

#[test]
fn warnings_pass_unless_strict() {
    let text = "# Phase\n\n**Depends On:** Phase 9\n\n## Gates\n- ruff: clean\n";
    let report = audit_one(text);
    assert_eq!(report.summary.errors, 0);
    assert_eq!(report.summary.warnings, 2);
    let warning = only(&report, IssueCode::NoNotesOutput);
    assert_eq!(warning.severity, Severity::Warning);
    assert_eq!(warning.location.to_string(), "plan/p1.md:1");
    let warning = only(&report, IssueCode::MissingDependency);
    assert_eq!(warning.location.to_string(), "plan/p1.md:3");
    assert!(warning.message.contains("phase 9"));
    assert!(report.passed(false));
    assert!(!report.passed(true));
    assert!(!report.to_json(true).passed);
    assert_eq!(report.summary.phases_valid, 1);
}

#[test]
fn errors_come_before_warnings() {
    let text = "# Phase\n\n**Depends On:** Phase 9\n";
    let report = audit_one(text);
    let severities: Vec<Severity> = report.issues.iter().map(|i| i.severity).collect();
    assert_eq!(
        severities,
        [Severity::Error, Severity::Warning, Severity::Warning]
    );
}

#[test]
fn json_shape() {
    let report = run(&plan(&table(&[]), &[]), &[]);
    let json = serde_json::to_value(report.to_json(false)).expect("serializes");
    assert_eq!(json["passed"], false);
    assert_eq!(json["summary"]["master_plan"], "Demo");
    assert_eq!(json["summary"]["errors"], 1);
    let issue = &json["issues"][0];
    assert_eq!(issue["severity"], "error");
    assert_eq!(issue["code"], "NO_PHASES");
    assert_eq!(issue["location"], "plan/MASTER_PLAN.md:3");
    assert!(issue["suggestion"].is_string());
    assert!(issue.get("phases").is_none());
}

#[test]
fn a_phase_file_given_as_the_plan_is_called_one() {
    let phase = "# Demo Phase 1: One\n\n**Status:** Pending\n**Depends On:** N/A\n\n## Tasks\n- [ ] 1.1: Do\n";
    let plan = assemble(Path::new("p/phase-1.md"), phase, |_| {
        Err(io::Error::from(io::ErrorKind::NotFound))
    });
    let report = run(&plan, &[]);
    let issue = &report.issues[0];
    assert_eq!(issue.code, IssueCode::NoPhases);
    assert_eq!(
        issue.message,
        "p/phase-1.md looks like a phase file, not a master plan: it has no phases table"
    );
    assert_eq!(issue.location.line, Some(3));
    // A master plan that merely lacks its table is told to add one.
    let bare = assemble(
        Path::new("p/MASTER_PLAN.md"),
        "# Demo - Master Plan\n",
        |_| Err(io::Error::from(io::ErrorKind::NotFound)),
    );
    let report = run(&bare, &[]);
    assert!(
        report.issues[0]
            .suggestion
            .contains("add a `## Phases` table")
    );
}
