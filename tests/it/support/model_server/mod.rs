//! A scripted model server for running the real agent CLIs offline: the Anthropic
//! Messages API for Claude Code, the OpenAI Responses API (`POST /v1/responses`) for the
//! Codex CLI and the Gemini API (`…:streamGenerateContent`) for the Gemini CLI, all
//! playing the same [`Scenario`].
//!
//! # Theory of operation
//!
//! [`ModelServer::start`] binds `127.0.0.1:0` and runs an axum app on a
//! current-thread Tokio runtime in its own OS thread, so it serves sync tests and
//! `#[tokio::test]`s alike and never competes with the test's runtime. Every request
//! goes through one fallback handler:
//!
//! 1. the request is read whole (no body limit) and turned into a
//!    [`RecordedRequest`];
//! 2. the [`route::Router`] (behind a mutex, so turns are handed out in arrival order)
//!    classifies it and takes the next turn of the matching script;
//! 3. the record, with its classification, goes to the [`record::Recorder`], which
//!    wakes blocking and async waiters; unscripted requests are also printed to
//!    stderr so they show in a failing test's output;
//! 4. the answer is sent: SSE for streaming requests (through a channel-backed body,
//!    so a held turn can stop mid-stream), JSON otherwise.
//!
//! Held and stalled turns wait on a release generation counter: each waits until
//! [`ModelServer::release`] bumps it past the value it saw on arrival. Dropping the
//! server cancels the accept loop and shuts the runtime down, which drops every
//! connection, held ones included; the thread is joined, so nothing outlives the
//! handle.

mod gemini;
mod record;
mod refusal;
mod responses;
mod route;
mod scenario;
mod sse;

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::io::{self, Write as _};
use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use axum::Router as AxumRouter;
use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, Method, Response, StatusCode, Uri, header};
use serde_json::Value;
use tokio::sync::{mpsc, watch};
use tokio_stream::wrappers::ReceiverStream;
use tokio_util::sync::CancellationToken;

pub use record::{RecordedRequest, RequestKind, WaitTimeout};
pub use refusal::{Refusal, unreachable_url};
pub use scenario::{Pause, Scenario, Turn, Usage};

use record::Recorder;
use route::{Answer, Router, Wire};

/// State shared by the handler and the [`ModelServer`] handle.
#[derive(Debug)]
struct Shared {
    router: Mutex<Router>,
    recorder: Recorder,
    release: watch::Sender<u64>,
    shutdown: CancellationToken,
}

/// A running scripted model server. Dropping it stops the server and drops every
/// open connection (a Claude Code process still talking to it sees the connection
/// close).
#[derive(Debug)]
pub struct ModelServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl ModelServer {
    /// Starts a server that plays `scenario`, listening on an ephemeral port of
    /// 127.0.0.1.
    pub fn start(scenario: Scenario) -> io::Result<Self> {
        let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let shared = Arc::new(Shared {
            router: Mutex::new(Router::new(scenario)),
            recorder: Recorder::new(),
            release: watch::Sender::new(0),
            shutdown: CancellationToken::new(),
        });
        let app = AxumRouter::new()
            .fallback(handle)
            .layer(DefaultBodyLimit::disable())
            .with_state(Arc::clone(&shared));
        let shutdown = shared.shutdown.clone();
        let thread = std::thread::Builder::new()
            .name(format!("model-server-{}", addr.port()))
            .spawn(move || {
                runtime.block_on(async move {
                    let listener = match tokio::net::TcpListener::from_std(listener) {
                        Ok(listener) => listener,
                        Err(error) => {
                            eprintln!("model server: cannot listen on {addr}: {error}");
                            return;
                        }
                    };
                    tokio::select! {
                        result = axum::serve(listener, app) => {
                            if let Err(error) = result {
                                eprintln!("model server: stopped serving {addr}: {error}");
                            }
                        }
                        () = shutdown.cancelled() => {}
                    }
                });
                // Drops every connection task, held streams included.
                runtime.shutdown_timeout(Duration::from_secs(1));
            })?;
        Ok(Self {
            addr,
            shared,
            thread: Some(thread),
        })
    }

