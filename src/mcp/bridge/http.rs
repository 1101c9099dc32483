//! The bridge's side of the MCP streamable HTTP transport: POST a JSON-RPC message and
//! read its JSON or SSE answer, hold the GET stream of server-to-client messages, DELETE
//! the session, and check that something answers on the daemon's port.

use std::time::Duration;

use futures_util::StreamExt;
use futures_util::stream::BoxStream;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderValue};
use reqwest::{Response, StatusCode};
use serde_json::Value;
use sse_stream::SseStream;

/// The header carrying the daemon's session id.
const SESSION_HEADER: &str = "mcp-session-id";
/// The header carrying the negotiated protocol version.
const PROTOCOL_HEADER: &str = "mcp-protocol-version";

/// One MCP session with the daemon: its id (absent when the daemon runs stateless) and
/// the protocol version agreed in `initialize`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Session {
    /// The `Mcp-Session-Id` the daemon gave.
    pub(crate) id: Option<String>,
    /// The protocol version, sent back on every later request.
    pub(crate) protocol: Option<String>,
}

/// Why a request to the daemon got no answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PostError {
    /// The request never reached the daemon: nothing accepted the connection (or, for
    /// the bridge's own requests, nothing answered in time).
    NotSent(String),
    /// The request was sent, then the connection closed before the answer: the daemon
    /// died or was stopped while handling it.
    Lost(String),
    /// The daemon does not know the session (HTTP 404): it restarted, so the request was
    /// never handled and can be sent again in a new session.
    SessionGone,
    /// The daemon answered with an HTTP error.
    Status {
        /// The HTTP status.
        code: u16,
        /// The start of the response body.
        body: String,
    },
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
        }
    }
}

/// Where the daemon listens, and one pooled HTTP client to talk to it.
#[derive(Debug, Clone)]
pub(crate) struct Endpoint {
    client: reqwest::Client,
    base: String,
    url: String,
    address: String,
}

impl Endpoint {
    /// The endpoint at `http://host:port` + `path`.
    ///
    /// # Errors
    /// The HTTP client cannot be built.
    pub(crate) fn new(host: &str, port: u16, path: &str) -> Result<Self, String> {
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
        })
    }

    /// The same endpoint with a client of its own: a new session starts with no pooled
    /// connection left over from a daemon that went away.
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

    fn headers(session: &Session) -> HeaderMap {
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

    /// POST one JSON-RPC message. Every message the daemon sends back in answer (JSON
    /// body or SSE events) goes to `on_message`; for a request (`id` given) reading stops
    /// at its response. Returns the session id header of the answer, if any.
    ///
    /// # Errors
    /// See [`PostError`].
    pub(crate) async fn post(
        &self,
        session: &Session,
        body: Vec<u8>,
        id: Option<&Value>,
        on_message: &mut (dyn FnMut(Value) + Send),
    ) -> Result<Option<String>, PostError> {
        let response = self
            .client
            .post(&self.url)
            .headers(Self::headers(session))
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
        if !status.is_success() {
            let code = status.as_u16();
            let text = response.text().await.unwrap_or_default();
            return Err(PostError::Status {
                code,
                body: text.chars().take(300).collect(),
            });
        }
        let session_id = response
            .headers()
            .get(SESSION_HEADER)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        if status == StatusCode::ACCEPTED {
            return Ok(session_id);
        }
        if is_event_stream(&response) {
            read_events(response, id, on_message).await?;
        } else {
            let bytes = response
                .bytes()
                .await
                .map_err(|err| PostError::Lost(describe(&err)))?;
            if !bytes.iter().all(u8::is_ascii_whitespace) {
                match serde_json::from_slice::<Value>(&bytes) {
                    Ok(Value::Array(messages)) => messages.into_iter().for_each(&mut *on_message),
                    Ok(message) => on_message(message),
                    Err(err) => {
                        return Err(PostError::Status {
                            code: status.as_u16(),
                            body: format!("the body is not JSON: {err}"),
                        });
                    }
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
            .headers(Self::headers(session))
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
            .headers(Self::headers(session))
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

fn build_client() -> Result<reqwest::Client, String> {
    reqwest::Client::builder()
        .no_proxy()
        .tcp_nodelay(true)
        .connect_timeout(Duration::from_secs(2))
        .build()
        .map_err(|err| format!("build the HTTP client: {err}"))
}

fn is_event_stream(response: &Response) -> bool {
    response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"))
}

/// Read SSE events until the stream ends or, when `id` is given, until the response to
/// that request went by.
async fn read_events(
    response: Response,
    id: Option<&Value>,
    on_message: &mut (dyn FnMut(Value) + Send),
) -> Result<(), PostError> {
    let mut events = messages(response);
    while let Some(message) = events.next().await {
        let message = message?;
        let answered = id.is_some_and(|id| is_response_to(&message, id));
        on_message(message);
        if answered {
            return Ok(());
        }
    }
    match id {
        Some(_) => Err(PostError::Lost(
            "the event stream ended before the response".to_owned(),
        )),
        None => Ok(()),
    }
}

/// The JSON-RPC messages in an SSE response, in order. Events without data (priming
/// events, keep-alives) are skipped; an event whose data is not JSON is an error.
pub(crate) fn messages(response: Response) -> BoxStream<'static, Result<Value, PostError>> {
    SseStream::from_bytes_stream(response.bytes_stream())
        .filter_map(|event| async move {
            match event {
                Err(err) => Some(Err(PostError::Lost(err.to_string()))),
                Ok(event) => {
                    let data = event.data?;
                    if data.trim().is_empty() {
                        return None;
                    }
                    Some(serde_json::from_str::<Value>(&data).map_err(|err| {
                        PostError::Lost(format!("an event's data is not JSON: {err}"))
                    }))
                }
            }
        })
        .boxed()
}

/// Whether `message` is the response (result or error) to the request with `id`.
pub(crate) fn is_response_to(message: &Value, id: &Value) -> bool {
    message.get("id") == Some(id)
        && message.get("method").is_none()
        && (message.get("result").is_some() || message.get("error").is_some())
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
