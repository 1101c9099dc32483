//! Which phase the run takes up next. Pure: the run passes where every phase stands and
//! which ones it has taken up already.
//!
//! Phases are taken up in execution order. A phase waits while any phase it depends on
//! is still pending (not yet run, or running); once they all stand, it starts, or is
//! skipped, dropped or blocked by what they came to. With one job the run takes up the
//! next phase only after the last one ended, so phases run in execution order exactly.

use std::collections::{BTreeMap, BTreeSet};

use crate::plan::Phase;

use super::selection::{self, Standing};

/// What to do with the next phase.
#[derive(Debug, PartialEq)]
pub(crate) enum Next<'plan> {
    /// Run it.
    Start(&'plan Phase),
    /// It will not run (done already, before `--phase`): say so.
    Skip(&'plan Phase, String),
    /// A phase it depends on was skipped by the user: so is it.
    Drop(&'plan Phase, String),
    /// A phase it depends on did not complete: it is blocked, and the run stops.
    Block(&'plan Phase, String),
    /// Nothing can be taken up until a running phase ends.
    Wait,
    /// Every phase has been taken up.
    Done,
}

/// The next phase of `order` not in `taken` that can be taken up, given `standings`.
pub(crate) fn next<'plan>(
    order: &[&'plan Phase],
    standings: &BTreeMap<String, Standing>,
    taken: &BTreeSet<String>,
) -> Next<'plan> {
    let mut waiting = false;
    for &phase in order {
        let id = phase.id.as_str();
        if taken.contains(id) {
            continue;
        }
        if let Some(Standing::Skipped(reason)) = standings.get(id) {
            return Next::Skip(phase, reason.clone());
        }
        if let Some(reason) = selection::dropped_dependency(phase, standings) {
            return Next::Drop(phase, reason);
        }
        let pending = phase
            .dependency_ids()
            .any(|dep| matches!(standings.get(dep.as_str()), Some(Standing::Pending)));
        if pending {
            waiting = true;
            continue;
        }
        let unmet = selection::unmet_dependencies(phase, standings);
        if !unmet.is_empty() {
            return Next::Block(phase, format!("blocked: {}", unmet.join("; ")));
        }
        return Next::Start(phase);
    }
    if waiting { Next::Wait } else { Next::Done }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn diamond() -> crate::plan::Plan {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut master = String::from(
            "# Diamond - Master Plan\n\n## Phases\n\n| Phase | Title | Status |\n|---|---|---|\n",
        );
        for (id, deps) in [
            ("1", "N/A"),
            ("2", "Phase 1"),
            ("3", "Phase 1"),
            ("4", "Phase 1"),
            ("5", "Phase 2, Phase 3, Phase 4"),
        ] {
            master.push_str(&format!("| {id} | [P{id}](p{id}.md) | Pending |\n"));
            std::fs::write(
                dir.path().join(format!("p{id}.md")),
                format!("# Phase {id}: P{id}\n\n**Status:** Pending\n**Depends On:** {deps}\n\n## Tasks\n- [ ] {id}.1: work\n"),
            )
            .expect("write");
        }
        let path = dir.path().join("MASTER_PLAN.md");
        std::fs::write(&path, master).expect("write");
        crate::plan::load(&path).expect("plan")
    }

    fn ids(order: &[&Phase]) -> BTreeMap<String, Standing> {
        order
            .iter()
            .map(|p| (p.id.as_str().to_owned(), Standing::Pending))
            .collect()
    }

    fn started(next: Next<'_>) -> String {
        match next {
            Next::Start(phase) => phase.id.as_str().to_owned(),
            other => panic!("expected a start, got {other:?}"),
        }
    }

    #[test]
    fn a_diamond_fans_out_after_its_root_and_joins_after_all_three() {
        let plan = diamond();
        let order = crate::plan::execution_order(&plan).expect("order");
        let mut standings = ids(&order);
        let mut taken = BTreeSet::new();

        assert_eq!(started(next(&order, &standings, &taken)), "1");
        taken.insert("1".to_owned());
        assert_eq!(
            next(&order, &standings, &taken),
            Next::Wait,
            "2-4 wait for 1"
        );

        standings.insert("1".into(), Standing::Completed);
        for expected in ["2", "3", "4"] {
            let id = started(next(&order, &standings, &taken));
            assert_eq!(id, expected);
            taken.insert(id);
        }
        assert_eq!(
            next(&order, &standings, &taken),
            Next::Wait,
            "5 waits for all three"
        );

        standings.insert("3".into(), Standing::Completed);
        standings.insert("4".into(), Standing::Completed);
        assert_eq!(next(&order, &standings, &taken), Next::Wait, "2 still runs");
        standings.insert("2".into(), Standing::Completed);
        assert_eq!(started(next(&order, &standings, &taken)), "5");
        taken.insert("5".into());
        assert_eq!(next(&order, &standings, &taken), Next::Done);
    }

    #[test]
    fn a_failed_branch_blocks_the_join_and_a_dropped_one_drops_it() {
        let plan = diamond();
        let order = crate::plan::execution_order(&plan).expect("order");
        let mut standings = ids(&order);
        let taken: BTreeSet<String> = ["1", "2", "3", "4"].map(str::to_owned).into();
        for id in ["1", "2", "3"] {
            standings.insert(id.into(), Standing::Completed);
        }
        standings.insert("4".into(), Standing::Failed);
        assert!(matches!(
            next(&order, &standings, &taken),
            Next::Block(phase, reason) if phase.id.as_str() == "5" && reason.contains("phase 4 is failed")
        ));
        standings.insert("4".into(), Standing::Dropped("skipped by user".into()));
        assert!(
            matches!(next(&order, &standings, &taken), Next::Drop(phase, _) if phase.id.as_str() == "5")
        );
    }

    #[test]
    fn phases_done_before_are_skipped_at_once() {
        let plan = diamond();
        let order = crate::plan::execution_order(&plan).expect("order");
        let mut standings = ids(&order);
        standings.insert(
            "1".into(),
            Standing::Skipped("completed by an earlier run".into()),
        );
        assert!(
            matches!(next(&order, &standings, &BTreeSet::new()), Next::Skip(phase, _) if phase.id.as_str() == "1")
        );
    }
}
