//! Which context window applies to a session, and why.
//!
//! The order of trust (DESIGN.md, "Context accounting"), each labelled as the gauge and
//! `debussy show` print it:
//!
//! 1. `config`: the configured `agent.model_context_window`;
//! 2. `agent`: the window the agent reported this session (`result.modelUsage`, Codex's
//!    rollout);
//! 3. `remembered`: the window an agent reported for the model in an earlier session,
//!    kept by the state store;
//! 4. `table`: the [known windows](crate::agent::known_windows), by the model the agent's `init`
//!    line names, else the configured model name or alias;
//! 5. `default`: 200,000 tokens.
//!
//! Pure: the remembered windows are an input.

use std::collections::BTreeMap;
use std::fmt;

use serde::Serialize;

use crate::agent::known_windows;
pub use crate::agent::known_windows::ONE_MILLION;

/// The window assumed when nothing better is known.
pub const DEFAULT_WINDOW: u64 = 200_000;

/// What the window resolution starts from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WindowInputs {
    /// `agent.model_context_window`, which overrides everything.
    pub configured: Option<u64>,
    /// Windows agents reported in earlier sessions, by model name (from the state store).
    pub remembered: BTreeMap<String, u64>,
    /// The configured model name (`opus`, `claude-sonnet-4-5[1m]`, …).
    pub model: Option<String>,
    /// The backend whose table of known windows applies (`claude`, `codex`, `gemini`);
    /// `None` reads every backend's, and a backend without one (the sim agent, which
    /// plays any model name) gets none.
    pub agent: Option<&'static str>,
}

/// Where a window figure came from, in the order of trust (the JSON names are those of
/// earlier versions; [`WindowSource::label`] is what people read).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WindowSource {
    /// `agent.model_context_window` (or `--window`).
    Configured,
    /// Reported by the agent in this session.
    Reported,
    /// Reported by the agent in an earlier session.
    Remembered,
    /// The known-window table, by the model's name.
    #[serde(rename = "model_name")]
    Table,
    /// Nothing known: the 200,000-token default.
    Default,
}

impl WindowSource {
    /// The label the gauge, `status`, `show` and `replay` print: `config`, `agent`,
    /// `remembered`, `table`, `default`.
    #[must_use]
    pub fn label(self) -> &'static str {
        match self {
            WindowSource::Configured => "config",
            WindowSource::Reported => "agent",
            WindowSource::Remembered => "remembered",
            WindowSource::Table => "table",
            WindowSource::Default => "default",
        }
    }
}

impl fmt::Display for WindowSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

/// A context window in tokens and its origin.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Window {
    /// Size in tokens.
    pub tokens: u64,
    /// Where the figure came from.
    pub source: WindowSource,
}

/// The window known from a model's name alone ([the table](known_windows)), if
/// any.
#[must_use]
pub fn by_model_name(model: &str) -> Option<u64> {
    known_windows::lookup(model).map(|entry| entry.tokens)
}

