//! The guards of an unattended run, with the simulated agent: a cost limit pauses the
//! run with its work committed and `--resume` with a higher limit finishes it; a time
//! limit does the same; restarts that make no progress fail the attempt early.

use super::kit::{run_error, summary};
use crate::support::project::{self, Project, events_named};
use crate::support::scenario::{Compact, Scenario, Script, Trigger, Turn};

/// Phase 1 writes a.txt cheaply, then its context (and cost) jumps and it idles.
fn expensive_scenario() -> Scenario {
    Scenario::new().script(Script::phase("1").turns([
        Turn::write(1, "a.txt", "a"),
        Turn::say("thinking hard").percent(50),
        Turn::sleep(20_000),
    ]))
}

#[test]
fn a_cost_limit_pauses_the_run_with_its_work_committed_and_resume_raises_it() {
    let project = Project::new();
    project.plan(&[("1", "N/A", "test -f a.txt")], &expensive_scenario());

    let (code, events) = project.run(&["--max-cost", "0.5"]);
    assert_eq!(code, 3, "a limit pause exits 3: {events:#?}");
    let reached = events_named(&events, "limit_reached");
    assert_eq!(reached.len(), 1, "{events:#?}");
    assert_eq!(reached[0]["limit"], "max_cost_usd");
    assert_eq!(reached[0]["raise_with"], "--max-cost 1");
    let paused = summary(&events);
    assert_eq!(paused["status"], "paused");
    assert_eq!(paused["limit"], "max_cost_usd");
    let error = paused["error"].as_str().expect("reason");
    assert!(error.contains("max_cost_usd $0.5"), "{error}");
    assert_eq!(paused["raise_with"], "--max-cost 1");
    assert!(paused["cost_usd"].as_f64().expect("cost") >= 0.5);
    let messages = project.commit_messages();
    assert!(messages[0].contains("paused (checkpoint)"), "{messages:?}");
    let status = project.status_json();
    assert_eq!(status["run"]["status"], "paused");
    assert!(
        status["run"]["error"]
            .as_str()
            .is_some_and(|e| e.contains("max_cost_usd")),
        "{status:#}"
    );

    // The same limit pauses again at once, before any session starts.
    let (code, events) = project.run(&["--resume"]);
    assert_eq!(code, 3, "{events:#?}");
    assert!(events_named(&events, "session_started").is_empty());

    // The resumed session is told where the paused one stopped.
    let resumed = Scenario::new().script(
        Script::phase("1")
            .expect_prompt("# Checkpoint: phase 1")
            .expect_prompt("a.txt")
            .expect_prompt("the run was paused: the run's cost reached")
            .turns([Turn::notes("1"), Turn::done()]),
    );
    project.rescript(&resumed, "resume scenario");
    let (code, events) = project.run(&["--resume", "--max-cost", "100"]);
    assert_eq!(code, 0, "{events:#?}");
    assert_eq!(summary(&events)["status"], "completed");
}

#[test]
fn a_time_limit_pauses_the_run_mid_session() {
    let project = Project::new();
    project.plan(&[("1", "N/A", "test -f a.txt")], &expensive_scenario());
    let started = std::time::Instant::now();
    let (code, events) = project.run(&["--max-duration", "2s"]);
    assert_eq!(code, 3, "{events:#?}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(15),
        "the idle session was stopped at the limit, not left to finish"
    );
    assert_eq!(
        events_named(&events, "limit_reached")[0]["limit"],
        "max_duration"
    );
    assert_eq!(summary(&events)["limit"], "max_duration");
    assert!(
        project.commit_messages()[0].contains("paused (checkpoint)"),
        "the work is committed"
    );
}

#[test]
fn restarts_that_change_nothing_fail_the_attempt_with_no_progress() {
    let project = Project::new();
    // Every session only reads and fills its context: nothing is written, logged or done.
    let idle = Scenario::new().script(Script::phase("1").turns([
        Turn::say("reading").percent(10).read("plan/MASTER_PLAN.md"),
        Turn::say("still reading").percent(90),
        Turn::sleep(20_000),
    ]));
    project.plan(&[("1", "N/A", "true")], &idle);
    let (code, events) = project.run(&["--max-retries", "0", "--max-restarts", "5"]);
    assert_eq!(code, 1, "{events:#?}");
    assert_eq!(
        events_named(&events, "restart").len(),
        1,
        "the second stalled session ends the attempt instead of restarting"
    );
    let error = run_error(&events);
    assert!(error.contains("no progress"), "{error}");
    let status = project.status_json();
    assert_eq!(status["executions"][0]["outcome_code"], -6, "{status:#}");

    let (code, events) = project.run(&[
        "--restart",
        "--max-retries",
        "0",
        "--max-restarts",
        "2",
        "--no-progress-restarts",
        "0",
    ]);
    assert_eq!(code, 1);
    let error = run_error(&events);
    assert!(error.contains("max restarts exceeded"), "{error}");
}

#[test]
fn the_agents_own_compaction_becomes_a_restart_until_the_last_session() {
    let project = Project::new();
    // Every session writes a file, then compacts. The agent's hook reports each
    // compaction; while a restart is left it is blocked and the session restarted, the
    // last session (no restart left) compacts as it would without debussy.
    let scenario = Scenario::playing([
        Turn::say("writing")
            .percent(30)
            .writes("f${RESTART}.txt", "x"),
        Turn::compact(Compact::default().trigger(Trigger::Auto)),
        Turn::sleep(5000),
    ]);
    project.plan(&[("1", "N/A", "true")], &scenario);
    let (code, events) = project.run(&["--max-restarts", "1", "--max-retries", "0"]);
    assert_eq!(code, 1, "{events:#?}");
    project::assert_restarted_once_for_a_blocked_compaction(&events);
    let ended = events_named(&events, "session_ended");
    assert!(
        ended[1]["detail"]
            .as_str()
            .is_some_and(|d| d.contains("compacted")),
        "the last session compacted on its own: {:#}",
        ended[1]
    );
    assert!(
        run_error(&events).contains("max restarts exceeded"),
        "{events:#?}"
    );
    let failed = events_named(&events, "phase_finished");
    assert!(
        failed[0]["error"]
            .as_str()
            .is_some_and(|e| e.ends_with("(after 1 attempt)")),
        "one attempt, in English: {:#}",
        failed[0]
    );
}

#[test]
fn a_phase_cost_limit_pauses_the_run_in_that_phase() {
    let project = Project::new();
    project.plan(&[("1", "N/A", "test -f a.txt")], &expensive_scenario());
    let (code, events) = project.run(&["--max-phase-cost", "0.5", "--max-cost", "100"]);
    assert_eq!(code, 3, "{events:#?}");
    let reached = events_named(&events, "limit_reached");
    assert_eq!(reached[0]["limit"], "max_phase_cost_usd", "{events:#?}");
    assert_eq!(reached[0]["phase_id"], "1");
    assert!(
        reached[0]["detail"]
            .as_str()
            .is_some_and(|d| d.starts_with("phase 1's cost reached")),
        "{:#}",
        reached[0]
    );
    assert_eq!(summary(&events)["raise_with"], "--max-phase-cost 1");
}
