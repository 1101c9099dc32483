//! Rollout lines, recorded from Codex 0.169.0.

use super::*;
use crate::agent::Usage;

const RECORDED: &str = include_str!("../../../tests/fixtures/transcripts/codex-rollout.jsonl");

fn all(mode: Mode) -> Vec<AgentEvent> {
    RECORDED
        .lines()
        .flat_map(|line| parse_line(line.as_bytes(), mode))
        .collect()
}

#[test]
fn usage_mode_reads_the_identity_and_every_usage_report() {
    let events = all(Mode::Usage);
    let AgentEvent::Init(meta) = &events[0] else {
        panic!("{events:?}")
    };
    assert_eq!(meta.version.as_deref(), Some("0.169.0"));
    assert!(meta.session_id.is_some());
    assert!(
        events
            .iter()
            .any(|e| matches!(e, AgentEvent::Init(i) if i.model.as_deref() == Some("gpt-5")))
    );
    let reports: Vec<&UsageReport> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::UsageReport(report) => Some(report),
            _ => None,
        })
        .collect();
    // Two responses: each a token_usage_record, then a token_count.
    assert_eq!(reports.len(), 4, "{reports:?}");
    assert_eq!(reports[0].context_tokens, Some(1_020));
    assert_eq!(reports[0].usage, None);
    assert_eq!(reports[1].context_tokens, Some(1_020));
    assert_eq!(reports[1].context_window, Some(258_400));
    assert_eq!(reports[1].request_id.as_deref(), Some("codex-total-1020"));
    assert_eq!(
        reports[1].usage,
        Some(Usage {
            input_tokens: 500,
            cache_read_input_tokens: 500,
            cache_creation_input_tokens: 0,
            output_tokens: 20,
        })
    );
    assert_eq!(reports[3].request_id.as_deref(), Some("codex-total-2040"));
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, AgentEvent::Assistant(_) | AgentEvent::User(_)))
    );
}

#[test]
fn full_mode_reads_the_conversation_too() {
    let events = all(Mode::Full);
    let call = events
        .iter()
        .find_map(|e| match e {
            AgentEvent::Assistant(m) => m.tool_uses().next(),
            _ => None,
        })
        .expect("a function call");
    assert_eq!(call.name, "exec_command");
    assert_eq!(call.input["cmd"], "sleep 2; echo hi > a.txt; ls");
    assert!(events.iter().any(|e| matches!(e, AgentEvent::User(m)
        if m.tool_results().any(|r| r.tool_use_id == call.id))));
    assert!(events.iter().any(|e| matches!(e, AgentEvent::Assistant(m)
        if matches!(&m.content[..], [AssistantBlock::Text { text }] if text == "Done."))));
}

#[test]
fn compaction_is_a_boundary_and_other_lines_give_nothing() {
    for line in [
        r#"{"timestamp":"t","type":"compacted","payload":{"message":"summary"}}"#,
        r#"{"timestamp":"t","type":"event_msg","payload":{"type":"context_compacted"}}"#,
    ] {
        let events = parse_line(line.as_bytes(), Mode::Usage);
        assert!(
            matches!(&events[..], [AgentEvent::CompactBoundary(_)]),
            "{events:?}"
        );
    }
    assert!(
        parse_line(
            br#"{"timestamp":"t","type":"event_msg","payload":{"type":"token_count","info":null}}"#,
            Mode::Usage
        )
        .is_empty()
    );
    assert!(parse_line(br#"{"type":"world_state","payload":{}}"#, Mode::Full).is_empty());
    assert!(matches!(
        &parse_line(b"garbage", Mode::Usage)[..],
        [AgentEvent::Text(_)]
    ));
}
