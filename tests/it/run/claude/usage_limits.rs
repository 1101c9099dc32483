//! Usage limits with the real Claude Code CLI, logged in with a subscription (the case
//! where the limit resets in hours and Claude Code gives up at once): the run waits for
//! the reset the agent names and goes on in the same attempt; past `limits.max_wait` it
//! pauses; Ctrl-C during the wait pauses it as during a session.

use std::time::{Duration, Instant};

use serde_json::Value;

use super::kit::{Project, usage};
use crate::support::api_returns::assert_the_wait_ends_once_the_api_is_back;
use crate::support::claude::Login;
use crate::support::model_server::{ModelServer, Refusal, RequestKind, Scenario, Turn};
use crate::support::ports::Port;
use crate::support::project::events_named as named;
use crate::support::project::run_json;

/// Phase 1 writes done.txt and finishes.
fn phase_work(project: &Project) -> Scenario {
    Scenario::new().turns([
        project.write_turn("done.txt", "ok\n", 10),
        Turn::reply("Done.").usage(usage(11)),
    ])
}

fn run_as_subscriber(project: &Project, server: &ModelServer, extra: &[&str]) -> (i32, Vec<Value>) {
    let mut args = vec!["run", "plan/MASTER_PLAN.md", "--output-format", "json"];
    args.extend_from_slice(extra);
    run_json(
        project.command_as(server, &args, Login::Subscription),
        Duration::from_secs(180),
    )
}

#[test]
#[ignore = "needs the pinned Claude Code CLI (scripts/test-tools)"]
fn a_usage_limit_for_20s_is_waited_out_in_one_attempt() {
    let project = Project::planned(&[("1", "test -f done.txt")]);
    let server = ModelServer::start(
        phase_work(&project).refuse(Refusal::UsageLimit, Some(Duration::from_secs(20))),
    )
    .expect("model server");

    let started = Instant::now();
    let (code, events) = run_as_subscriber(&project, &server, &[]);
    assert_eq!(code, 0, "{events:#?}");
    let waits = named(&events, "waiting_for_limit");
    assert!(!waits.is_empty(), "{events:#?}");
    let wait = waits[0];
    assert_eq!(wait["reset_known"], true, "{wait:#}");
    assert_eq!(wait["attempt"], 1, "{wait:#}");
    // Driven by the reset the server gave (20 s after it started), not a 30 s floor.
    assert!(wait["wait_secs"].as_u64().expect("secs") <= 22, "{wait:#}");
    assert!(
        wait["said"]
            .as_str()
            .is_some_and(|said| said.starts_with("You've hit your")),
        "{wait:#}"
    );
    assert_eq!(named(&events, "phase_started").len(), 1, "{events:#?}");
    let finished = named(&events, "phase_finished")[0];
    assert_eq!(finished["status"], "completed", "{finished:#}");
    assert_eq!(finished["attempts"], 1, "{finished:#}");
    assert!(started.elapsed() >= Duration::from_secs(15));
    assert!(project.root().join("done.txt").exists());
    assert!(!server.requests_of(&RequestKind::Refused).is_empty());
}

#[test]
#[ignore = "needs the pinned Claude Code CLI (scripts/test-tools)"]
fn a_reset_past_max_wait_pauses_the_run_with_exit_3() {
    let project = Project::planned(&[("1", "test -f done.txt")]);
    let server = ModelServer::start(
        phase_work(&project).refuse(Refusal::UsageLimit, Some(Duration::from_secs(3 * 3600))),
    )
    .expect("model server");

    let (code, events) = run_as_subscriber(&project, &server, &["--max-wait", "1h"]);
    assert_eq!(code, 3, "{events:#?}");
    let limit = named(&events, "limit_reached")[0];
    assert_eq!(limit["limit"], "limits.max_wait", "{limit:#}");
    // Enough for the reset three hours away.
    assert_eq!(limit["raise_with"], "--max-wait 4h", "{limit:#}");
    assert!(
        named(&events, "waiting_for_limit").is_empty(),
        "{events:#?}"
    );
    assert_eq!(project.status(&server)["run"]["status"], "paused");
}

