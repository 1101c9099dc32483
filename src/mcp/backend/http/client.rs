//! The bridge's side of the MCP streamable HTTP transport: POST a JSON-RPC message and
//! read its JSON or SSE answer, hold the GET stream of server-to-client messages, DELETE
//! the session, and check that something answers on the daemon's port.
//!
//! Bodies are read in chunks with a bound: a message over the limit is reported with its
//! ends, never held whole, and a body that is not what its content type says is called
//! what it is.

use std::time::Duration;

use futures_util::StreamExt;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use reqwest::{Response, StatusCode};

use super::sse::{SseItem, SseReader};
use crate::process::{Excerpt, LINE_EXCERPT_BYTES};

/// The header carrying the daemon's session id.
const SESSION_HEADER: &str = "mcp-session-id";
/// The header carrying the protocol version.
pub(crate) const PROTOCOL_HEADER: &str = "mcp-protocol-version";

/// One legacy MCP session with the daemon: its id (absent when the daemon runs
/// stateless) and the protocol version agreed in `initialize`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Session {
    /// The `Mcp-Session-Id` the daemon gave.
    pub(crate) id: Option<String>,
    /// The protocol version, sent back on every later request.
    pub(crate) protocol: Option<String>,
}

/// What one POST answered, message by message.
#[derive(Debug)]
pub(crate) enum Incoming {
    /// The answer's `Mcp-Session-Id`, before any of its messages.
    Session(String),
    /// One JSON-RPC message, as the daemon wrote it.
    Message(Vec<u8>),
    /// A message over the size limit, dropped.
    TooLong(Excerpt),
}

/// Why a request to the daemon got no answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PostError {
    /// The request never reached the daemon: nothing accepted the connection.
    NotSent(String),
    /// The request was sent, then the connection closed before the answer: the daemon
    /// died or was stopped while handling it.
    Lost(String),
    /// The daemon does not know the session (HTTP 404): it restarted, so the request was
    /// never handled.
    SessionGone,
    /// The daemon answered with an HTTP error and no JSON-RPC message.
    Status {
        /// The HTTP status.
        code: u16,
        /// The start of the response body.
        body: String,
    },
    /// The daemon answered with a body that is not what it says it is.
    BadBody(String),
}

impl std::fmt::Display for PostError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PostError::NotSent(why) => write!(f, "the MCP daemon is unreachable: {why}"),
            PostError::Lost(why) => write!(f, "the connection to the MCP daemon broke: {why}"),
            PostError::SessionGone => f.write_str("the MCP daemon no longer knows the session"),
            PostError::Status { code, body } => {
                write!(f, "the MCP daemon answered HTTP {code}: {body}")
            }
            PostError::BadBody(why) => write!(f, "the MCP daemon's answer is malformed: {why}"),
        }
    }
}

/// Extra headers of one POST (`Mcp-Method`, `Mcp-Name`…), already encoded.
pub(crate) type Headers = Vec<(HeaderName, HeaderValue)>;

/// Where the daemon listens, and one pooled HTTP client to talk to it.
#[derive(Debug, Clone)]
pub(crate) struct Endpoint {
    client: reqwest::Client,
    base: String,
    url: String,
    address: String,
    max: usize,
}

impl Endpoint {
    /// The endpoint at `http://host:port` + `path`, reading messages of at most `max`
    /// bytes.
    ///
    /// # Errors
    /// The HTTP client cannot be built.
    pub(crate) fn new(host: &str, port: u16, path: &str, max: usize) -> Result<Self, String> {
        let client = build_client()?;
        let host_part = if host.contains(':') {
            format!("[{host}]")
        } else {
            host.to_owned()
        };
        let base = format!("http://{host_part}:{port}");
        let path = if path.starts_with('/') {
            path.to_owned()
        } else {
            format!("/{path}")
        };
        Ok(Endpoint {
            client,
            url: format!("{base}{path}"),
            base,
            address: format!("{host_part}:{port}"),
            max,
        })
    }

    /// The same endpoint with a client of its own: a new generation starts with no
    /// pooled connection left over from a daemon that went away.
    pub(crate) fn fresh(&self) -> Self {
        Endpoint {
            client: build_client().unwrap_or_else(|_| self.client.clone()),
            ..self.clone()
        }
    }

    /// The MCP endpoint's URL.
    pub(crate) fn url(&self) -> &str {
        &self.url
    }

