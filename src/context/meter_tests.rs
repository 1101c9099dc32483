//! Tests of the context meter: the recorded transcripts, and each accounting rule alone.

use super::*;
use crate::agent::stream_json::parse_line;
use crate::agent::{
    AssistantMessage, CompactBoundary, ModelUsage, ResultBlock, SessionInit, SessionResult,
    ToolResult, ToolResultContent, ToolUse, Usage, UserMessage,
};
use crate::context::estimate::count_tokens;
use crate::context::window::WindowSource;

pub(super) const SUBAGENT: &str =
    include_str!("../../tests/fixtures/transcripts/claude-task-subagent.jsonl");
pub(super) const CUSTOM: &str =
    include_str!("../../tests/fixtures/transcripts/claude-custom-agent.jsonl");

pub(super) fn settings(threshold_percent: f64, tool_call_threshold: u32) -> MeterSettings {
    MeterSettings {
        threshold: threshold_percent.into(),
        tool_call_threshold,
        token_estimate_factor: 1.0,
        usage_reporting: UsageReporting::PerMessage,
        stop_on_compact: true,
        prices: Vec::new(),
    }
}

pub(super) fn meter(threshold_percent: f64, tool_call_threshold: u32) -> ContextMeter {
    ContextMeter::new(
        settings(threshold_percent, tool_call_threshold),
        WindowInputs::default(),
    )
}

pub(super) fn usage(context: u64) -> Usage {
    Usage {
        input_tokens: 3,
        cache_read_input_tokens: context.saturating_sub(103),
        cache_creation_input_tokens: 100.min(context.saturating_sub(3)),
        output_tokens: 50,
    }
}

pub(super) fn assistant(
    id: &str,
    parent: Option<&str>,
    context: Option<u64>,
    tools: usize,
) -> AgentEvent {
    let mut content = vec![AssistantBlock::Text {
        text: "working".into(),
    }];
    for n in 0..tools {
        content.push(AssistantBlock::ToolUse(ToolUse {
            id: format!("{id}-tool-{n}"),
            name: "Bash".into(),
            input: serde_json::json!({"command": "ls"}),
        }));
    }
    AgentEvent::Assistant(AssistantMessage {
        message_id: Some(id.to_owned()),
        model: Some("claude-test".into()),
        parent_tool_use_id: parent.map(str::to_owned),
        usage: context.map(usage),
        stop_reason: None,
        content,
        continues: false,
    })
}

pub(super) fn tool_result(parent: Option<&str>, text: &str) -> AgentEvent {
    AgentEvent::User(UserMessage {
        parent_tool_use_id: parent.map(str::to_owned),
        content: vec![UserBlock::ToolResult(ToolResult {
            tool_use_id: "t".into(),
            content: ToolResultContent::Text(text.to_owned()),
            is_error: false,
        })],
    })
}

pub(super) fn result(models: &[(&str, u64)], cumulative: u64) -> AgentEvent {
    AgentEvent::Result(SessionResult {
        subtype: "success".into(),
        total_cost_usd: Some(1.25),
        usage: Some(usage(cumulative)),
        model_usage: models
            .iter()
            .map(|(name, window)| {
                (
                    (*name).to_owned(),
                    ModelUsage {
                        context_window: Some(*window),
                        ..ModelUsage::default()
                    },
                )
            })
            .collect(),
        ..SessionResult::default()
    })
}

pub(super) fn init(model: &str) -> AgentEvent {
    AgentEvent::Init(SessionInit {
        model: Some(model.into()),
        ..SessionInit::default()
    })
}

pub(super) fn replay(text: &str, meter: &mut ContextMeter) -> Vec<StopReason> {
    text.lines()
        .filter_map(|line| parse_line(line.as_bytes()))
        .filter_map(|event| meter.observe(&event))
        .collect()
}

#[test]
fn task_subagent_transcript_ends_at_26_555_of_200_000() {
    let mut meter = meter(80.0, 100);
    assert!(replay(SUBAGENT, &mut meter).is_empty());
    let snapshot = meter.snapshot();
    assert_eq!(snapshot.tokens, 26_555);
    assert_eq!(snapshot.window.tokens, 200_000);
    assert_eq!(snapshot.window.source, WindowSource::Reported);
    assert_eq!(snapshot.exactness, Exactness::Exact);
    assert_eq!(snapshot.turns, 2);
    assert_eq!(snapshot.tool_calls, 1);
    assert_eq!(snapshot.cost_usd, Some(0.099_996_7));
    assert_eq!(snapshot.model.as_deref(), Some("claude-haiku-4-5-20251001"));
    assert_eq!(
        meter.reported_window(),
        Some(("claude-haiku-4-5-20251001", 200_000))
    );
}

