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
use std::ops::Range;

use serde::{Deserialize, Deserializer};
use serde_json::Value;
use serde_json::value::RawValue;

pub(crate) use super::id::RequestId;
use super::scan;

/// JSON-RPC error code for a message that is valid JSON but not a valid request.
pub(crate) const INVALID_REQUEST: i64 = -32600;
/// JSON-RPC error code for a method the server does not have.
pub(crate) const METHOD_NOT_FOUND: i64 = -32601;
/// JSON-RPC error code for an internal error; the issue asks for it when a request is lost
/// to a restart or crash.
pub(crate) const INTERNAL_ERROR: i64 = -32603;

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

/// A `notifications/cancelled` as the front passes it on: its `params`, to be sent again
/// naming the cancelled request by another side's id.
#[derive(Debug)]
pub(crate) struct Cancelled {
    params: Value,
    /// The cancelled request's id, as the sender knows it.
    pub(crate) request: RequestId,
}

impl Cancelled {
    /// Read a `notifications/cancelled`; `None` unless its `params.requestId` is an id.
    pub(crate) fn read(message: &Message) -> Option<Self> {
        let params = message.params()?;
        let request = params.get("requestId").and_then(RequestId::from_value)?;
        Some(Cancelled { params, request })
    }

    /// The notification again, naming the request `request_id` (the rest of `params`,
    /// `reason` among it, as sent).
    pub(crate) fn naming(&self, request_id: Value) -> Vec<u8> {
        let mut params = self.params.clone();
        params["requestId"] = request_id;
        notification("notifications/cancelled", Some(&params))
    }
}

#[cfg(test)]
#[path = "message_tests.rs"]
mod tests;
