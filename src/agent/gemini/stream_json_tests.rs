//! Gemini CLI `stream-json` lines, recorded from Gemini CLI 0.61.0.

use super::*;

const RECORDED: &str = include_str!("../../../tests/fixtures/transcripts/gemini-stream.jsonl");

#[test]
fn a_recorded_session_reads_as_init_a_command_its_result_a_message_and_a_result() {
    let parser = Parser::default();
    let events: Vec<AgentEvent> = RECORDED
        .lines()
        .flat_map(|line| parser.parse_line(line.as_bytes()))
        .collect();
    let AgentEvent::Init(init) = &events[0] else {
        panic!("{events:?}")
    };
    assert_eq!(init.model.as_deref(), Some("gemini-2.5-pro"));
    assert!(init.session_id.is_some());
    let AgentEvent::Assistant(call) = &events[1] else {
        panic!("the prompt gives no event: {events:?}")
    };
    let tool = call.tool_uses().next().expect("a call");
    assert_eq!(tool.name, "Bash");
    assert_eq!(tool.input["command"], "echo hi > a.txt");
    let AgentEvent::User(result) = &events[2] else {
        panic!("{events:?}")
    };
    assert!(!result.tool_results().next().expect("result").is_error);
    assert!(matches!(&events[3], AgentEvent::Assistant(m)
        if matches!(&m.content[..], [AssistantBlock::Text { text }] if text == "Done.")));
    let AgentEvent::Result(end) = &events[4] else {
        panic!("{events:?}")
    };
    assert!(end.is_success());
    assert_eq!(end.usage.map(|u| u.input_tokens), Some(2_001));
    assert_eq!(events.len(), 5);
}

#[test]
fn streamed_pieces_of_one_message_share_its_id_and_continue_it() {
    let parser = Parser::default();
    let piece = |text: &str| {
        format!(r#"{{"type":"message","role":"assistant","content":"{text}","delta":true}}"#)
    };
    let mut events = Vec::new();
    for line in [
        piece("Hel"),
        piece("lo."),
        r#"{"type":"tool_use","tool_name":"write_file","tool_id":"w1","parameters":{"file_path":"a.txt","content":"x"}}"#.to_owned(),
        piece("Next."),
    ] {
        events.extend(parser.parse_line(line.as_bytes()));
    }
    let messages: Vec<(Option<String>, bool)> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::Assistant(m) => Some((m.message_id.clone(), m.continues)),
            _ => None,
        })
        .collect();
    assert_eq!(messages[0].0, messages[1].0);
    assert!(!messages[0].1 && messages[1].1);
    assert_eq!(messages[2].0.as_deref(), Some("w1"));
    assert_ne!(messages[3].0, messages[0].0);
    assert!(!messages[3].1);
    let AgentEvent::Assistant(write) = &events[2] else {
        panic!()
    };
    let tool = write.tool_uses().next().expect("write");
    assert_eq!(tool.name, "Write");
    assert_eq!(tool.input["file_path"], "a.txt");
}

#[test]
fn todos_errors_and_failed_results() {
    let parser = Parser::default();
    let todo = parser.parse_line(
        br#"{"type":"tool_use","tool_name":"write_todos","tool_id":"t","parameters":{"todos":[{"description":"Write it","status":"completed"}]}}"#,
    );
    let AgentEvent::Assistant(todo) = &todo[0] else {
        panic!()
    };
    let tool = todo.tool_uses().next().expect("todo");
    assert_eq!(tool.name, "TodoWrite");
    assert_eq!(tool.input["todos"][0]["content"], "Write it");
    let failed = parser.parse_line(
        br#"{"type":"tool_result","tool_id":"x","status":"error","error":{"type":"x","message":"no such file"}}"#,
    );
    let AgentEvent::User(failed) = &failed[0] else {
        panic!()
    };
    let result = failed.tool_results().next().expect("result");
    assert!(result.is_error);
    assert_eq!(result.content.texts().collect::<Vec<_>>(), ["no such file"]);
    let end = parser.parse_line(
        br#"{"type":"result","status":"error","error":{"type":"FatalTurnLimitedError","message":"turn limit"},"stats":{"input_tokens":5,"output_tokens":1}}"#,
    );
    let AgentEvent::Result(end) = &end[0] else {
        panic!()
    };
    assert!(!end.is_success());
    assert_eq!(end.errors, ["turn limit"]);
    assert!(matches!(
        &parser.parse_line(br#"{"type":"error","severity":"warning","message":"slow"}"#)[..],
        [AgentEvent::Text(line)] if line.line == "gemini: slow"
    ));
    assert!(matches!(
        &parser.parse_line(br#"{"type":"thought","content":"x"}"#)[..],
        [AgentEvent::Unknown(_)]
    ));
}
