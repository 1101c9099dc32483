//! Every request is answered exactly once: an answer under an id nobody sent is dropped
//! and logged, and the request it should have answered gets an error once the answer
//! timeout passes.

use std::time::Duration;

use serde_json::json;

use super::support::{Supervisor, error_message, root};

#[test]
#[ignore = "needs the Python MCP SDK (scripts/test-tools)"]
fn an_answer_under_an_unknown_id_is_dropped_and_the_request_times_out() {
    let python = super::python();
    let command = [
        python.display().to_string(),
        root()
            .join("tests/it/mcp/python/misanswer.py")
            .display()
            .to_string(),
    ];
    let mut s = Supervisor::start_env(&[("DEBUSSY_MCP__ANSWER_TIMEOUT", "1")], &[], &command);
    s.initialize();
    let id = s.request("tools/call", json!({"name": "echo", "arguments": {}}));
    let reply = s.response(&id);
    let message = error_message(&reply);
    assert!(message.contains("did not answer within 1 s"), "{reply}");
    s.wait_stderr("which no request in flight to it has; dropped");
    // Nothing else reached the client: not the misaddressed answer, not a second one.
    assert_eq!(s.next(Duration::from_millis(300)), None);
    let events = s.audit();
    let timed_out = super::support::events_of(&events, "request_timed_out");
    assert_eq!(timed_out.len(), 1, "{events:?}");
    assert_eq!(timed_out[0]["method"], "tools/call");
}

#[test]
fn requests_past_the_in_flight_bound_are_answered_with_an_error() {
    // The server answers nothing, and requests before `initialize` go straight to it:
    // everything sent stays in flight.
    let server = super::support::test_server().display().to_string();
    let command = [server, "--no-initialize".to_owned()];
    let mut s = Supervisor::start_env(&[("DEBUSSY_MCP__BUFFER_MAX_MESSAGES", "2")], &[], &command);
    s.request("tools/list", json!({}));
    s.request("prompts/list", json!({}));
    let third = s.request("resources/list", json!({}));
    let reply = s.response(&third);
    let message = error_message(&reply);
    assert!(message.contains("2 requests in flight"), "{reply}");
    assert_eq!(s.next(Duration::from_millis(300)), None);
}
