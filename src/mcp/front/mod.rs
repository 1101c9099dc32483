//! The client-facing front shared by `debussy mcp supervise` and `debussy mcp bridge`:
//! framing and routing, ids and the in-flight table, the handshake and session state of
//! each protocol era, the injected tools, the audit log and the marker, file watching
//! and the restart policy. It drives a [`Backend`](super::backend::Backend) and owns
//! everything the client can observe (see the theory of operation in [`crate::mcp`]).

pub mod audit;
pub(crate) mod changed_files;
mod client;
pub(crate) mod coordinator;
mod exits;
pub(crate) mod handshake;
pub(crate) mod inflight;
pub(crate) mod learned;
mod learning;
mod lifecycle;
mod listens;
pub mod marker;
pub(crate) mod routing;
mod serve;
mod server;
pub(crate) mod settings;
pub(crate) mod state;
pub(crate) mod stateless;
mod status;
mod stderr_tail;
pub(crate) mod tools;
mod watch;

pub(crate) use serve::serve;
pub use serve::{ClientInput, ClientOutput, Shutdown};
pub use state::SuperviseOutcome;
