//! Tests of the tracker on recorded Claude Code 2.1.330 streams and on lines shaped like
//! what it prints for its task tools.

use std::path::Path;

use serde_json::json;

use super::*;
use crate::agent::stream_json;
use TodoStatus::{Completed, InProgress, Pending};

fn feed(tracker: &mut Tracker, lines: &str) -> Vec<Activity> {
    lines
        .lines()
        .filter(|line| !line.trim().is_empty())
        .filter_map(|line| stream_json::parse_line(line.as_bytes()))
        .flat_map(|event| tracker.observe(&event))
        .collect()
}

fn fixture(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/claude-cli")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|err| panic!("{}: {err}", path.display()))
}

fn todo_list(list: &[(&str, TodoStatus)]) -> Vec<Todo> {
    list.iter()
        .map(|&(content, status)| Todo {
            content: content.to_owned(),
            status,
        })
        .collect()
}

fn assistant(id: &str, parent: Option<&str>, content: &Value) -> String {
    json!({
        "type": "assistant",
        "message": {"id": id, "model": "m", "content": [content],
                    "usage": {"input_tokens": 1}},
        "parent_tool_use_id": parent,
    })
    .to_string()
}

fn tool_use(id: &str, name: &str, input: &Value) -> Value {
    json!({"type": "tool_use", "id": id, "name": name, "input": input})
}

fn result(id: &str, parent: Option<&str>, text: &str, is_error: bool) -> String {
    json!({
        "type": "user",
        "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": id, "content": text, "is_error": is_error}
        ]},
        "parent_tool_use_id": parent,
    })
    .to_string()
}

/// A main-thread call of `tool`, in a message of its own, and the line that answers it.
fn call(id: &str, tool: &str, input: Value, answer: &str) -> String {
    exchange(id, tool, input, answer, false)
}

/// A main-thread call of `tool` that the tool answers with an error.
fn failed_call(id: &str, tool: &str, input: Value, answer: &str) -> String {
    exchange(id, tool, input, answer, true)
}

fn exchange(id: &str, tool: &str, input: Value, answer: &str, is_error: bool) -> String {
    let call = assistant(&format!("m-{id}"), None, &tool_use(id, tool, &input));
    format!("{call}\n{}", result(id, None, answer, is_error))
}

#[test]
fn a_completed_session_gives_its_id_model_text_and_result() {
    let mut tracker = Tracker::new(Path::new("/w"));
    let activity = feed(&mut tracker, &fixture("session_completes.jsonl"));
    assert!(tracker.session_id().is_some());
    assert_eq!(tracker.model(), Some("claude-sonnet-4-5"));
    assert_eq!(tracker.last_text(), Some("All done."));
    assert!(tracker.result().expect("result").is_success());
    assert_eq!(
        activity,
        [Activity {
            thread: Thread::Main,
            kind: ActivityKind::Text {
                text: "All done.".into()
            }
        }]
    );
}

#[test]
fn write_calls_record_the_file_once_it_was_written() {
    let mut tracker = Tracker::new(Path::new("/w"));
    let activity = feed(&mut tracker, &fixture("write_tool.jsonl"));
    let files: Vec<_> = tracker.files_written().iter().collect();
    assert_eq!(files.len(), 1, "{files:?}");
    assert!(files[0].ends_with("notes/hello.md"), "{files:?}");
    assert!(activity.iter().any(|line| matches!(&line.kind,
        ActivityKind::ToolCall { name, .. } if name == "Write")));
}

