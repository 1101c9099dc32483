//! The Codex CLI backend: `codex exec --json`, the prompt on stdin, with the session's
//! rollout file followed for exact context figures.
//!
//! Each session runs with a private `CODEX_HOME` ([`AgentHome`](crate::agent::AgentHome)) made by the session
//! layer beside the transcript: the user's own Codex home is linked into it entry by entry
//! (config, auth, instructions, skills: writes to them go through to the user's files),
//! except Codex's per-session data (sessions, logs, state databases), so the rollout
//! lands at a known place and nothing of the user's is changed. stdout
//! ([`exec_json`]) carries the messages and tool calls; the rollout ([`rollout`]) the
//! usage of every model request and the window.
//!
//! Codex compacts on its own at `model_auto_compact_token_limit`; debussy sets it between
//! its own threshold and the window ([`auto_compact_limit`]), so debussy stops the session
//! first and Codex still compacts when debussy will not restart it. This module locates
//! the program and never spawns anything; it reads the user's Codex configuration only
//! to say where the API is (`endpoint.rs`), for a wait on an API Codex could not reach.

mod backend;
mod endpoint;
pub mod exec_json;
pub mod failures;
pub mod rollout;

pub use backend::{
    CodexBackend, DEFAULT_PROGRAM, DEFAULT_WINDOW, INSTALL_HINT, auto_compact_limit,
    permission_args, session_home,
};
