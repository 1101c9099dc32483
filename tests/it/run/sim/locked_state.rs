//! The state database locked by another process while a session runs (a `sqlite3` shell
//! or a database browser with a transaction open): the run goes on taking in the agent's
//! output and answers Ctrl-C at once, and records what it did once the lock is gone.

use std::path::Path;
use std::time::Duration;

use nix::sys::signal::Signal;
use serde_json::Value;

use super::kit::summary;
use super::witness::LiveRun;
use crate::support::processes::group_gone;
use crate::support::project::{Project, story};
use crate::support::scenario::{Scenario, Script, Turn};
use crate::support::wait::wait_until;

/// How long the run may take to show what the agent said while the database is locked:
/// far below the database's 10-second wait for a lock (the agent's stop may take five).
const PROMPTLY: Duration = Duration::from_secs(4);

/// Phase 1's agent says it waits (`waiting` in `dir`) and waits for `locked` there; then
/// it says eight things, each with more context, says `all said` (and touches `said`)
/// and sleeps until stopped.
fn talking_while_locked(dir: &Path) -> Scenario {
    let dir = dir.display();
    let mut script = Script::phase("1").turn(Turn::say("ready").percent(10).bash(&format!(
        "touch {dir}/waiting; until [ -e {dir}/locked ]; do sleep 0.02; done"
    )));
    for step in 1..=8 {
        script = script.turn(Turn::say(&format!("step {step}")).percent(10 + 2 * step));
    }
    Scenario::new().script(
        script.turn(
            Turn::say("all said")
                .percent(30)
                .bash(&format!("touch {dir}/said; sleep 60")),
        ),
    )
}

#[test]
fn a_locked_state_database_holds_neither_the_agents_output_nor_ctrl_c() {
    let scratch = tempfile::tempdir().expect("tempdir");
    let project = Project::new();
    project.plan(
        &[("1", "N/A", "true")],
        &talking_while_locked(scratch.path()),
    );
    let mut run = LiveRun::start(&project, &[]);
    let started = run.wait_for("session_started");
    let agent = started["pid"].as_u64().expect("the agent's pid");
    wait_until("the agent to wait", Duration::from_secs(30), || {
        scratch.path().join("waiting").exists()
    });

    let holder = rusqlite::Connection::open(project.root().join(".debussy/state.db")).expect("db");
    holder
        .execute_batch("BEGIN IMMEDIATE")
        .expect("take the write lock");
    std::fs::write(scratch.path().join("locked"), "").expect("say it is locked");
    wait_until("the agent to say all", Duration::from_secs(30), || {
        scratch.path().join("said").exists()
    });
    let said = |event: &Value| event.to_string().contains("all said");
    let shown = run.event_within(PROMPTLY, said);
    run.signal(Signal::SIGINT);
    let answered = group_gone(agent);

    holder
        .execute_batch("ROLLBACK")
        .expect("let go of the lock");
    let (code, events) = run.ended();
    let story = story(&events);
    assert!(
        shown.is_some() && answered,
        "what the agent said shown within {PROMPTLY:?}: {}; the agent stopped within 5 s of \
         Ctrl-C: {answered}; the run said: {story}",
        shown.is_some()
    );
    assert_eq!(code, 130, "{story}");
    assert_eq!(summary(&events)["status"], "paused", "{story}");
    let status = project.status_json();
    assert_eq!(status["run"]["status"], "paused", "{status:#}");
}
