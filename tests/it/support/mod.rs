//! Shared support for the integration tests: starting debussy ([`command`]), temporary
//! git projects ([`project`]), the scripted Anthropic Messages API server
//! ([`model_server`], which speaks the Responses API too), the real Claude Code CLI
//! runner ([`claude`]), the real Codex CLI's sandbox ([`codex`]) and test artifacts
//! ([`artifacts`]).
//!
//! The one integration binary (`tests/it`) declares it once; every area uses it through
//! `crate::support`. See `docs/testing.md`.

pub mod artifacts;
pub mod claude;
pub mod codex;
pub mod command;
pub mod model_server;
pub mod project;

pub use command::{DEBUSSY, debussy};
