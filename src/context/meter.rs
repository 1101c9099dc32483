//! [`ContextMeter`]: how full the main thread's context window is, event by event, and
//! when to stop the session.
//!
//! Rules (DESIGN.md, "Context accounting"; issue 3, "The context meter"):
//! - context in use = input + cache-read + cache-creation tokens of the latest
//!   **main-thread** assistant message; subagent lines (non-null `parent_tool_use_id`) are
//!   ignored; lines repeating a message id repeat its usage and count once;
//!   `result.usage` is cumulative and never a context figure;
//! - main-thread content that arrives after that usage (tool results, text) is estimated
//!   with the o200k tokenizer × `token_estimate_factor` and added until the next usage;
//! - stop when the total reaches `context_threshold` % of the window (100 disables), when
//!   main-thread tool calls reach `tool_call_threshold` (0 disables), or at once on a
//!   `compact_boundary`.
//!
//! Pure: no I/O, no clock. Tokenizing is lazy (see [`super::estimate`]).

use std::fmt;

use serde::Serialize;

use super::ContextLimit;
use super::cost::{Billed, Billing, Prices};
use super::estimate::{self, IMAGE_TOKENS, Pending};
use super::window::{self, Window, WindowInputs, WindowSource};
use crate::agent::{AgentEvent, AssistantBlock, UsageReport, UsageReporting, UserBlock};
use crate::words::thousands;

/// The meter's thresholds and estimate settings.
#[derive(Debug, Clone, PartialEq)]
pub struct MeterSettings {
    /// Where the context check stops a session, if it does.
    pub threshold: ContextLimit,
    /// Stop after this many main-thread tool calls; 0 disables the check.
    pub tool_call_threshold: u32,
    /// Multiplier applied to tokenizer counts.
    pub token_estimate_factor: f64,
    /// Whether the agent reports usage, or everything must be estimated.
    pub usage_reporting: UsageReporting,
    /// Stop when the agent compacts its own context. Off when restarts are off, so an
    /// agent that cannot be restarted may compact and carry on.
    pub stop_on_compact: bool,
    /// Prices that override the built-in table (`agent.prices`), by model-name fragment.
    pub prices: Vec<(String, Prices)>,
}

impl MeterSettings {
    /// The same settings with every stop turned off: the meter only measures. For
    /// sessions that must not be restarted (remediation attempts, restarts disabled).
    #[must_use]
    pub fn observe_only(self) -> Self {
        MeterSettings {
            threshold: ContextLimit::Off,
            tool_call_threshold: 0,
            stop_on_compact: false,
            ..self
        }
    }
}

/// Why the context meter says a session should stop (the meter owns it; the session
/// wraps it in a [`LimitReason`](crate::session::LimitReason)).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum StopReason {
    /// The context reached the threshold.
    ContextThreshold {
        /// Tokens in use when it fired.
        tokens: u64,
        /// The threshold in tokens.
        limit: u64,
        /// The window in tokens.
        window: u64,
        /// Where the window figure came from.
        window_source: WindowSource,
        /// The threshold in percent.
        threshold_percent: f64,
    },
    /// The main thread made too many tool calls.
    ToolCalls {
        /// Calls made.
        count: u32,
        /// The configured limit.
        limit: u32,
    },
    /// The agent compacted its own context.
    Compacted {
        /// `auto` or `manual`.
        trigger: Option<String>,
        /// Tokens before compaction, as the agent reported.
        pre_tokens: Option<u64>,
    },
}

impl fmt::Display for StopReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StopReason::ContextThreshold {
                tokens,
                limit,
                window,
                window_source,
                threshold_percent,
            } => write!(
                f,
                "context at {} of {} tokens (window: {window_source}) reached the {threshold_percent}% threshold ({})",
                thousands(*tokens),
                thousands(*window),
                thousands(*limit)
            ),
            StopReason::ToolCalls { count, limit } => {
                write!(
                    f,
                    "{count} main-thread tool call{} reached the limit of {limit}",
                    crate::words::plural(*count)
                )
            }
            StopReason::Compacted {
                trigger,
                pre_tokens,
            } => {
                f.write_str("the agent compacted its context")?;
                if let Some(trigger) = trigger {
                    write!(f, " ({trigger})")?;
                }
                if let Some(pre) = pre_tokens {
                    write!(f, " at {} tokens", thousands(*pre))?;
                }
                Ok(())
            }
        }
    }
}