#[test]
fn failed_writes_are_errors_not_files() {
    let mut tracker = Tracker::new(Path::new("/w"));
    let lines = [
        failed_call(
            "t1",
            "Edit",
            json!({"file_path": "rel/x.rs", "old_string": "a", "new_string": "b"}),
            "<tool_use_error>File does not exist.</tool_use_error>",
        ),
        call(
            "t2",
            "Write",
            json!({"file_path": "rel/y.rs", "content": ""}),
            "File created successfully",
        ),
    ]
    .join("\n");
    let activity = feed(&mut tracker, &lines);
    assert_eq!(
        tracker.files_written().iter().collect::<Vec<_>>(),
        [Path::new("/w/rel/y.rs")]
    );
    let error = activity
        .iter()
        .find_map(|line| match &line.kind {
            ActivityKind::ToolError { tool, message, .. } => Some((tool.clone(), message.clone())),
            _ => None,
        })
        .expect("a tool error");
    assert_eq!(error.0.as_deref(), Some("Edit"));
    assert!(error.1.contains("File does not exist"));
}

#[test]
fn subagent_lines_are_attributed_and_their_type_recorded() {
    let mut tracker = Tracker::new(Path::new("/w"));
    let activity = feed(&mut tracker, &fixture("task_subagent.jsonl"));
    assert_eq!(
        tracker.invoked_agents().iter().collect::<Vec<_>>(),
        ["general-purpose"]
    );
    let sub: Vec<&Activity> = activity
        .iter()
        .filter(|line| !line.thread.is_main())
        .collect();
    assert!(!sub.is_empty());
    for line in &sub {
        let Thread::Subagent(subagent) = &line.thread else {
            unreachable!()
        };
        assert_eq!(subagent.parent_tool_use_id, "toolu_task_1");
        assert_eq!(subagent.subagent_type.as_deref(), Some("general-purpose"));
        assert_eq!(subagent.description.as_deref(), Some("Count the files"));
    }
    // The subagent's report is not the main thread's last text.
    assert_eq!(tracker.last_text(), Some("The subagent finished."));
}

#[test]
fn recorded_transcripts_name_their_agents() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/transcripts/claude-custom-agent.jsonl");
    let text = std::fs::read_to_string(path).expect("fixture");
    let mut tracker = Tracker::new(Path::new("/w"));
    feed(&mut tracker, &text);
    assert!(!tracker.invoked_agents().is_empty());
}

#[test]
fn todo_write_replaces_the_list_on_the_main_thread_only() {
    let mut tracker = Tracker::new(Path::new("/w"));
    let todos = json!({"todos": [
        {"content": "Parse", "status": "completed", "activeForm": "Parsing"},
        {"content": "Test", "status": "in_progress", "activeForm": "Testing"},
        {"content": "Ship", "status": "pending", "activeForm": "Shipping"},
    ]});
    let sub_todos = json!({"todos": [{"content": "sub", "status": "pending"}]});
    let lines = [
        assistant("m1", None, &tool_use("t1", "TodoWrite", &todos)),
        assistant(
            "m2",
            Some("toolu_x"),
            &tool_use("t2", "TodoWrite", &sub_todos),
        ),
    ]
    .join("\n");
    feed(&mut tracker, &lines);
    assert_eq!(
        tracker.todos(),
        todo_list(&[
            ("Parse", Completed),
            ("Test", InProgress),
            ("Ship", Pending)
        ])
    );
}

