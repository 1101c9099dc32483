//! JSON-RPC 2.0 messages as the proxy sees them: the original bytes of one line plus the
//! few fields routing needs (kind, id, method).
//!
//! Messages pass through the proxy unchanged unless a rule says otherwise (issue 6,
//! "Proxy"), so nothing here builds a typed model of MCP: a line is probed once for `id`,
//! `method`, `result` and `error`, and the id's byte span is remembered so that the proxy
//! can swap ids (its own id space towards the child, the client's on the way back) by
//! splicing bytes instead of re-serialising the message.
//!
//! This module owns parsing and building single messages; it knows nothing about routing.

use std::borrow::Cow;
use std::fmt;
use std::ops::Range;

use serde::{Deserialize, Deserializer};
use serde_json::Value;
use serde_json::value::RawValue;

use super::scan;

/// JSON-RPC error code for a message that is valid JSON but not a valid request.
pub(crate) const INVALID_REQUEST: i64 = -32600;
/// JSON-RPC error code for a method the server does not have.
pub(crate) const METHOD_NOT_FOUND: i64 = -32601;
/// JSON-RPC error code for an internal error; the issue asks for it when a request is lost
/// to a restart or crash.
pub(crate) const INTERNAL_ERROR: i64 = -32603;

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

/// A method name: the ones MCP defines are kept as static text, so that reading and
/// copying them costs no allocation.
pub(crate) type Method = Cow<'static, str>;

/// The methods of MCP, as [`method_name`] keeps them.
const KNOWN_METHODS: [&str; 30] = [
    "tools/call",
    "tools/list",
    "ping",
    "initialize",
    "notifications/initialized",
    "notifications/cancelled",
    "notifications/progress",
    "notifications/message",
    "resources/read",
    "resources/list",
    "resources/templates/list",
    "resources/subscribe",
    "resources/unsubscribe",
    "prompts/get",
    "prompts/list",
    "completion/complete",
    "logging/setLevel",
    "sampling/createMessage",
    "elicitation/create",
    "roots/list",
    "server/discover",
    "subscriptions/listen",
    "notifications/subscriptions/acknowledged",
    "notifications/tools/list_changed",
    "notifications/prompts/list_changed",
    "notifications/resources/list_changed",
    "notifications/resources/updated",
    "notifications/roots/list_changed",
    "tasks/get",
    "tasks/result",
];

/// `name` as a [`Method`]: borrowed from [`KNOWN_METHODS`] when it is one of them.
fn method_name(name: Cow<'_, str>) -> Method {
    match KNOWN_METHODS.iter().find(|known| **known == name) {
        Some(known) => Cow::Borrowed(known),
        None => Cow::Owned(name.into_owned()),
    }
}

/// What kind of JSON-RPC message a line holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A request: expects exactly one response with the same id.
    Request {
        /// The request id.
        id: RequestId,
        /// The method name.
        method: Method,
    },
    /// A notification: no id, no response.
    Notification {
        /// The method name.
        method: Method,
    },
    /// A response to an earlier request.
    Response {
        /// The id being answered; `None` for `"id": null` (an error about an unreadable request).
        id: Option<RequestId>,
        /// Whether it carries `error` rather than `result`.
        is_error: bool,
    },
}

/// One JSON-RPC message: its original bytes (one line, without the newline) and its kind.
#[derive(Debug, Clone)]
pub(crate) struct Message {
    bytes: Vec<u8>,
    kind: Kind,
    /// Where the `id` value sits in `bytes`, for splicing in another id.
    id_span: Option<Range<usize>>,
    /// Where the `params` value sits in `bytes`, so that the rules that look inside it
    /// parse only it.
    params_span: Option<Range<usize>>,
}

/// The outcome of reading one line as JSON-RPC.
#[derive(Debug)]
pub(crate) enum Parsed {
    /// A well-formed message.
    Message(Message),
    /// Not JSON at all (logged and dropped, never answered: answering garbage can start an
    /// error storm, rust-sdk issue 938). Carries the parser's complaint and the line.
    NotJson(String, Vec<u8>),
    /// Valid JSON that is not a JSON-RPC 2.0 message: answered with Invalid Request.
    /// Carries the complaint and the message's id, when it has a usable one.
    Invalid(String, Option<Vec<u8>>),
}

