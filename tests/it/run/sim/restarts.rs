//! `debussy run` restarts a session for its context: checkpoints committed, the next
//! session given them, restarts counted, limited and priced.

use std::path::Path;

use crate::support::project::{self, Project, events_named};
use serde_json::Value;

use super::kit::{filling, summary, wrong_first};
use crate::support::scenario::{Scenario, Script, Turn};

#[test]
fn context_restarts_commit_checkpoints_and_the_next_session_gets_the_checkpoint() {
    let project = Project::new();
    let scenario = Scenario::new()
        .script(Script::phase("1").restart(0).turns([
            Turn::write(50, "a.txt", "a"),
            Turn::write(85, "a2.txt", "a2"),
            Turn::sleep(5000),
        ]))
        .script(
            Script::phase("1")
                .restart(1)
                .expect_prompt("# Checkpoint: phase 1")
                .expect_prompt("a.txt")
                .expect_prompt("---")
                .turns([
                    Turn::write(40, "b.txt", "b"),
                    Turn::write(90, "b2.txt", "b2"),
                    Turn::sleep(5000),
                ]),
        )
        .script(
            Script::phase("1")
                .restart(2)
                .expect_prompt("restart 2 of 3")
                .expect_prompt("b.txt")
                .turns([
                    Turn::write(30, "c.txt", "c"),
                    Turn::notes("1"),
                    Turn::done(),
                ]),
        )
        .script(Script::writing("2", 10, "d.txt", "d"));
    project.plan(
        &[
            ("1", "N/A", "test -f c.txt"),
            ("2", "Phase 1", "test -f d.txt"),
        ],
        &scenario,
    );

    let (code, events) = project.run(&[]);
    assert_eq!(code, 0, "events: {events:#?}");
    let restarts = events_named(&events, "restart");
    assert_eq!(restarts.len(), 2, "two context restarts");
    assert!(
        restarts.iter().all(|r| r["commit"].is_string()),
        "each restart committed a checkpoint"
    );
    assert_eq!(summary(&events)["status"], "completed");
    assert_eq!(summary(&events)["restarts"], 2);

    let messages = project.commit_messages();
    project::assert_checkpoint_commits(&messages, 2);
    assert!(
        messages
            .iter()
            .any(|m| m.contains("phase 1 - Phase 1 completed")),
        "{messages:?}"
    );
    assert!(
        messages
            .iter()
            .any(|m| m.contains("phase 2 - Phase 2 completed")),
        "{messages:?}"
    );
    for file in ["a.txt", "b.txt", "c.txt", "d.txt"] {
        assert!(project.root().join(file).exists(), "{file} was not written");
    }
    let status = project.status_json();
    assert_eq!(status["run"]["status"], "completed");
    assert_eq!(status["executions"][0]["restarts"], 2);
    let kinds: Vec<&str> = status["executions"][0]["sessions"]
        .as_array()
        .expect("sessions")
        .iter()
        .map(|s| s["kind"].as_str().expect("kind"))
        .collect();
    // Stopped at 85 % and 90 %, each session still had room for the handoff's prompt
    // and answer, and wrote it.
    assert_eq!(kinds, ["work", "handoff", "work", "handoff", "work"]);
    assert_eq!(status["totals"]["handoffs"], 2);
    assert!(
        events_named(&events, "handoff")
            .iter()
            .all(|h| h["written"] == true),
        "{events:#?}"
    );
    let log = status["executions"][0]["sessions"][0]["log_path"]
        .as_str()
        .expect("log path");
    let first_line = std::fs::read_to_string(project.root().join(log))
        .expect("log")
        .lines()
        .next()
        .map(str::to_owned);
    assert_eq!(first_line.as_deref(), Some("CONTEXT_LIMIT_RESTART"));
    let ignored = git2::Repository::open(project.root())
        .expect("open")
        .is_path_ignored(Path::new(".debussy/state.db"));
    assert!(ignored.expect("check"), "run data must never be committed");
}

#[test]
fn max_restarts_exceeded_fails_the_phase_and_says_why() {
    let project = Project::new();
    let scenario = Scenario::new()
        .script(Script::phase("1").turns([Turn::write(95, "x.txt", "x"), Turn::sleep(5000)]));
    project.plan(&[("1", "N/A", "true")], &scenario);
    let (code, events) = project.run(&["--max-restarts", "1", "--max-retries", "0"]);
    assert_eq!(code, 1);
    assert_eq!(summary(&events)["status"], "failed");
    let status = project.status_json();
    let execution = &status["executions"][0];
    assert_eq!(execution["outcome_code"], -3);
    assert!(
        execution["error"]
            .as_str()
            .is_some_and(|e| e.contains("max restarts exceeded")),
        "{execution}"
    );
    assert_eq!(execution["restarts"], 1);
}