#[test]
fn task_tools_build_the_list_from_their_results() {
    let mut tracker = Tracker::new(Path::new("/w"));
    let create = |id: &str, subject: &str| {
        tool_use(
            id,
            "TaskCreate",
            &json!({"subject": subject, "description": "d"}),
        )
    };
    let update = |id: &str, input: Value, answer: &str| call(id, "TaskUpdate", input, answer);
    let lines = [
        assistant("m1", None, &create("c1", "Write the parser")),
        assistant("m1", None, &create("c2", "Test it")),
        assistant("m1", None, &create("c3", "Drop me")),
        result(
            "c1",
            None,
            "Task #1 created successfully: Write the parser",
            false,
        ),
        result("c2", None, "Task #2 created successfully: Test it", false),
        result("c3", None, "Task #3 created successfully: Drop me", false),
        update(
            "u1",
            json!({"taskId": "1", "status": "in_progress"}),
            "Updated task #1 status",
        ),
        update(
            "u2",
            json!({"taskId": "3", "status": "deleted"}),
            "Updated task #3 deleted",
        ),
        update(
            "u3",
            json!({"taskId": "2", "subject": "Test the parser"}),
            "Updated task #2 subject",
        ),
        // A failed update changes nothing.
        failed_call(
            "u4",
            "TaskUpdate",
            json!({"taskId": "2", "status": "completed"}),
            "<tool_use_error>nope</tool_use_error>",
        ),
    ]
    .join("\n");
    feed(&mut tracker, &lines);
    assert_eq!(
        tracker.todos(),
        todo_list(&[
            ("Write the parser", InProgress),
            ("Test the parser", Pending)
        ])
    );

    // TaskList's answer is authoritative.
    let lines = call(
        "l1",
        "TaskList",
        json!({}),
        "#1 [completed] Write the parser\n#2 [in_progress] Test the parser\n#4 [pending] Document it",
    );
    feed(&mut tracker, &lines);
    assert_eq!(
        tracker.todos(),
        todo_list(&[
            ("Write the parser", Completed),
            ("Test the parser", InProgress),
            ("Document it", Pending)
        ])
    );
}

#[test]
fn the_most_recent_todo_source_wins() {
    let mut tracker = Tracker::new(Path::new("/w"));
    let lines = [
        call(
            "c1",
            "TaskCreate",
            json!({"subject": "A"}),
            "Task #1 created successfully: A",
        ),
        assistant(
            "m2",
            None,
            &tool_use(
                "t1",
                "TodoWrite",
                &json!({"todos": [{"content": "B", "status": "pending"}]}),
            ),
        ),
    ]
    .join("\n");
    feed(&mut tracker, &lines);
    assert_eq!(tracker.todos(), todo_list(&[("B", Pending)]));
}

#[test]
fn unnumbered_task_results_get_the_next_number() {
    assert_eq!(task_number("Task #12 created successfully: x"), Some(12));
    assert_eq!(task_number("created"), None);
    let mut tracker = Tracker::new(Path::new("/w"));
    let lines = [
        call("c1", "TaskCreate", json!({"subject": "A"}), "created"),
        call(
            "u1",
            "TaskUpdate",
            json!({"taskId": 1, "status": "completed"}),
            "ok",
        ),
    ]
    .join("\n");
    feed(&mut tracker, &lines);
    assert_eq!(tracker.todos(), todo_list(&[("A", Completed)]));
}

#[test]
fn texts_of_one_message_join_and_a_new_message_replaces() {
    let mut tracker = Tracker::new(Path::new("/w"));
    let text = |t: &str| json!({"type": "text", "text": t});
    let lines = [
        assistant("m1", None, &text("first")),
        assistant("m1", None, &text("second")),
    ]
    .join("\n");
    feed(&mut tracker, &lines);
    assert_eq!(tracker.last_text(), Some("first\nsecond"));
    feed(&mut tracker, &assistant("m2", None, &text("third")));
    assert_eq!(tracker.last_text(), Some("third"));
}

#[test]
fn compaction_status_and_plain_text_become_notices() {
    let mut tracker = Tracker::new(Path::new("/w"));
    let activity = feed(&mut tracker, &fixture("auto_compact.jsonl"));
    let notices: Vec<String> = activity
        .iter()
        .filter_map(|line| match &line.kind {
            ActivityKind::Notice { text } => Some(text.clone()),
            _ => None,
        })
        .collect();
    assert!(
        notices
            .iter()
            .any(|text| text.starts_with("the agent compacted its context (auto) at 190,0")),
        "{notices:?}"
    );
    let activity = feed(&mut tracker, "not json at all");
    assert_eq!(
        activity,
        [Activity {
            thread: Thread::Main,
            kind: ActivityKind::Notice {
                text: "not json at all".into()
            }
        }]
    );
}
