//! The server itself: started on an ephemeral port in a thread of its own, stopped when
//! dropped (see the theory of operation in the [module](super) docs).

use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use axum::Router as AxumRouter;
use axum::extract::DefaultBodyLimit;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::handler::{Shared, handle};
use super::record::Recorder;
use super::route::Router;
use super::{Scenario, Turn};

/// A running scripted model server. Dropping it stops the server and drops every
/// open connection (a Claude Code process still talking to it sees the connection
/// close).
#[derive(Debug)]
pub struct ModelServer {
    addr: SocketAddr,
    pub(super) shared: Arc<Shared>,
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
        Self::listening(std::net::TcpListener::bind("127.0.0.1:0")?, scenario)
    }

    /// Starts a server that plays `scenario` on the reserved `port` of 127.0.0.1: an
    /// address the agent was told before anything listened there.
    pub fn start_at(port: &crate::support::ports::Port, scenario: Scenario) -> io::Result<Self> {
        Self::listening(
            std::net::TcpListener::bind(("127.0.0.1", port.number()))?,
            scenario,
        )
    }

    fn listening(listener: std::net::TcpListener, scenario: Scenario) -> io::Result<Self> {
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
