//! End-to-end tests of `debussy mcp supervise` with real servers and clients.

mod answers;
mod bridge;
mod bridge_edges;
mod concurrent;
mod oversized;
mod proxy;
mod python;
mod readiness;

pub(crate) use python::python;
mod restarts;
mod rmcp_client;
mod state_dir;
mod stateless;
pub(crate) mod support;
mod tuned;
mod watch;
