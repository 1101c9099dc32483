//! The end-of-run summary: phases, attempts, restarts, tokens, cost, duration, commits.

use std::fmt::Write as _;

use crate::events::RunSummary;
use crate::state::RunStatus;
use crate::ui::text::{Palette, Table};
use crate::words::{dollars, duration, plural, thousands};

/// `" (handoffs $0.04)"` when handoff requests were made: their cost is in the total.
fn handoff_note(summary: &RunSummary) -> String {
    if summary.handoffs == 0 {
        return String::new();
    }
    format!(
        " (of which {} handoff{} {})",
        summary.handoffs,
        plural(summary.handoffs),
        dollars(summary.handoff_cost_usd, false)
    )
}

/// Render the summary as an aligned text table followed by totals.
#[must_use]
pub fn render(summary: &RunSummary) -> String {
    let mut table = Table::new(&[
        "PHASE", "TITLE", "STATUS", "ATTEMPTS", "RESTARTS", "BILLED", "COST", "TIME",
    ]);
    for p in &summary.phases {
        table.row(
            [
                p.id.clone(),
                p.title.clone(),
                p.status.to_string(),
                p.attempts.to_string(),
                p.restarts.to_string(),
                thousands(p.billed.total()),
                dollars(p.cost_usd, p.cost_estimated),
                duration(p.duration_secs),
            ]
            .into_iter()
            .map(|cell| vec![cell])
            .collect(),
        );
    }
    let mut out = table.render("", Palette::new(false));
    let _ = writeln!(
        out,
        "\nRun {} {} in {}: {} session{}, {} restart{}, {} tokens billed, {}{}, {} commit{}",
        short(&summary.run_id),
        summary.status,
        duration(summary.duration_secs),
        summary.sessions,
        plural(summary.sessions),
        summary.restarts,
        plural(summary.restarts),
        thousands(summary.billed.total()),
        dollars(summary.cost_usd, summary.cost_estimated),
        handoff_note(summary),
        summary.commits.len(),
        plural(summary.commits.len()),
    );
    if summary.billed.total() > 0 {
        let billed = summary.billed;
        let _ = writeln!(
            out,
            "Billed tokens: {} input, {} cache write, {} cache read, {} output (summed over requests; not the context)",
            thousands(billed.input),
            thousands(billed.cache_write),
            thousands(billed.cache_read),
            thousands(billed.output),
        );
    }
    if summary.cost_estimated {
        let _ = writeln!(
            out,
            "~ estimated: priced from the tokens billed and list prices (a session stopped before its agent reported a cost, or an agent that reports none)"
        );
    }
    if !summary.commits.is_empty() {
        let commits: Vec<&str> = summary.commits.iter().map(|c| short(c)).collect();
        let _ = writeln!(out, "Commits: {}", commits.join(" "));
    }
    for phase in summary
        .phases
        .iter()
        .filter(|p| !p.refused_calls.is_empty())
    {
        let _ = writeln!(out, "Phase {}: the agent was refused:", phase.id);
        for refused in &phase.refused_calls {
            let _ = writeln!(
                out,
                "  {} (allow it with `{}` in agent.allowed_tools)",
                refused.call, refused.allow_with
            );
        }
    }
    if let Some(error) = &summary.error {
        let _ = writeln!(out, "Stopped: {error}");
    }
    match summary.status {
        RunStatus::Paused => {
            let raise = summary
                .raise_with
                .as_deref()
                .map(|flag| format!(" {flag}"))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "Continue with: debussy run --resume{raise} {}",
                summary.plan_path
            );
        }
        RunStatus::Failed => {
            let _ = writeln!(
                out,
                "Continue with: debussy run --resume {}  (once what stopped it is fixed; phases already completed are skipped)",
                summary.plan_path
            );
        }
        RunStatus::Running | RunStatus::Completed | RunStatus::Interrupted => {}
    }
    out
}

fn short(id: &str) -> &str {
    id.get(..8).unwrap_or(id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::{PhaseState, PhaseSummary};

    #[test]
    fn renders_phases_and_totals() {
        // One phase ran: its figures are the run's.
        let billed = crate::context::cost::Billed {
            input: 7_000,
            cache_write: 40_000,
            cache_read: 150_000,
            output: 0,
        };
        let summary = RunSummary {
            run_id: "0123456789".into(),
            plan_path: "plans/demo/MASTER_PLAN.md".into(),
            status: RunStatus::Completed,
            phases: vec![
                PhaseSummary {
                    id: "1".into(),
                    title: "Write the greeting".into(),
                    status: PhaseState::Completed,
                    attempts: 1,
                    restarts: 1,
                    sessions: 2,
                    billed,
                    cost_usd: 0.5,
                    cost_estimated: false,
                    handoffs: 1,
                    duration_secs: 4.2,
                    refused_calls: Vec::new(),
                },
                PhaseSummary {
                    id: "2".into(),
                    title: "Say goodbye".into(),
                    status: PhaseState::NotRun,
                    ..PhaseSummary::default()
                },
            ],
            restarts: 1,
            sessions: 2,
            billed,
            cost_usd: 0.5,
            cost_estimated: false,
            handoffs: 1,
            handoff_cost_usd: 0.04,
            duration_secs: 65.0,
            commits: vec!["abcdef0123456".into()],
            error: None,
            limit: None,
            raise_with: None,
            disk_full: false,
        };
        insta::assert_snapshot!(render(&summary));
    }

    #[test]
    fn refused_calls_are_listed_with_the_rule_that_allows_them() {
        let summary = RunSummary {
            phases: vec![PhaseSummary {
                id: "2".into(),
                refused_calls: vec![crate::events::RefusedCall {
                    call: "Bash: npm test".into(),
                    allow_with: "Bash(npm test:*)".into(),
                }],
                ..PhaseSummary::default()
            }],
            ..RunSummary::default()
        };
        let text = render(&summary);
        assert!(
            text.contains(
                "Phase 2: the agent was refused:\n  Bash: npm test (allow it with `Bash(npm test:*)` in agent.allowed_tools)"
            ),
            "{text}"
        );
    }

    #[test]
    fn a_paused_run_says_how_to_continue_it() {
        let summary = RunSummary {
            plan_path: "plans/demo/MASTER_PLAN.md".into(),
            status: RunStatus::Paused,
            ..RunSummary::default()
        };
        assert!(
            render(&summary)
                .contains("Continue with: debussy run --resume plans/demo/MASTER_PLAN.md")
        );
    }

    #[test]
    fn a_failed_run_says_how_to_continue_it_too() {
        let summary = RunSummary {
            plan_path: "plans/demo/MASTER_PLAN.md".into(),
            status: RunStatus::Failed,
            error: Some("phase 2 failed: gate tests failed".into()),
            ..RunSummary::default()
        };
        let text = render(&summary);
        assert!(
            text.contains("Stopped: phase 2 failed: gate tests failed\nContinue with: debussy run --resume plans/demo/MASTER_PLAN.md  (once what stopped it is fixed; phases already completed are skipped)"),
            "{text}"
        );
        let done = RunSummary {
            status: RunStatus::Completed,
            ..summary
        };
        assert!(!render(&done).contains("Continue with"));
    }

    #[test]
    fn numbers_read_naturally() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(duration(3725.0), "1h02m");
    }
}
