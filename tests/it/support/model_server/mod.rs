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
mod handler;
mod queries;
mod record;
mod refusal;
mod responses;
mod route;
mod scenario;
mod sse;

use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use axum::Router as AxumRouter;
use axum::extract::DefaultBodyLimit;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

pub use record::{RecordedRequest, RequestKind, WaitTimeout};
pub use refusal::{Refusal, unreachable_url};
pub use scenario::{Pause, Scenario, Turn, Usage};

use handler::{Shared, handle};
use record::Recorder;
use route::Router;

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
    /// A started server answering the main thread with `turns`, in order; failing to
    /// start fails the test.
    pub fn serving(turns: impl IntoIterator<Item = Turn>) -> Self {
        Self::start(Scenario::new().turns(turns)).expect("model server")
    }

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

    /// Lets every turn that is currently stalled or held go on. Turns that stall or
    /// hold later wait for the next call.
    pub fn release(&self) {
        self.shared
            .release
            .send_modify(|generation| *generation += 1);
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
