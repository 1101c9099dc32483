//! Tests of which window the meter measures against (the model the agent reports, a
//! configured override, several models at once) and of agents that report no usage.

use super::*;
use crate::context::window::{DEFAULT_WINDOW, ONE_MILLION, WindowSource};

use super::tests::*;

#[test]
fn window_follows_the_model_the_agent_reports() {
    let mut meter = meter(80.0, 0);
    assert_eq!(meter.window().tokens, DEFAULT_WINDOW);
    meter.observe(&init("claude-sonnet-4-5[1m]"));
    assert_eq!(
        meter.window(),
        Window {
            tokens: ONE_MILLION,
            source: WindowSource::Table
        }
    );
    // 300,000 is 30 % of a million: no stop.
    assert_eq!(
        meter.observe(&assistant("m1", None, Some(300_000), 0)),
        None
    );
    assert!((meter.snapshot().percent - 30.0).abs() < 1e-9);
}

#[test]
fn the_model_of_the_first_message_counts_when_there_is_no_init() {
    let mut meter = ContextMeter::new(
        settings(80.0, 0),
        WindowInputs {
            remembered: [("claude-test".to_owned(), 400_000)].into(),
            ..WindowInputs::default()
        },
    );
    meter.observe(&assistant("m1", None, Some(1_000), 0));
    assert_eq!(
        meter.window(),
        Window {
            tokens: 400_000,
            source: WindowSource::Remembered
        }
    );
}

#[test]
fn configured_window_overrides_what_the_agent_reports() {
    let mut meter = ContextMeter::new(
        settings(80.0, 0),
        WindowInputs {
            configured: Some(100_000),
            ..WindowInputs::default()
        },
    );
    meter.observe(&init("x[1m]"));
    assert!(
        meter
            .observe(&assistant("m1", None, Some(80_000), 0))
            .is_some()
    );
    meter.observe(&result(&[("x[1m]", ONE_MILLION)], 0));
    assert_eq!(meter.window().source, WindowSource::Configured);
    // The report is still offered to the state store.
    assert_eq!(meter.reported_window(), Some(("x[1m]", ONE_MILLION)));
}

#[test]
fn reported_window_is_taken_for_the_main_model_among_several() {
    let mut meter = meter(80.0, 0);
    meter.observe(&init("main-model"));
    meter.observe(&result(
        &[("helper-model", 100_000), ("main-model", 500_000)],
        0,
    ));
    assert_eq!(
        meter.window(),
        Window {
            tokens: 500_000,
            source: WindowSource::Reported
        }
    );
    // Several models, none of them ours: nothing is learned.
    let mut other = self::meter(80.0, 0);
    other.observe(&init("ours"));
    other.observe(&result(&[("a", 1), ("b", 2)], 0));
    assert_eq!(other.reported_window(), None);
    assert_eq!(other.window().source, WindowSource::Default);
}

#[test]
fn agents_without_usage_are_estimated_entirely() {
    let mut meter = ContextMeter::new(
        MeterSettings {
            usage_reporting: UsageReporting::Nothing,
            ..settings(80.0, 0)
        },
        WindowInputs {
            configured: Some(10_000),
            ..WindowInputs::default()
        },
    );
    assert_eq!(meter.observe_prompt(&" word".repeat(2_000)), None);
    // Usage numbers, if any, are ignored; the text is counted.
    assert_eq!(meter.observe(&assistant("m1", None, Some(9_999), 1)), None);
    let snapshot = meter.snapshot();
    assert_eq!(snapshot.reported_tokens, 0);
    assert_eq!(snapshot.exactness, Exactness::Estimated);
    assert!(snapshot.tokens >= 2_000);
    let stop = meter.observe(&tool_result(None, &" word".repeat(6_000)));
    assert!(
        matches!(
            stop,
            Some(StopReason::ContextThreshold { limit: 8_000, .. })
        ),
        "{stop:?}"
    );
}

#[test]
fn with_usage_the_prompt_is_not_counted_twice() {
    let mut meter = meter(80.0, 0);
    meter.observe_prompt(&" word".repeat(100_000));
    assert_eq!(meter.snapshot().tokens, 0);
}