/// The members of a message that routing reads: `jsonrpc` and `method` as text, `id`
/// and `params` as they were written (a `null` one included), and whether `result` and
/// `error` are there.
#[derive(Debug, PartialEq, Eq)]
struct Fields<'a> {
    jsonrpc: Option<Cow<'a, str>>,
    id: Option<&'a str>,
    method: Option<Cow<'a, str>>,
    params: Option<&'a str>,
    result: bool,
    error: bool,
}

impl<'a> Fields<'a> {
    /// The members as [`scan`] finds them, when it vouches for the line and they read
    /// as serde_json would give them; `None` leaves the line to [`Fields::read`].
    fn quick(bytes: &'a [u8]) -> Option<Self> {
        let text = std::str::from_utf8(bytes).ok()?;
        let [jsonrpc, id, method, params, result, error] = scan::members(
            text,
            ["jsonrpc", "id", "method", "params", "result", "error"],
        )?;
        let raw = |span: Option<Range<usize>>| span.and_then(|span| text.get(span));
        // `Option<Cow<str>>` reads `null` as absent; text with escapes, or anything but
        // text, is left to serde_json (and its complaint).
        let string = |span: Option<Range<usize>>| match raw(span.clone()) {
            None | Some("null") => Some(None),
            Some(_) => scan::plain_string(text, span?).map(|s| Some(Cow::Borrowed(s))),
        };
        Some(Fields {
            jsonrpc: string(jsonrpc)?,
            id: raw(id),
            method: string(method)?,
            params: raw(params),
            result: result.is_some(),
            error: error.is_some(),
        })
    }

    /// The members as serde_json reads them.
    fn read(bytes: &'a [u8]) -> Result<Self, serde_json::Error> {
        #[derive(Deserialize)]
        struct Probe<'a> {
            #[serde(default, borrow)]
            jsonrpc: Option<Cow<'a, str>>,
            #[serde(default, borrow, deserialize_with = "present")]
            id: Option<&'a RawValue>,
            #[serde(default, borrow)]
            method: Option<Cow<'a, str>>,
            #[serde(default, borrow, deserialize_with = "present")]
            params: Option<&'a RawValue>,
            #[serde(default, borrow, deserialize_with = "present")]
            result: Option<&'a RawValue>,
            #[serde(default, borrow, deserialize_with = "present")]
            error: Option<&'a RawValue>,
        }
        let probe: Probe<'a> = serde_json::from_slice(bytes)?;
        Ok(Fields {
            jsonrpc: probe.jsonrpc,
            id: probe.id.map(RawValue::get),
            method: probe.method,
            params: probe.params.map(RawValue::get),
            result: probe.result.is_some(),
            error: probe.error.is_some(),
        })
    }
}

/// A field that is present, even when it is `null` (plain `Option` would read `null` as
/// absent, and `"id": null` is not the same as no id).
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(d).map(Some)
}

impl Message {
    /// Read one line (without its newline) as a JSON-RPC message.
    pub(crate) fn parse(bytes: Vec<u8>) -> Parsed {
        let Classified {
            kind,
            id_span,
            params_span,
        } = match classify(&bytes) {
            Ok(found) => found,
            Err(Refused::NotJson(reason)) => return Parsed::NotJson(reason, bytes),
            Err(Refused::Invalid(reason)) => return Parsed::Invalid(reason, usable_id(&bytes)),
        };
        Parsed::Message(Message {
            bytes,
            kind,
            id_span,
            params_span,
        })
    }

    /// The message's kind.
    pub(crate) fn kind(&self) -> &Kind {
        &self.kind
    }

    /// The method name of a request or notification.
    pub(crate) fn method(&self) -> Option<&str> {
        match &self.kind {
            Kind::Request { method, .. } | Kind::Notification { method } => Some(method),
            Kind::Response { .. } => None,
        }
    }

