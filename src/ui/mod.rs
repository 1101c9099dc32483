//! Sinks for run [`Event`]s: the plain console, the JSON event
//! stream, and the end-of-run summary table every mode prints. Sinks only consume
//! events; they never call back into the run.

pub mod json;
pub mod plain;
pub mod summary;
pub mod text;

use std::io::Write;

use crate::events::{Event, EventReceiver};

/// Something that shows events.
pub trait Sink: Send {
    /// Show one event. Write errors are the sink's to report; they never stop the run.
    fn event(&mut self, event: &Event) -> std::io::Result<()>;
}

/// Feed every event from `receiver` to `sink` until the run drops its sender.
/// A sink whose output is gone (closed pipe) stops showing; the run goes on.
pub async fn drain(mut receiver: EventReceiver, mut sink: Box<dyn Sink>) {
    let mut broken = false;
    while let Some(event) = receiver.recv().await {
        if broken {
            continue;
        }
        if let Err(err) = sink.event(&event) {
            if err.kind() != std::io::ErrorKind::BrokenPipe {
                tracing::warn!("run output failed: {err}");
            }
            broken = true;
        }
    }
}

/// Write `text` and flush, so output appears line by line under pipes too.
pub(crate) fn write_flush(out: &mut dyn Write, text: &str) -> std::io::Result<()> {
    out.write_all(text.as_bytes())?;
    out.flush()
}
