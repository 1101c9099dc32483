//! Tests of the stream-json parser: every line type in the recorded transcripts, and the
//! line types of current Claude Code that the recordings lack.

use super::*;
use crate::agent::{FailureKind, TextLine, UnknownLine};

const SUBAGENT: &str = include_str!("../../tests/fixtures/transcripts/claude-task-subagent.jsonl");
const CUSTOM: &str = include_str!("../../tests/fixtures/transcripts/claude-custom-agent.jsonl");

fn parse(line: &str) -> AgentEvent {
    parse_line(line.as_bytes()).expect("an event")
}

fn fixture_line(text: &str, index: usize) -> AgentEvent {
    parse(text.lines().nth(index).expect("line exists"))
}

#[test]
fn every_fixture_line_parses_to_a_known_event() {
    for (name, text) in [("subagent", SUBAGENT), ("custom", CUSTOM)] {
        for (index, line) in text.lines().enumerate() {
            let event = parse(line);
            assert!(
                !matches!(event, AgentEvent::Unknown(_) | AgentEvent::Text(_)),
                "{name} line {}: {event:?}",
                index + 1
            );
        }
    }
}

#[test]
fn hook_response() {
    let AgentEvent::Hook(hook) = fixture_line(CUSTOM, 0) else {
        panic!("not a hook")
    };
    assert_eq!(hook.subtype, "hook_response");
    assert_eq!(hook.hook_name.as_deref(), Some("SessionStart:startup"));
    assert_eq!(hook.hook_event.as_deref(), Some("SessionStart"));
    assert_eq!(hook.exit_code, Some(0));
    assert!(
        hook.stdout
            .as_deref()
            .is_some_and(|out| out.contains("hookSpecificOutput"))
    );
}

#[test]
fn system_init() {
    let AgentEvent::Init(init) = fixture_line(CUSTOM, 1) else {
        panic!("not init")
    };
    assert_eq!(
        init.session_id.as_deref(),
        Some("e3a15f1f-4808-4893-87c1-85b3dfaced95")
    );
    assert_eq!(init.model.as_deref(), Some("claude-haiku-4-5-20251001"));
    assert_eq!(init.tools.len(), 18);
    assert_eq!(init.tools[0], "Task");
    assert!(init.mcp_servers.is_empty());
    assert_eq!(init.version.as_deref(), Some("2.1.6"));
    assert_eq!(init.permission_mode.as_deref(), Some("default"));
    assert_eq!(
        init.cwd.as_deref(),
        Some(r"C:\Projects\Claude-Orchestrator")
    );
}

#[test]
fn assistant_text_and_tool_use_lines_share_id_and_usage() {
    let AgentEvent::Assistant(text) = fixture_line(CUSTOM, 2) else {
        panic!("not assistant")
    };
    let AgentEvent::Assistant(tool) = fixture_line(CUSTOM, 3) else {
        panic!("not assistant")
    };
    assert_eq!(
        text.message_id.as_deref(),
        Some("msg_01BS4YvduKDmDmjo642RAgzx")
    );
    assert_eq!(text.message_id, tool.message_id);
    assert_eq!(text.parent_tool_use_id, None);
    let usage = text.usage.expect("usage");
    assert_eq!(
        usage,
        Usage {
            input_tokens: 2,
            cache_read_input_tokens: 0,
            cache_creation_input_tokens: 24_493,
            output_tokens: 3,
        }
    );
    assert_eq!(usage.context_tokens(), 24_495);
    assert!(
        matches!(&text.content[..], [AssistantBlock::Text { text }] if text.starts_with("I'll use the Task tool"))
    );
    let [AssistantBlock::ToolUse(call)] = &tool.content[..] else {
        panic!("not a tool use: {:?}", tool.content)
    };
    assert_eq!(call.id, "toolu_01KvASgC9ivmD1H9D7ty3vjf");
    assert_eq!(call.name, "Task");
    assert_eq!(call.input["subagent_type"], "file-existence-checker");
    assert_eq!(tool.tool_uses().count(), 1);
}