#[test]
fn fix_sessions_restart_for_their_context_only_when_configured() {
    let project = Project::new();
    // The fix session crosses the threshold at once; only with restart_in_fix_sessions
    // is it stopped and continued from a checkpoint.
    let scenario = Scenario::new()
        .script(wrong_first())
        .script(
            Script::phase("1")
                .attempt(2)
                .restart(0)
                .turns(filling("out.txt", "right", 95, 2000)),
        )
        .script(Script::phase("1").attempt(2).restart(1).turn(Turn::done()));
    project.plan(&[("1", "N/A", "grep -q right out.txt")], &scenario);
    let (code, events) = project.run(&[]);
    assert_eq!(code, 0, "{events:#?}");
    assert!(events_named(&events, "restart").is_empty(), "{events:#?}");

    project.write(".debussy/config.yaml", "restart_in_fix_sessions: true\n");
    let (code, events) = project.run(&["--restart", "--allow-dirty"]);
    assert_eq!(code, 0, "{events:#?}");
    let sessions = events_named(&events, "session_started");
    assert!(
        sessions.iter().all(|s| s.get("no_restart").is_none()),
        "{sessions:#?}"
    );
    assert_eq!(events_named(&events, "restart").len(), 1, "{events:#?}");
}

#[test]
fn a_session_stopped_for_its_context_is_priced_from_its_tokens_and_marked_estimated() {
    let project = Project::new();
    let scenario = Scenario::new()
        .model("claude-sonnet-4-5")
        .script(
            Script::phase("1")
                .restart(0)
                .turns(filling("a.txt", "a", 90, 2000)),
        )
        .script(
            Script::phase("1")
                .restart(1)
                .turns([Turn::notes("1"), Turn::done()]),
        );
    project.plan(&[("1", "N/A", "true")], &scenario);
    let (code, events) = project.run(&[]);
    assert_eq!(code, 0, "{events:#?}");
    let ended = events_named(&events, "session_ended");
    let stopped = &ended[0]["snapshot"];
    assert_eq!(ended[0]["outcome"], "context_limit", "{:#}", ended[0]);
    assert_eq!(stopped["cost_estimated"], true, "{stopped:#}");
    assert!(
        stopped["cost_usd"].as_f64().is_some_and(|c| c > 0.0),
        "{stopped:#}"
    );
    assert!(
        stopped["billed"]["cache_read"].as_u64().is_some()
            || stopped["billed"]["input"].as_u64() > Some(0),
        "{stopped:#}"
    );
    let summary = summary(&events);
    assert_eq!(summary["cost_estimated"], true, "{summary:#}");
    assert!(
        summary["cost_usd"].as_f64().is_some_and(|c| c > 0.0),
        "{summary:#}"
    );
    let status = project.status_json();
    assert_eq!(
        status["executions"][0]["cost_estimated"], true,
        "{status:#}"
    );
    let text = project.command(&["status"]).output().expect("status");
    assert!(
        String::from_utf8_lossy(&text.stdout).contains("~$"),
        "{}",
        String::from_utf8_lossy(&text.stdout)
    );
}

#[test]
fn a_window_the_agent_reported_under_its_full_name_is_used_with_an_alias_configured() {
    let project = Project::new();
    // The agent runs `claude-opus-5-5` for the alias `opus` and reports a 1,000,000-token
    // window. Phase 2 then uses 300,000 tokens: 30 % of the real window, but past 80 %
    // of the 200,000 default, where a restart would wrongly fire.
    let scenario = Scenario::new()
        .model("claude-opus-5-5")
        .window(1_000_000)
        .script(Script::writing("1", 10, "a.txt", "a"))
        .script(Script::writing("2", 30, "b.txt", "b"));
    project.plan(&[("1", "N/A", "true"), ("2", "Phase 1", "true")], &scenario);
    let (code, events) = project.run(&["--model", "opus", "--context-threshold", "80"]);
    assert_eq!(code, 0, "{events:#?}");
    assert_eq!(summary(&events)["restarts"], 0, "{events:#?}");
    let phase_two: Vec<&Value> = events_named(&events, "context")
        .into_iter()
        .filter(|e| e["phase_id"] == "2" && e["snapshot"]["tokens"].as_u64() > Some(0))
        .collect();
    assert!(!phase_two.is_empty(), "{events:#?}");
    for event in phase_two {
        assert_eq!(event["snapshot"]["window"]["tokens"], 1_000_000, "{event}");
        assert_ne!(event["snapshot"]["window"]["source"], "default", "{event}");
    }
}
