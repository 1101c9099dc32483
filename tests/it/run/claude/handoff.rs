//! The handoff and the compaction guard with the real Claude Code CLI: the stopped
//! session, resumed, writes the handoff the next session starts from (or the checkpoint
//! goes without it, saying why), and Claude Code's own compaction is blocked and turned
//! into a checkpoint restart.

use serde_json::json;

use super::kit::{Project, assert_compaction_blocked, usage};
use crate::support::model_server::{ModelServer, RequestKind, Scenario, Turn, Usage};
use crate::support::project::events_named as named;

/// Phase 1 with one context stop: a.txt is written, the context crosses 85 %, and the
/// restarted session writes b.txt and finishes.
fn one_stop_scenario(project: &Project) -> Scenario {
    Scenario::new().turns([
        project.write_turn("a.txt", "a\n", 50),
        Turn::new().text("Next, b.txt.").usage(usage(82)).hold(),
        project.write_turn("b.txt", "b\n", 20),
        Turn::reply("Phase 1 is done.").usage(usage(21)),
    ])
}

#[test]
#[ignore = "needs the pinned Claude Code CLI (scripts/test-tools)"]
fn the_stopped_session_writes_its_handoff_and_the_next_session_starts_from_it() {
    let project = Project::planned(&[("1", "test -f a.txt && test -f b.txt")]);
    let server = ModelServer::start(
        one_stop_scenario(&project).handoff(
            Turn::reply("## Goal\nTwo files.\n\n## Half done\nb.txt is next (HANDOFF-7).")
                .usage(Usage::new(10, 170_000, 200, 80)),
        ),
    )
    .expect("model server");

    let (code, events) = project.run(&server, &[]);
    assert_eq!(code, 0, "{events:#?}");
    let handoff_events = named(&events, "handoff");
    assert_eq!(handoff_events.len(), 1, "{events:#?}");
    assert_eq!(handoff_events[0]["written"], true, "{events:#?}");

    let sessions = server.main_sessions();
    assert_eq!(sessions.len(), 2, "two working sessions");
    let handoffs = server.requests_of(&RequestKind::Handoff);
    assert_eq!(handoffs.len(), 1, "{:#?}", server.requests());
    let request = &handoffs[0];
    // The resumed request is the stopped conversation, whole, with the prompt at its end.
    assert_eq!(request.session_id(), sessions[0][0].session_id());
    assert!(request.first_user_text().contains("phase 1 of the plan"));
    let history = serde_json::to_string(request.messages()).expect("messages");
    assert!(
        history.contains("Creating a.txt.") && history.contains("\"tool_result\""),
        "the handoff request carries the stopped session's history: {history}"
    );
    assert!(request.tool_names().is_empty(), "the handoff has no tools");
    assert!(
        request.last_user_text().contains("## Half done"),
        "the handoff prompt asks for the sections"
    );

    let next = sessions[1][0].first_user_text();
    assert!(
        next.contains("## Handoff from the previous session") && next.contains("HANDOFF-7"),
        "{next}"
    );
    assert!(
        next.find("HANDOFF-7") < next.find("## Files changed since the phase started"),
        "the handoff comes before debussy's own sections: {next}"
    );
    let totals = &project.status(&server)["totals"];
    assert_eq!(totals["handoffs"], 1, "{totals:#}");
    assert!(totals["billed"]["cache_read"].as_u64().expect("billed") >= 170_000);
    server.assert_all_scripted();
}

#[test]
#[ignore = "needs the pinned Claude Code CLI (scripts/test-tools)"]
fn a_handoff_request_that_fails_falls_back_to_the_mechanical_checkpoint() {
    let project = Project::planned(&[("1", "test -f a.txt && test -f b.txt")]);
    let server = ModelServer::start(one_stop_scenario(&project).handoff(Turn::api_error(
        400,
        "invalid_request_error",
        "scripted handoff failure",
    )))
    .expect("model server");

    let (code, events) = project.run(&server, &[]);
    assert_eq!(code, 0, "{events:#?}");
    let handoff = named(&events, "handoff")[0].clone();
    assert_eq!(handoff["written"], false, "{handoff:#}");
    assert!(
        handoff["detail"]
            .as_str()
            .is_some_and(|d| d.contains("the handoff session failed")),
        "{handoff:#}"
    );
    let next = server.main_sessions()[1][0].first_user_text();
    assert!(next.contains("# Checkpoint: phase 1"), "{next}");
    assert!(
        !next.contains("## Handoff from the previous session"),
        "{next}"
    );
}