    /// The original bytes, without the newline.
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Give up the message for its bytes.
    pub(crate) fn into_bytes(self) -> Vec<u8> {
        self.bytes
    }

    /// The `id` exactly as it was written, if there is one.
    pub(crate) fn raw_id(&self) -> Option<&[u8]> {
        self.id_span.clone().map(|span| &self.bytes[span])
    }

    /// The same message with its id replaced by `new_id` (raw JSON text); the rest of the
    /// bytes are untouched. A message without an id is returned unchanged.
    pub(crate) fn with_raw_id(&self, new_id: &[u8]) -> Vec<u8> {
        match &self.id_span {
            Some(span) => {
                let mut out = Vec::with_capacity(self.bytes.len() - span.len() + new_id.len() + 1);
                out.extend_from_slice(&self.bytes[..span.start]);
                out.extend_from_slice(new_id);
                out.extend_from_slice(&self.bytes[span.end..]);
                out
            }
            None => self.bytes.clone(),
        }
    }

    /// The whole message as a JSON value (for the few rules that look inside).
    pub(crate) fn to_value(&self) -> Option<Value> {
        serde_json::from_slice(&self.bytes).ok()
    }

    /// `params` exactly as written, if the message has them.
    pub(crate) fn params_bytes(&self) -> Option<&[u8]> {
        self.params_span.clone().map(|span| &self.bytes[span])
    }

    /// `params` of a request or notification, parsed (for the few rules that need it).
    pub(crate) fn params(&self) -> Option<Value> {
        serde_json::from_slice(self.params_bytes()?).ok()
    }

    /// `params.name` (a `tools/call`'s tool), read without building the rest: every
    /// call passes through this on its way to the server.
    pub(crate) fn params_name(&self) -> Option<Cow<'_, str>> {
        #[derive(Deserialize)]
        struct Named<'a> {
            #[serde(borrow, default)]
            name: Option<Cow<'a, str>>,
        }
        serde_json::from_slice::<Named<'_>>(self.params_bytes()?)
            .ok()?
            .name
    }

    /// `params._meta` as written (where a 2026-07-28 request carries its envelope),
    /// read without building the rest.
    pub(crate) fn params_meta(&self) -> Option<&RawValue> {
        #[derive(Deserialize)]
        struct Params<'a> {
            #[serde(rename = "_meta", default, borrow)]
            meta: Option<&'a RawValue>,
        }
        serde_json::from_slice::<Params<'_>>(self.params_bytes()?)
            .ok()?
            .meta
    }

    /// [`params_name`](Self::params_name) and [`params_meta`](Self::params_meta) in one
    /// reading of `params`: what a request is read for on its way to the server.
    pub(crate) fn params_head(&self) -> ParamsHead<'_> {
        #[derive(Deserialize)]
        struct Head<'a> {
            #[serde(borrow, default)]
            name: Option<Cow<'a, str>>,
            #[serde(rename = "_meta", default, borrow)]
            meta: Option<&'a RawValue>,
        }
        let Some(params) = self.params_bytes() else {
            return ParamsHead::default();
        };
        if let Some(head) = quick_head(params) {
            return head;
        }
        // Where reading both at once fails (a `name` that is not text, a member twice,
        // `params` as an array), each may still succeed alone: read them apart.
        if params.first() == Some(&b'{')
            && let Ok(head) = serde_json::from_slice::<Head<'_>>(params)
        {
            return ParamsHead {
                name: head.name,
                meta: head.meta.map(RawValue::get),
            };
        }
        ParamsHead {
            name: self.params_name(),
            meta: self.params_meta().map(RawValue::get),
        }
    }
}

