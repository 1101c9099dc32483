//! Sinks for run [`Event`]s: the plain console, the JSON event
//! stream, and the end-of-run summary table every mode prints. Sinks only consume
//! events; they never call back into the run.

pub mod hud;
pub mod interrupts;
pub mod json;
pub mod notifications;
pub mod plain;
pub mod summary;
pub mod text;

use std::io::Write;

use crate::events::{Event, EventReceiver};

/// Something that shows events.
pub trait Sink: Send {
    /// Show one event. Write errors are the sink's to report; they never stop the run.
    fn event(&mut self, event: &Event) -> std::io::Result<()>;

    /// The run ended: finish whatever is pending. May block briefly (the notifier waits
    /// for queued notifications to go out); called once, from a thread that may block.
    fn close(&mut self) {}
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
    let _ = tokio::task::spawn_blocking(move || sink.close()).await;
}

/// Show every event from `receiver` to the `side` sinks (notifications, a log file) as it
/// passes, and pass it on to the returned receiver for the main output. The returned task
/// ends once the run's sender is gone, the main output has been let go and the side sinks
/// have been closed; await it before exiting so their last words are delivered.
#[must_use]
pub fn tee(
    mut receiver: EventReceiver,
    mut side: Vec<Box<dyn Sink>>,
) -> (EventReceiver, tokio::task::JoinHandle<()>) {
    let (sender, passed) = crate::events::channel();
    let task = tokio::spawn(async move {
        let mut broken = vec![false; side.len()];
        while let Some(event) = receiver.recv().await {
            for (sink, broken) in side.iter_mut().zip(broken.iter_mut()) {
                if !*broken && let Err(err) = sink.event(&event) {
                    tracing::warn!("run output failed: {err}");
                    *broken = true;
                }
            }
            let _ = sender.send(event);
        }
        // Let the main output finish first; closing side sinks may take a while.
        drop(sender);
        let _ = tokio::task::spawn_blocking(move || {
            for sink in &mut side {
                sink.close();
            }
        })
        .await;
    });
    (passed, task)
}

/// Write `text` and flush, so output appears line by line under pipes too.
pub(crate) fn write_flush(out: &mut dyn Write, text: &str) -> std::io::Result<()> {
    out.write_all(text.as_bytes())?;
    out.flush()
}