#[test]
#[ignore = "needs the pinned Claude Code CLI (scripts/test-tools)"]
fn the_agents_own_compaction_is_blocked_and_becomes_a_checkpoint_restart() {
    let project = Project::new();
    // Claude Code arms its auto-compaction only when it knows the window.
    project.plan_knowing_the_window(&[("1", "test -f a.txt && test -f b.txt")]);
    // The user's own settings and hooks (here a PostToolUse hook in their user settings)
    // keep working beside debussy's.
    let marker = project.sandbox.home().join("user-hook-ran");
    let settings = json!({"hooks": {"PostToolUse": [{"matcher": "Write", "hooks": [{
        "type": "command",
        "command": format!("touch '{}'", marker.display()),
    }]}]}});
    std::fs::write(
        project.sandbox.config_dir().join("settings.json"),
        settings.to_string(),
    )
    .expect("user settings");
    let server = ModelServer::serving([
        // One turn takes the context from nothing to 90 %: under debussy's 97 % threshold,
        // past Claude Code's own compaction point (about 83 % of 200,000). Claude Code
        // then compacts before its next request: the hook blocks that and debussy stops
        // the session.
        project.write_turn_using("a.txt", "a\n", Usage::new(10, 179_000, 1_000, 50)),
        project.write_turn("b.txt", "b\n", 20),
        Turn::reply("Phase 1 is done.").usage(usage(21)),
    ]);

    let (code, events) = project.run(&server, &["--context-threshold", "97"]);
    assert_eq!(code, 0, "{events:#?}");
    assert_compaction_blocked(&events, &server);
    assert!(marker.exists(), "the user's own hook ran too");
    // Stopped at Claude Code's own compaction point, the session still has room for the
    // handoff's prompt and answer: resumed, it tries to compact first, the hook blocks
    // that, and it answers.
    let handoff = named(&events, "handoff")[0].clone();
    assert_eq!(handoff["written"], true, "{handoff:#}");
    assert_eq!(server.requests_of(&RequestKind::Handoff).len(), 1);
    assert!(
        server.requests_of(&RequestKind::Compact).is_empty(),
        "no compaction after the handoff either: {:#?}",
        server.requests()
    );
    assert_eq!(server.main_sessions().len(), 2, "{:#?}", server.requests());
    let status = project.status(&server);
    assert!(
        status["executions"][0]["restart_events"][0]["reason"]
            .as_str()
            .is_some_and(|r| r.starts_with("agent_compaction_blocked")),
        "{status:#}"
    );
    assert!(project.root().join("b.txt").exists());
}

#[test]
#[ignore = "needs the pinned Claude Code CLI (scripts/test-tools)"]
fn at_90_percent_the_next_session_opens_with_the_agents_handoff_and_nothing_compacts() {
    let project = Project::new();
    // Claude Code knows the window, so it would keep its whole compaction reserve free.
    project.plan_knowing_the_window(&[("1", "test -f a.txt && test -f b.txt")]);
    let server = ModelServer::start(
        Scenario::new()
            .turns([
                project.write_turn("a.txt", "a\n", 50),
                Turn::new().text("Next, b.txt.").usage(usage(91)).hold(),
                project.write_turn("b.txt", "b\n", 20),
                Turn::reply("Phase 1 is done.").usage(usage(21)),
            ])
            .handoff(
                Turn::reply("## Goal\nTwo files.\n\n## Half done\nb.txt is next (HANDOFF-90).")
                    .usage(Usage::new(10, 181_000, 200, 80)),
            ),
    )
    .expect("model server");

    // The design card's command.
    let (code, events) = project.run(&server, &["--context-threshold", "90"]);
    assert_eq!(code, 0, "{events:#?}");
    let handoff = named(&events, "handoff")[0].clone();
    assert_eq!(handoff["written"], true, "{handoff:#}");
    let handoffs = server.requests_of(&RequestKind::Handoff);
    assert_eq!(handoffs.len(), 1, "{:#?}", server.requests());
    assert_eq!(
        handoffs[0].body["max_tokens"], 8_000,
        "the answer is bounded"
    );
    assert!(
        server.requests_of(&RequestKind::Compact).is_empty(),
        "the model server saw no compaction request: {:#?}",
        server.requests()
    );
    let next = server.main_sessions()[1][0].first_user_text();
    assert!(
        next.contains("## Handoff from the previous session") && next.contains("HANDOFF-90"),
        "{next}"
    );
}
