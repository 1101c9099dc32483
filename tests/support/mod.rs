//! Shared support for the integration tests: the scripted Anthropic Messages API
//! server ([`model_server`]), the real Claude Code CLI runner ([`claude`]) and test
//! artifacts ([`artifacts`]).
//!
//! Each test binary that needs it declares `mod support;` (Cargo does not build
//! `tests/support/` as a test of its own). Every binary uses a different part of
//! it, hence the `dead_code` allowance. See `docs/testing.md`.

#![allow(
    dead_code,
    unused_imports,
    unreachable_pub,
    reason = "each test binary uses a different part of the shared support module"
)]

pub mod artifacts;
pub mod claude;
pub mod model_server;
pub mod project;