/// `params_head` as [`scan`] finds it, when it vouches for `params` and the members
/// read as serde_json would give them (`null` is absent; a `name` with escapes, or that
/// is not text, is left to serde_json).
fn quick_head(params: &[u8]) -> Option<ParamsHead<'_>> {
    let text = std::str::from_utf8(params).ok()?;
    let [name, meta] = scan::members(text, ["name", "_meta"])?;
    let raw = |span: Option<Range<usize>>| span.and_then(|span| text.get(span));
    let name = match raw(name.clone()) {
        None | Some("null") => None,
        Some(_) => Some(Cow::Borrowed(scan::plain_string(text, name?)?)),
    };
    Some(ParamsHead {
        name,
        meta: raw(meta).filter(|meta| *meta != "null"),
    })
}

/// What a request's `params` hold for the front: see [`Message::params_head`].
#[derive(Debug, Default)]
pub(crate) struct ParamsHead<'a> {
    /// `params.name`, when it is text.
    pub(crate) name: Option<Cow<'a, str>>,
    /// `params._meta` as written, unless it is `null`.
    pub(crate) meta: Option<&'a str>,
}

/// What routing needs of a well-formed message.
struct Classified {
    kind: Kind,
    id_span: Option<Range<usize>>,
    params_span: Option<Range<usize>>,
}

/// Why a line is not a message.
enum Refused {
    NotJson(String),
    Invalid(String),
}

fn classify(bytes: &[u8]) -> Result<Classified, Refused> {
    // serde would read a struct from an array too (`["2.0", 1, "ping"]`); a message is
    // an object. A batch (an array of messages, dropped from MCP in 2025-06-18) is not
    // supported either.
    match bytes.iter().find(|b| !b.is_ascii_whitespace()) {
        Some(b'{') => {}
        Some(b'[') if serde_json::from_slice::<serde::de::IgnoredAny>(bytes).is_ok() => {
            return Err(Refused::Invalid(
                "a JSON-RPC message must be an object (batches are not supported)".into(),
            ));
        }
        Some(b'[' | b'"' | b'-' | b'0'..=b'9' | b't' | b'f' | b'n')
            if serde_json::from_slice::<serde::de::IgnoredAny>(bytes).is_ok() =>
        {
            return Err(Refused::Invalid(
                "a JSON-RPC message must be an object".into(),
            ));
        }
        _ => {}
    }
    let read = match Fields::quick(bytes) {
        Some(fields) => Ok(fields),
        None => Fields::read(bytes),
    };
    let probe = match read {
        Ok(fields) => fields,
        Err(err) => {
            return Err(match err.classify() {
                serde_json::error::Category::Syntax | serde_json::error::Category::Eof => {
                    Refused::NotJson(err.to_string())
                }
                serde_json::error::Category::Data | serde_json::error::Category::Io => {
                    Refused::Invalid(err.to_string())
                }
            });
        }
    };
    if probe.jsonrpc.as_deref() != Some("2.0") {
        return Err(Refused::Invalid(
            "`jsonrpc` must be the string \"2.0\"".to_owned(),
        ));
    }
    let id_span = probe.id.map(|raw| span_of(bytes, raw));
    let id = match probe.id {
        None => None,
        Some("null") => Some(None),
        Some(raw) => match RequestId::from_raw(raw) {
            Some(id) => Some(Some(id)),
            None => {
                return Err(Refused::Invalid("`id` must be a string or a number".into()));
            }
        },
    };
    let kind = match (probe.method, id, probe.result, probe.error) {
        (Some(method), Some(Some(id)), false, false) => Kind::Request {
            id,
            method: method_name(method),
        },
        (Some(method), None, false, false) => Kind::Notification {
            method: method_name(method),
        },
        (None, Some(id), true, false) => Kind::Response {
            id,
            is_error: false,
        },
        (None, Some(id), false, true) => Kind::Response { id, is_error: true },
        (Some(_), Some(None), _, _) => {
            return Err(Refused::Invalid("a request's `id` must not be null".into()));
        }
        _ => {
            return Err(Refused::Invalid(
                "not a request, notification or response".into(),
            ));
        }
    };
    Ok(Classified {
        kind,
        id_span,
        params_span: probe.params.map(|raw| span_of(bytes, raw)),
    })
}