    /// The URL to put in `ANTHROPIC_BASE_URL`, e.g. `http://127.0.0.1:40123`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The address the server listens on.
    pub const fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Every request so far, in arrival order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared.recorder.snapshot()
    }

    /// The main-conversation requests so far.
    pub fn main_requests(&self) -> Vec<RecordedRequest> {
        self.requests_where(RecordedRequest::is_main)
    }

    /// The subagent requests so far.
    pub fn subagent_requests(&self) -> Vec<RecordedRequest> {
        self.requests_where(RecordedRequest::is_subagent)
    }

    /// The requests so far of the given kind (compare with `==`, e.g.
    /// `RequestKind::Compact`).
    pub fn requests_of(&self, kind: &RequestKind) -> Vec<RecordedRequest> {
        self.requests_where(|request| &request.kind == kind)
    }

    /// The requests so far for which `keep` holds.
    pub fn requests_where(&self, keep: impl Fn(&RecordedRequest) -> bool) -> Vec<RecordedRequest> {
        self.requests()
            .into_iter()
            .filter(|request| keep(request))
            .collect()
    }

    /// Requests answered by a fallback: a script that ran out, an unmatched
    /// subagent, an unknown route. A test that scripted everything expects none.
    pub fn unexpected(&self) -> Vec<RecordedRequest> {
        self.requests_where(|request| !request.scripted)
    }

    /// The distinct Claude Code session ids, in order of their first request.
    pub fn session_ids(&self) -> Vec<String> {
        let mut ids: Vec<String> = Vec::new();
        for request in self.requests() {
            if let Some(id) = request.session_id()
                && !ids.iter().any(|seen| seen == id)
            {
                ids.push(id.to_owned());
            }
        }
        ids
    }

    /// Blocks until `done` holds for the requests so far; `what` names the wait in
    /// the timeout error. Do not call it from inside an async test's runtime thread
    /// while that runtime must make progress: use [`Self::wait_until_async`].
    pub fn wait_until(
        &self,
        what: &str,
        timeout: Duration,
        done: impl Fn(&[RecordedRequest]) -> bool,
    ) -> Result<Vec<RecordedRequest>, WaitTimeout> {
        self.shared.recorder.wait_until(what, timeout, done)
    }

    /// Awaits until `done` holds for the requests so far.
    pub async fn wait_until_async(
        &self,
        what: &str,
        timeout: Duration,
        done: impl Fn(&[RecordedRequest]) -> bool,
    ) -> Result<Vec<RecordedRequest>, WaitTimeout> {
        self.shared
            .recorder
            .wait_until_async(what, timeout, done)
            .await
    }

    /// Blocks until at least `count` main-conversation requests have arrived.
    pub fn wait_for_main_requests(
        &self,
        count: usize,
        timeout: Duration,
    ) -> Result<Vec<RecordedRequest>, WaitTimeout> {
        self.wait_until(&format!("{count} main request(s)"), timeout, |requests| {
            requests.iter().filter(|request| request.is_main()).count() >= count
        })
    }

    /// Awaits at least `count` main-conversation requests.
    pub async fn wait_for_main_requests_async(
        &self,
        count: usize,
        timeout: Duration,
    ) -> Result<Vec<RecordedRequest>, WaitTimeout> {
        self.wait_until_async(&format!("{count} main request(s)"), timeout, |requests| {
            requests.iter().filter(|request| request.is_main()).count() >= count
        })
        .await
    }

    /// Lets every turn that is currently stalled or held go on. Turns that stall or
    /// hold later wait for the next call.
    pub fn release(&self) {
        self.shared
            .release
            .send_modify(|generation| *generation += 1);
    }

    /// Writes every request so far as JSON Lines (see [`RecordedRequest::to_json`]).
    pub fn save_requests(&self, path: &Path) -> io::Result<()> {
        let mut out = io::BufWriter::new(std::fs::File::create(path)?);
        for request in self.requests() {
            writeln!(out, "{}", request.to_json())?;
        }
        out.flush()
    }
}

impl Drop for ModelServer {
    fn drop(&mut self) {
        self.shared.shutdown.cancel();
        if let Some(thread) = self.thread.take()
            && thread.join().is_err()
        {
            eprintln!("model server: the server thread panicked");
        }
    }
}

/// Waits until [`ModelServer::release`] moves past `seen`, or the server shuts down.
async fn released(shared: &Shared, seen: u64) {
    let mut generation = shared.release.subscribe();
    tokio::select! {
        _ = generation.wait_for(|current| *current > seen) => {}
        () = shared.shutdown.cancelled() => {}
    }
}

/// The model in a Gemini API path: `/v1beta/models/MODEL:streamGenerateContent`.
fn gemini_model(path: &str) -> Option<String> {
    let rest = path.strip_prefix("/v1beta/models/")?;
    Some(rest.split(':').next().unwrap_or(rest).to_owned())
}

fn lowercase_headers(headers: &HeaderMap) -> BTreeMap<String, String> {
    headers
        .iter()
        .map(|(name, value)| {
            (
                name.as_str().to_ascii_lowercase(),
                String::from_utf8_lossy(value.as_bytes()).into_owned(),
            )
        })
        .collect()
}

fn parse_body(body: &Bytes) -> Value {
    if body.is_empty() {
        return Value::Null;
    }
    serde_json::from_slice(body)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(body).into_owned()))
}

