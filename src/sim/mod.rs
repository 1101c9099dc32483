//! The simulated agent: a built-in stand-in for the real agent CLIs, for demos, offline use
//! and fast tests. It is a program of its own, `debussy __sim-agent SCENARIO`, which the
//! sim backend (`agent::sim`) launches like any other agent.
//!
//! The [`player`] plays a script from a YAML [`scenario`] (documented in
//! `docs/sim-agent.md`): it really writes files and runs commands (`effects`, and the
//! debussy calls a real agent makes, `calls`), and prints Claude Code's `stream-json`,
//! Codex's or Gemini CLI's format ([`formats`], `lines`), so the rest of debussy cannot
//! tell it from the real agent.

mod calls;
mod effects;
pub mod formats;
mod lines;
pub mod player;
pub mod scenario;
mod usage;

pub use scenario::{Scenario, ScenarioError};
pub use usage::Usage;

/// The hidden subcommand that plays a scenario.
pub const SUBCOMMAND: &str = "__sim-agent";
