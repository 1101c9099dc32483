//! The main flows with the real Claude Code CLI: context restarts whose checkpoint reaches
//! the next session, max restarts exceeded, permissions, a failing gate fixed by
//! remediation, and Ctrl-C then `--resume`.

use std::time::Duration;

use crate::support::model_server::{ModelServer, Scenario, Turn};
use crate::support::processes::group_gone;
use crate::support::project::{self, events_named as named};
use serde_json::json;

use super::kit::{Project, bash_turn, usage};

#[test]
#[ignore = "needs the pinned Claude Code CLI (scripts/test-tools)"]
fn phase_one_restarts_twice_and_each_restart_carries_the_checkpoint() {
    let project = Project::planned(&[
        ("1", "test -f a.txt && test -f c.txt && test -f e.txt"),
        ("2", "test -f d.txt"),
    ]);
    let server = ModelServer::serving([
        // Phase 1, session 1: writes a.txt, then its context crosses 80 %.
        project.write_turn("a.txt", "a\n", 50),
        Turn::new().text("Next, c.txt.").usage(usage(85)).hold(),
        // Session 2 (restart 1): writes c.txt, crosses again.
        project.write_turn("c.txt", "c\n", 40),
        Turn::new().text("Next, e.txt.").usage(usage(90)).hold(),
        // Session 3 (restart 2): finishes the phase.
        project.write_turn("e.txt", "e\n", 30),
        Turn::reply("Phase 1 is done.").usage(usage(31)),
        // Phase 2: one session.
        project.write_turn("d.txt", "d\n", 10),
        Turn::reply("Phase 2 is done.").usage(usage(11)),
    ]);

    let (code, events) = project.run(&server, &[]);
    assert_eq!(code, 0, "events: {events:#?}");
    assert_eq!(named(&events, "restart").len(), 2);

    let sessions = server.main_sessions();
    assert_eq!(
        sessions.len(),
        4,
        "three sessions for phase 1, one for phase 2"
    );
    assert_eq!(
        sessions[0].len(),
        2,
        "the first session was stopped before a third request"
    );
    assert_eq!(
        sessions[1].len(),
        2,
        "the second session was stopped before a third request"
    );
    let second = sessions[1][0].first_user_text();
    assert!(
        second.contains("# Checkpoint: phase 1 (Step 1), restart 1 of 3"),
        "{second}"
    );
    assert!(
        second.contains("a.txt") && second.contains("\n---\n"),
        "{second}"
    );
    let third = sessions[2][0].first_user_text();
    assert!(
        third.contains("restart 2 of 3") && third.contains("a.txt") && third.contains("c.txt"),
        "{third}"
    );
    assert!(
        !sessions[3][0].first_user_text().contains("# Checkpoint"),
        "phase 2 starts fresh"
    );

    let messages = project.commit_messages();
    project::assert_checkpoint_commits(&messages, 2);
    assert!(
        messages[0].contains("phase 2 - Step 2 completed"),
        "{messages:?}"
    );
    server.assert_all_scripted();
}

#[test]
#[ignore = "needs the pinned Claude Code CLI (scripts/test-tools)"]
fn exceeding_max_restarts_fails_with_the_reason_in_state() {
    let project = Project::planned(&[("1", "true")]);
    let server = ModelServer::serving([
        Turn::new().text("Working.").usage(usage(85)).hold(),
        Turn::new().text("Still working.").usage(usage(88)).hold(),
    ]);
    let (code, events) = project.run(&server, &["--max-restarts", "1", "--max-retries", "0"]);
    assert_eq!(code, 1, "{events:#?}");
    let status = project.status(&server);
    assert_eq!(status["run"]["status"], "failed");
    assert_eq!(status["executions"][0]["outcome_code"], -3);
    assert!(
        status["executions"][0]["error"]
            .as_str()
            .is_some_and(|e| e.contains("max restarts exceeded"))
    );
}

#[test]
#[ignore = "needs the pinned Claude Code CLI (scripts/test-tools)"]
fn with_the_default_permissions_the_agent_edits_files_and_runs_commands() {
    let project = Project::new();
    project.plan_with_agent(&[("1", "test -s out.txt && test -f ran.txt")], "");
    let server = ModelServer::serving([
        project.write_turn("out.txt", "hello\n", 10),
        bash_turn(
            "Checking.",
            "touch ran.txt && debussy progress '1.1: wrote out.txt'",
            11,
        ),
        Turn::reply("Done.").usage(usage(12)),
    ]);
    let (code, events) = project.run(&server, &[]);
    assert_eq!(code, 0, "{events:#?}");
    assert_eq!(
        std::fs::read_to_string(project.root().join("out.txt")).expect("written"),
        "hello\n"
    );
    assert!(project.root().join("ran.txt").exists(), "{events:#?}");
    let summary = named(&events, "run_finished");
    assert!(
        summary[0]["summary"]["phases"][0]
            .get("refused_calls")
            .is_none(),
        "{summary:#?}"
    );
}