/// Whether a token figure is the agent's own or includes an estimate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Exactness {
    /// Exactly what the agent reported.
    Exact,
    /// Includes tokenizer estimates (or nothing is known yet).
    Estimated,
}

/// The meter's state for display (the HUD, `debussy replay`, logs).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Snapshot {
    /// Context tokens in use, best estimate.
    pub tokens: u64,
    /// Of which the agent reported (the latest main-thread usage).
    pub reported_tokens: u64,
    /// Of which estimated since that usage.
    pub estimated_tokens: u64,
    /// Whether `tokens` is exact or includes estimates.
    pub exactness: Exactness,
    /// The window.
    pub window: Window,
    /// `tokens` as a percent of the window.
    pub percent: f64,
    /// Main-thread tool calls so far.
    pub tool_calls: u32,
    /// Main-thread assistant messages so far.
    pub turns: u32,
    /// Cost so far in US dollars: the agent's own figure once it reports one, else an
    /// estimate from the tokens billed and the price table (`cost_estimated`); `None`
    /// when neither is known.
    pub cost_usd: Option<f64>,
    /// Whether `cost_usd` is debussy's estimate rather than the agent's figure.
    pub cost_estimated: bool,
    /// Tokens billed so far, summed over every request (main thread and subagents): not
    /// a context figure.
    pub billed: Billed,
    /// The main model, as the agent reported it.
    pub model: Option<String>,
    /// The stop that fired, if one did.
    pub stop: Option<StopReason>,
}

/// The model name Claude Code gives the assistant messages it writes itself.
const SYNTHETIC_MODEL: &str = "<synthetic>";

/// Follows one session's events and says when to stop it.
#[derive(Debug, Clone)]
pub struct ContextMeter {
    settings: MeterSettings,
    window_inputs: WindowInputs,
    window: Window,
    model: Option<String>,
    reported_window: Option<(String, u64)>,
    /// Context tokens of the latest main-thread usage.
    reported: Option<u64>,
    last_message_id: Option<String>,
    pending: Pending,
    tool_calls: u32,
    turns: u32,
    cost_usd: Option<f64>,
    billing: Billing,
    stop: Option<StopReason>,
}

impl ContextMeter {
    /// A meter for a new session.
    #[must_use]
    pub fn new(settings: MeterSettings, window_inputs: WindowInputs) -> Self {
        let window = window::resolve(&window_inputs, None, None);
        ContextMeter {
            settings,
            window_inputs,
            window,
            model: None,
            reported_window: None,
            reported: None,
            last_message_id: None,
            pending: Pending::default(),
            tool_calls: 0,
            turns: 0,
            cost_usd: None,
            billing: Billing::default(),
            stop: None,
        }
    }

    /// Count the prompt: it only matters for agents that report no usage (with usage, the
    /// first message's figure includes it).
    pub fn observe_prompt(&mut self, prompt: &str) -> Option<StopReason> {
        if self.settings.usage_reporting == UsageReporting::Nothing {
            self.pending.add_text(prompt);
        }
        self.check()
    }

