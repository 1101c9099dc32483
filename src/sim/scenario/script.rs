//! A scenario's scripts and the session selectors that pick one.

use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, Visitor};

use super::{ResultSpec, Turn};

/// Which session a script is for, and what it does.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    /// Match `DEBUSSY_PHASE_ID` (a string or a number in YAML).
    #[serde(default, deserialize_with = "string_or_number")]
    pub phase: Option<String>,
    /// Match `DEBUSSY_ATTEMPT` (1-based).
    #[serde(default)]
    pub attempt: Option<u32>,
    /// Match `DEBUSSY_RESTART` (0-based index of the context restart within the attempt).
    #[serde(default)]
    pub restart: Option<u32>,
    /// Substrings the prompt must contain; a missing one fails the session.
    #[serde(default)]
    pub expect_prompt: Vec<String>,
    /// What the agent does, in order.
    pub turns: Vec<Turn>,
    /// What the agent does when this session is resumed to write its handoff (after a
    /// context stop); a default handoff message when absent.
    #[serde(default)]
    pub handoff: Option<Vec<Turn>>,
    /// The final `result` line.
    #[serde(default)]
    pub result: ResultSpec,
    /// Process exit code after the result line.
    #[serde(default)]
    pub exit_code: i32,
}

impl Script {
    /// Whether this script is for the session described by `selector`.
    #[must_use]
    pub fn matches(&self, selector: &Selector) -> bool {
        self.phase
            .as_deref()
            .is_none_or(|phase| selector.phase.as_deref() == Some(phase))
            && self.attempt.is_none_or(|a| a == selector.attempt)
            && self.restart.is_none_or(|r| r == selector.restart)
    }
}

/// What the orchestrator told the agent about its session (from `DEBUSSY_*` variables).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selector {
    /// `DEBUSSY_PHASE_ID`, when set.
    pub phase: Option<String>,
    /// `DEBUSSY_ATTEMPT` (1-based; 1 when unset).
    pub attempt: u32,
    /// `DEBUSSY_RESTART` (0-based; 0 when unset).
    pub restart: u32,
}

impl fmt::Display for Selector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.phase {
            Some(phase) => write!(f, "phase {phase}")?,
            None => f.write_str("no phase")?,
        }
        write!(f, ", attempt {}, restart {}", self.attempt, self.restart)
    }
}

/// Accept `phase: 1` as well as `phase: "1"`.
pub(super) fn string_or_number<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<String>, D::Error> {
    struct PhaseVisitor;
    impl Visitor<'_> for PhaseVisitor {
        type Value = Option<String>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a phase id (string or number)")
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
            Ok(Some(v.to_owned()))
        }
        fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
            Ok(Some(v.to_string()))
        }
        fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
            Ok(Some(v.to_string()))
        }
        fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
            Ok(Some(v.to_string()))
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
    }
    deserializer.deserialize_any(PhaseVisitor)
}