#[test]
#[ignore = "needs the pinned Claude Code CLI (scripts/test-tools)"]
fn a_refused_tool_call_is_shown_with_the_rule_that_allows_it() {
    let project = Project::new();
    project.plan_with_agent(
        &[("1", "test -s out.txt")],
        "  allowed_tools: [Read, Write]\n",
    );
    let server = ModelServer::start(
        Scenario::new()
            .turns([
                project.write_turn("out.txt", "hello\n", 10),
                bash_turn("Testing.", "npm test -- --ci", 11),
                Turn::reply("Done.").usage(usage(12)),
            ])
            .when_exhausted(Turn::reply("Nothing more to do.").usage(usage(12))),
    )
    .expect("model server");
    let (_code, events) = project.run(&server, &["--max-retries", "0"]);
    let refused = named(&events, "activity")
        .into_iter()
        .filter(|e| {
            let kind = &e["activity"]["kind"];
            kind["tool"] == "Bash"
                && kind["message"]
                    .as_str()
                    .is_some_and(|m| m.starts_with("permission denied"))
        })
        .count();
    assert_eq!(refused, 1, "{events:#?}");
    let compliance = named(&events, "compliance");
    assert!(
        compliance[0]
            .to_string()
            .contains("add `Bash(npm test:*)` to `agent.allowed_tools`"),
        "{compliance:#?}"
    );
    let summary = &named(&events, "run_finished")[0]["summary"];
    assert_eq!(
        summary["phases"][0]["refused_calls"],
        json!([{"call": "Bash: npm test -- --ci", "allow_with": "Bash(npm test:*)"}]),
        "{summary:#?}"
    );
}

#[test]
#[ignore = "needs the pinned Claude Code CLI (scripts/test-tools)"]
fn a_failing_gate_gets_a_remediation_session_that_fixes_it() {
    let project = Project::planned(&[("1", "grep -q right out.txt")]);
    let server = ModelServer::serving([
        project.write_turn("out.txt", "wrong\n", 10),
        Turn::reply("Done.").usage(usage(11)),
        // Claude Code refuses to overwrite a file it has not read in this session.
        Turn::new()
            .text("Reading.")
            .tool_use("Read", json!({"file_path": project.path("out.txt")}))
            .usage(usage(10)),
        project.write_turn("out.txt", "right\n", 10),
        Turn::reply("Fixed.").usage(usage(11)),
    ]);
    let (code, events) = project.run(&server, &[]);
    assert_eq!(code, 0, "{events:#?}");
    let sessions = server.main_sessions();
    assert_eq!(sessions.len(), 2);
    let fix = sessions[1][0].first_user_text();
    assert!(
        fix.contains("needs these fixes") && fix.contains("gate `check` failed"),
        "{fix}"
    );
    let status = project.status(&server);
    assert_eq!(status["executions"][1]["remediation"], true);
    assert_eq!(status["executions"][1]["status"], "completed");
}

#[test]
#[ignore = "needs the pinned Claude Code CLI (scripts/test-tools)"]
fn ctrl_c_pauses_without_orphans_and_resume_completes() {
    let project = Project::planned(&[("1", "test -f done.txt")]);
    let server = ModelServer::serving([
        Turn::new().text("Thinking hard.").stall(),
        project.write_turn("done.txt", "ok\n", 10),
        Turn::reply("Done.").usage(usage(11)),
    ]);

    let mut live = project.start_run(&server);
    let pid = live.until("session_started")["pid"]
        .as_u64()
        .expect("a session started");
    server
        .wait_for_main_requests(1, Duration::from_secs(60))
        .expect("the agent asked the model");
    assert_eq!(live.interrupt(), 130);
    assert!(group_gone(pid), "the agent's process group survived");
    assert_eq!(project.status(&server)["run"]["status"], "paused");

    server.release();
    let (code, events) = project.run(&server, &["--resume"]);
    assert_eq!(code, 0, "{events:#?}");
    assert_eq!(events[0]["resumed"], true);
    assert_eq!(project.status(&server)["run"]["status"], "completed");
}