    /// The longest message read, in bytes.
    pub(crate) fn max(&self) -> usize {
        self.max
    }

    fn session_headers(session: &Session) -> HeaderMap {
        let mut headers = HeaderMap::new();
        if let Some(id) = session
            .id
            .as_deref()
            .and_then(|v| HeaderValue::from_str(v).ok())
        {
            headers.insert(SESSION_HEADER, id);
        }
        if let Some(version) = session
            .protocol
            .as_deref()
            .and_then(|v| HeaderValue::from_str(v).ok())
        {
            headers.insert(PROTOCOL_HEADER, version);
        }
        headers
    }

    /// POST one JSON-RPC message. Every message the daemon sends back in answer (a JSON
    /// body or SSE events) goes to `on_message`; for a request (`id` given, raw JSON)
    /// reading stops at its response. Returns the session id header of the answer.
    ///
    /// # Errors
    /// See [`PostError`].
    pub(crate) async fn post(
        &self,
        session: &Session,
        extra: Headers,
        body: Vec<u8>,
        id: Option<&[u8]>,
        on_message: &mut (dyn FnMut(Incoming) + Send),
    ) -> Result<Option<String>, PostError> {
        let mut headers = Self::session_headers(session);
        for (name, value) in extra {
            headers.insert(name, value);
        }
        let response = self
            .client
            .post(&self.url)
            .headers(headers)
            .header(ACCEPT, "application/json, text/event-stream")
            .header(CONTENT_TYPE, "application/json")
            .body(body)
            .send()
            .await
            .map_err(|err| send_error(&err))?;
        let status = response.status();
        if status == StatusCode::NOT_FOUND && session.id.is_some() {
            return Err(PostError::SessionGone);
        }
        let session_id = response
            .headers()
            .get(SESSION_HEADER)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        if let Some(id) = &session_id {
            on_message(Incoming::Session(id.clone()));
        }
        if status == StatusCode::ACCEPTED {
            return Ok(session_id);
        }
        if is_event_stream(&response) {
            read_events(response, id, self.max, on_message).await?;
            return Ok(session_id);
        }
        let body = read_limited(response, self.max).await?;
        match body {
            Body::TooLong(excerpt) => on_message(Incoming::TooLong(excerpt)),
            Body::Whole(bytes) if bytes.iter().all(u8::is_ascii_whitespace) => {
                if !status.is_success() {
                    return Err(PostError::Status {
                        code: status.as_u16(),
                        body: String::new(),
                    });
                }
            }
            Body::Whole(bytes) => {
                let delivered = deliver_json(bytes.clone(), on_message);
                if !delivered {
                    let text = String::from_utf8_lossy(&bytes);
                    let start: String = text.chars().take(300).collect();
                    return Err(if status.is_success() {
                        PostError::BadBody(format!("a JSON body that is not JSON-RPC: {start}"))
                    } else {
                        PostError::Status {
                            code: status.as_u16(),
                            body: start,
                        }
                    });
                }
            }
        }
        Ok(session_id)
    }

    /// Open the GET stream of server-to-client messages. `Ok(None)`: the daemon does not
    /// offer one (HTTP 405).
    ///
    /// # Errors
    /// See [`PostError`].
    pub(crate) async fn listen(&self, session: &Session) -> Result<Option<Response>, PostError> {
        let response = self
            .client
            .get(&self.url)
            .headers(Self::session_headers(session))
            .header(ACCEPT, "text/event-stream")
            .send()
            .await
            .map_err(|err| send_error(&err))?;
        match response.status() {
            StatusCode::METHOD_NOT_ALLOWED => Ok(None),
            StatusCode::NOT_FOUND if session.id.is_some() => Err(PostError::SessionGone),
            status if status.is_success() && is_event_stream(&response) => Ok(Some(response)),
            status => Err(PostError::Status {
                code: status.as_u16(),
                body: String::new(),
            }),
        }
    }

    /// End the session on the daemon (best effort, bounded).
    pub(crate) async fn delete(&self, session: &Session) {
        if session.id.is_none() {
            return;
        }
        let _ = self
            .client
            .delete(&self.url)
            .headers(Self::session_headers(session))
            .timeout(Duration::from_secs(1))
            .send()
            .await;
    }

