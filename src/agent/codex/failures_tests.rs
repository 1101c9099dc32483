use super::*;
use crate::agent::codex::exec_json;
use crate::agent::{AgentEvent, recordings};

fn events(name: &str) -> Vec<AgentEvent> {
    recordings::events(name, exec_json::parse_line)
}

/// Noon on 25 November 2026 at UTC+1 (a fixed zone: no time zone database needed).
fn noon() -> Zoned {
    let noon: jiff::Timestamp = "2026-11-25T11:00:00Z".parse().expect("timestamp");
    noon.to_zoned(jiff::tz::TimeZone::fixed(jiff::tz::offset(1)))
}

fn diagnosed(name: &str) -> Option<AgentFailure> {
    diagnose(&recordings::last_words(&events(name)), &noon())
}

fn retries(name: &str) -> Vec<ApiRetry> {
    recordings::retries(events(name))
}

#[test]
fn a_bad_key_is_known_from_the_first_reconnect() {
    let retries = retries("codex-bad-key.jsonl");
    assert_eq!(retries.len(), 5);
    assert_eq!(
        (retries[0].attempt, retries[0].max_retries),
        (Some(1), Some(5))
    );
    assert_eq!(retries[0].status, Some(401));
    assert_eq!(retries[0].kind, Some(FailureKind::Auth));
    assert!(
        retries[0]
            .error
            .starts_with("unexpected status 401 Unauthorized")
    );
    let failure = diagnosed("codex-bad-key.jsonl").expect("classified");
    assert_eq!(failure.kind, FailureKind::Auth);
    assert!(failure.said.contains("Incorrect API key"), "{failure}");
}

#[test]
fn a_missing_key_is_not_logged_in() {
    let failure = diagnosed("codex-missing-key.jsonl").expect("classified");
    assert_eq!(failure.kind, FailureKind::NotLoggedIn);
    assert_eq!(
        failure.said,
        "Missing environment variable: `DEBUSSY_TEST_OPENAI_KEY`."
    );
}

#[test]
fn an_unknown_model_is_named() {
    let failure = diagnosed("codex-unknown-model.jsonl").expect("classified");
    assert_eq!(failure.kind, FailureKind::UnknownModel);
}

#[test]
fn the_usage_limit_resets_when_codex_says_to_try_again() {
    let failure = diagnosed("codex-usage-limit.jsonl").expect("classified");
    assert_eq!(failure.kind, FailureKind::UsageLimit);
    // 11:47 PM at UTC+1, the end of that minute.
    let expected: jiff::Timestamp = "2026-11-25T22:48:00Z".parse().expect("timestamp");
    assert_eq!(failure.resets_at, Some(expected.as_second()));
}

#[test]
fn used_up_credit_is_no_credit_not_a_limit_to_wait_out() {
    let quota = diagnosed("codex-quota.jsonl").expect("classified");
    assert_eq!(quota.kind, FailureKind::NoCredit);
    assert!(quota.kind.is_permanent());
    for said in [
        "You hit your spend cap set in your workspace. Increase your spend cap to continue.",
        "To use Codex with your ChatGPT plan, upgrade to Plus: https://chatgpt.com/explore/plus.",
    ] {
        let words = LastWords {
            stdout: vec![said.into()],
            ..LastWords::default()
        };
        let failure = diagnose(&words, &noon()).expect("classified");
        assert_eq!(failure.kind, FailureKind::NoCredit, "{said}");
    }
}

#[test]
fn a_reset_on_another_day_carries_its_date() {
    let words = LastWords {
        stdout: vec![
            "codex: You've hit your usage limit. Try again at Nov 27th, 2026 1:05 AM.".into(),
        ],
        ..LastWords::default()
    };
    let failure = diagnose(&words, &noon()).expect("classified");
    let expected: jiff::Timestamp = "2026-11-27T00:06:00Z".parse().expect("timestamp");
    assert_eq!(failure.resets_at, Some(expected.as_second()));
}

#[test]
fn rate_limit_and_network_retries_are_classified() {
    let limited = retries("codex-rate-limit-retries.jsonl");
    assert_eq!(limited[0].status, Some(429));
    assert_eq!(limited[0].kind, Some(FailureKind::UsageLimit));
    let offline = retries("codex-unreachable.jsonl");
    assert_eq!(offline[0].attempt, None);
    assert_eq!(offline[0].kind, Some(FailureKind::Unreachable));
    assert_eq!(
        offline[0].error,
        "waiting for network (Connection failed: error sending request)"
    );
}

#[test]
fn a_server_error_after_codexs_retries_is_an_overloaded_api() {
    let words = LastWords {
        stdout: vec![
            "exceeded retry limit, last status: 503 Service Unavailable, request id: x".into(),
        ],
        ..LastWords::default()
    };
    let failure = diagnose(&words, &noon()).expect("classified");
    assert_eq!(failure.kind, FailureKind::Overloaded);
    assert!(failure.kind.is_waited_out());
    let retried = retry("Reconnecting... 2/5 (unexpected status 502 Bad Gateway: upstream)")
        .expect("a retry");
    assert_eq!(retried.kind, Some(FailureKind::Overloaded));
}