    /// Take in one event. Returns the reason to stop if this event made the session cross
    /// a threshold; that happens at most once per meter (see [`ContextMeter::stop_reason`]).
    pub fn observe(&mut self, event: &AgentEvent) -> Option<StopReason> {
        if let AgentEvent::Assistant(message) = event
            && let Some(usage) = &message.usage
        {
            self.billing.observe(
                message.message_id.as_deref(),
                message.model.as_deref(),
                usage,
            );
        }
        match event {
            AgentEvent::Init(init) => {
                if let Some(model) = &init.model {
                    self.set_model(model);
                }
            }
            // Claude Code's own messages (an interruption, "Prompt is too long") carry
            // model `<synthetic>` and zero usage: they are not model turns and say nothing
            // about the context.
            AgentEvent::Assistant(message) if message.model.as_deref() == Some(SYNTHETIC_MODEL) => {
            }
            AgentEvent::Assistant(message) if message.parent_tool_use_id.is_none() => {
                let is_new = match (&message.message_id, &self.last_message_id) {
                    (Some(id), Some(last)) => id != last,
                    _ => true,
                };
                if is_new {
                    self.turns += 1;
                    self.last_message_id.clone_from(&message.message_id);
                    if self.model.is_none()
                        && let Some(model) = &message.model
                    {
                        self.set_model(model);
                    }
                    if self.settings.usage_reporting == UsageReporting::PerMessage
                        && let Some(usage) = message.usage
                    {
                        self.reported = Some(usage.context_tokens());
                        self.pending.clear();
                    }
                }
                let calls = message.tool_uses().count();
                self.tool_calls = self
                    .tool_calls
                    .saturating_add(u32::try_from(calls).unwrap_or(u32::MAX));
                if self.settings.usage_reporting == UsageReporting::Nothing {
                    self.estimate_assistant(&message.content);
                }
            }
            AgentEvent::User(message) if message.parent_tool_use_id.is_none() => {
                for block in &message.content {
                    match block {
                        UserBlock::ToolResult(result) => {
                            for text in result.content.texts() {
                                self.pending.add_text(text);
                            }
                            self.pending
                                .add_tokens(IMAGE_TOKENS * result.content.image_count() as u64);
                        }
                        UserBlock::Text { text } => self.pending.add_text(text),
                        UserBlock::Other { .. } => {}
                    }
                }
            }
            AgentEvent::UsageReport(report) => self.observe_report(report),
            AgentEvent::CompactBoundary(compact) if self.settings.stop_on_compact => {
                return self.fire(StopReason::Compacted {
                    trigger: compact.trigger.clone(),
                    pre_tokens: compact.pre_tokens,
                });
            }
            AgentEvent::Result(result) => {
                // An agent without per-request usage bills its totals at the end.
                if self.settings.usage_reporting == UsageReporting::Nothing
                    && let Some(usage) = &result.usage
                {
                    self.billing
                        .observe(Some("result"), self.model.as_deref(), usage);
                }
                if result.total_cost_usd.is_some() {
                    self.cost_usd = result.total_cost_usd;
                }
                let entry = match self.model.as_deref() {
                    Some(model) => result
                        .model_usage
                        .get_key_value(model)
                        .or_else(|| single(&result.model_usage)),
                    None => single(&result.model_usage),
                };
                if let Some((model, usage)) = entry
                    && let Some(tokens) = usage.context_window.filter(|t| *t > 0)
                {
                    self.reported_window = Some((model.clone(), tokens));
                    self.refresh_window();
                }
            }
            _ => {}
        }
        self.check()
    }

    /// A usage report apart from the messages (Codex): billed tokens, the context figure
    /// and the window. A report repeating the figure in force says nothing new, so what
    /// was estimated since that figure stays.
    fn observe_report(&mut self, report: &UsageReport) {
        if let Some(usage) = &report.usage {
            self.billing
                .observe(report.request_id.as_deref(), self.model.as_deref(), usage);
        }
        if let Some(tokens) = report.context_tokens
            && self.reported != Some(tokens)
        {
            self.reported = Some(tokens);
            self.pending.clear();
        }
        if let Some(tokens) = report.context_window.filter(|t| *t > 0) {
            let model = self
                .model
                .clone()
                .or_else(|| self.window_inputs.model.clone())
                .unwrap_or_default();
            if self.reported_window != Some((model.clone(), tokens)) {
                self.reported_window = Some((model, tokens));
                self.refresh_window();
            }
        }
    }

    fn estimate_assistant(&mut self, blocks: &[AssistantBlock]) {
        for block in blocks {
            match block {
                AssistantBlock::Text { text } => self.pending.add_text(text),
                AssistantBlock::Thinking { thinking } => self.pending.add_text(thinking),
                AssistantBlock::ToolUse(tool_use) => {
                    self.pending.add_text(&tool_use.name);
                    self.pending.add_text(&tool_use.input.to_string());
                }
                AssistantBlock::Other { .. } => {}
            }
        }
    }

    fn set_model(&mut self, model: &str) {
        self.model = Some(model.to_owned());
        self.refresh_window();
    }

    fn refresh_window(&mut self) {
        let reported = self.reported_window.as_ref().map(|(_, tokens)| *tokens);
        self.window = window::resolve(&self.window_inputs, self.model.as_deref(), reported);
    }