    /// Whether `GET <path>` on the daemon answers 2xx within `timeout`.
    pub(crate) async fn healthy(&self, path: &str, timeout: Duration) -> bool {
        self.succeeds(self.client.get(self.at(path)), timeout).await
    }

    /// POST an empty body to `path` on the daemon (its shutdown endpoint), waiting at most
    /// `timeout`. Whether it answered 2xx.
    pub(crate) async fn request_shutdown(&self, path: &str, timeout: Duration) -> bool {
        self.succeeds(self.client.post(self.at(path)), timeout)
            .await
    }

    /// The URL of `path` (with or without its leading `/`) on the daemon.
    fn at(&self, path: &str) -> String {
        format!("{}/{}", self.base, path.trim_start_matches('/'))
    }

    async fn succeeds(&self, request: reqwest::RequestBuilder, timeout: Duration) -> bool {
        request
            .timeout(timeout)
            .send()
            .await
            .is_ok_and(|response| response.status().is_success())
    }

    /// Whether something accepts TCP connections on the daemon's port. A frozen daemon
    /// still does (the kernel accepts for it), so this says "is there", not "is well".
    pub(crate) async fn listening(&self) -> bool {
        matches!(
            tokio::time::timeout(
                Duration::from_millis(500),
                tokio::net::TcpStream::connect(&self.address)
            )
            .await,
            Ok(Ok(_))
        )
    }
}

/// Hand each message of a JSON body (one message, or a batch) to `on_message`; whether
/// it was JSON-RPC at all.
fn deliver_json(bytes: Vec<u8>, on_message: &mut (dyn FnMut(Incoming) + Send)) -> bool {
    match bytes.iter().find(|b| !b.is_ascii_whitespace()) {
        Some(b'{') if serde_json::from_slice::<serde::de::IgnoredAny>(&bytes).is_ok() => {
            on_message(Incoming::Message(bytes));
            true
        }
        Some(b'[') => match serde_json::from_slice::<Vec<Box<serde_json::value::RawValue>>>(&bytes)
        {
            Ok(messages) => {
                for message in messages {
                    on_message(Incoming::Message(message.get().as_bytes().to_vec()));
                }
                true
            }
            Err(_) => false,
        },
        _ => false,
    }
}

fn build_client() -> Result<reqwest::Client, String> {
    crate::http::client(|builder| {
        builder
            .no_proxy()
            .tcp_nodelay(true)
            .connect_timeout(Duration::from_secs(2))
    })
    .map_err(|err| err.describe())
}

fn is_event_stream(response: &Response) -> bool {
    response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"))
}

/// A response body read with a bound.
enum Body {
    Whole(Vec<u8>),
    TooLong(Excerpt),
}

async fn read_limited(response: Response, max: usize) -> Result<Body, PostError> {
    let mut stream = response.bytes_stream();
    let mut bytes = Vec::new();
    let mut len = 0usize;
    let mut tail = Vec::new();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|err| PostError::Lost(describe(&err)))?;
        len += chunk.len();
        if len <= max {
            bytes.extend_from_slice(&chunk);
            continue;
        }
        if !bytes.is_empty() {
            bytes.truncate(LINE_EXCERPT_BYTES);
        }
        tail.extend_from_slice(&chunk);
        let keep = tail.len().saturating_sub(LINE_EXCERPT_BYTES);
        tail.drain(..keep);
    }
    if len <= max {
        return Ok(Body::Whole(bytes));
    }
    Ok(Body::TooLong(Excerpt {
        len,
        head: bytes,
        tail,
    }))
}

/// Read SSE events until the stream ends or, when `id` is given, until the response to
/// that request went by.
async fn read_events(
    response: Response,
    id: Option<&[u8]>,
    max: usize,
    on_message: &mut (dyn FnMut(Incoming) + Send),
) -> Result<(), PostError> {
    let mut events = EventStream::new(response, max);
    while let Some(item) = events.next().await? {
        match item {
            SseItem::TooLong(excerpt) => {
                let answered = id.is_some_and(|id| excerpt_answers(&excerpt, id));
                on_message(Incoming::TooLong(excerpt));
                if answered {
                    return Ok(());
                }
            }
            SseItem::Data(data) => {
                if serde_json::from_slice::<serde::de::IgnoredAny>(&data).is_err() {
                    let text = String::from_utf8_lossy(&data);
                    let start: String = text.chars().take(200).collect();
                    return Err(PostError::BadBody(format!(
                        "an event of its event stream is not JSON: {start}"
                    )));
                }
                let answered = id.is_some_and(|id| is_response_to(&data, id));
                on_message(Incoming::Message(data));
                if answered {
                    return Ok(());
                }
            }
        }
    }
    match id {
        Some(_) => Err(PostError::Lost(
            "the event stream ended before the response".to_owned(),
        )),
        None => Ok(()),
    }
}

