//! Which phases a run executes, and whether a phase's dependencies are met. Pure.

use std::collections::{BTreeMap, BTreeSet};

use crate::events::PhaseState;
use crate::plan::Phase;

/// Where a phase stands at the start of a run, or after it ran.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Standing {
    /// To be run.
    Pending,
    /// Will not run: done already, or before `--phase`, or skipped by the user. Counts as
    /// satisfied for phases that depend on it.
    Skipped(String),
    /// Completed in this run.
    Completed,
    /// Failed in this run.
    Failed,
    /// Blocked: by the agent, or by a dependency that did not complete.
    Blocked,
    /// Interrupted in this run.
    Paused,
    /// Skipped by the user in this run (the HUD's `s`), or depending on such a phase. Its
    /// work was not done, so phases that depend on it are skipped too.
    Dropped(String),
    /// Completed in its worktree, but its branch could not be merged into the run's:
    /// a human finishes the merge.
    AwaitingHuman,
}

impl Standing {
    /// Whether phases that depend on this one may run.
    #[must_use]
    pub fn satisfies_dependents(&self) -> bool {
        matches!(self, Standing::Skipped(_) | Standing::Completed)
    }

    /// Where it stands, as the outputs show it.
    #[must_use]
    pub fn state(&self) -> PhaseState {
        match self {
            Standing::Pending => PhaseState::Pending,
            Standing::Skipped(_) | Standing::Dropped(_) => PhaseState::Skipped,
            Standing::Completed => PhaseState::Completed,
            Standing::Failed => PhaseState::Failed,
            Standing::Blocked => PhaseState::Blocked,
            Standing::Paused => PhaseState::Paused,
            Standing::AwaitingHuman => PhaseState::AwaitingHuman,
        }
    }
}

/// How history is used when choosing phases.
#[derive(Debug, Clone, Default)]
pub struct History {
    /// `--restart`: run every phase, whatever the plan or earlier runs say.
    pub ignore: bool,
    /// `--resume`: also skip phases an earlier run of this plan completed.
    pub resume: bool,
    /// Phases earlier runs of this plan completed.
    pub completed_before: BTreeSet<String>,
    /// `--phase ID`: phases before it in the order are taken as done.
    pub start_at: Option<String>,
}

/// The starting standing of each phase in `order`.
///
/// # Errors
/// When `start_at` names no phase in the order; the message lists the ids.
pub fn select(order: &[&Phase], history: &History) -> Result<BTreeMap<String, Standing>, String> {
    let start_index = match &history.start_at {
        Some(start) => {
            let wanted = crate::plan::PhaseId::parse(start).map(|id| id.as_str().to_owned());
            let found = order
                .iter()
                .position(|phase| Some(phase.id.as_str()) == wanted.as_deref());
            Some(found.ok_or_else(|| {
                let ids: Vec<&str> = order.iter().map(|p| p.id.as_str()).collect();
                format!(
                    "--phase {start} names no phase of this plan (phases: {})",
                    ids.join(", ")
                )
            })?)
        }
        None => None,
    };
    Ok(order
        .iter()
        .enumerate()
        .map(|(index, phase)| {
            let id = phase.id.as_str().to_owned();
            let standing = if start_index.is_some_and(|start| index < start) {
                Standing::Skipped(format!(
                    "before --phase {}",
                    history.start_at.as_deref().unwrap_or("")
                ))
            } else if history.ignore {
                Standing::Pending
            } else if phase.status.is_completed() {
                Standing::Skipped("marked completed in the plan".to_owned())
            } else if history.resume && history.completed_before.contains(&id) {
                Standing::Skipped("completed by an earlier run".to_owned())
            } else {
                Standing::Pending
            };
            (id, standing)
        })
        .collect())
}

/// The dependencies of `phase` that are not satisfied, with why.
#[must_use]
pub fn unmet_dependencies(phase: &Phase, standings: &BTreeMap<String, Standing>) -> Vec<String> {
    phase
        .dependency_ids()
        .filter_map(|dep| match standings.get(dep.as_str()) {
            None => Some(format!("phase {dep} is not in the plan")),
            Some(standing) if standing.satisfies_dependents() => None,
            Some(standing) => Some(format!("phase {dep} is {}", standing.state())),
        })
        .collect()
}