#[test]
#[ignore = "needs the pinned Claude Code CLI (scripts/test-tools)"]
fn ctrl_c_while_waiting_pauses_and_status_says_until_when() {
    let project = Project::planned(&[("1", "test -f done.txt")]);
    let server = ModelServer::start(
        phase_work(&project).refuse(Refusal::UsageLimit, Some(Duration::from_secs(3600))),
    )
    .expect("model server");

    let mut live = project.start_run_as(&server, Login::Subscription);
    let waiting = live.until("waiting_for_limit");
    assert!(
        waiting["wait_secs"].as_u64().expect("secs") > 3000,
        "{waiting:#}"
    );

    let status = project
        .command(&server, &["status"])
        .output()
        .expect("status");
    let text = String::from_utf8_lossy(&status.stdout);
    assert!(text.contains("waiting for the usage limit until"), "{text}");

    assert_eq!(live.interrupt(), 130);
    assert_eq!(project.status(&server)["run"]["status"], "paused");
}

/// The API is unreachable (nothing listens where the agent is told it is) until the run
/// waits for it; then it comes up. The wait ends at debussy's next try of the address,
/// not after its 30 s backoff, and the same attempt completes.
#[test]
#[ignore = "needs the pinned Claude Code CLI (scripts/test-tools)"]
fn an_api_that_comes_back_ends_the_wait_before_its_backoff() {
    let project = Project::planned(&[("1", "test -f done.txt")]);
    let port = Port::reserve();
    let elsewhere = ModelServer::start(Scenario::new()).expect("model server");
    let mut run = project.command(
        &elsewhere,
        &["run", "plan/MASTER_PLAN.md", "--output-format", "json"],
    );
    run.env(
        "ANTHROPIC_BASE_URL",
        format!("http://127.0.0.1:{}", port.number()),
    )
    .env("DEBUSSY_AGENT__OFFLINE_GRACE", "1");
    assert_the_wait_ends_once_the_api_is_back(run, || {
        ModelServer::start_at(&port, phase_work(&project)).expect("the API comes up")
    });
}

/// The API is overloaded (529) past Claude Code's own retries: the session's end is
/// waited out like an unreachable API, not spent as an attempt; with `limits.max_wait`
/// shorter than the first backoff the run pauses at once, saying so.
#[test]
#[ignore = "needs the pinned Claude Code CLI (scripts/test-tools)"]
fn an_overloaded_api_pauses_without_spending_an_attempt() {
    let project = Project::planned(&[("1", "test -f done.txt")]);
    let server =
        ModelServer::start(phase_work(&project).refuse(Refusal::Overloaded, None)).expect("server");
    let mut args = vec!["run", "plan/MASTER_PLAN.md", "--output-format", "json"];
    args.extend(["--max-wait", "1s", "--max-retries", "2"]);
    let mut command = project.command(&server, &args);
    // One retry of its own instead of ten over minutes.
    command.env("CLAUDE_CODE_MAX_RETRIES", "1");
    let (code, events) = run_json(command, Duration::from_secs(120));
    assert_eq!(code, 3, "{events:#?}");
    assert_eq!(
        named(&events, "phase_started").len(),
        1,
        "no attempt spent: {events:#?}"
    );
    let limit = named(&events, "limit_reached");
    assert_eq!(
        limit[0]["detail"],
        "the agent's API was overloaded, and a first wait of 30s is past limits.max_wait (1s)",
        "{:#}",
        limit[0]
    );
    let retries = named(&events, "agent_retry");
    assert_eq!(
        retries[0]["retry"]["kind"], "overloaded",
        "{:#}",
        retries[0]
    );
}
