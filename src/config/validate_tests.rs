//! Tests of `validate`.

use super::*;
use crate::config::Seconds;

fn paths(config: &Config) -> Vec<String> {
    check_fields(config).into_iter().map(|v| v.path).collect()
}

#[test]
fn defaults_pass() {
    assert!(check_fields(&Config::default()).is_empty());
    assert!(check_combined(&Config::default()).is_empty());
}

#[test]
fn context_threshold_is_a_percent_above_zero() {
    for bad in [0.0, -1.0, 100.5, f64::NAN, f64::INFINITY] {
        let config = Config {
            context_threshold: bad.into(),
            ..Config::default()
        };
        assert_eq!(paths(&config), ["context_threshold"], "{bad}");
    }
    for good in [0.1, 50.0, 100.0] {
        let config = Config {
            context_threshold: good.into(),
            ..Config::default()
        };
        assert!(paths(&config).is_empty(), "{good}");
    }
}

#[test]
fn zero_durations_and_counts_fail() {
    let config = Config {
        timeout: Seconds(0),
        gate_timeout: Seconds(0),
        tool_call_threshold: 0,
        ..Config::default()
    };
    assert_eq!(
        paths(&config),
        ["timeout", "tool_call_threshold", "gate_timeout"]
    );
    let config = Config {
        max_retries: 0,
        max_restarts: 0,
        restart_delay: Seconds(0),
        ..Config::default()
    };
    assert!(
        paths(&config).is_empty(),
        "zero retries, restarts and delay are allowed"
    );
}

#[test]
fn spending_limits_must_be_positive_and_the_handoff_needs_time() {
    let config = Config {
        max_cost_usd: Some(0.0),
        max_phase_cost_usd: Some(-1.0),
        handoff_timeout: Seconds(0),
        ..Config::default()
    };
    assert_eq!(
        paths(&config),
        ["max_cost_usd", "max_phase_cost_usd", "handoff_timeout"]
    );
    let config = Config {
        max_cost_usd: Some(2.5),
        max_phase_cost_usd: Some(1.0),
        no_progress_restarts: 0,
        ..Config::default()
    };
    assert!(paths(&config).is_empty());
    // An infinite limit (YAML's `.inf`, the flag's `inf`) is no limit in disguise.
    let config = Config {
        max_cost_usd: Some(f64::INFINITY),
        max_phase_cost_usd: Some(f64::NEG_INFINITY),
        ..Config::default()
    };
    assert_eq!(paths(&config), ["max_cost_usd", "max_phase_cost_usd"]);
}

#[test]
fn mcp_durations_sizes_and_backoff_tiers_have_ranges() {
    let mut config = Config::default();
    config.mcp.readiness_timeout = 0.0;
    config.mcp.drain_grace = -1.0;
    config.mcp.crash_window = f64::NAN;
    config.mcp.buffer_max_bytes = 0;
    config.mcp.crash_backoff.second_until = 2;
    assert_eq!(
        paths(&config),
        [
            "mcp.readiness_timeout",
            "mcp.drain_grace",
            "mcp.crash_window",
            "mcp.buffer_max_bytes",
            "mcp.crash_backoff.second_until"
        ]
    );
    let mut config = Config::default();
    config.mcp.drain_grace = 0.0;
    config.mcp.max_crashes = 0;
    assert!(paths(&config).is_empty());
}

#[test]
fn agent_numbers_have_ranges() {
    let mut config = Config::default();
    config.agent.stop_grace = -0.5;
    config.agent.token_estimate_factor = 0.0;
    config.agent.model_context_window = Some(0);
    assert_eq!(
        paths(&config),
        [
            "agent.model_context_window",
            "agent.stop_grace",
            "agent.token_estimate_factor"
        ]
    );
    config = Config::default();
    config.agent.stop_grace = 0.0;
    assert!(paths(&config).is_empty());
}

#[test]
fn empty_strings_fail_where_they_mean_nothing() {
    let mut config = Config {
        model: " ".into(),
        ..Config::default()
    };
    config.agent.command = Some(String::new());
    config.agent.scenario = Some("".into());
    config.gates.insert("pytest".into(), "  ".into());
    config.notifications.ntfy.topic = Some(String::new());
    config.notifications.ntfy.server = "ntfy.sh".into();
    config.agent.env.insert("A=B".into(), "x".into());
    assert_eq!(
        paths(&config),
        [
            "model",
            "agent.command",
            "agent.scenario",
            "agent.env.A=B",
            "gates.pytest",
            "notifications.ntfy.server",
            "notifications.ntfy.topic"
        ]
    );
}

#[test]
fn template_placeholders_are_checked() {
    let bad = Config {
        commit_message_template: "phase {phase_idd} done".into(),
        ..Config::default()
    };
    let found = check_fields(&bad);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].rule, "uses the unknown placeholder {phase_idd}");
    assert!(found[0].help.starts_with("did you mean {phase_id}?"));
    let open = Config {
        commit_message_template: "phase {phase_id".into(),
        ..Config::default()
    };
    assert_eq!(
        check_fields(&open)[0].rule,
        "has a `{` without a closing `}`"
    );
    let empty = Config {
        commit_message_template: String::new(),
        ..Config::default()
    };
    assert_eq!(paths(&empty), ["commit_message_template"]);
    let plain = Config {
        commit_message_template: "checkpoint".into(),
        ..Config::default()
    };
    assert!(paths(&plain).is_empty());
}

#[test]
fn ntfy_needs_a_topic_when_enabled() {
    let mut config = Config::default();
    config.notifications.enabled = true;
    config.notifications.provider = NotificationProvider::Ntfy;
    let found = check_combined(&config);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].path, "notifications.provider");
    config.notifications.ntfy.topic = Some("builds".into());
    assert!(check_combined(&config).is_empty());
    config.notifications.ntfy.topic = None;
    config.notifications.enabled = false;
    assert!(check_combined(&config).is_empty());
}