#[test]
fn naive_summing_of_the_subagent_transcript_would_give_808_271() {
    // Documents the mistake the meter avoids: adding every assistant line's usage.
    let naive: u64 = SUBAGENT
        .lines()
        .filter_map(|line| parse_line(line.as_bytes()))
        .filter_map(|event| match event {
            AgentEvent::Assistant(message) => message.usage.map(|u| u.context_tokens()),
            _ => None,
        })
        .sum();
    assert_eq!(naive, 808_271);
}

#[test]
fn custom_agent_transcript_ends_at_24_910_of_200_000() {
    let mut meter = meter(80.0, 100);
    assert!(replay(CUSTOM, &mut meter).is_empty());
    let snapshot = meter.snapshot();
    assert_eq!((snapshot.tokens, snapshot.window.tokens), (24_910, 200_000));
    assert_eq!(snapshot.exactness, Exactness::Exact);
    assert_eq!(snapshot.turns, 3);
    assert_eq!(snapshot.tool_calls, 2);
}

#[test]
fn transcripts_stop_where_a_low_threshold_says() {
    let mut meter = meter(12.2, 100);
    let stops = replay(SUBAGENT, &mut meter);
    // 24,424 / 200,000 = 12.21 %: the first main-thread message already crosses 12.2 %.
    assert_eq!(stops.len(), 1);
    assert!(matches!(
        stops[0],
        StopReason::ContextThreshold {
            tokens: 24_424,
            limit: 24_400,
            window: 200_000,
            ..
        }
    ));
}

#[test]
fn subagent_usage_is_excluded() {
    let mut meter = meter(80.0, 0);
    assert_eq!(
        meter.observe(&assistant("main-1", None, Some(10_000), 1)),
        None
    );
    // The subagent's own context is far past the threshold: no stop, no change.
    assert_eq!(
        meter.observe(&assistant("sub-1", Some("task"), Some(190_000), 3)),
        None
    );
    let snapshot = meter.snapshot();
    assert_eq!(snapshot.tokens, 10_000);
    assert_eq!(snapshot.tool_calls, 1);
    assert_eq!(snapshot.turns, 1);
}

#[test]
fn subagent_tool_results_are_not_estimated() {
    let mut meter = meter(80.0, 0);
    meter.observe(&assistant("main-1", None, Some(10_000), 1));
    meter.observe(&tool_result(Some("task"), &"x".repeat(500_000)));
    assert_eq!(meter.snapshot().tokens, 10_000);
    assert_eq!(meter.snapshot().exactness, Exactness::Exact);
}

#[test]
fn repeated_message_ids_count_once() {
    let mut meter = meter(80.0, 0);
    meter.observe(&assistant("m1", None, Some(10_000), 1));
    meter.observe(&tool_result(None, "hello world"));
    // Another content block of the same message arrives after the result: it repeats the
    // usage, which does not include the result, so the estimate must stay.
    meter.observe(&assistant("m1", None, Some(10_000), 1));
    let snapshot = meter.snapshot();
    assert_eq!(snapshot.turns, 1);
    assert_eq!(snapshot.tool_calls, 2);
    assert_eq!(snapshot.reported_tokens, 10_000);
    assert!(snapshot.estimated_tokens > 0);
    assert_eq!(snapshot.exactness, Exactness::Estimated);
}

#[test]
fn claude_codes_own_synthetic_messages_leave_the_context_as_it_was() {
    let mut meter = meter(95.0, 0);
    meter.observe(&assistant("m1", None, Some(180_000), 1));
    // What Claude Code 2.1.330 prints itself when a request is refused locally or a
    // compaction is interrupted: model `<synthetic>`, every usage figure 0.
    let line = br#"{"type":"assistant","message":{"id":"b2df5d18","model":"<synthetic>","role":"assistant","stop_reason":"stop_sequence","type":"message","usage":{"input_tokens":0,"output_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0},"content":[{"type":"text","text":"Prompt is too long"}]},"parent_tool_use_id":null,"session_id":"s"}"#;
    let event = parse_line(line).expect("an assistant line");
    meter.observe(&event);
    let snapshot = meter.snapshot();
    assert_eq!(snapshot.tokens, 180_000);
    assert_eq!(snapshot.turns, 1);
}

