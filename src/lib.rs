//! debussy runs multi-phase coding-agent plans with smart context restarts, and supervises
//! stdio MCP servers so they can restart without breaking the client's session.
//!
//! The layers, top to bottom (see `docs/design/architecture.md`):
//! [`commands`] → [`ui`] → preflight → [`orchestrator`] → run services ([`git`], [`state`],
//! …) → [`session`] → [`context`] → [`agent`] → [`sim`] → [`mcp`] → [`process`],
//! [`restart`] → [`config`], [`plan`] → shared ([`run_env`], [`files`], [`http`],
//! [`words`], …).

pub mod agent;
pub mod checkpoint;
pub mod cli;
pub mod commands;
pub mod compliance;
pub mod config;
pub mod context;
pub mod diagnostics;
mod error_chain;
pub mod events;
pub mod exit;
pub mod files;
pub mod gates;
pub mod git;
pub mod http;
pub mod logging;
pub mod mcp;
pub mod orchestrator;
pub mod plan;
pub(crate) mod preflight;
pub mod process;
pub mod restart;
pub mod run_env;
pub mod session;
pub mod sim;
pub mod state;
pub mod terminal_safe;
pub mod ui;
pub mod words;