#[test]
fn user_tool_result_with_string_content_and_error_flag() {
    let AgentEvent::User(user) = fixture_line(CUSTOM, 4) else {
        panic!("not user")
    };
    assert_eq!(user.parent_tool_use_id, None);
    let [UserBlock::ToolResult(result)] = &user.content[..] else {
        panic!("not a tool result")
    };
    assert_eq!(result.tool_use_id, "toolu_01KvASgC9ivmD1H9D7ty3vjf");
    assert!(result.is_error);
    let ToolResultContent::Text(text) = &result.content else {
        panic!("not text")
    };
    assert!(text.starts_with("Agent type 'file-existence-checker' not found"));
}

#[test]
fn subagent_lines_carry_their_parent() {
    let parent = "toolu_01EMBD2Ez8pt8LWj5ovow1mU";
    // The subagent's instructions: a user line with a text block.
    let AgentEvent::User(prompt) = fixture_line(SUBAGENT, 4) else {
        panic!("not user")
    };
    assert_eq!(prompt.parent_tool_use_id.as_deref(), Some(parent));
    assert!(
        matches!(&prompt.content[..], [UserBlock::Text { text }] if text.starts_with("Find all Python files"))
    );
    let AgentEvent::Assistant(sub) = fixture_line(SUBAGENT, 5) else {
        panic!("not assistant")
    };
    assert_eq!(sub.parent_tool_use_id.as_deref(), Some(parent));
    assert!(!AgentEvent::Assistant(sub).is_main_thread());
    let AgentEvent::User(result) = fixture_line(SUBAGENT, 6) else {
        panic!("not user")
    };
    assert_eq!(result.parent_tool_use_id.as_deref(), Some(parent));
}

#[test]
fn task_result_with_block_content_ignores_the_duplicate_tool_use_result() {
    let AgentEvent::User(user) = fixture_line(SUBAGENT, 75) else {
        panic!("not user")
    };
    assert_eq!(user.parent_tool_use_id, None);
    let results: Vec<_> = user.tool_results().collect();
    let [result] = &results[..] else {
        panic!("one result expected")
    };
    assert_eq!(result.tool_use_id, "toolu_01EMBD2Ez8pt8LWj5ovow1mU");
    assert!(!result.is_error);
    let ToolResultContent::Blocks(blocks) = &result.content else {
        panic!("not blocks")
    };
    assert_eq!(blocks.len(), 2);
    assert!(matches!(&blocks[0], ResultBlock::Text { text } if text.starts_with("Perfect!")));
    let texts: Vec<&str> = result.content.texts().collect();
    assert_eq!(texts.len(), 2);
    assert_eq!(
        result.content.text_len(),
        texts.iter().map(|t| t.len()).sum::<usize>()
    );
}

#[test]
fn result_line_with_cumulative_usage_and_model_usage() {
    let AgentEvent::Result(result) = fixture_line(SUBAGENT, 77) else {
        panic!("not result")
    };
    assert_eq!(result.subtype, "success");
    assert!(!result.is_error);
    assert!(result.is_success());
    assert_eq!(result.result.as_deref(), Some("Done"));
    assert_eq!(result.num_turns, Some(2));
    assert_eq!(result.duration_ms, Some(170_911));
    assert_eq!(result.total_cost_usd, Some(0.099_996_7));
    assert_eq!(
        result.session_id.as_deref(),
        Some("b7ed8fcc-bf12-4f75-922e-7b54f0da1668")
    );
    let usage = result.usage.expect("usage");
    assert_eq!(usage.cache_read_input_tokens, 40_907);
    let model = &result.model_usage["claude-haiku-4-5-20251001"];
    assert_eq!(model.context_window, Some(200_000));
    assert_eq!(model.max_output_tokens, Some(64_000));
    assert_eq!(model.cache_read_input_tokens, Some(191_182));
    assert_eq!(model.cost_usd, Some(0.099_996_7));
}