#[test]
fn result_usage_is_never_context() {
    let mut meter = meter(80.0, 0);
    meter.observe(&assistant("m1", None, Some(10_000), 0));
    // Cumulative usage far past the window: no stop, no change.
    assert_eq!(
        meter.observe(&result(&[("claude-test", 200_000)], 900_000)),
        None
    );
    assert_eq!(meter.snapshot().tokens, 10_000);
    assert_eq!(meter.snapshot().cost_usd, Some(1.25));
}

#[test]
fn tool_results_are_estimated_until_the_next_usage() {
    let mut meter = meter(80.0, 0);
    meter.observe(&assistant("m1", None, Some(10_000), 1));
    let text = "The quick brown fox jumps over the lazy dog. ".repeat(40);
    meter.observe(&tool_result(None, &text));
    let snapshot = meter.snapshot();
    assert_eq!(snapshot.reported_tokens, 10_000);
    // Far below the threshold: displayed with the bytes/4 rule, not tokenized.
    assert_eq!(snapshot.estimated_tokens, (text.len() as u64).div_ceil(4));
    assert_eq!(snapshot.tokens, 10_000 + snapshot.estimated_tokens);
    assert_eq!(snapshot.exactness, Exactness::Estimated);
    // The next usage includes the result: the estimate is dropped.
    meter.observe(&assistant("m2", None, Some(10_500), 0));
    let snapshot = meter.snapshot();
    assert_eq!((snapshot.tokens, snapshot.estimated_tokens), (10_500, 0));
    assert_eq!(snapshot.exactness, Exactness::Exact);
}

#[test]
fn an_estimate_can_cross_the_threshold_and_is_then_tokenized() {
    let mut meter = meter(80.0, 0);
    meter.observe(&assistant("m1", None, Some(150_000), 1));
    let text = " word".repeat(12_000); // 60,000 bytes, 12,000 o200k tokens
    let tokens = count_tokens(&text);
    assert_eq!(tokens, 12_000);
    let stop = meter.observe(&tool_result(None, &text)).expect("stop");
    assert_eq!(
        stop,
        StopReason::ContextThreshold {
            tokens: 162_000,
            limit: 160_000,
            window: 200_000,
            window_source: WindowSource::Default,
            threshold_percent: 80.0,
        }
    );
    let snapshot = meter.snapshot();
    assert_eq!(snapshot.tokens, 162_000);
    assert_eq!(snapshot.estimated_tokens, 12_000);
}

#[test]
fn a_byte_bound_over_the_limit_does_not_stop_when_the_tokens_stay_under() {
    let mut meter = meter(80.0, 0);
    meter.observe(&assistant("m1", None, Some(150_000), 1));
    // 25,000 bytes could be 25,000 tokens, but are 5,000: 155,000 < 160,000.
    let text = " word".repeat(5_000);
    assert_eq!(meter.observe(&tool_result(None, &text)), None);
    let snapshot = meter.snapshot();
    // Tokenized because the bound mattered: the display is now exact tokenizer output.
    assert_eq!(snapshot.estimated_tokens, 5_000);
    assert_eq!(snapshot.tokens, 155_000);
    // A second result adds up with the first.
    assert!(meter.observe(&tool_result(None, &text)).is_some());
    assert_eq!(meter.snapshot().tokens, 160_000);
}

#[test]
fn the_estimate_factor_scales_tokenizer_counts() {
    let mut meter = ContextMeter::new(
        MeterSettings {
            token_estimate_factor: 1.5,
            ..settings(80.0, 0)
        },
        WindowInputs::default(),
    );
    meter.observe(&assistant("m1", None, Some(150_000), 1));
    // 7,000 tokens × 1.5 = 10,500 → 160,500 ≥ 160,000.
    let stop = meter.observe(&tool_result(None, &" word".repeat(7_000)));
    assert!(matches!(
        stop,
        Some(StopReason::ContextThreshold {
            tokens: 160_500,
            ..
        })
    ));
}