/// Resolve the window. `observed_model` is the model the agent says it runs (from its
/// init line), `reported` what it reported this session for that model.
#[must_use]
pub fn resolve(
    inputs: &WindowInputs,
    observed_model: Option<&str>,
    reported: Option<u64>,
) -> Window {
    let pick = |tokens, source| Window { tokens, source };
    if let Some(tokens) = inputs.configured.filter(|t| *t > 0) {
        return pick(tokens, WindowSource::Configured);
    }
    if let Some(tokens) = reported.filter(|t| *t > 0) {
        return pick(tokens, WindowSource::Reported);
    }
    let names: Vec<&str> = observed_model
        .into_iter()
        .chain(inputs.model.as_deref())
        .collect();
    if let Some(tokens) = names
        .iter()
        .find_map(|name| inputs.remembered.get(*name).copied().filter(|t| *t > 0))
    {
        return pick(tokens, WindowSource::Remembered);
    }
    let known = |name: &str| known_windows::lookup_for(inputs.agent, name);
    // A `[1m]` in either name is the user's word for the million-token variant, which
    // the agent's `init` line may not repeat.
    if let Some(entry) = names
        .iter()
        .filter(|name| name.to_ascii_lowercase().contains("[1m]"))
        .find_map(|name| known(name))
    {
        return pick(entry.tokens, WindowSource::Table);
    }
    if let Some(entry) = names.iter().find_map(|name| known(name)) {
        return pick(entry.tokens, WindowSource::Table);
    }
    pick(DEFAULT_WINDOW, WindowSource::Default)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inputs(
        configured: Option<u64>,
        remembered: &[(&str, u64)],
        model: Option<&str>,
    ) -> WindowInputs {
        WindowInputs {
            configured,
            remembered: remembered
                .iter()
                .map(|(name, tokens)| ((*name).to_owned(), *tokens))
                .collect(),
            model: model.map(str::to_owned),
            agent: None,
        }
    }

    /// The window `resolve` picks, as its size and source.
    fn resolved(
        inputs: &WindowInputs,
        observed_model: Option<&str>,
        reported: Option<u64>,
    ) -> (u64, WindowSource) {
        let window = resolve(inputs, observed_model, reported);
        (window.tokens, window.source)
    }

    #[test]
    fn one_million_for_1m_variants_in_any_case() {
        assert_eq!(by_model_name("claude-sonnet-4-5[1m]"), Some(ONE_MILLION));
        assert_eq!(by_model_name("sonnet[1M]"), Some(ONE_MILLION));
        assert_eq!(by_model_name("claude-nonesuch"), None);
        assert_eq!(by_model_name("gemini-2.5-pro"), Some(1_048_576));
    }

    #[test]
    fn opus_is_known_before_the_agent_reports_it() {
        let window = resolve(&inputs(None, &[], Some("opus")), None, None);
        assert_eq!(
            (window.tokens, window.source),
            (ONE_MILLION, WindowSource::Table)
        );
        assert_eq!(window.source.label(), "table");
    }

    #[test]
    fn configured_beats_everything() {
        assert_eq!(
            resolved(
                &inputs(Some(50_000), &[("opus", 300_000)], Some("sonnet[1m]")),
                Some("opus"),
                Some(400_000),
            ),
            (50_000, WindowSource::Configured)
        );
    }

    #[test]
    fn reported_beats_remembered_and_names() {
        assert_eq!(
            resolved(
                &inputs(None, &[("m", 300_000)], Some("x[1m]")),
                Some("m"),
                Some(400_000),
            ),
            (400_000, WindowSource::Reported)
        );
    }

    #[test]
    fn remembered_by_observed_then_configured_name() {
        let remembered = [("claude-opus-4-1-20250805", 300_000), ("opus", 250_000)];
        let inputs = inputs(None, &remembered, Some("opus"));
        for (observed, tokens) in [("claude-opus-4-1-20250805", 300_000), ("unknown", 250_000)] {
            assert_eq!(
                resolved(&inputs, Some(observed), None),
                (tokens, WindowSource::Remembered),
                "{observed}"
            );
        }
    }

    #[test]
    fn model_name_then_default() {
        assert_eq!(
            resolved(
                &inputs(None, &[], Some("sonnet[1m]")),
                Some("claude-sonnet-4-5"),
                None,
            ),
            (ONE_MILLION, WindowSource::Table)
        );
        assert_eq!(
            resolved(&inputs(None, &[], Some("my-model")), None, None),
            (DEFAULT_WINDOW, WindowSource::Default)
        );
    }

    #[test]
    fn zero_figures_are_ignored() {
        let window = resolve(
            &inputs(Some(0), &[("my-model", 0)], Some("my-model")),
            None,
            Some(0),
        );
        assert_eq!(window.source, WindowSource::Default);
    }
}