#[test]
fn error_result() {
    let AgentEvent::Result(result) = parse(
        r#"{"type":"result","subtype":"error_max_turns","is_error":true,"num_turns":3,"session_id":"s","errors":["max turns reached"]}"#,
    ) else {
        panic!("not result")
    };
    assert_eq!(result.subtype, "error_max_turns");
    assert!(!result.is_success());
    assert_eq!(result.errors, ["max turns reached"]);
    assert_eq!(result.result, None);
    // Success needs both the subtype and no error flag.
    let AgentEvent::Result(odd) = parse(r#"{"type":"result","subtype":"success","is_error":true}"#)
    else {
        panic!("not result")
    };
    assert!(!odd.is_success());
}

#[test]
fn hook_started() {
    let AgentEvent::Hook(hook) = parse(
        r#"{"type":"system","subtype":"hook_started","hook_id":"h1","hook_name":"SessionStart:startup","hook_event":"SessionStart","uuid":"u","session_id":"s"}"#,
    ) else {
        panic!("not hook")
    };
    assert_eq!(hook.subtype, "hook_started");
    assert_eq!(hook.hook_id.as_deref(), Some("h1"));
    assert_eq!(hook.exit_code, None);
}

#[test]
fn compact_boundary() {
    let event = parse(
        r#"{"type":"system","subtype":"compact_boundary","session_id":"s","uuid":"u","compact_metadata":{"trigger":"auto","pre_tokens":155000}}"#,
    );
    assert_eq!(
        event,
        AgentEvent::CompactBoundary(CompactBoundary {
            trigger: Some("auto".into()),
            pre_tokens: Some(155_000)
        })
    );
    // Without metadata it is still a boundary.
    assert_eq!(
        parse(r#"{"type":"system","subtype":"compact_boundary"}"#),
        AgentEvent::CompactBoundary(CompactBoundary::default())
    );
}

#[test]
fn status_with_value_and_null() {
    assert_eq!(
        parse(r#"{"type":"system","subtype":"status","status":"compacting"}"#),
        AgentEvent::Status(StatusEvent {
            status: Some("compacting".into())
        })
    );
    assert_eq!(
        parse(r#"{"type":"system","subtype":"status","status":null}"#),
        AgentEvent::Status(StatusEvent { status: None })
    );
}

#[test]
fn permission_denied_has_a_string_message() {
    assert_eq!(
        parse(
            r#"{"type":"system","subtype":"permission_denied","tool_name":"Bash","tool_use_id":"t1","decision_reason_type":"rule","decision_reason":"git push is denied","message":"Denied"}"#
        ),
        AgentEvent::PermissionDenied(PermissionDenied {
            tool_name: Some("Bash".into()),
            tool_use_id: Some("t1".into()),
            reason: Some("git push is denied".into()),
            message: Some("Denied".into()),
        })
    );
}

#[test]
fn thinking_and_unknown_assistant_blocks() {
    let AgentEvent::Assistant(message) = parse(
        r#"{"type":"assistant","message":{"id":"m","content":[{"type":"thinking","thinking":"hmm","signature":"x"},{"type":"redacted_thinking","data":"zzz"}]},"parent_tool_use_id":null}"#,
    ) else {
        panic!("not assistant")
    };
    assert_eq!(
        message.content,
        [
            AssistantBlock::Thinking {
                thinking: "hmm".into()
            },
            AssistantBlock::Other {
                block_type: "redacted_thinking".into()
            }
        ]
    );
    assert_eq!(message.usage, None);
}

#[test]
fn image_blocks_in_tool_results_keep_only_the_media_type() {
    let AgentEvent::User(user) = parse(
        r#"{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}},{"type":"text","text":"caption"}]}]},"parent_tool_use_id":null}"#,
    ) else {
        panic!("not user")
    };
    let result = user.tool_results().next().expect("result");
    assert_eq!(result.content.image_count(), 1);
    assert_eq!(result.content.text_len(), "caption".len());
    let ToolResultContent::Blocks(blocks) = &result.content else {
        panic!("not blocks")
    };
    assert_eq!(
        blocks[0],
        ResultBlock::Image {
            media_type: Some("image/png".into())
        }
    );
}

#[test]
fn user_message_with_plain_string_content() {
    assert_eq!(
        parse(
            r#"{"type":"user","message":{"role":"user","content":"hello"},"parent_tool_use_id":null}"#
        ),
        AgentEvent::User(UserMessage {
            parent_tool_use_id: None,
            content: vec![UserBlock::Text {
                text: "hello".into()
            }],
        })
    );
}

#[test]
fn tool_result_without_or_with_null_content() {
    let AgentEvent::User(user) = parse(
        r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"a"},{"type":"tool_result","tool_use_id":"b","content":null,"is_error":false}]}}"#,
    ) else {
        panic!("not user")
    };
    for result in user.tool_results() {
        assert_eq!(result.content, ToolResultContent::Text(String::new()));
    }
}