#[test]
fn images_count_a_fixed_estimate() {
    let mut meter = meter(80.0, 0);
    meter.observe(&assistant("m1", None, Some(1_000), 1));
    meter.observe(&AgentEvent::User(UserMessage {
        parent_tool_use_id: None,
        content: vec![UserBlock::ToolResult(ToolResult {
            tool_use_id: "t".into(),
            content: ToolResultContent::Blocks(vec![
                ResultBlock::Image { media_type: None },
                ResultBlock::Image { media_type: None },
            ]),
            is_error: false,
        })],
    }));
    assert_eq!(meter.snapshot().tokens, 1_000 + 2 * IMAGE_TOKENS);
}

#[test]
fn stop_fires_exactly_at_the_threshold_and_only_once() {
    let mut meter = meter(80.0, 0);
    assert_eq!(
        meter.observe(&assistant("m1", None, Some(159_999), 0)),
        None
    );
    let stop = meter.observe(&assistant("m2", None, Some(160_000), 0));
    assert!(matches!(
        stop,
        Some(StopReason::ContextThreshold {
            tokens: 160_000,
            limit: 160_000,
            ..
        })
    ));
    assert_eq!(
        meter.observe(&assistant("m3", None, Some(170_000), 0)),
        None
    );
    assert!(meter.stop_reason().is_some());
    assert_eq!(meter.snapshot().stop, meter.stop_reason().cloned());
}

#[test]
fn fractional_thresholds_round_the_limit_up() {
    let mut meter = meter(33.3, 0);
    // 33.3 % of 200,000 = 66,600.
    assert_eq!(meter.observe(&assistant("m1", None, Some(66_599), 0)), None);
    assert!(
        meter
            .observe(&assistant("m2", None, Some(66_600), 0))
            .is_some()
    );
}

#[test]
fn threshold_100_disables_the_percent_check() {
    let mut meter = meter(100.0, 0);
    assert_eq!(
        meter.observe(&assistant("m1", None, Some(250_000), 0)),
        None
    );
    meter.observe(&tool_result(None, &" word".repeat(1_000)));
    assert_eq!(meter.stop_reason(), None);
    // Nothing was tokenized: no decision needed it.
    assert_eq!(meter.snapshot().estimated_tokens, 1_250);
}

#[test]
fn tool_call_threshold_counts_main_thread_calls_only() {
    let mut meter = meter(100.0, 3);
    assert_eq!(meter.observe(&assistant("m1", None, Some(1_000), 2)), None);
    assert_eq!(
        meter.observe(&assistant("s1", Some("task"), Some(1_000), 5)),
        None
    );
    assert_eq!(
        meter.observe(&assistant("m2", None, Some(1_100), 1)),
        Some(StopReason::ToolCalls { count: 3, limit: 3 })
    );
}

#[test]
fn tool_call_threshold_zero_disables_it() {
    let mut meter = meter(100.0, 0);
    for n in 0..500 {
        assert_eq!(
            meter.observe(&assistant(&format!("m{n}"), None, Some(1_000), 1)),
            None
        );
    }
    assert_eq!(meter.snapshot().tool_calls, 500);
}

#[test]
fn compact_boundary_stops_at_once_even_with_checks_disabled() {
    let mut meter = meter(100.0, 0);
    meter.observe(&assistant("m1", None, Some(1_000), 0));
    let stop = meter.observe(&AgentEvent::CompactBoundary(CompactBoundary {
        trigger: Some("auto".into()),
        pre_tokens: Some(155_000),
    }));
    assert_eq!(
        stop,
        Some(StopReason::Compacted {
            trigger: Some("auto".into()),
            pre_tokens: Some(155_000)
        })
    );
}

#[test]
fn an_observe_only_meter_never_stops() {
    let mut meter = ContextMeter::new(settings(80.0, 3).observe_only(), WindowInputs::default());
    for turn in 0..5 {
        let stop = meter.observe(&assistant(&format!("m{turn}"), None, Some(190_000), 2));
        assert_eq!(stop, None, "turn {turn}");
    }
    let compact = AgentEvent::CompactBoundary(CompactBoundary {
        trigger: Some("auto".into()),
        pre_tokens: Some(190_000),
    });
    assert_eq!(meter.observe(&compact), None);
    assert!(meter.snapshot().percent > 90.0, "it still measures");
}

