//! The `result` line a script ends with.

use serde::Deserialize;

/// The final `result` line.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ResultSpec {
    /// `success`, `error_max_turns`, `error_during_execution`, …
    pub subtype: String,
    /// Default: true unless the subtype is `success`.
    pub is_error: Option<bool>,
    /// The result text; default: the last thing the agent said.
    pub text: Option<String>,
}

impl Default for ResultSpec {
    fn default() -> Self {
        ResultSpec {
            subtype: "success".to_owned(),
            is_error: None,
            text: None,
        }
    }
}

impl ResultSpec {
    /// Whether the result reports an error.
    #[must_use]
    pub fn is_error(&self) -> bool {
        self.is_error.unwrap_or(self.subtype != "success")
    }
}