#[test]
fn stream_event() {
    let AgentEvent::Stream(stream) = parse(
        r#"{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hel"}},"parent_tool_use_id":"toolu_1","session_id":"s","uuid":"u"}"#,
    ) else {
        panic!("not stream")
    };
    assert_eq!(stream.parent_tool_use_id.as_deref(), Some("toolu_1"));
    assert_eq!(stream.event["delta"]["text"], "Hel");
}

#[test]
fn rate_limit_event() {
    let AgentEvent::RateLimit(limit) = parse(
        r#"{"type":"rate_limit_event","rate_limit_info":{"status":"allowed_warning","resetsAt":1784979600,"rateLimitType":"five_hour","utilization":0.8},"session_id":"s"}"#,
    ) else {
        panic!("not rate limit")
    };
    assert_eq!(limit.status.as_deref(), Some("allowed_warning"));
    assert_eq!(limit.rate_limit_type.as_deref(), Some("five_hour"));
    assert_eq!(limit.resets_at, Some(1_784_979_600));
    assert_eq!(limit.info["utilization"], 0.8);
}

#[test]
fn an_api_retry_says_which_retry_and_why() {
    let line = r#"{"type":"system","subtype":"api_retry","attempt":2,"max_retries":10,"retry_delay_ms":1133,"error_status":529,"error":"overloaded","session_id":"s"}"#;
    let AgentEvent::ApiRetry(retry) = parse(line) else {
        panic!("not a retry")
    };
    assert_eq!((retry.attempt, retry.max_retries), (Some(2), Some(10)));
    assert_eq!((retry.delay_ms, retry.status), (Some(1133), Some(529)));
    assert_eq!(
        (retry.error.as_str(), retry.kind),
        ("overloaded", Some(FailureKind::Overloaded))
    );
}

