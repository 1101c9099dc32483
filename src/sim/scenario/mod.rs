//! The sim agent's scenario file: its YAML shape, validation, and script selection.
//!
//! A scenario holds scripts; the player picks the first script whose `phase`, `attempt`
//! and `restart` selectors match the session (a script without selectors matches every
//! session) and plays its [`Turn`]s, whose tool calls are [`Action`]s. The format is
//! documented in `docs/sim-agent.md`. Every error, structural or semantic, points at the
//! file, line and column it comes from. Pure data: reading the file is the only I/O here.

mod check;
mod turn;

use std::fmt;
use std::path::{Path, PathBuf};

use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer};

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

/// A scenario that cannot be used.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum ScenarioError {
    /// The file could not be read.
    #[error("read sim scenario {}", path.display())]
    #[diagnostic(code(debussy::sim::read))]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The file is not a valid scenario.
    #[error("invalid sim scenario {}:{line}:{column}: {message}", path.display())]
    #[diagnostic(
        code(debussy::sim::invalid),
        help("the scenario format is described in docs/sim-agent.md")
    )]
    Parse {
        /// The file.
        path: PathBuf,
        /// 1-based line of the problem (0 when unknown).
        line: usize,
        /// 1-based column of the problem (0 when unknown).
        column: usize,
        /// What is wrong.
        message: String,
        /// The file's text, for the rendered snippet.
        #[source_code]
        source_code: std::sync::Arc<miette::NamedSource<String>>,
        /// Where in the text.
        #[label("here")]
        span: Option<miette::SourceSpan>,
    },
}

impl ScenarioError {
    fn parse(err: &serde_norway::Error, text: &str, path: &Path) -> Self {
        let location = err.location();
        let (line, column) = location
            .as_ref()
            .map_or((0, 0), |loc| (loc.line(), loc.column()));
        // serde_norway appends "at line L column C" itself; we print the location up front.
        let mut message = err.to_string();
        if let Some(cut) = message.find(" at line ") {
            message.truncate(cut);
        }
        ScenarioError::Parse {
            path: path.to_path_buf(),
            line,
            column,
            message,
            source_code: std::sync::Arc::new(miette::NamedSource::new(
                path.display().to_string(),
                text.to_owned(),
            )),
            span: location.map(|loc| miette::SourceSpan::from((loc.index().min(text.len()), 0))),
        }
    }
}

#[cfg(test)]
mod tests;
