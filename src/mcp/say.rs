//! The supervisor's lines for people, and the timestamps it writes.

/// Log one line for people: a tracing event under
/// [`SUPERVISOR_TARGET`](crate::logging::SUPERVISOR_TARGET), which the logging setup
/// prints on stderr as `[<ISO-8601 UTC>] [SUPERVISOR] message` whatever `-q` says. Never
/// stdout, which belongs to the client.
pub(crate) fn say(text: &str) {
    tracing::info!(target: crate::logging::SUPERVISOR_TARGET, "{text}");
}

/// `ts` as ISO 8601 UTC with millisecond precision (`2025-01-31T12:00:00.123Z`).
pub(crate) fn iso(ts: jiff::Timestamp) -> String {
    format!("{ts:.3}")
}

/// Now, as ISO 8601 UTC with millisecond precision.
pub(crate) fn iso_now() -> String {
    iso(jiff::Timestamp::now())
}
