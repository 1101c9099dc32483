//! JSON-RPC request ids as the front compares, keeps and rewrites them.

use std::fmt;

use serde_json::Value;

/// A JSON-RPC request id, normalised so that equal ids compare equal whatever their
/// spelling (`"\u0061"` and `"a"`).
#[derive(Clone, PartialEq, Eq, Hash)]
pub(crate) struct RequestId(Repr);

/// A request id's canonical form: plain integers, what clients and the proxy itself
/// almost always use, are kept as numbers, so that reading, comparing and hashing them
/// costs no allocation.
#[derive(Clone, PartialEq, Eq, Hash)]
enum Repr {
    /// A non-negative integer written without sign, fraction, exponent or leading zero.
    Integer(u64),
    /// Any other string or number, as its canonical JSON text.
    Text(Box<str>),
}

impl RequestId {
    /// Normalise a raw JSON value; `None` unless it is a string or a number.
    pub(crate) fn from_value(value: &Value) -> Option<Self> {
        match value {
            Value::Number(number) => Some(RequestId(match number.as_u64() {
                Some(n) => Repr::Integer(n),
                None => Repr::Text(number.to_string().into_boxed_str()),
            })),
            Value::String(_) => Some(RequestId(Repr::Text(value.to_string().into_boxed_str()))),
            _ => None,
        }
    }

    /// Normalise raw JSON text; `None` unless it is a string or a number.
    pub(crate) fn from_raw(raw: &str) -> Option<Self> {
        // The common case, a plain integer, is already canonical.
        if !raw.is_empty() && raw.bytes().all(|b| b.is_ascii_digit()) {
            let integer = raw
                .parse()
                .ok()
                .filter(|_| raw == "0" || !raw.starts_with('0'));
            return Some(RequestId(match integer {
                Some(n) => Repr::Integer(n),
                None => Repr::Text(raw.into()),
            }));
        }
        let value: Value = serde_json::from_str(raw).ok()?;
        Self::from_value(&value)
    }

    /// An id of the proxy's own (a plain integer).
    #[cfg(test)]
    pub(crate) fn from_u64(id: u64) -> Self {
        RequestId(Repr::Integer(id))
    }

    /// The id as an integer, if it is one (ids the proxy allocated always are).
    pub(crate) fn as_u64(&self) -> Option<u64> {
        match &self.0 {
            Repr::Integer(n) => Some(*n),
            Repr::Text(_) => None,
        }
    }

    /// The id as a JSON value.
    pub(crate) fn to_value(&self) -> Value {
        match &self.0 {
            Repr::Integer(n) => Value::from(*n),
            Repr::Text(text) => serde_json::from_str(text).unwrap_or(Value::Null),
        }
    }
}

impl fmt::Debug for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Repr::Integer(n) => write!(f, "{n}"),
            Repr::Text(text) => f.write_str(text),
        }
    }
}
