//! The sim agent's scenario file: its YAML shape, validation, and script selection.
//!
//! A scenario holds scripts; the player picks the first script whose `phase`, `attempt`
//! and `restart` selectors match the session (a script without selectors matches every
//! session) and plays its [`Turn`]s, whose tool calls are [`Action`]s. The format is
//! documented in `docs/sim-agent.md`. Every error, structural or semantic, points at the
//! file, line and column it comes from. Pure data: reading the file is the only I/O here.

mod check;
mod error;
mod result;
mod script;
mod turn;

use std::path::Path;

use serde::Deserialize;

pub use error::ScenarioError;
pub use result::ResultSpec;
use script::string_or_number;
pub use script::{Script, Selector};
pub use turn::{
    Action, BashSpec, CompactSpec, CrashSpec, DEFAULT_BASH_TIMEOUT_MS, DoneSpec, DoneStatus,
    MessageTurn, PathSpec, ProgressSpec, TaskSpec, Todo, TodoStatus, Turn, UsageSpec,
};

/// The context window reported when a scenario does not set `window`.
pub const DEFAULT_WINDOW: u64 = 200_000;

/// A parsed, validated scenario file.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(try_from = "RawScenario")]
pub struct Scenario {
    /// The context window the agent reports in `result.modelUsage`, and the base of
    /// `percent` usage.
    pub window: u64,
    /// Model name printed in the stream; `None` uses `--model`.
    pub model: Option<String>,
    /// Which agent's output format the scenario plays in (`format`; default `claude`).
    pub format: super::formats::Format,
    /// The scripts, in selection order.
    pub scripts: Vec<Script>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScenario {
    /// Not read: a place to define YAML anchors (`&name`) that scripts reuse (`*name`).
    #[serde(default)]
    #[expect(
        dead_code,
        reason = "only holds anchors for aliases elsewhere in the file"
    )]
    definitions: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    window: Option<u64>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    format: super::formats::Format,
    scripts: Vec<Script>,
}

impl TryFrom<RawScenario> for Scenario {
    type Error = String;
    fn try_from(raw: RawScenario) -> Result<Self, String> {
        let window = raw.window.unwrap_or(DEFAULT_WINDOW);
        if window == 0 {
            return Err("`window` must be a positive number of tokens".to_owned());
        }
        if raw.scripts.is_empty() {
            return Err("`scripts` is empty: add at least one script with `turns`".to_owned());
        }
        Ok(Scenario {
            window,
            model: raw.model,
            format: raw.format,
            scripts: raw.scripts,
        })
    }
}

/// The most a scenario file may hold: a scenario is configuration, and has the same
/// bound.
pub const SCENARIO_LIMIT: u64 = crate::files::CONFIG_LIMIT;

impl Scenario {
    /// Read and validate a scenario file.
    ///
    /// # Errors
    /// [`ScenarioError::Read`] when the file cannot be read — it is not a regular file
    /// (a FIFO is refused at once, never waited on) or holds more than [`SCENARIO_LIMIT`]
    /// bytes — and [`ScenarioError::Parse`] with the file, line and column when it is
    /// not a valid scenario.
    pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
        Scenario::parse(&Scenario::read(path)?, path)
    }

    /// A scenario file's text, read as [`Scenario::load`] reads it.
    ///
    /// # Errors
    /// [`ScenarioError::Read`] naming the file.
    pub fn read(path: &Path) -> Result<String, ScenarioError> {
        crate::files::read_text_limited(path, SCENARIO_LIMIT).map_err(|source| {
            ScenarioError::Read {
                path: path.to_path_buf(),
                source,
            }
        })
    }

    /// Parse and validate scenario text; `path` is only used in errors.
    ///
    /// # Errors
    /// [`ScenarioError::Parse`] with the line and column of the problem.
    pub fn parse(text: &str, path: &Path) -> Result<Scenario, ScenarioError> {
        serde_norway::from_str(text).map_err(|err| ScenarioError::parse(&err, text, path))
    }

    /// The first script for this session.
    #[must_use]
    pub fn select(&self, selector: &Selector) -> Option<&Script> {
        self.scripts.iter().find(|script| script.matches(selector))
    }
}

#[cfg(test)]
mod tests;
