//! The session layer end to end: `session::run` drives a real agent process and turns its
//! output into events, a log and an outcome.
//!
//! - With the built-in **sim** agent (the debussy binary's `__sim-agent`): fast, no
//!   external tools; always run.
//! - With the **real Claude Code CLI** against the scripted model server
//!   (`tests/support/`, see `docs/testing.md`): `#[ignore]`d, run by `scripts/check`
//!   with `--run-ignored all`, and failing when the CLI is missing. Each saves the session log and the
//!   requests the server saw under `target/tmp/artifacts/session/<test>/`.
//!
//! - With a scripted **shell** agent, for what neither can show on demand (ignoring
//!   SIGINT, over-long lines, leftover processes).
//!
//! Every test is bounded by `common::BOUND` and checks that no process of its agent
//! survives.

mod common;
mod files;
mod real_claude;
mod safe_stop;
mod script;
mod sim;
