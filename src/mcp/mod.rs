//! The MCP supervisor: a JSON-RPC proxy that keeps a stdio MCP client connected across
//! server restarts.

pub mod audit;
pub(crate) mod framing;
pub(crate) mod handshake;
pub mod marker;
pub(crate) mod message;
pub(crate) mod tools;

/// `ts` as ISO 8601 UTC with millisecond precision (`2025-01-31T12:00:00.123Z`).
pub(crate) fn iso(ts: jiff::Timestamp) -> String {
    format!("{ts:.3}")
}

/// Now, as ISO 8601 UTC with millisecond precision.
pub(crate) fn iso_now() -> String {
    iso(jiff::Timestamp::now())
}