#[test]
fn an_empty_meter_reads_zero_estimated() {
    let snapshot = meter(80.0, 100).snapshot();
    assert_eq!(snapshot.tokens, 0);
    assert_eq!(snapshot.exactness, Exactness::Estimated);
    assert_eq!(snapshot.percent, 0.0);
    assert_eq!(snapshot.stop, None);
    assert_eq!(snapshot.cost_usd, None);
}

#[test]
fn stop_reasons_read_well() {
    let threshold = StopReason::ContextThreshold {
        tokens: 162_000,
        limit: 160_000,
        window: 200_000,
        window_source: WindowSource::Remembered,
        threshold_percent: 80.0,
    };
    assert_eq!(
        threshold.to_string(),
        "context at 162,000 of 200,000 tokens (window: remembered) reached the 80% threshold (160,000)"
    );
    assert_eq!(
        StopReason::ToolCalls {
            count: 100,
            limit: 100
        }
        .to_string(),
        "100 main-thread tool calls reached the limit of 100"
    );
    assert_eq!(
        StopReason::ToolCalls { count: 1, limit: 1 }.to_string(),
        "1 main-thread tool call reached the limit of 1"
    );
    assert_eq!(
        StopReason::Compacted {
            trigger: Some("auto".into()),
            pre_tokens: Some(155_000)
        }
        .to_string(),
        "the agent compacted its context (auto) at 155,000 tokens"
    );
}

#[test]
fn unrelated_events_change_nothing() {
    let mut meter = meter(80.0, 1);
    let before = meter.snapshot();
    for line in [
        r#"{"type":"system","subtype":"hook_started","hook_name":"x"}"#,
        r#"{"type":"rate_limit_event","rate_limit_info":{"status":"allowed"}}"#,
        r#"{"type":"stream_event","event":{"type":"message_start"}}"#,
        r#"{"type":"something_new"}"#,
        "not json",
    ] {
        let event = parse_line(line.as_bytes()).expect("event");
        assert_eq!(meter.observe(&event), None, "{line}");
    }
    assert_eq!(meter.snapshot(), before);
}

fn report(key: Option<&str>, context: Option<u64>, window: Option<u64>) -> AgentEvent {
    AgentEvent::UsageReport(crate::agent::UsageReport {
        request_id: key.map(str::to_owned),
        usage: key.map(|_| Usage {
            input_tokens: 100,
            cache_read_input_tokens: 900,
            cache_creation_input_tokens: 0,
            output_tokens: 20,
        }),
        context_tokens: context,
        context_window: window,
    })
}

#[test]
fn usage_reports_set_the_context_bill_once_per_key_and_report_the_window() {
    let mut meter = ContextMeter::new(
        MeterSettings {
            usage_reporting: UsageReporting::PerRequest,
            ..settings(80.0, 0)
        },
        WindowInputs {
            model: Some("gpt-test".into()),
            ..WindowInputs::default()
        },
    );
    assert_eq!(meter.observe(&report(None, Some(1_020), None)), None);
    assert_eq!(meter.snapshot().tokens, 1_020);
    assert_eq!(meter.snapshot().exactness, Exactness::Exact);
    meter.observe(&tool_result(
        None,
        "a tool result the next request will carry",
    ));
    assert_eq!(meter.snapshot().exactness, Exactness::Estimated);
    // The same figure again (the rollout's token_count after its token_usage_record)
    // keeps the estimate made since.
    meter.observe(&report(Some("total-1020"), Some(1_020), Some(10_000)));
    meter.observe(&report(Some("total-1020"), Some(1_020), Some(10_000)));
    let snapshot = meter.snapshot();
    assert!(snapshot.tokens > 1_020, "{snapshot:?}");
    assert_eq!(snapshot.billed.output, 20);
    assert_eq!(snapshot.window.tokens, 10_000);
    assert_eq!(snapshot.window.source, WindowSource::Reported);
    assert_eq!(meter.reported_window(), Some(("gpt-test", 10_000)));
    let stop = meter.observe(&report(None, Some(8_000), None));
    assert!(
        matches!(
            stop,
            Some(StopReason::ContextThreshold { tokens: 8_000, .. })
        ),
        "{stop:?}"
    );
}
