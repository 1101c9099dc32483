//! Tests of the pre-flight checks.

use super::project::{is_run_data, untracked_verdict};
use super::*;

#[test]
fn untracked_paths_are_listed_and_the_plan_is_pointed_out() {
    let paths = vec![
        ".claude/".to_owned(),
        ".debussy/config.yaml".to_owned(),
        "plan/".to_owned(),
    ];
    let check = untracked_verdict(&paths, Some("plan/MASTER_PLAN.md"));
    assert_eq!(check.verdict, Verdict::Warn);
    assert_eq!(
        check.detail,
        "3 untracked paths would go into the first phase commit:\n  .claude/\n  \
         .debussy/config.yaml\n  plan/  (the plan)"
    );
    assert_eq!(untracked_verdict(&[], None).verdict, Verdict::Pass);
    // Only the plan's notes are new: they are not the plan.
    let notes = untracked_verdict(
        &["plans/example/notes/".to_owned()],
        Some("plans/example/MASTER_PLAN.md"),
    );
    assert_eq!(
        notes.detail,
        "1 untracked path would go into the first phase commit:\n  plans/example/notes/"
    );
    let plan = untracked_verdict(
        &["plans/example/MASTER_PLAN.md".to_owned()],
        Some("plans/example/MASTER_PLAN.md"),
    );
    assert!(
        plan.detail.ends_with("MASTER_PLAN.md  (the plan)"),
        "{}",
        plan.detail
    );
}

#[test]
fn run_data_is_not_worth_a_warning() {
    assert!(is_run_data(".debussy/state.db-wal"));
    assert!(is_run_data(".debussy/logs/"));
    assert!(is_run_data(".debussy/worktrees/"));
    assert!(is_run_data(".debussy/runs/r/1/attempt-1-session-1.jsonl"));
    assert!(!is_run_data(".debussy/config.yaml"));
    assert!(!is_run_data("src/state.db"));
}

#[test]
fn reports_render_marks_details_and_fixes() {
    let report = Report {
        checks: vec![
            Check::pass("agent", "claude (2.0.1)"),
            Check::fail("scenario", "2 problems:\na\nb", "correct them"),
        ],
    };
    assert!(report.failed());
    assert_eq!(
        report.render(true),
        "✓ agent: claude (2.0.1)\n✗ scenario: 2 problems:\n    a\n    b\n    fix: correct them\n"
    );
}