    /// The threshold in tokens, or `None` when the percent check is disabled.
    fn limit(&self) -> Option<u64> {
        let percent = self.settings.threshold.percent()?;
        #[expect(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            clippy::cast_precision_loss,
            reason = "windows are far below 2^52 tokens; negative percents clamp to 0"
        )]
        let limit = (self.window.tokens as f64 * percent.max(0.0) / 100.0).ceil() as u64;
        Some(limit)
    }

    fn check(&mut self) -> Option<StopReason> {
        if self.stop.is_some() {
            return None;
        }
        let limit = self.settings.tool_call_threshold;
        if limit > 0 && self.tool_calls >= limit {
            return self.fire(StopReason::ToolCalls {
                count: self.tool_calls,
                limit,
            });
        }
        let limit = self.limit()?;
        let reported = self.reported.unwrap_or(0);
        let factor = self.settings.token_estimate_factor;
        // Tokenize only when the byte bound says the estimate could reach the limit.
        if reported + estimate::scale(self.pending.upper_bound(), factor) < limit {
            return None;
        }
        self.pending.tokenize();
        let tokens = reported + estimate::scale(self.pending.upper_bound(), factor);
        if tokens < limit {
            return None;
        }
        self.fire(StopReason::ContextThreshold {
            tokens,
            limit,
            window: self.window.tokens,
            window_source: self.window.source,
            threshold_percent: self.settings.threshold.as_number(),
        })
    }

    fn fire(&mut self, reason: StopReason) -> Option<StopReason> {
        if self.stop.is_some() {
            return None;
        }
        self.stop = Some(reason.clone());
        Some(reason)
    }

    /// The stop that fired, if any.
    #[must_use]
    pub fn stop_reason(&self) -> Option<&StopReason> {
        self.stop.as_ref()
    }

    /// Main-thread assistant messages seen (repeated lines of one message count once).
    #[must_use]
    pub fn turns(&self) -> u32 {
        self.turns
    }

    /// The window in force.
    #[must_use]
    pub fn window(&self) -> Window {
        self.window
    }

    /// The window the agent reported this session, with the model it is for, so the state
    /// store can remember it for later sessions.
    #[must_use]
    pub fn reported_window(&self) -> Option<(&str, u64)> {
        self.reported_window
            .as_ref()
            .filter(|(model, _)| !model.is_empty())
            .map(|(model, tokens)| (model.as_str(), *tokens))
    }

    /// The current state, for display.
    #[must_use]
    pub fn snapshot(&self) -> Snapshot {
        let reported = self.reported.unwrap_or(0);
        let estimated = estimate::scale(
            self.pending.display_tokens(),
            self.settings.token_estimate_factor,
        );
        let tokens = reported + estimated;
        let exact = self.reported.is_some()
            && self.pending.is_empty()
            && self.settings.usage_reporting != UsageReporting::Nothing;
        Snapshot {
            tokens,
            reported_tokens: reported,
            estimated_tokens: estimated,
            exactness: if exact {
                Exactness::Exact
            } else {
                Exactness::Estimated
            },
            window: self.window,
            percent: percent(tokens, self.window.tokens),
            tool_calls: self.tool_calls,
            turns: self.turns,
            cost_usd: self.cost_usd.or_else(|| {
                self.billing.estimated_cost(
                    self.model
                        .as_deref()
                        .or(self.window_inputs.model.as_deref()),
                    &self.settings.prices,
                )
            }),
            cost_estimated: self.cost_usd.is_none(),
            billed: self.billing.billed(),
            model: self.model.clone(),
            stop: self.stop.clone(),
        }
    }
}

fn single<K, V>(map: &std::collections::BTreeMap<K, V>) -> Option<(&K, &V)> {
    if map.len() == 1 {
        map.iter().next()
    } else {
        None
    }
}

/// `tokens` as a percent of `window`.
#[must_use]
pub fn percent(tokens: u64, window: u64) -> f64 {
    if window == 0 {
        return 0.0;
    }
    #[expect(
        clippy::cast_precision_loss,
        reason = "token counts are far below 2^52"
    )]
    let value = tokens as f64 * 100.0 / window as f64;
    value
}

#[cfg(test)]
#[path = "meter_tests.rs"]
mod tests;
#[cfg(test)]
#[path = "meter_window_tests.rs"]
mod window_tests;