fn response(
    status: u16,
    content_type: Option<&str>,
    request_id: &str,
    body: Body,
) -> Response<Body> {
    let mut builder = Response::builder()
        .status(StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR))
        .header("request-id", request_id);
    if let Some(content_type) = content_type {
        builder = builder.header(header::CONTENT_TYPE, content_type);
    }
    builder.body(body).unwrap_or_else(|error| {
        let mut fallback =
            Response::new(Body::from(format!("model server: bad response: {error}")));
        *fallback.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
        fallback
    })
}

async fn handle(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response<Body> {
    let mut request = RecordedRequest {
        index: 0,
        elapsed: shared.recorder.elapsed(),
        method: method.as_str().to_owned(),
        path: uri.path().to_owned(),
        query: uri.query().map(str::to_owned),
        headers: lowercase_headers(&headers),
        body: parse_body(&body),
        kind: RequestKind::Unknown,
        scripted: false,
    };
    let release_seen = *shared.release.borrow();
    let refused = shared
        .router
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .refusing(&request, request.elapsed);
    if let Some((wire, refusing, left)) = refused {
        let model = request
            .model()
            .map(str::to_owned)
            .or_else(|| gemini_model(&request.path))
            .unwrap_or_else(|| "claude-scripted".to_owned());
        request.kind = RequestKind::Refused;
        request.scripted = true;
        let index = shared.recorder.push(request);
        let refusal = refusing.answer(wire, &model, left);
        let mut reply = response(
            refusal.status,
            Some("application/json"),
            &format!("req_scripted_{index:04}"),
            Body::from(refusal.body.to_string()),
        );
        for (name, value) in refusal.headers {
            if let Ok(value) = header::HeaderValue::from_str(&value) {
                reply.headers_mut().insert(name, value);
            }
        }
        return reply;
    }
    let decision = shared
        .router
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .route(&request);
    request.kind = decision.kind;
    request.scripted = decision.scripted;
    let model = request.model().unwrap_or("claude-scripted").to_owned();
    let summary = request.summary();
    let index = shared.recorder.push(request);
    if !decision.scripted {
        eprintln!("model server: answered with a fallback: {summary}");
    }
    let request_id = format!("req_scripted_{index:04}");
    let message_id = format!("msg_scripted_{index:04}");

    match decision.answer {
        Answer::Empty => response(200, None, &request_id, Body::empty()),
        Answer::Json { status, body } => response(
            status,
            Some("application/json"),
            &request_id,
            Body::from(body.to_string()),
        ),
        Answer::Turn {
            turn,
            streaming,
            wire,
        } => {
            if !turn.delay.is_zero() {
                tokio::time::sleep(turn.delay).await;
            }
            if turn.pause == Pause::Stall {
                released(&shared, release_seen).await;
            }
            if let Some(error) = &turn.error {
                let mut reply = response(
                    error.status,
                    Some("application/json"),
                    &request_id,
                    Body::from(
                        match wire {
                            Wire::Messages => sse::error_body(error),
                            Wire::Responses => responses::error_body(error),
                            Wire::Gemini => gemini::error_body(error.status, error),
                        }
                        .to_string(),
                    ),
                );
                // Ask the SDK not to retry; Claude Code may still retry on its own,
                // which is why error turns are sticky.
                reply
                    .headers_mut()
                    .insert("x-should-retry", header::HeaderValue::from_static("false"));
                return reply;
            }
            if !streaming {
                let message = match wire {
                    Wire::Gemini => gemini::response(&turn, &model),
                    Wire::Messages | Wire::Responses => sse::message(&turn, &model, &message_id),
                };
                return response(
                    200,
                    Some("application/json"),
                    &request_id,
                    Body::from(message.to_string()),
                );
            }
            let encoded = match wire {
                Wire::Messages => sse::stream(&turn, &model, &message_id),
                Wire::Responses => {
                    responses::stream(&turn, &model, &format!("resp_scripted_{index:04}"))
                }
                Wire::Gemini => gemini::stream(&turn, &model),
            };
            let (sender, receiver) = mpsc::channel::<Result<String, Infallible>>(16);
            let hold = turn.pause == Pause::Hold;
            let writer_shared = Arc::clone(&shared);
            tokio::spawn(async move {
                for chunk in encoded.head {
                    if sender.send(Ok(chunk)).await.is_err() {
                        return;
                    }
                }
                if hold {
                    released(&writer_shared, release_seen).await;
                }
                for chunk in encoded.tail {
                    if sender.send(Ok(chunk)).await.is_err() {
                        return;
                    }
                }
            });
            response(
                200,
                Some("text/event-stream"),
                &request_id,
                Body::from_stream(ReceiverStream::new(receiver)),
            )
        }
    }
}
