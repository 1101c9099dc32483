//! `codex exec --json` lines, recorded from Codex 0.169.0 and written after its event
//! definitions.

use super::*;
use crate::agent::Usage;

const RECORDED: &str = include_str!("../../../tests/fixtures/transcripts/codex-exec.jsonl");

fn one(line: &str) -> AgentEvent {
    let mut events = parse_line(line.as_bytes());
    assert_eq!(events.len(), 1, "{events:?}");
    events.remove(0)
}

#[test]
fn a_recorded_session_reads_as_init_a_command_its_result_a_message_and_a_result() {
    let events: Vec<AgentEvent> = RECORDED
        .lines()
        .flat_map(|line| parse_line(line.as_bytes()))
        .collect();
    let AgentEvent::Init(init) = &events[0] else {
        panic!("{events:?}")
    };
    assert_eq!(
        init.session_id.as_deref(),
        Some("01a21072-2f87-7b93-be8e-21a1df592105")
    );
    assert!(matches!(&events[1], AgentEvent::Text(line) if line.line.contains("Model metadata")));
    let AgentEvent::Assistant(call) = &events[2] else {
        panic!("{events:?}")
    };
    let tool = call.tool_uses().next().expect("a call");
    assert_eq!(tool.name, "Bash");
    assert_eq!(
        tool.input["command"],
        "/bin/bash -lc 'sleep 2; echo hi > a.txt; ls'"
    );
    let AgentEvent::User(result) = &events[3] else {
        panic!("{events:?}")
    };
    let result = result.tool_results().next().expect("a result");
    assert_eq!(result.tool_use_id, "item_1");
    assert!(!result.is_error);
    assert_eq!(result.content.texts().collect::<Vec<_>>(), ["a.txt\n"]);
    assert!(matches!(&events[4], AgentEvent::Assistant(m)
        if matches!(&m.content[..], [AssistantBlock::Text { text }] if text == "Done.")));
    let AgentEvent::Result(end) = &events[5] else {
        panic!("{events:?}")
    };
    assert!(end.is_success());
    assert_eq!(
        end.usage,
        Some(Usage {
            input_tokens: 1_001,
            cache_read_input_tokens: 1_000,
            cache_creation_input_tokens: 0,
            output_tokens: 40,
        })
    );
    assert_eq!(events.len(), 6);
}

#[test]
fn a_failed_command_is_an_error_result() {
    let event = one(
        r#"{"type":"item.completed","item":{"id":"i","type":"command_execution","command":"false","aggregated_output":"","exit_code":1,"status":"failed"}}"#,
    );
    let AgentEvent::User(message) = event else {
        panic!()
    };
    assert!(message.tool_results().next().expect("result").is_error);
}

#[test]
fn file_changes_are_one_edit_per_file_with_its_result() {
    let events = parse_line(
        br#"{"type":"item.completed","item":{"id":"f","type":"file_change","changes":[{"path":"/p/a.rs","kind":"update"},{"path":"/p/b.rs","kind":"add"}],"status":"completed"}}"#,
    );
    assert_eq!(events.len(), 4, "{events:?}");
    let AgentEvent::Assistant(edit) = &events[2] else {
        panic!("{events:?}")
    };
    let tool = edit.tool_uses().next().expect("edit");
    assert_eq!(tool.name, "Edit");
    assert_eq!(tool.input["file_path"], "/p/b.rs");
    assert!(matches!(&events[3], AgentEvent::User(_)));
}

#[test]
fn mcp_calls_web_searches_and_todo_lists_use_the_common_tool_names() {
    let AgentEvent::Assistant(mcp) = one(
        r#"{"type":"item.started","item":{"id":"m","type":"mcp_tool_call","server":"docs","tool":"search","arguments":{"q":"x"},"result":null,"error":null,"status":"in_progress"}}"#,
    ) else {
        panic!()
    };
    let tool = mcp.tool_uses().next().expect("call");
    assert_eq!(tool.name, "mcp__docs__search");
    assert_eq!(tool.input["q"], "x");
    let AgentEvent::User(done) = one(
        r#"{"type":"item.completed","item":{"id":"m","type":"mcp_tool_call","server":"docs","tool":"search","arguments":{},"result":{"content":[{"type":"text","text":"found"}],"structured_content":null},"error":null,"status":"completed"}}"#,
    ) else {
        panic!()
    };
    let result = done.tool_results().next().expect("result");
    assert_eq!(result.content.texts().collect::<Vec<_>>(), ["found"]);
    let AgentEvent::Assistant(todo) = one(
        r#"{"type":"item.updated","item":{"id":"t","type":"todo_list","items":[{"text":"write it","completed":true},{"text":"test it","completed":false}]}}"#,
    ) else {
        panic!()
    };
    let tool = todo.tool_uses().next().expect("todo");
    assert_eq!(tool.name, "TodoWrite");
    assert_eq!(tool.input["todos"][0]["status"], "completed");
    assert_eq!(tool.input["todos"][1]["content"], "test it");
    let AgentEvent::Assistant(search) = one(
        r#"{"type":"item.started","item":{"id":"w","type":"web_search","query":"rust","action":{"type":"search"}}}"#,
    ) else {
        panic!()
    };
    assert_eq!(search.tool_uses().next().expect("search").name, "WebSearch");
}

#[test]
fn a_failed_turn_is_an_error_result_and_odd_lines_are_kept() {
    let AgentEvent::Result(failed) =
        one(r#"{"type":"turn.failed","error":{"message":"stream disconnected"}}"#)
    else {
        panic!()
    };
    assert!(!failed.is_success());
    assert_eq!(failed.errors, ["stream disconnected"]);
    assert!(matches!(one("not json"), AgentEvent::Text(_)));
    assert!(matches!(
        one(r#"{"type":"thread.forked","thread_id":"x"}"#),
        AgentEvent::Unknown(_)
    ));
    assert!(parse_line(br#"{"type":"turn.started"}"#).is_empty());
    assert!(parse_line(b"  \n").is_empty());
}
