//! Shared support for the integration tests: starting debussy ([`command`]), temporary
//! git projects ([`project`]), the scripted model server ([`model_server`]: the Anthropic
//! Messages API, the Responses API and the Gemini API), the real Claude Code CLI runner
//! ([`claude`]), the real Codex and Gemini CLIs' sandboxes ([`codex`], [`gemini`]), test
//! artifacts ([`artifacts`]) and sim-agent scenarios built as typed values ([`scenario`]).
//!
//! The one integration binary (`tests/it`) declares it once; every area uses it through
//! `crate::support`. See `docs/testing.md`.

pub mod agent_project;
pub mod api_returns;
pub mod artifacts;
pub mod claude;
pub mod cli;
pub mod codex;
pub mod command;
pub mod example_build;
pub mod gemini;
pub mod model_server;
pub mod ports;
pub mod processes;
pub mod project;
pub mod sandbox;
pub mod scenario;
pub mod wait;

pub use command::{DEBUSSY, debussy, debussy_at};
