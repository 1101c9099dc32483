//! Sim-agent scenarios as typed values: a [`Scenario`] of [`Script`]s of [`Turn`]s whose
//! tool calls are [`Action`]s, serialised to the YAML `docs/sim-agent.md` documents
//! ([`Scenario::to_yaml`]). Tests build scenarios here instead of writing YAML text, so
//! quoting and indentation are serde's business; the tests in `tests.rs` parse a
//! scenario using every feature with debussy's own parser, so the two cannot drift.
//!
//! Only what the tests use is modelled; YAML anchors, unknown keys and malformed input
//! stay literal text in the tests that are about them.

mod action;
#[cfg(test)]
mod tests;
mod turn;

use serde::Serialize;

pub use action::{Action, Done, Progress, Status, Task, Todo, TodoStatus};
pub use turn::{Compact, Crash, Tokens, Trigger, Turn};

/// The content of a phase's notes file with the three headings the notes check wants.
pub const NOTES: &str = "## Summary\nok\n## Key Decisions\nnone\n## Files Modified\nsome\n";

/// A whole scenario file.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Scenario {
    #[serde(skip_serializing_if = "Option::is_none")]
    window: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    model: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    format: Option<Format>,
    scripts: Vec<Script>,
}

impl Scenario {
    /// A scenario without scripts (add at least one: an empty list is invalid).
    pub fn new() -> Scenario {
        Scenario::default()
    }

    /// One script for every session, playing `turns`.
    pub fn playing(turns: impl IntoIterator<Item = Turn>) -> Scenario {
        Scenario::new().script(Script::any().turns(turns))
    }

    /// The context window the agent reports (the base of `percent`).
    pub fn window(mut self, tokens: u64) -> Scenario {
        self.window = Some(tokens);
        self
    }

    /// The model name printed in the stream, in place of `--model`.
    pub fn model(mut self, name: &str) -> Scenario {
        self.model = Some(name.to_owned());
        self
    }

    /// Whose output format the agent prints.
    pub fn format(mut self, format: Format) -> Scenario {
        self.format = Some(format);
        self
    }

    /// Add a script after those already there (the first match plays).
    pub fn script(mut self, script: Script) -> Scenario {
        self.scripts.push(script);
        self
    }

    /// Add several scripts, in order.
    pub fn scripts(mut self, scripts: impl IntoIterator<Item = Script>) -> Scenario {
        self.scripts.extend(scripts);
        self
    }

    /// The scenario file's text.
    pub fn to_yaml(&self) -> String {
        serde_norway::to_string(self).expect("a scenario serialises")
    }
}

/// The agent the sim agent stands in for (`format`), when not Claude Code.
#[derive(Debug, Clone, Copy, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Format {
    /// `codex exec --json`, with a rollout file.
    Codex,
    /// The Gemini CLI's stream-json.
    Gemini,
}

/// Which sessions a script is for, and what it does.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Script {
    #[serde(skip_serializing_if = "Option::is_none")]
    phase: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    attempt: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    restart: Option<u32>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    expect_prompt: Vec<String>,
    turns: Vec<Turn>,
    #[serde(skip_serializing_if = "Option::is_none")]
    handoff: Option<Vec<Turn>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<Ending>,
    #[serde(skip_serializing_if = "Option::is_none")]
    exit_code: Option<i32>,
}

impl Script {
    /// A script without selectors: it matches every session.
    pub fn any() -> Script {
        Script::default()
    }

    /// A script for the phase `id`'s sessions.
    pub fn phase(id: &str) -> Script {
        Script {
            phase: Some(id.to_owned()),
            ..Script::default()
        }
    }

    /// Phase `id`'s whole work in one session: write `content` to `path` at `percent`,
    /// then the phase's notes, then report done.
    pub fn writing(id: &str, percent: u32, path: &str, content: &str) -> Script {
        Script::phase(id).turns([
            Turn::write(percent, path, content),
            Turn::notes(id),
            Turn::done(),
        ])
    }

    /// Only for attempt `attempt` (from 1).
    pub fn attempt(mut self, attempt: u32) -> Script {
        self.attempt = Some(attempt);
        self
    }

    /// Only for context restart `restart` within the attempt (from 0).
    pub fn restart(mut self, restart: u32) -> Script {
        self.restart = Some(restart);
        self
    }

    /// The prompt must contain `text`, else the session fails.
    pub fn expect_prompt(mut self, text: &str) -> Script {
        self.expect_prompt.push(text.to_owned());
        self
    }

    /// Play `turn` after the turns already there.
    pub fn turn(mut self, turn: Turn) -> Script {
        self.turns.push(turn);
        self
    }

    /// Play `turns` after the turns already there.
    pub fn turns(mut self, turns: impl IntoIterator<Item = Turn>) -> Script {
        self.turns.extend(turns);
        self
    }

    /// When resumed to write its handoff, play `turn` (after earlier handoff turns).
    pub fn handoff(mut self, turn: Turn) -> Script {
        self.handoff.get_or_insert_with(Vec::new).push(turn);
        self
    }

    /// End with this `result` line.
    pub fn result(mut self, result: Ending) -> Script {
        self.result = Some(result);
        self
    }

    /// Exit with `code` after the result line.
    pub fn exit_code(mut self, code: i32) -> Script {
        self.exit_code = Some(code);
        self
    }
}

/// A script's final `result` line.
#[derive(Debug, Clone, Serialize)]
pub struct Ending {
    subtype: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<String>,
}

impl Ending {
    /// A result of this subtype (`success`, `error_max_turns`, …).
    pub fn subtype(subtype: &str) -> Ending {
        Ending {
            subtype: subtype.to_owned(),
            text: None,
        }
    }

    /// The result text, in place of the last thing said.
    pub fn text(mut self, text: &str) -> Ending {
        self.text = Some(text.to_owned());
        self
    }
}
