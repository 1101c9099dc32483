//! Running a front: build its state around a back end, start the first server, and
//! drive the loop until the client goes away, the server ends the session, or a
//! [`Shutdown`] asks. Shared by `supervise` and `bridge`.

use std::time::Instant;

use serde_json::json;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc;

use super::audit::{AuditEvent, AuditLog};
use super::coordinator::Restarts;
use super::handshake::Handshake;
use super::learned::Learned;
use super::routing::Routing;
use super::settings::Settings;
use super::state::{Control, Front, Idle, SuperviseOutcome};
use super::stderr_tail::StderrTail;
use super::tools::ToolView;
use super::watch;
use crate::mcp::backend::Backend;
use crate::mcp::jsonrpc::framing::LineReader;
use crate::mcp::jsonrpc::line_writer::LineWriter;
use crate::mcp::supervise::McpError;

/// A handle to stop a running supervisor or bridge, as SIGINT/SIGTERM do, or to restart
/// its server, as SIGHUP does.
#[derive(Debug, Clone)]
pub struct Shutdown(mpsc::UnboundedSender<Control>);

impl Shutdown {
    /// Ask the front to stop its server gracefully and return (`signal` names the cause
    /// in logs). A second call kills the server at once.
    pub fn request(&self, signal: &'static str) {
        let _ = self.0.send(Control::Shutdown(signal));
    }

    /// Ask the front to restart its server, as SIGHUP does (`signal` names the cause in
    /// the audit log and logs).
    pub fn restart(&self, signal: &'static str) {
        let _ = self.0.send(Control::Restart(signal));
    }
}

impl crate::mcp::signals::SignalTarget for Shutdown {
    fn stop(&self, signal: &'static str) {
        self.request(signal);
    }

    fn restart(&self, signal: &'static str) {
        Shutdown::restart(self, signal);
    }
}

/// What the front reads the client's messages from: the process's stdin, or a test's
/// end of a pipe.
pub trait ClientInput: AsyncRead + Send + Unpin + 'static {}
impl<T: AsyncRead + Send + Unpin + 'static> ClientInput for T {}

/// What the front writes the client's messages to.
pub trait ClientOutput: AsyncWrite + Send + Unpin + 'static {}
impl<T: AsyncWrite + Send + Unpin + 'static> ClientOutput for T {}

/// Serve the client on `input`/`output` through `backend` until the front ends.
///
/// # Errors
/// A watch path cannot be watched, or the first server cannot be started at all.
pub(crate) async fn serve(
    opts: Settings,
    backend: impl Backend,
    mut audit: AuditLog,
    input: impl ClientInput,
    output: impl ClientOutput,
    on_start: impl FnOnce(Shutdown),
) -> Result<SuperviseOutcome, McpError> {
    let (control_tx, control_rx) = mpsc::unbounded_channel();
    let _watcher = if opts.watch.is_empty() {
        None
    } else {
        match watch::spawn_watcher(&opts.watch, opts.debounce, control_tx.clone()) {
            Ok(watcher) => Some(watcher),
            Err(err) => {
                let _ = audit.record(
                    AuditEvent::SupervisorExiting,
                    None,
                    None,
                    json!({"reason": err}),
                );
                return Err(McpError::Watch(err));
            }
        }
    };
    let client = LineReader::new(input, opts.limits.max_line_length);
    let max_queued = opts
        .limits
        .buffer_max_bytes
        .max(opts.limits.max_line_length);
    let to_client = LineWriter::new(Box::pin(output), max_queued);
    let limits = &opts.limits;
    let learned = if opts.remember {
        Learned::load(&opts.state_dir)
    } else {
        Learned::default()
    };
    let mut front = Front {
        routing: Routing::new(limits.buffer_max_messages, limits.buffer_max_bytes),
        restarts: Restarts::new(crate::restart::RestartPolicy::new(opts.restart.clone())),
        tools: ToolView::default(),
        opts,
        backend,
        handshake: Handshake::default(),
        stateless: super::stateless::Stateless::default(),
        learned,
        audit: Some(audit),
        to_client,
        control_tx: control_tx.clone(),
        slot: None,
        idle: Idle::No,
        stderr_tail: StderrTail::default(),
        started: Instant::now(),
        shutdown: None,
        done: None,
    };
    if let Err(err) = front.start_server("initial start") {
        front.record(
            AuditEvent::SupervisorExiting,
            json!({"reason": "the server could not be started"}),
        );
        front.sync_audit();
        return Err(McpError::Start(err));
    }
    on_start(Shutdown(control_tx));
    Ok(front.run(client, control_rx).await)
}