/// Why `phase` is dropped with a dependency the user skipped (directly, or through a
/// phase dropped for that reason); `None` when no dependency was dropped.
#[must_use]
pub fn dropped_dependency(phase: &Phase, standings: &BTreeMap<String, Standing>) -> Option<String> {
    let dropped: Vec<String> = phase
        .dependency_ids()
        .filter(|dep| matches!(standings.get(dep.as_str()), Some(Standing::Dropped(_))))
        .map(|dep| format!("phase {dep}"))
        .collect();
    (!dropped.is_empty()).then(|| format!("depends on {}, which was skipped", dropped.join(", ")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{Plan, execution_order};

    fn plan(rows: &[(&str, &str, &str)]) -> (tempfile::TempDir, Plan) {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut master = String::from("# Test\n\n| Phase | Title | Status |\n|---|---|---|\n");
        for (id, status, depends) in rows {
            master.push_str(&format!(
                "| {id} | [Phase {id}](phase-{id}.md) | {status} |\n"
            ));
            std::fs::write(
                dir.path().join(format!("phase-{id}.md")),
                format!(
                    "# Phase {id}: P{id}\n\n**Status:** {status}\n**Depends On:** {depends}\n\n## Gates\n- ok: `true` passes\n"
                ),
            )
            .expect("write");
        }
        std::fs::write(dir.path().join("MASTER_PLAN.md"), master).expect("write");
        let plan = crate::plan::load(&dir.path().join("MASTER_PLAN.md")).expect("load");
        (dir, plan)
    }

    #[test]
    fn completed_phases_in_the_plan_are_skipped_unless_history_is_ignored() {
        let (_dir, plan) = plan(&[("1", "Completed", "N/A"), ("2", "Pending", "Phase 1")]);
        let order = execution_order(&plan).expect("order");
        let chosen = select(&order, &History::default()).expect("select");
        assert!(matches!(chosen["1"], Standing::Skipped(_)));
        assert_eq!(chosen["2"], Standing::Pending);
        assert!(unmet_dependencies(order[1], &chosen).is_empty());

        let all = select(
            &order,
            &History {
                ignore: true,
                ..History::default()
            },
        )
        .expect("select");
        assert_eq!(all["1"], Standing::Pending);
    }

    #[test]
    fn resume_skips_what_earlier_runs_completed() {
        let (_dir, plan) = plan(&[("1", "Pending", "N/A"), ("2", "Pending", "Phase 1")]);
        let order = execution_order(&plan).expect("order");
        let history = History {
            completed_before: ["1".to_owned()].into(),
            ..History::default()
        };
        assert_eq!(
            select(&order, &history).expect("select")["1"],
            Standing::Pending
        );
        let history = History {
            resume: true,
            ..history
        };
        assert!(matches!(
            select(&order, &history).expect("select")["1"],
            Standing::Skipped(_)
        ));
    }

    #[test]
    fn start_at_skips_earlier_phases_and_rejects_unknown_ids() {
        let (_dir, plan) = plan(&[
            ("1", "Pending", "N/A"),
            ("2", "Pending", "N/A"),
            ("3", "Pending", "N/A"),
        ]);
        let order = execution_order(&plan).expect("order");
        let history = History {
            start_at: Some("2".into()),
            ..History::default()
        };
        let chosen = select(&order, &history).expect("select");
        assert!(matches!(&chosen["1"], Standing::Skipped(why) if why.contains("--phase 2")));
        assert_eq!(chosen["2"], Standing::Pending);
        let err = select(
            &order,
            &History {
                start_at: Some("9".into()),
                ..History::default()
            },
        )
        .expect_err("unknown");
        assert!(err.contains("phases: 1, 2, 3"), "{err}");
    }

    #[test]
    fn unmet_dependencies_say_why() {
        let (_dir, plan) = plan(&[
            ("1", "Pending", "N/A"),
            ("2", "Pending", "Phase 1, Phase 7"),
        ]);
        let order = execution_order(&plan).expect("order");
        let mut standings = select(&order, &History::default()).expect("select");
        standings.insert("1".into(), Standing::Failed);
        let unmet = unmet_dependencies(order[1], &standings);
        assert_eq!(unmet, ["phase 1 is failed", "phase 7 is not in the plan"]);
    }

    #[test]
    fn dependents_of_a_user_skipped_phase_are_dropped_and_others_are_not() {
        let (_dir, plan) = plan(&[
            ("1", "Pending", "N/A"),
            ("2", "Pending", "Phase 1"),
            ("3", "Pending", "N/A"),
        ]);
        let order = execution_order(&plan).expect("order");
        let mut standings = select(&order, &History::default()).expect("select");
        standings.insert("1".into(), Standing::Dropped("skipped by user".into()));
        let phase = |id: &str| *order.iter().find(|p| p.id.as_str() == id).expect("phase");
        let why = dropped_dependency(phase("2"), &standings).expect("2 depends on 1");
        assert!(why.contains("phase 1") && why.contains("skipped"), "{why}");
        assert!(!Standing::Dropped(why).satisfies_dependents());
        assert_eq!(dropped_dependency(phase("3"), &standings), None);
        assert!(Standing::Skipped("marked completed in the plan".into()).satisfies_dependents());
    }
}
