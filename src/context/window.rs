//! Which context window applies to a session, and why.
//!
//! Order of precedence (DESIGN.md, "Context accounting"): the configured
//! `agent.model_context_window`; else the window the agent reported for this model (in this
//! session's `result.modelUsage`, or remembered from an earlier session by the state
//! store); else by model name (1M for `[1m]` variants and models known to have 1M); else
//! 200,000. Pure: the remembered windows are an input.

use std::collections::BTreeMap;
use std::fmt;

use serde::Serialize;

/// The window assumed when nothing better is known.
pub const DEFAULT_WINDOW: u64 = 200_000;

/// The window of `[1m]` model variants.
pub const ONE_MILLION: u64 = 1_000_000;

/// Model-name prefixes with a known window other than the default.
const KNOWN_WINDOWS: &[(&str, u64)] = &[
    ("gemini-2.0", 1_048_576),
    ("gemini-2.5", 1_048_576),
    ("gemini-3", 1_048_576),
    ("gpt-4.1", 1_047_576),
    ("gpt-5", 272_000),
];

/// What the window resolution starts from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WindowInputs {
    /// `agent.model_context_window`, which overrides everything.
    pub configured: Option<u64>,
    /// Windows agents reported in earlier sessions, by model name (from the state store).
    pub remembered: BTreeMap<String, u64>,
    /// The configured model name (`opus`, `claude-sonnet-4-5[1m]`, …).
    pub model: Option<String>,
}

/// Where a window figure came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WindowSource {
    /// `agent.model_context_window` (or `--window`).
    Configured,
    /// Reported by the agent in this session.
    Reported,
    /// Reported by the agent in an earlier session.
    Remembered,
    /// Known from the model's name.
    ModelName,
    /// Nothing known: the 200,000-token default.
    Default,
}

impl fmt::Display for WindowSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            WindowSource::Configured => "config",
            WindowSource::Reported => "reported",
            WindowSource::Remembered => "remembered",
            WindowSource::ModelName => "model table",
            WindowSource::Default => "default",
        })
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

/// The window known from a model's name alone, if any.
#[must_use]
pub fn by_model_name(model: &str) -> Option<u64> {
    let lower = model.to_ascii_lowercase();
    if lower.contains("[1m]") {
        return Some(ONE_MILLION);
    }
    KNOWN_WINDOWS
        .iter()
        .find(|(prefix, _)| lower.starts_with(prefix))
        .map(|(_, tokens)| *tokens)
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
    if let Some(tokens) = names.iter().find_map(|name| by_model_name(name)) {
        return pick(tokens, WindowSource::ModelName);
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
        }
    }

    #[test]
    fn one_million_for_1m_variants_in_any_case() {
        assert_eq!(by_model_name("claude-sonnet-4-5[1m]"), Some(ONE_MILLION));
        assert_eq!(by_model_name("sonnet[1M]"), Some(ONE_MILLION));
        assert_eq!(by_model_name("claude-opus-4-1"), None);
        assert_eq!(by_model_name("gemini-2.5-pro"), Some(1_048_576));
    }

    #[test]
    fn configured_beats_everything() {
        let window = resolve(
            &inputs(Some(50_000), &[("opus", 300_000)], Some("sonnet[1m]")),
            Some("opus"),
            Some(400_000),
        );
        assert_eq!(
            window,
            Window {
                tokens: 50_000,
                source: WindowSource::Configured
            }
        );
    }

    #[test]
    fn reported_beats_remembered_and_names() {
        let window = resolve(
            &inputs(None, &[("m", 300_000)], Some("x[1m]")),
            Some("m"),
            Some(400_000),
        );
        assert_eq!(
            window,
            Window {
                tokens: 400_000,
                source: WindowSource::Reported
            }
        );
    }

    #[test]
    fn remembered_by_observed_then_configured_name() {
        let remembered = [("claude-opus-4-1-20250805", 300_000), ("opus", 250_000)];
        let window = resolve(
            &inputs(None, &remembered, Some("opus")),
            Some("claude-opus-4-1-20250805"),
            None,
        );
        assert_eq!(
            window,
            Window {
                tokens: 300_000,
                source: WindowSource::Remembered
            }
        );
        let window = resolve(
            &inputs(None, &remembered, Some("opus")),
            Some("unknown"),
            None,
        );
        assert_eq!(
            window,
            Window {
                tokens: 250_000,
                source: WindowSource::Remembered
            }
        );
    }

    #[test]
    fn model_name_then_default() {
        let window = resolve(
            &inputs(None, &[], Some("sonnet[1m]")),
            Some("claude-sonnet-4-5"),
            None,
        );
        assert_eq!(
            window,
            Window {
                tokens: ONE_MILLION,
                source: WindowSource::ModelName
            }
        );
        let window = resolve(&inputs(None, &[], Some("opus")), None, None);
        assert_eq!(
            window,
            Window {
                tokens: DEFAULT_WINDOW,
                source: WindowSource::Default
            }
        );
    }

    #[test]
    fn zero_figures_are_ignored() {
        let window = resolve(
            &inputs(Some(0), &[("opus", 0)], Some("opus")),
            None,
            Some(0),
        );
        assert_eq!(window.source, WindowSource::Default);
    }
}
