//! Range and consistency checks on a typed [`Config`]. Pure.
//!
//! [`check_fields`] looks at one key at a time, so it can run on each layer alone (the
//! defaults always pass, so whatever fails was set by that layer). [`check_combined`]
//! looks at keys together and runs once, on the merged result.

use super::{AgentKind, Config, NotificationProvider};

/// One failed check.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Violation {
    /// The dotted key path.
    pub path: String,
    /// What the value must be, e.g. "must be greater than 0".
    pub rule: String,
    /// The value found, as shown to the user.
    pub found: String,
    /// How to fix it.
    pub help: String,
}

fn violation(path: impl Into<String>, rule: &str, found: impl ToString, help: &str) -> Violation {
    Violation {
        path: path.into(),
        rule: rule.to_owned(),
        found: found.to_string(),
        help: help.to_owned(),
    }
}

/// The placeholders `commit_message_template` may use.
pub(crate) const TEMPLATE_PLACEHOLDERS: &[&str] = &["phase_id", "phase_name", "status"];

/// Check each key's value on its own.
pub(crate) fn check_fields(config: &Config) -> Vec<Violation> {
    let mut out = Vec::new();
    check_upper_bounds(config, &mut out);
    if config.model.trim().is_empty() {
        out.push(violation(
            "model",
            "must not be empty",
            "\"\"",
            "set `model` to a model name such as `opus` or `sonnet`",
        ));
    }
    if config.timeout.is_zero() {
        out.push(violation(
            "timeout",
            "must be greater than 0",
            0,
            "set `timeout` to the seconds one agent session may run, e.g. 1800",
        ));
    }
    let threshold = config.context_threshold;
    if let Err(rule) = threshold.check() {
        out.push(violation(
            "context_threshold",
            rule,
            threshold.as_number(),
            "set `context_threshold` to a percent of the context window, e.g. 80; 100 disables context restarts",
        ));
    }
    for (key, limit) in [
        ("max_cost_usd", config.max_cost_usd),
        ("max_phase_cost_usd", config.max_phase_cost_usd),
    ] {
        if let Some(limit) = limit.filter(|limit| !(limit.is_finite() && *limit > 0.0)) {
            out.push(violation(
                key,
                if limit.is_infinite() {
                    "must be a finite number"
                } else {
                    "must be more than 0"
                },
                limit,
                &format!("set `{key}` to the US dollars the run may spend, e.g. 20, or to null for no limit"),
            ));
        }
    }
    if config.handoff_timeout.is_zero() {
        out.push(violation(
            "handoff_timeout",
            "must be greater than 0",
            0,
            "set `handoff_timeout` to the seconds the stopped agent has to write its handoff, e.g. 120, or set `handoff: mechanical`",
        ));
    }
    if config.tool_call_threshold == 0 {
        out.push(violation(
            "tool_call_threshold",
            "must be at least 1",
            0,
            "set `tool_call_threshold` to the tool calls after which a session restarts, e.g. 100",
        ));
    }
    if config.gate_timeout.is_zero() {
        out.push(violation(
            "gate_timeout",
            "must be greater than 0",
            0,
            "set `gate_timeout` to the seconds one gate command may run, e.g. 600",
        ));
    }
    if config.git.timeout.is_zero() {
        out.push(violation(
            "git.timeout",
            "must be greater than 0",
            0,
            "set `git.timeout` to the seconds one git command (a merge, a commit with its hooks) may run, e.g. 600",
        ));
    }
    check_template(
        "commit_message_template",
        &config.commit_message_template,
        &mut out,
    );
    check_template(
        "merge_message_template",
        &config.merge_message_template,
        &mut out,
    );
    check_agent(config, &mut out);
    check_profiles(config, &mut out);
    for (name, command) in &config.gates {
        if name.trim().is_empty() {
            out.push(violation(
                "gates",
                "gate names must not be empty",
                "\"\"",
                "name each gate, e.g. `pytest: pytest -q`",
            ));
        }
        if command.trim().is_empty() {
            out.push(violation(
                format!("gates.{name}"),
                "must be a command, not empty",
                "\"\"",
                "give the gate a shell command, e.g. `cargo test --all`",
            ));
        }
    }
    check_mcp(config, &mut out);
    let ntfy = &config.notifications.ntfy;
    if !(ntfy.server.starts_with("http://") || ntfy.server.starts_with("https://")) {
        out.push(violation(
            "notifications.ntfy.server",
            "must be an http:// or https:// URL",
            format!("{:?}", ntfy.server),
            "set `notifications.ntfy.server` to the server's base URL, e.g. https://ntfy.sh",
        ));
    }
    if ntfy.topic.as_deref().is_some_and(|t| t.trim().is_empty()) {
        out.push(violation(
            "notifications.ntfy.topic",
            "must not be empty",
            "\"\"",
            "set `notifications.ntfy.topic` to a topic name, or null for none",
        ));
    }
    out
}

