//! An agent's API that is down when a run starts and comes up while the run waits for
//! it: the wait must end at debussy's next try of the address, not after its backoff.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use super::model_server::ModelServer;
use super::project::{events_named, wait_exit};

/// Run `command` (a `debussy run … --output-format json` whose agent's API nothing
/// answers yet) until it waits for the unreachable API with its first 30 s backoff;
/// then bring the API up with `come_back`. The wait must end within 25 s, the same
/// attempt complete and the session talk to the API that came back.
pub fn assert_the_wait_ends_once_the_api_is_back(
    mut command: Command,
    come_back: impl FnOnce() -> ModelServer,
) {
    let mut run = command
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let mut lines = BufReader::new(run.stdout.take().expect("stdout")).lines();
    let mut events: Vec<Value> = Vec::new();
    let mut next = |name: &str, events: &mut Vec<Value>| -> Value {
        for line in lines.by_ref().map_while(Result::ok) {
            let event: Value = serde_json::from_str(&line).expect("json");
            events.push(event.clone());
            if event["event"] == name {
                return event;
            }
        }
        panic!("the run ended before `{name}`: {events:#?}")
    };
    let waiting = next("waiting_for_limit", &mut events);
    assert_eq!(waiting["kind"], "unreachable", "{waiting:#}");
    assert_eq!(waiting["wait_secs"], 30, "{waiting:#}");
    let server = come_back();
    let resumed = next("session_started", &mut events);
    let finished = next("run_finished", &mut events);
    let code = wait_exit(&mut run, Duration::from_secs(60));
    assert_eq!(code, 0, "{events:#?}");
    assert_eq!(finished["summary"]["status"], "completed", "{finished:#}");
    let at = |event: &Value| {
        event["ts"]
            .as_str()
            .and_then(|ts| ts.parse::<jiff::Timestamp>().ok())
            .expect("a time")
    };
    let waited = at(&resumed).duration_since(at(&waiting));
    assert!(
        waited < jiff::SignedDuration::from_secs(25),
        "the wait ended at a try of the address, not after its backoff: {waited:?}"
    );
    assert_eq!(
        events_named(&events, "phase_started").len(),
        1,
        "one attempt"
    );
    assert!(
        !server.main_requests().is_empty(),
        "the session talked to the API"
    );
}
