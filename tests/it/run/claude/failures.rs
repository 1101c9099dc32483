//! The agent's failures with the real Claude Code CLI: a bad key, an unknown model, a
//! used-up credit balance and a missing login are said at once, in the agent's words
//! with the fix, and cost no retry.

use std::time::{Duration, Instant};

use super::kit::{Project, usage};
use crate::support::claude;
use crate::support::claude::Login;
use crate::support::model_server::{ModelServer, Refusal, RequestKind, Scenario, Turn};
use crate::support::project::events_named as named;
use crate::support::project::{phase_error, run_json};

/// A scenario whose every request is refused with `refusal`.
fn refusing(refusal: Refusal) -> Scenario {
    Scenario::new()
        .turn(Turn::reply("Done.").usage(usage(10)))
        .refuse(refusal, None)
}

#[test]
#[ignore = "needs the pinned Claude Code CLI (scripts/test-tools)"]
fn a_bad_key_ends_the_run_in_under_a_minute_with_one_attempt_and_the_agents_words() {
    let project = Project::planned(&[("1", "true"), ("2", "true")]);
    let server = ModelServer::start(refusing(Refusal::BadKey)).expect("model server");

    let started = Instant::now();
    let (code, events) = project.run(&server, &[]);
    let took = started.elapsed();
    assert_eq!(code, 1, "{events:#?}");
    assert!(took < Duration::from_secs(60), "took {took:?}");
    assert_eq!(named(&events, "phase_started").len(), 1, "{events:#?}");
    assert!(named(&events, "attempt_failed").is_empty(), "{events:#?}");
    let retry = named(&events, "agent_retry")[0];
    assert_eq!(retry["retry"]["status"], 401, "{retry:#}");
    assert_eq!(retry["retry"]["kind"], "auth", "{retry:#}");
    let ended = named(&events, "session_ended")[0];
    assert_eq!(ended["outcome"], "agent_failure", "{ended:#}");
    let finished = named(&events, "phase_finished")[0];
    let error = finished["error"].as_str().expect("an error");
    assert!(
        error.contains("refused its credentials")
            && error.contains("401")
            && error.contains("authentication_failed")
            && error.contains("check ANTHROPIC_API_KEY"),
        "{error}"
    );
    assert!(
        named(&events, "phase_finished")
            .iter()
            .all(|phase| phase["phase_id"] != "2" || phase["status"] != "completed"),
        "phase 2 did not run: {events:#?}"
    );
    // The agent's own retries were cut short: it would have gone on for minutes.
    let refused = server.requests_of(&RequestKind::Refused);
    assert!(refused.len() <= 3, "{} requests", refused.len());

    let status = project
        .command(&server, &["status"])
        .output()
        .expect("status");
    let text = String::from_utf8_lossy(&status.stdout);
    assert!(
        text.contains("authentication_failed") && text.contains("check ANTHROPIC_API_KEY"),
        "{text}"
    );
    let show = project
        .command(&server, &["show", "latest", "1"])
        .output()
        .expect("show");
    let text = String::from_utf8_lossy(&show.stdout);
    assert!(text.contains("authentication_failed"), "{text}");
}

#[test]
#[ignore = "needs the pinned Claude Code CLI (scripts/test-tools)"]
fn an_unknown_model_fails_the_run_at_once_naming_the_model() {
    let project = Project::planned(&[("1", "true")]);
    let server = ModelServer::start(refusing(Refusal::UnknownModel)).expect("model server");

    let (code, events) = project.run(&server, &[]);
    assert_eq!(code, 1, "{events:#?}");
    assert_eq!(named(&events, "phase_started").len(), 1, "{events:#?}");
    let error = phase_error(&events);
    assert!(
        error.contains("does not know the model")
            && error.contains(claude::DEFAULT_MODEL)
            && error.contains("check `model`"),
        "{error}"
    );
}

#[test]
#[ignore = "needs the pinned Claude Code CLI (scripts/test-tools)"]
fn a_used_up_credit_balance_fails_the_run_at_once_saying_where_to_add_credit() {
    let project = Project::planned(&[("1", "true")]);
    let server = ModelServer::start(refusing(Refusal::NoCredit)).expect("model server");

    let (code, events) = project.run(&server, &["--max-retries", "2"]);
    assert_eq!(code, 1, "{events:#?}");
    assert_eq!(
        named(&events, "phase_started").len(),
        1,
        "no retry: {events:#?}"
    );
    assert!(
        named(&events, "waiting_for_limit").is_empty(),
        "no wait: {events:#?}"
    );
    let error = phase_error(&events);
    assert!(
        error.contains("no credit left")
            && error.contains("Credit balance is too low")
            && error.contains("Plans & Billing"),
        "{error}"
    );
}

#[test]
#[ignore = "needs the pinned Claude Code CLI (scripts/test-tools)"]
fn a_missing_login_is_named_by_doctor_and_fails_the_run_at_once() {
    let project = Project::planned(&[("1", "true")]);
    let server = ModelServer::start(Scenario::new()).expect("model server");

    let doctor = project
        .command_as(&server, &["doctor"], Login::None)
        .output()
        .expect("doctor");
    let text = String::from_utf8_lossy(&doctor.stdout);
    assert!(
        text.contains("Claude Code is not logged in")
            && text.contains("run `claude` once to log in"),
        "{text}"
    );

    let started = Instant::now();
    let (code, events) = run_json(
        project.command_as(
            &server,
            &["run", "plan/MASTER_PLAN.md", "--output-format", "json"],
            Login::None,
        ),
        Duration::from_secs(120),
    );
    assert_eq!(code, 1, "{events:#?}");
    assert!(started.elapsed() < Duration::from_secs(60));
    assert_eq!(named(&events, "session_started").len(), 1, "{events:#?}");
    let ended = named(&events, "session_ended")[0];
    assert_eq!(ended["outcome"], "agent_failure", "{ended:#}");
    let error = phase_error(&events);
    assert!(
        error.contains("Not logged in · Please run /login")
            && error.contains("run `claude` once to log in, or set ANTHROPIC_API_KEY"),
        "{error}"
    );
    assert!(server.requests().is_empty(), "no token was spent");
}
