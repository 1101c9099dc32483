//! A scripted model server for running the real agent CLIs offline: the Anthropic
//! Messages API for Claude Code, the OpenAI Responses API (`POST /v1/responses`) for the
//! Codex CLI and the Gemini API (`…:streamGenerateContent`) for the Gemini CLI, all
//! playing the same [`Scenario`].
//!
//! # Theory of operation
//!
//! [`ModelServer::start`] binds `127.0.0.1:0` and runs an axum app on a
//! current-thread Tokio runtime in its own OS thread, so it serves sync tests and
//! `#[tokio::test]`s alike and never competes with the test's runtime. Every request
//! goes through one fallback handler:
//!
//! 1. the request is read whole (no body limit) and turned into a
//!    [`RecordedRequest`];
//! 2. the [`route::Router`] (behind a mutex, so turns are handed out in arrival order)
//!    classifies it and takes the next turn of the matching script;
//! 3. the record, with its classification, goes to the [`record::Recorder`], which
//!    wakes blocking and async waiters; unscripted requests are also printed to
//!    stderr so they show in a failing test's output;
//! 4. the answer is sent: SSE for streaming requests (through a channel-backed body,
//!    so a held turn can stop mid-stream), JSON otherwise.
//!
//! Held and stalled turns wait on a release generation counter: each waits until
//! [`ModelServer::release`] bumps it past the value it saw on arrival. Dropping the
//! server cancels the accept loop and shuts the runtime down, which drops every
//! connection, held ones included; the thread is joined, so nothing outlives the
//! handle.

mod gemini;
mod handler;
mod queries;
mod record;
mod refusal;
mod responses;
mod route;
mod scenario;
mod server;
mod sse;

pub use record::{RecordedRequest, RequestKind, WaitTimeout};
pub use refusal::{Refusal, unreachable_url};
pub use scenario::{Pause, Scenario, Turn, Usage};
pub use server::ModelServer;
