//! Two bridges sharing a daemon restart it at the same moment: each answer names a daemon
//! that was started under its generation, and the last one is the daemon that runs.

use serde_json::{Value, json};

use super::bridge::Stage;

/// The JSON text of a `tools/call` answer.
fn tool_json(reply: &Value) -> Value {
    let text = reply["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text: {reply}"));
    serde_json::from_str(text).unwrap_or_else(|err| panic!("not JSON ({err}): {text}"))
}

#[test]
fn restarts_from_two_bridges_at_once_each_report_the_daemon_they_started() {
    let stage = Stage::new();
    let mut first = stage.bridge(&[], &[]);
    let mut second = stage.bridge(&[], &[]);
    first.initialize();
    second.initialize();
    let restart = json!({"name": "restart_server", "arguments": {"reason": "at once"}});
    let first_id = first.request("tools/call", restart.clone());
    let second_id = second.request("tools/call", restart);
    let answers = [
        tool_json(&first.response(&first_id)),
        tool_json(&second.response(&second_id)),
    ];
    let record: Value = serde_json::from_str(
        &std::fs::read_to_string(stage.state_dir.join("daemon.json")).expect("daemon.json"),
    )
    .expect("json");
    let starts = record["starts"].as_array().expect("starts");
    for answer in &answers {
        assert_eq!(answer["status"], "ok", "{answer}");
        let generation = &answer["new"]["generation"];
        let started = starts
            .iter()
            .find(|start| &start["generation"] == generation)
            .unwrap_or_else(|| panic!("no start of generation {generation}: {record}"));
        assert_eq!(
            started["pid"], answer["new"]["pid"],
            "the answer names another daemon than its generation's: {answer} {record}"
        );
    }
    // A restart that finds the other bridge's restart done takes its daemon: one new
    // daemon, or two in a row, and never an answer naming one that does not run.
    for answer in &answers {
        let message = answer["message"].as_str().unwrap_or_default();
        assert!(
            message.contains("stopped by") || message.contains("no longer running"),
            "{message}"
        );
        assert!(!message.contains("stopped by nothing"), "{message}");
    }
    let last = answers
        .iter()
        .max_by_key(|answer| answer["new"]["generation"].as_u64())
        .expect("two answers");
    let (running, _) = first.whoami();
    assert_eq!(last["new"]["pid"], running, "{answers:?}");
    let (running_second, _) = second.whoami();
    assert_eq!(running, running_second);
}
