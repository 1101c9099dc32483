//! Field readers for agent output that forgive shape changes: a field of an unexpected
//! shape (a number where a string was, an object where a list was) reads as absent, so a
//! future agent version cannot turn a whole known line into an unknown one.

use std::fmt;

use serde::Deserialize;
use serde::de::{self, DeserializeOwned, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::event::{AgentEvent, McpServerStatus};

/// Reads one output line as JSON of shape `T` and gives `read` the line and the result,
/// the way every backend reads its lines: without its line ending; a blank line gives
/// `R::default()` and never reaches `read`; an invalid byte (a tool's binary output cut
/// mid-character) is decoded lossily, so it becomes U+FFFD inside its string and cannot
/// hide the line's usage. A line that does not read as `T` comes as the event it
/// becomes: JSON of another shape an [`AgentEvent::Unknown`], anything else an
/// [`AgentEvent::Text`].
pub(super) fn read_json_line<T, R>(
    line: &[u8],
    read: impl FnOnce(&[u8], Result<T, AgentEvent>) -> R,
) -> R
where
    T: DeserializeOwned,
    R: Default,
{
    let line = line.trim_ascii_end();
    if line.iter().all(u8::is_ascii_whitespace) {
        return R::default();
    }
    let decoded;
    let line = if std::str::from_utf8(line).is_ok() {
        line
    } else {
        decoded = String::from_utf8_lossy(line).into_owned();
        decoded.as_bytes()
    };
    let parsed = serde_json::from_slice(line).map_err(|err| {
        if err.is_data() {
            AgentEvent::unknown(line, None, None)
        } else {
            AgentEvent::text(String::from_utf8_lossy(line).into_owned())
        }
    });
    read(line, parsed)
}

/// An `error` object, of which only the message is read.
#[derive(Deserialize, Default)]
#[serde(default)]
pub(super) struct RawError {
    /// What the agent said went wrong.
    #[serde(deserialize_with = "lenient_string")]
    pub(super) message: Option<String>,
}

/// Reads a string, and anything else (a number, an object) as absent: a field whose shape
/// changes in a future agent version must not turn a whole known line into `Unknown`.
pub(super) fn lenient_string<'de, D: de::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<String>, D::Error> {
    struct LenientVisitor;
    impl<'de> Visitor<'de> for LenientVisitor {
        type Value = Option<String>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a string")
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
            Ok(Some(v.to_owned()))
        }
        fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
            Ok(Some(v))
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            Ok(None)
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
            Ok(None)
        }
    }
    deserializer.deserialize_any(LenientVisitor)
}

// Scalars and lists read through a `Value` (cheap at this size) and kept only when they
// have the expected shape, for the same reason as `lenient_string`.

fn lenient_value<'de, D: de::Deserializer<'de>>(
    deserializer: D,
) -> Result<serde_json::Value, D::Error> {
    serde_json::Value::deserialize(deserializer)
}

pub(super) fn lenient_u64<'de, D: de::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<u64>, D::Error> {
    Ok(lenient_value(deserializer)?.as_u64())
}

pub(super) fn lenient_i64<'de, D: de::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<i64>, D::Error> {
    Ok(lenient_value(deserializer)?.as_i64())
}

pub(super) fn lenient_f64<'de, D: de::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<f64>, D::Error> {
    Ok(lenient_value(deserializer)?.as_f64())
}

pub(super) fn lenient_bool<'de, D: de::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<bool>, D::Error> {
    Ok(lenient_value(deserializer)?.as_bool())
}

/// A list of strings; other items are skipped.
pub(super) fn lenient_strings<'de, D: de::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Vec<String>>, D::Error> {
    Ok(match lenient_value(deserializer)? {
        serde_json::Value::Array(items) => Some(
            items
                .into_iter()
                .filter_map(|item| match item {
                    serde_json::Value::String(text) => Some(text),
                    _ => None,
                })
                .collect(),
        ),
        _ => None,
    })
}

/// MCP servers as `{name, status}` objects (or bare names); other items are skipped.
pub(super) fn lenient_servers<'de, D: de::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Vec<McpServerStatus>>, D::Error> {
    Ok(match lenient_value(deserializer)? {
        serde_json::Value::Array(items) => Some(
            items
                .into_iter()
                .filter_map(|item| match item {
                    serde_json::Value::String(name) => Some(McpServerStatus {
                        name,
                        status: String::new(),
                    }),
                    object @ serde_json::Value::Object(_) => serde_json::from_value(object).ok(),
                    _ => None,
                })
                .collect(),
        ),
        _ => None,
    })
}
