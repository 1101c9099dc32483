use super::*;
use crate::agent::{AgentEvent, ApiRetry, recordings, stream_json};

/// The events of a recording in `tests/fixtures/agent-failures/`.
fn events(name: &str) -> Vec<AgentEvent> {
    recordings::events(name, stream_json::parse_line)
}

/// What the session would diagnose at the end of the recording.
fn diagnosed(name: &str) -> Option<AgentFailure> {
    diagnose(&recordings::last_words(&events(name)))
}

fn retries(name: &str) -> Vec<ApiRetry> {
    recordings::retries(events(name))
}

#[test]
fn a_bad_key_is_known_from_the_first_retry() {
    let retries = retries("claude-bad-key.jsonl");
    let first = &retries[0];
    assert_eq!(first.status, Some(401));
    assert_eq!(first.error, "authentication_failed");
    assert_eq!((first.attempt, first.max_retries), (Some(1), Some(10)));
    assert_eq!(first.kind, Some(FailureKind::Auth));
    let failure = diagnosed("claude-bad-key.jsonl").expect("classified");
    assert_eq!(failure.kind, FailureKind::Auth);
    assert_eq!(failure.said, "Invalid API key · Fix external API key");
}

#[test]
fn a_refused_key_fails_at_once() {
    let failure = diagnosed("claude-forbidden.jsonl").expect("classified");
    assert_eq!(failure.kind, FailureKind::Auth);
    assert!(
        failure
            .said
            .starts_with("Failed to authenticate. API Error: 403"),
        "{failure}"
    );
}

#[test]
fn not_logged_in_is_its_own_kind() {
    let failure = diagnosed("claude-not-logged-in.jsonl").expect("classified");
    assert_eq!(failure.kind, FailureKind::NotLoggedIn);
    assert_eq!(failure.said, "Not logged in · Please run /login");
    assert!(failure.kind.is_permanent());
}

#[test]
fn a_used_up_credit_balance_is_no_credit() {
    let failure = diagnosed("claude-no-credit.jsonl").expect("classified");
    assert_eq!(failure.kind, FailureKind::NoCredit);
    assert_eq!(failure.said, "Credit balance is too low");
    assert!(failure.kind.is_permanent());
    assert!(!failure.kind.is_waited_out());
}

#[test]
fn an_unknown_model_is_named() {
    let failure = diagnosed("claude-unknown-model.jsonl").expect("classified");
    assert_eq!(failure.kind, FailureKind::UnknownModel);
    assert!(failure.said.contains("claude-nope"), "{failure}");
}

#[test]
fn an_unreachable_api_is_known_from_its_retries_and_its_result() {
    let retries = retries("claude-unreachable.jsonl");
    assert_eq!(retries[0].status, None);
    assert_eq!(retries[0].kind, Some(FailureKind::Unreachable));
    let failure = diagnosed("claude-unreachable.jsonl").expect("classified");
    assert_eq!(failure.kind, FailureKind::Unreachable);
    assert!(failure.said.contains("ECONNREFUSED"), "{failure}");
}

#[test]
fn a_subscribers_usage_limit_carries_its_reset() {
    let failure = diagnosed("claude-usage-limit-subscriber.jsonl").expect("classified");
    assert_eq!(failure.kind, FailureKind::UsageLimit);
    assert_eq!(failure.resets_at, Some(1_795_650_513));
    assert!(
        failure.said.starts_with("You've hit your 5-hour limit"),
        "{failure}"
    );
}

#[test]
fn an_api_keys_rate_limit_has_no_reset() {
    let failure = diagnosed("claude-rate-limit-api-key.jsonl").expect("classified");
    assert_eq!(failure.kind, FailureKind::UsageLimit);
    assert_eq!(failure.resets_at, None);
}

#[test]
fn a_rate_limit_the_agent_waited_out_is_no_failure() {
    let retries = retries("claude-rate-limit-retried.jsonl");
    assert_eq!(retries.len(), 1);
    assert_eq!(retries[0].kind, Some(FailureKind::UsageLimit));
    assert_eq!(diagnosed("claude-rate-limit-retried.jsonl"), None);
}

#[test]
fn words_outside_json_are_read_too() {
    let mut words = LastWords::default();
    words.observe(&AgentEvent::Text(crate::agent::TextLine {
        line: "Not logged in · Please run /login".into(),
    }));
    assert_eq!(
        diagnose(&words).map(|failure| failure.kind),
        Some(FailureKind::NotLoggedIn)
    );
    let mut quiet = LastWords::default();
    quiet.observe_stderr("some warning", 20);
    assert_eq!(diagnose(&quiet), None);
}

#[test]
fn retry_errors_map_to_kinds() {
    assert_eq!(retry_kind(Some(403), "unknown"), Some(FailureKind::Auth));
    assert_eq!(
        retry_kind(Some(529), "overloaded"),
        Some(FailureKind::Overloaded)
    );
    assert_eq!(
        retry_kind(Some(500), "server_error"),
        Some(FailureKind::Overloaded)
    );
    assert_eq!(
        retry_kind(Some(404), "model_not_found"),
        Some(FailureKind::UnknownModel)
    );
}

#[test]
fn an_overloaded_api_is_waited_out_from_its_retries_to_its_result() {
    let failure = diagnosed("claude-overloaded.jsonl").expect("classified");
    assert_eq!(failure.kind, FailureKind::Overloaded);
    assert!(
        failure.said.starts_with("API Error: 529 Overloaded"),
        "{failure}"
    );
    assert!(failure.kind.is_waited_out() && !failure.kind.is_permanent());
}
