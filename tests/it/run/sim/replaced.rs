//! debussy's executable replaced on disk while a run is live, as an upgrade or a rebuild
//! replaces it: the simulated agent's sessions started afterwards, and what they run of
//! debussy, still start.

use std::time::Duration;

use crate::support::project::{Project, run_json, sim_run_args};
use crate::support::scenario::{Scenario, Script, Turn};

#[test]
fn a_binary_replaced_mid_run_still_starts_the_next_phases_sessions() {
    let project = Project::new();
    let bin = tempfile::tempdir().expect("tempdir");
    let program = bin.path().join("debussy");
    std::fs::copy(crate::support::DEBUSSY, &program).expect("copy");
    // Phase 1's session puts a fresh copy in place the way `cargo install` does (written
    // beside it, renamed over it), then reports done with the running binary.
    let replace = format!(
        "cp '{}' '{program}.new' && mv '{program}.new' '{program}'",
        crate::support::DEBUSSY,
        program = program.display()
    );
    let scenario = Scenario::new()
        .script(Script::phase("1").turns([
            Turn::say("Upgrading debussy.").bash(&replace),
            Turn::notes("1"),
            Turn::done(),
        ]))
        .script(Script::phase("2").turns([
            Turn::write(10, "b.txt", "b"),
            Turn::notes("2"),
            Turn::done(),
        ]));
    project.plan(
        &[("1", "N/A", "true"), ("2", "Phase 1", "test -f b.txt")],
        &scenario,
    );
    let args = sim_run_args("plan/MASTER_PLAN.md", &["--output-format", "json"]);
    let (code, events) = run_json(
        crate::support::debussy_at(&program, project.root(), &args),
        Duration::from_secs(120),
    );
    assert_eq!(code, 0, "{events:#?}");
    assert!(project.root().join("b.txt").exists());
    let run = project.status_json()["run"]["id"]
        .as_str()
        .expect("run id")
        .to_owned();
    let store = debussy::state::Store::open(project.root()).expect("store");
    let done = store.completion(&run, "1").expect("read");
    assert!(
        done.is_some_and(|signal| signal.status.as_str() == "completed"),
        "phase 1's `debussy done`, run after the replacement, reached the run"
    );
}
