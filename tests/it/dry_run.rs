//! `debussy run --dry-run` over the vendored plan fixtures: the configuration, the order
//! of execution, and what it refuses (see [`crate::plan`] for the sandbox).

use crate::plan::Sandbox;

/// `text` with every run of whitespace made one space (column widths vary with the keys).
fn squash(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[test]
#[ignore = "needs the pinned Claude Code CLI, which the pre-flight agent check looks for (scripts/test-tools)"]
fn dry_run_prints_config_and_execution_order() {
    let sandbox = Sandbox::new();
    let (code, text, stderr) =
        sandbox.run(&["run", "audit/valid_plan/MASTER_PLAN.md", "--dry-run"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(text.starts_with(
        "Dry run of Valid Test Plan (audit/valid_plan/MASTER_PLAN.md)\n\nEffective configuration\n"
    ));
    // Every configuration value, with its source (all defaults in this sandbox).
    for line in [
        "  model                        opus",
        "  context_threshold            80.0",
        "  agent.kind                   claude",
        "  run.skip_audit               false",
    ] {
        // The key column is as wide as the longest key: compare words, not spacing.
        let found = text
            .lines()
            .find(|l| squash(l).starts_with(&squash(line)))
            .unwrap_or_else(|| panic!("no `{line}` in {text}"));
        assert!(found.ends_with("default"), "{found}");
    }
    assert!(
        !text.contains("gates."),
        "the gates map is shown per gate, not as config lines"
    );
    // The audit and the order are stable: snapshot them.
    let from_audit = &text[text.find("\nAudit\n").expect("audit section")..];
    insta::assert_snapshot!("dry_run_valid_plan", from_audit);
}

#[test]
#[ignore = "needs the pinned Claude Code CLI, which the pre-flight agent check looks for (scripts/test-tools)"]
fn dry_run_of_converted_plan_orders_by_dependencies() {
    let sandbox = Sandbox::new();
    let (code, text, stderr) = sandbox.run(&[
        "run",
        "sample_plans_converted/plan3_test",
        "--dry-run",
        "--phase",
        "2",
        "--resume",
    ]);
    assert_eq!(code, 0, "{stderr}");
    assert!(squash(&text).contains("run.resume true"), "{text}");
    assert!(squash(&text).contains("run.phase 2"), "{text}");
    let order = text.split("Execution order").nth(1).expect("order table");
    insta::assert_snapshot!("dry_run_plan3_test_order", order);
}

#[test]
#[ignore = "needs the pinned Claude Code CLI, which the pre-flight agent check looks for (scripts/test-tools)"]
fn dry_run_fails_on_audit_errors_unless_skipped() {
    let sandbox = Sandbox::new();
    let (code, text, _) = sandbox.run(&["run", "audit/missing_gates", "--dry-run"]);
    assert_eq!(code, 1);
    assert!(
        text.contains("Not runnable: the audit found 1 error"),
        "{text}"
    );
    assert!(text.contains("Execution order"), "the order is still shown");
    let (code, text, _) = sandbox.run(&["run", "audit/missing_gates", "--dry-run", "--skip-audit"]);
    assert_eq!(code, 0);
    assert!(
        text.contains("audit errors are ignored (--skip-audit)"),
        "{text}"
    );
}

#[test]
fn dry_run_of_a_cycle_has_no_order() {
    let sandbox = Sandbox::new();
    let (code, text, _) = sandbox.run(&["run", "audit/circular_deps", "--dry-run", "--skip-audit"]);
    assert_eq!(code, 1);
    assert!(
        text.contains(
            "No execution order: the phases depend on each other in a cycle (1 -> 3 -> 2 -> 1)"
        ),
        "{text}"
    );
    assert!(!text.contains("Execution order"), "{text}");
}

#[test]
fn dry_run_usage_errors() {
    let sandbox = Sandbox::new();
    let (code, _, stderr) = sandbox.run(&["run", "audit/valid_plan", "--dry-run", "--phase", "7"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("--phase 7: no such phase"), "{stderr}");
    assert!(stderr.contains("1, 2"), "{stderr}");
    let (code, text, _) = sandbox.run(&["run", "nope.md", "--dry-run"]);
    assert_eq!(code, 1);
    assert!(text.contains("MASTER_NOT_FOUND"), "{text}");
}

#[test]
fn the_dry_run_skips_a_phase_marked_completed_as_the_run_does() {
    let sandbox = Sandbox::new();
    sandbox.write(
        "done/MASTER_PLAN.md",
        "# Done - Master Plan\n\n| Phase | Title | Status |\n|---|---|---|\n| 1 | [One](one.md) | Completed |\n| 2 | [Two](two.md) | Pending |\n",
    );
    sandbox.write(
        "done/one.md",
        "# Done Phase 1: One\n\n**Status:** Completed\n**Depends On:** N/A\n\n## Gates\n- check: `true` passes\n\n## Tasks\n- [x] 1.1: Do\n",
    );
    sandbox.write(
        "done/two.md",
        "# Done Phase 2: Two\n\n**Status:** Pending\n**Depends On:** Phase 1\n\n## Gates\n- check: `true` passes\n\n## Tasks\n- [ ] 2.1: Do\n",
    );
    let (_, text, stderr) = sandbox.run(&["run", "done", "--dry-run", "--no-auto-commit"]);
    let order = text
        .split("Execution order")
        .nth(1)
        .unwrap_or_else(|| panic!("no order in {text}{stderr}"));
    let rows: Vec<Vec<&str>> = order
        .lines()
        .map(|line| line.split_whitespace().collect())
        .filter(|cells: &Vec<&str>| cells.get(1).is_some_and(|id| *id == "1" || *id == "2"))
        .collect();
    assert_eq!(rows[0][0], "skip", "{order}");
    assert_eq!(rows[1][0], "1", "phase 2 is the first step: {order}");
    assert!(
        order.contains("(skipped: marked completed in the plan)"),
        "{order}"
    );
    // `--restart` runs it again.
    let (_, text, _) = sandbox.run(&["run", "done", "--dry-run", "--no-auto-commit", "--restart"]);
    let order = text.split("Execution order").nth(1).expect("order");
    assert!(!order.contains("skip"), "{order}");
}