/// The `mcp` section: durations are finite and not negative, sizes and the timeouts that
/// would make the supervisor useless are above 0, and the backoff tiers are in order.
fn check_mcp(config: &Config, out: &mut Vec<Violation>) {
    let mcp = &config.mcp;
    let seconds = [
        ("mcp.readiness_timeout", mcp.readiness_timeout, true),
        (
            "mcp.first_readiness_timeout",
            mcp.first_readiness_timeout,
            true,
        ),
        ("mcp.drain_grace", mcp.drain_grace, false),
        ("mcp.request_deadline", mcp.request_deadline, true),
        ("mcp.answer_timeout", mcp.answer_timeout, true),
        ("mcp.stop_close_grace", mcp.stop_close_grace, false),
        ("mcp.stop_term_grace", mcp.stop_term_grace, false),
        ("mcp.restart_interval", mcp.restart_interval, false),
        ("mcp.crash_backoff.first", mcp.crash_backoff.first, false),
        ("mcp.crash_backoff.second", mcp.crash_backoff.second, false),
        ("mcp.crash_backoff.after", mcp.crash_backoff.after, false),
        ("mcp.crash_window", mcp.crash_window, false),
        ("mcp.stable_after", mcp.stable_after, false),
    ];
    for (path, value, positive) in seconds {
        // The upper bound is the schema's (`check_upper_bounds`).
        let ok = value.is_finite() && if positive { value > 0.0 } else { value >= 0.0 };
        if !ok {
            let rule = if positive {
                "must be a number of seconds greater than 0"
            } else {
                "must be a number of seconds, 0 or more"
            };
            out.push(violation(
                path,
                rule,
                value,
                &format!("set `{path}` to seconds, e.g. its default in config/default.yaml"),
            ));
        }
    }
    for (path, value) in [
        ("mcp.buffer_max_messages", mcp.buffer_max_messages),
        ("mcp.buffer_max_bytes", mcp.buffer_max_bytes),
        ("mcp.max_line_bytes", mcp.max_line_bytes),
    ] {
        if value == 0 {
            out.push(violation(
                path,
                "must be greater than 0",
                0,
                &format!("set `{path}` to a size, e.g. its default in config/default.yaml"),
            ));
        }
    }
    if mcp.crash_backoff.second_until < mcp.crash_backoff.first_count {
        out.push(violation(
            "mcp.crash_backoff.second_until",
            "must be at least `mcp.crash_backoff.first_count`",
            mcp.crash_backoff.second_until,
            "the second tier covers the crashes after the first tier, up to this number",
        ));
    }
}

/// Every numeric key against the upper bound its schema entry declares: a figure past it
/// would overflow a duration (`timeout: 18446744073709551615` made the run panic) or
/// stall a run for years.
fn check_upper_bounds(config: &Config, out: &mut Vec<Violation>) {
    let Ok(tree) = serde_json::to_value(config) else {
        return;
    };
    let defaults = serde_json::to_value(Config::default()).unwrap_or_default();
    for key in super::keys::KEYS {
        let Some((max, unit)) = key.max else { continue };
        let pointer = format!("/{}", key.path.replace('.', "/"));
        let Some(found) = tree.pointer(&pointer) else {
            continue;
        };
        let Some(value) = found.as_f64() else {
            continue;
        };
        if value.is_finite() && value <= max {
            continue;
        }
        let default = defaults
            .pointer(&pointer)
            .filter(|value| !value.is_null())
            .map_or_else(|| "null".to_owned(), ToString::to_string);
        out.push(violation(
            key.path,
            &format!(
                "must be at most {} ({unit})",
                super::schema::format_bound(max)
            ),
            found,
            &format!(
                "set `{}` to at most {}; its default is {default}",
                key.path,
                super::schema::format_bound(max)
            ),
        ));
    }
}

fn check_template(key: &str, template: &str, out: &mut Vec<Violation>) {
    let help = format!("use only {{phase_id}}, {{phase_name}} and {{status}} in `{key}`");
    let help = help.as_str();
    if template.trim().is_empty() {
        out.push(violation(key, "must not be empty", "\"\"", help));
        return;
    }
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        let after = &rest[open + 1..];
        let Some(close) = after.find('}') else {
            out.push(violation(
                key,
                "has a `{` without a closing `}`",
                format!("{template:?}"),
                help,
            ));
            return;
        };
        let name = &after[..close];
        if !TEMPLATE_PLACEHOLDERS.contains(&name) {
            let help = match super::schema::closest(name, TEMPLATE_PLACEHOLDERS.iter().copied()) {
                Some(best) => format!("did you mean {{{best}}}? {help}"),
                None => help.to_owned(),
            };
            out.push(Violation {
                path: key.to_owned(),
                rule: format!("uses the unknown placeholder {{{name}}}"),
                found: format!("{template:?}"),
                help,
            });
            return;
        }
        rest = &after[close + 1..];
    }
}