#[test]
fn unknown_types_and_subtypes_are_kept_verbatim() {
    let line = r#"{"type":"session_state_changed","state":"idle"}"#;
    assert_eq!(
        parse(line),
        AgentEvent::Unknown(UnknownLine {
            line_type: Some("session_state_changed".into()),
            subtype: None,
            raw: line.into(),
        })
    );
    let line = r#"{"type":"system","subtype":"model_fallback","original_model":"a"}"#;
    let AgentEvent::Unknown(unknown) = parse(line) else {
        panic!("not unknown")
    };
    assert_eq!(unknown.subtype.as_deref(), Some("model_fallback"));
    assert_eq!(unknown.raw, line);
    // Valid JSON that is not an object, or has no type.
    assert!(matches!(parse("[1,2]"), AgentEvent::Unknown(_)));
    assert!(matches!(parse("42"), AgentEvent::Unknown(_)));
    assert!(matches!(parse(r#"{"no":"type"}"#), AgentEvent::Unknown(_)));
    // An assistant line without a message object cannot be read as one.
    assert!(matches!(
        parse(r#"{"type":"assistant","message":"oops"}"#),
        AgentEvent::Unknown(_)
    ));
}

#[test]
fn unexpected_field_shapes_do_not_hide_known_lines() {
    // A string field turned into an object, and an unknown extra field: still an init.
    let AgentEvent::Init(init) = parse(
        r#"{"type":"system","subtype":"init","session_id":"s","model":{"id":"m"},"tools":[],"future":{"x":[1,2,3]}}"#,
    ) else {
        panic!("not init")
    };
    assert_eq!(init.model, None);
    assert_eq!(init.session_id.as_deref(), Some("s"));
    // Result fields of unexpected types are dropped, not fatal.
    let AgentEvent::Result(result) = parse(
        r#"{"type":"result","subtype":"success","is_error":"no","num_turns":2.5,"total_cost_usd":"1","duration_ms":-1,"errors":[{"code":1},"boom"]}"#,
    ) else {
        panic!("not result")
    };
    assert_eq!(result.subtype, "success");
    assert!(!result.is_error);
    assert_eq!(
        (result.num_turns, result.total_cost_usd, result.duration_ms),
        (None, None, None)
    );
    assert_eq!(result.errors, ["boom"]);
    // Odd tool and server lists keep what fits.
    let AgentEvent::Init(init) = parse(
        r#"{"type":"system","subtype":"init","tools":["Bash",{"name":"x"}],"mcp_servers":["plain",{"name":"db","status":"connected","extra":1},3]}"#,
    ) else {
        panic!("not init")
    };
    assert_eq!(init.tools, ["Bash"]);
    assert_eq!(init.mcp_servers.len(), 2);
    assert_eq!(init.mcp_servers[1].status, "connected");
    // Usage counts given as null read as zero.
    let AgentEvent::Assistant(message) = parse(
        r#"{"type":"assistant","message":{"id":"m","content":[],"usage":{"input_tokens":5,"cache_read_input_tokens":null}}}"#,
    ) else {
        panic!("not assistant")
    };
    assert_eq!(message.usage.map(|u| u.context_tokens()), Some(5));
}

#[test]
fn non_json_lines_become_text_and_blank_lines_nothing() {
    assert_eq!(
        parse("Error: something broke\r\n"),
        AgentEvent::Text(TextLine {
            line: "Error: something broke".into()
        })
    );
    assert!(matches!(
        parse(r#"{"type":"assistant","message":{"id":"#),
        AgentEvent::Text(_)
    ));
    assert!(matches!(
        parse_line(b"\xff\xfe not utf8"),
        Some(AgentEvent::Text(_))
    ));
    assert_eq!(parse_line(b""), None);
    assert_eq!(parse_line(b"  \r\n"), None);
}

#[test]
fn events_serialize_for_logs() {
    let json = serde_json::to_value(fixture_line(CUSTOM, 3)).expect("serializes");
    assert_eq!(json["event"], "assistant");
    assert_eq!(json["content"][0]["type"], "tool_use");
}

#[test]
fn result_permission_denials_are_read_and_odd_entries_dropped() {
    // The shape Claude Code 2.1.330 prints when a Bash call is refused.
    let AgentEvent::Result(result) = parse(
        r#"{"type":"result","subtype":"success","is_error":false,"permission_denials":[{"tool_name":"Bash","tool_use_id":"toolu_1","tool_input":{"command":"npm test -- --watch=false","description":"run the tests"}},{"tool_name":"Write","tool_use_id":"toolu_2","tool_input":{"file_path":"/p/a.py","content":"x"}},"odd",{"tool_use_id":"no-name"}]}"#,
    ) else {
        panic!("not result")
    };
    let described: Vec<String> = result
        .permission_denials
        .iter()
        .map(DeniedCall::describe)
        .collect();
    assert_eq!(
        described,
        ["Bash: npm test -- --watch=false", "Write: /p/a.py"]
    );
    let rules: Vec<String> = result
        .permission_denials
        .iter()
        .map(DeniedCall::suggested_rule)
        .collect();
    assert_eq!(rules, ["Bash(npm test:*)", "Write"]);
    // A field of the wrong shape loses the denials, not the result.
    let AgentEvent::Result(odd) =
        parse(r#"{"type":"result","subtype":"success","permission_denials":{"x":1}}"#)
    else {
        panic!("not result")
    };
    assert!(odd.permission_denials.is_empty());
}

#[test]
fn suggested_rules_keep_the_program_and_its_subcommand() {
    let bash = |command: &str| DeniedCall {
        tool_name: "Bash".into(),
        tool_use_id: None,
        tool_input: serde_json::json!({ "command": command }),
    };
    assert_eq!(bash("pytest -q tests/").suggested_rule(), "Bash(pytest:*)");
    assert_eq!(
        bash("cargo test --all").suggested_rule(),
        "Bash(cargo test:*)"
    );
    assert_eq!(bash("git --no-pager log").suggested_rule(), "Bash(git:*)");
    assert_eq!(bash("").suggested_rule(), "Bash");
}

#[test]
fn an_invalid_utf8_byte_does_not_hide_the_lines_usage() {
    let mut line = br#"{"type":"assistant","message":{"id":"m1","model":"claude-opus-4-1","content":[{"type":"text","text":"bad "#.to_vec();
    line.push(0xff);
    line.extend_from_slice(br#" byte"}],"usage":{"input_tokens":10,"cache_read_input_tokens":189990,"output_tokens":5}},"parent_tool_use_id":null}"#);
    let AgentEvent::Assistant(message) = parse_line(&line).expect("event") else {
        panic!("not an assistant line")
    };
    let usage = message.usage.expect("usage");
    assert_eq!(usage.input_tokens + usage.cache_read_input_tokens, 190_000);
    assert_eq!(
        message.content,
        [AssistantBlock::Text {
            text: "bad \u{fffd} byte".into()
        }]
    );
}
