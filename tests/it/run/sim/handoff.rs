//! The agent-written handoff with the simulated agent: the stopped session, resumed,
//! writes the handoff that heads the next checkpoint; when it cannot, the checkpoint is
//! debussy's own and the event says why.

use super::kit::{DONE_TURN, notes_turn, summary, write_turn};
use crate::support::project::{Project, events_named};

/// Phase 1 stops once for its context; its handoff turns are `handoff` (YAML list items
/// indented for a script); the restarted session must see `expect`.
fn scenario(handoff: &str, expect: &str) -> String {
    format!(
        "scripts:\n  - phase: 1\n    restart: 0\n    turns:\n{}{}      - sleep_ms: 5000\n{handoff}  - phase: 1\n    restart: 1\n    expect_prompt: [{expect}]\n    turns:\n{}{}",
        write_turn(30, "a.txt", "a"),
        write_turn(82, "b.txt", "b"),
        notes_turn("1"),
        DONE_TURN,
    )
}

#[test]
fn the_stopped_sessions_handoff_heads_the_next_checkpoint() {
    let project = Project::new();
    let handoff = "    handoff:\n      - say: \"## Goal\\nGreet.\\n\\n## Half done\\nb.txt needs a second line (HANDOFF-MARK).\"\n        percent: 86\n";
    project.plan(
        &[("1", "N/A", "test -f b.txt")],
        &scenario(
            handoff,
            "\"## Handoff from the previous session\", \"### Half done\", \"HANDOFF-MARK\", \"## Files changed since the phase started\"",
        ),
    );
    let (code, events) = project.run(&[]);
    assert_eq!(code, 0, "{events:#?}");
    let handoffs = events_named(&events, "handoff");
    assert_eq!(handoffs.len(), 1, "{events:#?}");
    assert_eq!(handoffs[0]["written"], true);
    assert!(handoffs[0]["cost_usd"].as_f64().expect("cost") > 0.0);
    assert_eq!(events_named(&events, "handoff_requested").len(), 1);
    let totals = summary(&events);
    assert_eq!(totals["handoffs"], 1);
    assert!(totals["handoff_cost_usd"].as_f64().expect("handoff cost") > 0.0);
    let sessions = project.status_json()["executions"][0]["sessions"].clone();
    let handoff = sessions
        .as_array()
        .expect("sessions")
        .iter()
        .find(|s| s["kind"] == "handoff")
        .expect("the handoff session is recorded")
        .clone();
    assert!(
        handoff["log_path"]
            .as_str()
            .is_some_and(|p| p.ends_with("attempt-1-session-1.handoff.jsonl")),
        "{handoff:#}"
    );
}

#[test]
fn a_failed_handoff_falls_back_to_the_mechanical_checkpoint_and_says_why() {
    let project = Project::new();
    let crash = "    handoff:\n      - crash: {exit_code: 3, stderr: boom}\n";
    project.plan(
        &[("1", "N/A", "test -f b.txt")],
        &scenario(crash, "\"# Checkpoint: phase 1\", \"a.txt\""),
    );
    let (code, events) = project.run(&[]);
    assert_eq!(code, 0, "{events:#?}");
    let handoff = events_named(&events, "handoff")[0].clone();
    assert_eq!(handoff["written"], false);
    assert!(
        handoff["detail"]
            .as_str()
            .is_some_and(|d| d.contains("the handoff session failed")),
        "{handoff:#}"
    );
    let prompts = project.status_json();
    assert_eq!(
        prompts["totals"]["handoffs"], 1,
        "a failed handoff still counts"
    );
}

#[test]
fn mechanical_handoffs_ask_nobody() {
    let project = Project::new();
    let never = "    handoff:\n      - crash: {exit_code: 9}\n";
    project.plan(
        &[("1", "N/A", "test -f b.txt")],
        &scenario(never, "\"# Checkpoint: phase 1\""),
    );
    let (code, events) = project.run(&["--handoff", "mechanical"]);
    assert_eq!(code, 0, "{events:#?}");
    assert!(events_named(&events, "handoff_requested").is_empty());
    let handoff = events_named(&events, "handoff")[0].clone();
    assert_eq!(handoff["written"], false);
    assert_eq!(handoff["detail"], "handoff is set to mechanical");
    assert!(summary(&events).get("handoffs").is_none());
}

#[test]
fn a_handoff_that_takes_too_long_is_stopped_and_not_used() {
    let project = Project::new();
    let slow = "    handoff:\n      - sleep_ms: 30000\n      - say: too late\n";
    project.plan(
        &[("1", "N/A", "test -f b.txt")],
        &scenario(slow, "\"# Checkpoint: phase 1\""),
    );
    let started = std::time::Instant::now();
    let (code, events) = project.run(&["--handoff-timeout", "1"]);
    assert_eq!(code, 0, "{events:#?}");
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
    let handoff = events_named(&events, "handoff")[0].clone();
    assert_eq!(handoff["written"], false);
    assert_eq!(
        handoff["detail"],
        "the handoff session did not answer within handoff_timeout (1s)"
    );
}

#[test]
fn a_handoff_session_is_kept_from_compacting() {
    let project = Project::new();
    let compacts = "    handoff:\n      - compact: {trigger: auto}\n      - say: written from the whole context (FULL-CONTEXT)\n";
    project.plan(
        &[("1", "N/A", "test -f b.txt")],
        &scenario(compacts, "\"FULL-CONTEXT\""),
    );
    let (code, events) = project.run(&[]);
    assert_eq!(code, 0, "{events:#?}");
    let handoff = events_named(&events, "handoff")[0].clone();
    assert_eq!(handoff["written"], true, "{handoff:#}");
}

#[test]
fn a_stop_too_close_to_the_window_asks_for_no_handoff() {
    let project = Project::new();
    let text = format!(
        "scripts:\n  - phase: 1\n    restart: 0\n    turns:\n{}{}      - sleep_ms: 5000\n    handoff:\n      - crash: {{exit_code: 9}}\n  - phase: 1\n    restart: 1\n    turns:\n{}{}",
        write_turn(30, "a.txt", "a"),
        write_turn(97, "b.txt", "b"),
        notes_turn("1"),
        DONE_TURN,
    );
    project.plan(&[("1", "N/A", "test -f b.txt")], &text);
    let (code, events) = project.run(&[]);
    assert_eq!(code, 0, "{events:#?}");
    assert!(events_named(&events, "handoff_requested").is_empty());
    let handoff = events_named(&events, "handoff")[0].clone();
    assert_eq!(handoff["written"], false);
    assert!(
        handoff["detail"]
            .as_str()
            .is_some_and(|d| d.starts_with("the stop left ")
                && d.contains(
                    "of 200,000 tokens, fewer than the 9,000 the handoff's prompt and answer need"
                )),
        "{handoff:#}"
    );
}
