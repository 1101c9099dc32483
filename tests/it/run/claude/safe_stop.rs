//! Stops at a safe point, with the real Claude Code CLI: a context stop decided while a
//! Bash call runs waits for its result and ends the session before the next model
//! request; a call that outlasts `agent.tool_grace` is cut short and the checkpoint
//! says so.

use serde_json::json;

use super::kit::{Project, permission_args_yaml, usage};
use crate::support::model_server::{ModelServer, Scenario, Turn};
use crate::support::project::events_named as named;

/// Session 1 calls Bash with `command` in the turn whose usage crosses 80 % (the call is
/// the turn's one block, so the threshold is crossed as the call starts); session 2
/// finishes.
fn crossing_while(command: &str) -> Scenario {
    Scenario::new().turns([
        Turn::new()
            .tool_use("Bash", json!({"command": command}))
            .usage(usage(85)),
        Turn::reply("Phase 1 is done.").usage(usage(20)),
    ])
}

#[test]
#[ignore = "needs the pinned Claude Code CLI (scripts/test-tools)"]
fn a_bash_call_crossing_the_threshold_finishes_before_the_stop() {
    let project = Project::planned(&[("1", "test -f f")]);
    let server = ModelServer::start(crossing_while("sleep 4 && touch f")).expect("model server");

    let (code, events) = project.run(&server, &["--handoff", "mechanical"]);
    assert_eq!(code, 0, "{events:#?}");
    assert!(project.root().join("f").exists(), "the tool call finished");
    let restarts = named(&events, "restart");
    assert_eq!(restarts.len(), 1, "{events:#?}");
    let sessions = server.main_sessions();
    assert_eq!(sessions.len(), 2, "{:#?}", server.requests());
    assert_eq!(
        sessions[0].len(),
        1,
        "the stopped session made no request after the tool's result"
    );
    let next = sessions[1][0].first_user_text();
    assert!(!next.contains("interrupted a tool call"), "{next}");
}

#[test]
#[ignore = "needs the pinned Claude Code CLI (scripts/test-tools)"]
fn a_call_past_the_grace_is_cut_short_and_the_checkpoint_names_it() {
    let project = Project::new();
    project.plan_with_agent(
        &[("1", "true")],
        &format!("{}  tool_grace: 1\n", permission_args_yaml()),
    );
    // Claude Code refuses a long leading `sleep`; `tail -f` waits without it.
    let server = ModelServer::start(crossing_while("timeout 30 tail -f /dev/null; touch late"))
        .expect("model server");

    let (code, events) = project.run(&server, &["--handoff", "mechanical"]);
    assert_eq!(code, 0, "{events:#?}");
    assert!(
        !project.root().join("late").exists(),
        "the call was cut short"
    );
    let next = server.main_sessions()[1][0].first_user_text();
    assert!(
        next.contains(
            "The stop interrupted a tool call that ran past its grace: `Bash: timeout 30 tail -f /dev/null; touch late`"
        ),
        "{next}"
    );
}
