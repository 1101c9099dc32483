//! One JSON object per line for CI and other tools: every [`Event`] with a `ts` field
//! (RFC 3339, UTC) added. The schema is documented in `docs/events.md`.

use std::io::Write;

use crate::events::Event;
use crate::ui::{Sink, write_flush};

/// Prints each event as one JSON line.
pub struct JsonSink {
    out: Box<dyn Write + Send>,
}

impl JsonSink {
    /// A sink writing to `out` (stdout).
    #[must_use]
    pub fn new(out: Box<dyn Write + Send>) -> Self {
        JsonSink { out }
    }
}

/// An event as the JSON line it is printed as.
///
/// # Errors
/// Never in practice: events are plain data.
pub fn to_line(event: &Event) -> serde_json::Result<String> {
    let mut value = serde_json::to_value(event)?;
    if let Some(object) = value.as_object_mut() {
        object.insert("ts".into(), jiff::Timestamp::now().to_string().into());
    }
    let mut line = serde_json::to_string(&value)?;
    line.push('\n');
    Ok(line)
}

impl Sink for JsonSink {
    fn event(&mut self, event: &Event) -> std::io::Result<()> {
        let line = to_line(event).map_err(std::io::Error::other)?;
        write_flush(self.out.as_mut(), &line)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_tagged_and_timestamped() {
        let line = to_line(&Event::Warning {
            message: "careful".into(),
        })
        .expect("json");
        let value: serde_json::Value = serde_json::from_str(&line).expect("parses");
        assert_eq!(value["event"], "warning");
        assert_eq!(value["message"], "careful");
        assert!(value["ts"].as_str().is_some_and(|ts| ts.ends_with('Z')));
        assert!(line.ends_with('\n') && !line.trim_end().contains('\n'));
    }
}