/// The events of a response body, one at a time.
pub(crate) struct EventStream {
    body: futures_util::stream::BoxStream<'static, reqwest::Result<Vec<u8>>>,
    reader: SseReader,
    ended: bool,
}

impl EventStream {
    /// Read `response`'s body as events of at most `max` bytes.
    pub(crate) fn new(response: Response, max: usize) -> Self {
        EventStream {
            body: response
                .bytes_stream()
                .map(|chunk| chunk.map(Vec::from))
                .boxed(),
            reader: SseReader::new(max),
            ended: false,
        }
    }

    /// The next event; `Ok(None)` once the stream ended.
    ///
    /// # Errors
    /// The connection broke.
    pub(crate) async fn next(&mut self) -> Result<Option<SseItem>, PostError> {
        loop {
            if let Some(item) = self.reader.next_item() {
                return Ok(Some(item));
            }
            if self.ended {
                return Ok(None);
            }
            match self.body.next().await {
                Some(Ok(chunk)) => self.reader.push(&chunk),
                Some(Err(err)) => return Err(PostError::Lost(describe(&err))),
                None => {
                    self.ended = true;
                    self.reader.finish();
                }
            }
        }
    }
}

/// Whether `message` (raw JSON) is the response to the request with the raw id `id`.
pub(crate) fn is_response_to(message: &[u8], id: &[u8]) -> bool {
    #[derive(serde::Deserialize)]
    struct Probe<'a> {
        #[serde(borrow, default)]
        id: Option<&'a serde_json::value::RawValue>,
        #[serde(default)]
        method: Option<serde::de::IgnoredAny>,
    }
    let Ok(probe) = serde_json::from_slice::<Probe<'_>>(message) else {
        return false;
    };
    probe.method.is_none()
        && probe
            .id
            .is_some_and(|found| same_id(found.get().as_bytes(), id))
}

fn same_id(a: &[u8], b: &[u8]) -> bool {
    a == b
        || serde_json::from_slice::<serde_json::Value>(a).ok()
            == serde_json::from_slice::<serde_json::Value>(b).ok()
}

/// Whether a dropped over-long message carried the id `id` (the response to it).
fn excerpt_answers(excerpt: &Excerpt, id: &[u8]) -> bool {
    crate::mcp::jsonrpc::oversized::find_id(&excerpt.head, &excerpt.tail)
        .is_some_and(|found| same_id(&found, id))
}

fn send_error(err: &reqwest::Error) -> PostError {
    if err.is_connect() {
        PostError::NotSent(describe(err))
    } else {
        PostError::Lost(describe(err))
    }
}

fn describe(err: &reqwest::Error) -> String {
    let mut text = err.to_string();
    let mut source = std::error::Error::source(err);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    /// A daemon whose event stream carries an event that is not JSON.
    async fn serve_once(body: &'static str) -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let address = listener.local_addr().expect("address");
        tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.expect("accept");
            let mut request = [0_u8; 4096];
            let _ = socket.read(&mut request).await;
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\n\r\n",
                body.len()
            );
            let _ = socket.write_all(head.as_bytes()).await;
            let _ = socket.write_all(body.as_bytes()).await;
        });
        format!("http://{address}/mcp")
    }

    #[tokio::test]
    async fn an_event_that_is_not_json_is_called_a_malformed_answer() {
        let url = serve_once("data: <html>oops</html>\n\n").await;
        let response = crate::http::client(|builder| builder)
            .expect("client")
            .get(&url)
            .send()
            .await
            .expect("response");
        let mut seen = 0;
        let err = read_events(response, Some(b"1"), 1 << 20, &mut |_| seen += 1)
            .await
            .expect_err("malformed");
        assert_eq!(seen, 0);
        assert_eq!(
            err.to_string(),
            "the MCP daemon's answer is malformed: an event of its event stream is not JSON: <html>oops</html>"
        );
    }
}