/// Each `agents.<kind>` profile: a program, a model and a window are not empty when set.
fn check_profiles(config: &Config, out: &mut Vec<Violation>) {
    for kind in AgentKind::ALL {
        let profile = config.agents.get(kind);
        let key = |name: &str| format!("agents.{kind}.{name}");
        for (name, value, what) in [
            (
                "command",
                &profile.command,
                format!("a program, or null for {kind}'s own"),
            ),
            (
                "model",
                &profile.model,
                format!("a model name, or null for the model {kind} runs by default"),
            ),
        ] {
            if value.as_deref().is_some_and(|v| v.trim().is_empty()) {
                out.push(violation(
                    key(name),
                    "must not be empty",
                    "\"\"",
                    &format!("set `{}` to {what}", key(name)),
                ));
            }
        }
        if profile.model_context_window == Some(0) {
            out.push(violation(
                key("model_context_window"),
                "must be greater than 0",
                0,
                &format!(
                    "set `{}` to the window in tokens, e.g. 200000, or null to use what the agent reports",
                    key("model_context_window")
                ),
            ));
        }
    }
}

fn check_agent(config: &Config, out: &mut Vec<Violation>) {
    let agent = &config.agent;
    if agent
        .command
        .as_deref()
        .is_some_and(|c| c.trim().is_empty())
    {
        out.push(violation(
            "agent.command",
            "must not be empty",
            "\"\"",
            "set `agent.command` to a program, or null for the backend's default",
        ));
    }
    if agent.model_context_window == Some(0) {
        out.push(violation(
            "agent.model_context_window",
            "must be greater than 0",
            0,
            "set `agent.model_context_window` to the window in tokens, e.g. 200000, or null to use what the agent reports",
        ));
    }
    if !(agent.stop_grace.is_finite() && agent.stop_grace >= 0.0) {
        out.push(violation(
            "agent.stop_grace",
            "must be 0 or more",
            agent.stop_grace,
            "set `agent.stop_grace` to the seconds between stop signals, e.g. 2",
        ));
    }
    if agent.stderr_tail_lines == 0 {
        out.push(violation(
            "agent.stderr_tail_lines",
            "must be at least 1",
            0,
            "set `agent.stderr_tail_lines` to the number of stderr lines error messages may quote, e.g. 20",
        ));
    }
    if !(agent.token_estimate_factor.is_finite() && agent.token_estimate_factor > 0.0) {
        out.push(violation(
            "agent.token_estimate_factor",
            "must be greater than 0",
            agent.token_estimate_factor,
            "set `agent.token_estimate_factor` to a multiplier such as 1.0",
        ));
    }
    if agent
        .scenario
        .as_ref()
        .is_some_and(|p| p.as_os_str().is_empty())
    {
        out.push(violation(
            "agent.scenario",
            "must not be empty",
            "\"\"",
            "set `agent.scenario` to a scenario file, or null for sim-scenario.yaml beside the plan",
        ));
    }
    for (fragment, text) in &agent.prices {
        if let Err(problem) = super::Prices::parse(text) {
            out.push(violation(
                format!("agent.prices.{fragment}"),
                "must be four prices",
                format!("{text:?}"),
                &problem,
            ));
        }
    }
    for name in agent.env.keys() {
        if name.is_empty() || name.contains('=') || name.contains('\0') {
            out.push(violation(
                format!("agent.env.{name}"),
                "must be a variable name without `=`",
                format!("{name:?}"),
                "name each variable in `agent.env` like a shell variable, e.g. ANTHROPIC_BASE_URL",
            ));
        }
    }
}

/// Check keys that only make sense together; run on the merged configuration.
pub(crate) fn check_combined(config: &Config) -> Vec<Violation> {
    let mut out = Vec::new();
    let notifications = &config.notifications;
    if notifications.enabled
        && notifications.provider == NotificationProvider::Ntfy
        && notifications.ntfy.topic.is_none()
    {
        out.push(violation(
            "notifications.provider",
            "is ntfy but `notifications.ntfy.topic` is not set",
            "ntfy",
            "set `notifications.ntfy.topic` to the topic to publish to",
        ));
    }
    out
}

#[cfg(test)]
#[path = "validate_tests.rs"]
mod tests;
