//! The limits of an unattended run with the real Claude Code CLI: a cost limit the
//! scripted usage crosses, a time limit while the model stalls, and restarts that make no
//! progress.

use std::time::Duration;

use super::kit::{Project, usage};
use crate::support::model_server::{ModelServer, Turn};
use crate::support::project::events_named as named;

#[test]
#[ignore = "needs the pinned Claude Code CLI (scripts/test-tools)"]
fn a_cost_limit_pauses_a_real_session_with_its_work_committed() {
    let project = Project::planned(&[("1", "test -f a.txt")]);
    let server = ModelServer::serving([
        // About $0.02 of Sonnet tokens, then about $0.04 more: past --max-cost 0.04.
        project.write_turn("a.txt", "a\n", 30),
        Turn::new().text("Thinking.").usage(usage(60)).hold(),
    ]);
    let (code, events) = project.run(&server, &["--max-cost", "0.04"]);
    assert_eq!(code, 3, "{events:#?}");
    let reached = named(&events, "limit_reached");
    assert_eq!(reached.len(), 1, "{events:#?}");
    assert_eq!(reached[0]["limit"], "max_cost_usd");
    let summary = &events.last().expect("summary")["summary"];
    assert_eq!(summary["status"], "paused");
    assert!(
        summary["cost_usd"].as_f64().expect("cost") >= 0.04,
        "{summary:#}"
    );
    let messages = project.commit_messages();
    assert!(messages[0].contains("paused (checkpoint)"), "{messages:?}");
    assert_eq!(project.status(&server)["run"]["status"], "paused");
}

#[test]
#[ignore = "needs the pinned Claude Code CLI (scripts/test-tools)"]
fn a_time_limit_pauses_a_real_session_waiting_on_its_model() {
    let project = Project::planned(&[("1", "test -f a.txt")]);
    let server = ModelServer::serving([
        project.write_turn("a.txt", "a\n", 10),
        Turn::new().text("Waiting.").usage(usage(11)).stall(),
    ]);
    let started = std::time::Instant::now();
    // Long enough for Claude Code to start and make its first request on a loaded
    // machine: the limit is a wall clock, so nothing can be awaited instead.
    let (code, events) = project.run(&server, &["--max-duration", "8s"]);
    assert_eq!(code, 3, "{events:#?}");
    assert!(started.elapsed() < Duration::from_secs(60));
    assert_eq!(named(&events, "limit_reached")[0]["limit"], "max_duration");
    let messages = project.commit_messages();
    assert!(messages[0].contains("paused (checkpoint)"), "{messages:?}");
    assert!(project.root().join("a.txt").exists());
}

#[test]
#[ignore = "needs the pinned Claude Code CLI (scripts/test-tools)"]
fn real_sessions_that_make_no_progress_fail_the_attempt_early() {
    let project = Project::planned(&[("1", "true")]);
    // Each session only fills its context: nothing written, logged or completed.
    let server = ModelServer::serving([
        Turn::new().text("Reading.").usage(usage(85)).hold(),
        Turn::new().text("Reading again.").usage(usage(85)).hold(),
        Turn::new().text("And again.").usage(usage(85)).hold(),
    ]);
    let (code, events) = project.run(&server, &["--max-restarts", "3", "--max-retries", "0"]);
    assert_eq!(code, 1, "{events:#?}");
    assert_eq!(named(&events, "restart").len(), 1, "{events:#?}");
    let status = project.status(&server);
    assert_eq!(status["executions"][0]["outcome_code"], -6, "{status:#}");
    assert!(
        status["executions"][0]["error"]
            .as_str()
            .is_some_and(|e| e.starts_with("no progress")),
        "{status:#}"
    );
}
