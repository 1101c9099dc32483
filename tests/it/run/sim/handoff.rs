//! The agent-written handoff with the simulated agent: the stopped session, resumed,
//! writes the handoff that heads the next checkpoint; when it cannot, the checkpoint is
//! debussy's own and the event says why.

use super::kit::summary;
use crate::support::project::{Project, events_named};
use crate::support::scenario::{Compact, Crash, Scenario, Script, Trigger, Turn};

/// Phase 1 stops once for its context, at 82 %; its handoff turns are `handoff`; the
/// restarted session must see each of `expect`.
fn scenario(handoff: impl IntoIterator<Item = Turn>, expect: &[&str]) -> Scenario {
    stopping_at(82, handoff, expect)
}

/// [`scenario`], stopping at `percent`.
fn stopping_at(percent: u32, handoff: impl IntoIterator<Item = Turn>, expect: &[&str]) -> Scenario {
    let stopping = Script::phase("1").restart(0).turns([
        Turn::write(30, "a.txt", "a"),
        Turn::write(percent, "b.txt", "b"),
        Turn::sleep(5000),
    ]);
    let restarted = expect
        .iter()
        .fold(Script::phase("1").restart(1), |script, text| {
            script.expect_prompt(text)
        });
    Scenario::new()
        .script(handoff.into_iter().fold(stopping, Script::handoff))
        .script(restarted.turns([Turn::notes("1"), Turn::done()]))
}

#[test]
fn the_stopped_sessions_handoff_heads_the_next_checkpoint() {
    let project = Project::new();
    let handoff =
        Turn::say("## Goal\nGreet.\n\n## Half done\nb.txt needs a second line (HANDOFF-MARK).")
            .percent(86);
    project.plan(
        &[("1", "N/A", "test -f b.txt")],
        &scenario(
            [handoff],
            &[
                "## Handoff from the previous session",
                "### Half done",
                "HANDOFF-MARK",
                "## Files changed since the phase started",
            ],
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
    let crash = Turn::crash(Crash::exit(3).stderr("boom"));
    project.plan(
        &[("1", "N/A", "test -f b.txt")],
        &scenario([crash], &["# Checkpoint: phase 1", "a.txt"]),
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
    let never = Turn::crash(Crash::exit(9));
    project.plan(
        &[("1", "N/A", "test -f b.txt")],
        &scenario([never], &["# Checkpoint: phase 1"]),
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
    let slow = [Turn::sleep(30_000), Turn::say("too late")];
    project.plan(
        &[("1", "N/A", "test -f b.txt")],
        &scenario(slow, &["# Checkpoint: phase 1"]),
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
    let compacts = [
        Turn::compact(Compact::default().trigger(Trigger::Auto)),
        Turn::say("written from the whole context (FULL-CONTEXT)"),
    ];
    project.plan(
        &[("1", "N/A", "test -f b.txt")],
        &scenario(compacts, &["FULL-CONTEXT"]),
    );
    let (code, events) = project.run(&[]);
    assert_eq!(code, 0, "{events:#?}");
    let handoff = events_named(&events, "handoff")[0].clone();
    assert_eq!(handoff["written"], true, "{handoff:#}");
}

#[test]
fn a_stop_too_close_to_the_window_asks_for_no_handoff() {
    let project = Project::new();
    let scenario = stopping_at(97, [Turn::crash(Crash::exit(9))], &[]);
    project.plan(&[("1", "N/A", "test -f b.txt")], &scenario);
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