/// The `id` of a JSON object, if it is a string or a number.
fn usable_id(bytes: &[u8]) -> Option<Vec<u8>> {
    let value: Value = serde_json::from_slice(bytes).ok()?;
    let id = value.get("id")?;
    RequestId::from_value(id).map(|_| id.to_string().into_bytes())
}

/// Byte range of `inner` (a sub-slice of `outer`, as serde's borrowed `RawValue` is).
fn span_of(outer: &[u8], inner: &str) -> Range<usize> {
    let start = (inner.as_ptr() as usize).saturating_sub(outer.as_ptr() as usize);
    let start = start.min(outer.len());
    start..(start + inner.len()).min(outer.len())
}

/// A JSON-RPC error response, as one line without the newline.
pub(crate) fn error_response(id: Option<&[u8]>, code: i64, message: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(96 + message.len());
    out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    out.extend_from_slice(id.unwrap_or(b"null"));
    out.extend_from_slice(br#","error":{"code":"#);
    out.extend_from_slice(code.to_string().as_bytes());
    out.extend_from_slice(br#","message":"#);
    out.extend_from_slice(Value::String(message.to_owned()).to_string().as_bytes());
    out.extend_from_slice(b"}}");
    out
}

/// A JSON-RPC error response carrying `error` as a server wrote it.
pub(crate) fn error_value_response(id: &[u8], error: &Value) -> Vec<u8> {
    response(id, "error", error)
}

/// A JSON-RPC success response, as one line without the newline.
pub(crate) fn result_response(id: &[u8], result: &Value) -> Vec<u8> {
    response(id, "result", result)
}

/// A response to `id` whose `field` (`result` or `error`) is `value`.
fn response(id: &[u8], field: &str, value: &Value) -> Vec<u8> {
    let mut out = Vec::with_capacity(64);
    out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    out.extend_from_slice(id);
    out.extend_from_slice(b",\"");
    out.extend_from_slice(field.as_bytes());
    out.extend_from_slice(b"\":");
    out.extend_from_slice(value.to_string().as_bytes());
    out.push(b'}');
    out
}

/// A JSON-RPC request with an integer id, as one line without the newline.
pub(crate) fn request(id: u64, method: &str, params: Option<&Value>) -> Vec<u8> {
    let mut message = serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method});
    if let (Some(params), Some(object)) = (params, message.as_object_mut()) {
        object.insert("params".to_owned(), params.clone());
    }
    message.to_string().into_bytes()
}

