//! The supervisor's lines for people on stderr, and the timestamps it writes.

use std::io::Write;

/// Log one line for humans on stderr: `[<ISO-8601 UTC>] [SUPERVISOR] message`. Never
/// stdout, which belongs to the client.
pub(crate) fn say(text: &str) {
    let line = format!("[{}] [SUPERVISOR] {text}\n", iso_now());
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}

/// `ts` as ISO 8601 UTC with millisecond precision (`2025-01-31T12:00:00.123Z`).
pub(crate) fn iso(ts: jiff::Timestamp) -> String {
    format!("{ts:.3}")
}

/// Now, as ISO 8601 UTC with millisecond precision.
pub(crate) fn iso_now() -> String {
    iso(jiff::Timestamp::now())
}