/// A JSON-RPC notification, as one line without the newline.
pub(crate) fn notification(method: &str, params: Option<&Value>) -> Vec<u8> {
    let mut message = serde_json::json!({"jsonrpc": "2.0", "method": method});
    if let (Some(params), Some(object)) = (params, message.as_object_mut()) {
        object.insert("params".to_owned(), params.clone());
    }
    message.to_string().into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Parsed {
        Message::parse(text.as_bytes().to_vec())
    }

    fn message(text: &str) -> Message {
        match parse(text) {
            Parsed::Message(m) => m,
            other => panic!("not a message: {other:?}"),
        }
    }

    #[test]
    fn requests_notifications_and_responses_are_told_apart() {
        let m = message(r#"{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{}}"#);
        assert_eq!(
            m.kind(),
            &Kind::Request {
                id: RequestId::from_u64(7),
                method: "tools/list".into()
            }
        );
        let m = message(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        assert_eq!(m.method(), Some("notifications/initialized"));
        assert!(matches!(m.kind(), Kind::Notification { .. }));
        let m = message(r#"{"jsonrpc":"2.0","id":"a","result":{}}"#);
        assert!(matches!(
            m.kind(),
            Kind::Response {
                id: Some(_),
                is_error: false
            }
        ));
        let m = message(r#"{"jsonrpc":"2.0","id":null,"error":{"code":-1,"message":"x"}}"#);
        assert_eq!(
            m.kind(),
            &Kind::Response {
                id: None,
                is_error: true
            }
        );
    }

    #[test]
    fn garbage_is_not_json_and_wrong_shapes_are_invalid() {
        assert!(matches!(
            parse("Server listening on port 3000"),
            Parsed::NotJson(..)
        ));
        assert!(matches!(
            parse(r#"{"jsonrpc":"2.0","id":1"#),
            Parsed::NotJson(..)
        ));
        for invalid in [
            "42",
            "[]",
            r#"["2.0", 1, "ping"]"#,
            r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#,
            r#"{"id":1,"method":"x"}"#,
            r#"{"jsonrpc":"1.0","id":1,"method":"x"}"#,
            r#"{"jsonrpc":"2.0","id":{},"method":"x"}"#,
            r#"{"jsonrpc":"2.0","id":null,"method":"x"}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{},"error":{}}"#,
            r#"{"jsonrpc":"2.0","id":1}"#,
            r#"{"jsonrpc":"2.0","method":7}"#,
        ] {
            assert!(matches!(parse(invalid), Parsed::Invalid(..)), "{invalid}");
        }
        assert!(matches!(
            parse(r#"{"jsonrpc":"2.0","id":"k","method":7}"#),
            Parsed::Invalid(_, Some(id)) if id == br#""k""#
        ));
        assert!(matches!(parse(r#"{"hello":1}"#), Parsed::Invalid(_, None)));
    }

    #[test]
    fn ids_are_spliced_without_touching_the_rest() {
        let text =
            r#"{"jsonrpc":"2.0", "id" : "client-1" ,"method":"tools/call","params":{"id":3}}"#;
        let m = message(text);
        assert_eq!(m.raw_id(), Some(&br#""client-1""#[..]));
        let swapped = m.with_raw_id(b"12");
        assert_eq!(
            String::from_utf8(swapped).expect("utf8"),
            r#"{"jsonrpc":"2.0", "id" : 12 ,"method":"tools/call","params":{"id":3}}"#
        );
    }

    #[test]
    fn ids_compare_by_value_not_spelling() {
        assert_eq!(
            RequestId::from_raw(r#""\u0061""#),
            RequestId::from_raw(r#""a""#)
        );
        assert_ne!(RequestId::from_raw("1"), RequestId::from_raw(r#""1""#));
        assert_eq!(
            RequestId::from_raw("15").and_then(|id| id.as_u64()),
            Some(15)
        );
        assert_eq!(RequestId::from_raw("true"), None);
    }

    #[test]
    fn ids_read_from_text_and_from_values_agree() {
        for raw in [
            "0",
            "7",
            "18446744073709551615",
            "-3",
            "1.5",
            "1e3",
            r#""12""#,
            r#""k\"1""#,
        ] {
            let value: Value = serde_json::from_str(raw).expect("json");
            let from_raw = RequestId::from_raw(raw).expect("an id");
            assert_eq!(from_raw.to_string(), value.to_string(), "{raw}");
            assert_eq!(from_raw.to_value(), value, "{raw}");
            if value.is_u64() {
                assert_eq!(
                    Some(from_raw.clone()),
                    RequestId::from_value(&value),
                    "{raw}"
                );
            }
            assert_eq!(from_raw.as_u64(), value.as_u64(), "{raw}");
        }
        assert_eq!(
            RequestId::from_raw("18446744073709551616").and_then(|id| id.as_u64()),
            None
        );
    }

    #[test]
    fn params_are_read_from_their_own_bytes() {
        let m = message(
            r#"{"params":{"arguments":{"name":"inner"},"name":"echo"},"jsonrpc":"2.0","id":1,"method":"tools/call"}"#,
        );
        assert_eq!(
            m.params_bytes(),
            Some(br#"{"arguments":{"name":"inner"},"name":"echo"}"#.as_slice())
        );
        assert_eq!(m.params_name().as_deref(), Some("echo"));
        assert_eq!(m.params().expect("params")["arguments"]["name"], "inner");
        let null = message(r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":null}"#);
        assert_eq!(null.params(), Some(Value::Null));
        assert_eq!(null.params_name(), None);
        let none = message(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        assert_eq!(none.params_bytes(), None);
        assert_eq!(none.params(), None);
    }

    #[test]
    fn the_params_head_reads_as_name_and_meta_read_apart() {
        for params in [
            r#"{"name":"echo","arguments":{"name":1},"_meta":{"k":[1,{"a":null}]}}"#,
            r#"{"_meta":null,"name":"e\u0063ho"}"#,
            r#"{"name":5,"_meta":{"k":1}}"#,
            r#"{"name":"a","name":"b","_meta":{"k":1}}"#,
            r#"{"name":"a","_meta":{},"_meta":{"k":1}}"#,
            r#"["echo",{"k":1}]"#,
            r#"["echo"]"#,
            r#"[{"k":1}]"#,
            r#"{}"#,
            r#"[]"#,
            r#""text""#,
            "null",
        ] {
            let m = message(&format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{params}}}"#
            ));
            let head = m.params_head();
            assert_eq!(head.name, m.params_name(), "{params}");
            assert_eq!(head.meta, m.params_meta().map(RawValue::get), "{params}");
        }
        let none = message(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#);
        assert!(none.params_head().name.is_none() && none.params_head().meta.is_none());
    }

    #[test]
    fn the_quick_reading_gives_what_serde_gives() {
        let mut quick = 0;
        for variant in scan::tests::variants() {
            if let Some(fields) = Fields::quick(&variant) {
                quick += 1;
                let read = Fields::read(&variant).expect("serde reads it too");
                assert_eq!(fields, read, "{}", String::from_utf8_lossy(&variant));
            }
            let Parsed::Message(message) = Message::parse(variant.clone()) else {
                continue;
            };
            if let Some(head) = message.params_bytes().and_then(quick_head) {
                assert_eq!(head.name, message.params_name());
                assert_eq!(head.meta, message.params_meta().map(RawValue::get));
            }
        }
        assert!(quick > 1000, "only {quick} read quickly");
        for sample in scan::tests::SAMPLES {
            let quick = Fields::quick(sample.as_bytes());
            assert_eq!(quick.is_some(), !sample.ends_with(r#""id":2}"#), "{sample}");
        }
        // Text with escapes, or that is not text, is serde's to read and complain about.
        for left in [
            r#"{"jsonrpc":"2\u002e0","id":1,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":7}"#,
        ] {
            assert_eq!(Fields::quick(left.as_bytes()), None, "{left}");
        }
        assert!(matches!(
            parse(r#"{"jsonrpc":"2\u002e0","id":1,"method":"ping"}"#),
            Parsed::Message(_)
        ));
    }

    #[test]
    fn multibyte_text_survives_untouched() {
        let text = r#"{"jsonrpc":"2.0","id":1,"result":{"text":"héllo → 世界"}}"#;
        let m = message(text);
        assert_eq!(
            m.with_raw_id(b"\"x\""),
            text.replacen("1", "\"x\"", 1).into_bytes()
        );
    }

    #[test]
    fn built_messages_parse_back() {
        let e = error_response(Some(b"3"), INTERNAL_ERROR, "server \"restarted\"");
        let m = message(std::str::from_utf8(&e).expect("utf8"));
        assert!(matches!(m.kind(), Kind::Response { is_error: true, .. }));
        let v = m.to_value().expect("json");
        assert_eq!(v["error"]["message"], "server \"restarted\"");
        let r = result_response(b"\"k\"", &serde_json::json!({"ok": true}));
        assert!(matches!(
            message(std::str::from_utf8(&r).expect("utf8")).kind(),
            Kind::Response {
                is_error: false,
                ..
            }
        ));
        let q = request(5, "initialize", Some(&serde_json::json!({"a": 1})));
        let m = message(std::str::from_utf8(&q).expect("utf8"));
        assert_eq!(m.params(), Some(serde_json::json!({"a": 1})));
        let n = notification("notifications/tools/list_changed", None);
        assert!(matches!(
            message(std::str::from_utf8(&n).expect("utf8")).kind(),
            Kind::Notification { .. }
        ));
    }
}
