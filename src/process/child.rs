//! The handles on a running child: [`Child`] (the owner), [`ChildControl`] (a clonable
//! remote), [`Events`] (its output), and [`ProcessState`] (what it is doing).

use std::collections::VecDeque;
use std::task::{Context, Poll};

use nix::sys::signal::Signal;
use tokio::sync::{mpsc, watch};

use super::event::{ExitReport, ProcessEvent};
use super::exit::ExitStatus;
use super::identity::ProcessIdentity;
use super::inline::InlineReader;
use super::lines::EventBatch;
use super::stdin::StdinWriter;

/// What a handle asks of the supervising task.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Request {
    /// Walk the stop ladder (no-op if already stopping).
    Stop,
    /// SIGKILL now.
    Kill,
    /// Forward a signal to the group.
    Signal(Signal),
}

/// Where a child is in its life.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProcessState {
    /// Running; no stop requested.
    Running,
    /// A stop was requested and the ladder is being walked.
    Stopping,
    /// Exited and reaped.
    Exited(ExitReport),
}

impl ProcessState {
    /// True until the child has been reaped (running or stopping).
    #[must_use]
    pub fn is_running(&self) -> bool {
        !self.is_exited()
    }

    /// True while a stop is in progress.
    #[must_use]
    pub fn is_stopping(&self) -> bool {
        matches!(self, ProcessState::Stopping)
    }

    /// True once the child was reaped.
    #[must_use]
    pub fn is_exited(&self) -> bool {
        matches!(self, ProcessState::Exited(_))
    }

    /// The exit record, once exited.
    #[must_use]
    pub fn exit_report(&self) -> Option<&ExitReport> {
        match self {
            ProcessState::Exited(report) => Some(report),
            _ => None,
        }
    }
}

/// A clonable remote control for a child. It does not own the child: dropping every
/// control changes nothing; dropping the [`Child`] kills it.
///
/// All methods are safe to call at any time, from any task, any number of times; after
/// the child exited they do nothing and the waiting ones return the stored report.
#[derive(Debug, Clone)]
pub struct ChildControl {
    identity: ProcessIdentity,
    requests: mpsc::UnboundedSender<Request>,
    state: watch::Receiver<ProcessState>,
}

impl ChildControl {
    pub(crate) fn new(
        identity: ProcessIdentity,
        requests: mpsc::UnboundedSender<Request>,
        state: watch::Receiver<ProcessState>,
    ) -> Self {
        ChildControl {
            identity,
            requests,
            state,
        }
    }

    /// The child's pid, which is also its process group id.
    #[must_use]
    pub fn pid(&self) -> u32 {
        self.identity.pid
    }

    /// The child's pid and start time: what to record to find it again after debussy
    /// itself is gone, without mistaking another process that got the same number.
    #[must_use]
    pub fn identity(&self) -> ProcessIdentity {
        self.identity
    }

    /// What the child is doing now.
    #[must_use]
    pub fn state(&self) -> ProcessState {
        self.state.borrow().clone()
    }

    /// True until the child has been reaped.
    #[must_use]
    pub fn is_running(&self) -> bool {
        self.state.borrow().is_running()
    }

    /// The exit record, once the child was reaped.
    #[must_use]
    pub fn exit_report(&self) -> Option<ExitReport> {
        self.state.borrow().exit_report().cloned()
    }

    /// Start the stop ladder without waiting. Idempotent: a stop already in progress
    /// continues as it was (use [`kill`](Self::kill) to escalate).
    pub fn request_stop(&self) {
        let _ = self.requests.send(Request::Stop);
    }

    /// Stop the child through its ladder and wait until it is reaped.
    ///
    /// Idempotent: concurrent and later calls wait for the same stop and return the
    /// same report. Cancelling the returned future does not cancel the stop.
    pub async fn stop(&self) -> ExitReport {
        self.request_stop();
        self.wait().await
    }

    /// Send SIGKILL to the group now, cutting short any ladder in progress, without
    /// waiting. What the child started outside its group is killed once the child is
    /// reaped and the leak grace has passed.
    pub fn request_kill(&self) {
        let _ = self.requests.send(Request::Kill);
    }

    /// Send SIGKILL to the group now and wait until the child is reaped.
    pub async fn kill(&self) -> ExitReport {
        self.request_kill();
        self.wait().await
    }

    /// Send `signal` to the child's whole process group (e.g. SIGSTOP/SIGCONT for job
    /// control). Ignored once the child was reaped, so a reused pid is never hit: the
    /// signal goes through the child's reaper, its parent, which sends it only while the
    /// child is unreaped.
    pub fn signal(&self, signal: Signal) {
        let _ = self.requests.send(Request::Signal(signal));
    }

    /// Wait until the child is reaped, and return how it ended. Cancel-safe.
    ///
    /// This returns as soon as the child is reaped, independently of its events: the
    /// last output lines and [`ProcessEvent::Exited`] may still be on their way (after
    /// the leak check). Read events until `Exited` to see all the output.
    pub async fn wait(&self) -> ExitReport {
        let mut state = self.state.clone();
        let exited = state.wait_for(ProcessState::is_exited).await;
        match exited.as_deref().map(ProcessState::exit_report) {
            Ok(Some(report)) => report.clone(),
            // The supervising task is gone without a report: the runtime is shutting
            // down, and dropping it closed the reaper's socket, so the reaper killed
            // the child and everything below it.
            _ => ExitReport {
                status: ExitStatus::Unknown,
                stop: None,
            },
        }
    }
}

/// The receiving end of a child's [`ProcessEvent`]s.
#[derive(Debug)]
pub struct Events {
    rx: mpsc::Receiver<EventBatch>,
    /// Stdout, when the owner's polling reads it (see
    /// [`ProcessCommand::read_stdout_inline`](super::ProcessCommand::read_stdout_inline)).
    inline: Option<InlineReader>,
    pending: VecDeque<ProcessEvent>,
}

impl Events {
    pub(crate) fn new(rx: mpsc::Receiver<EventBatch>, inline: Option<InlineReader>) -> Self {
        Events {
            rx,
            inline,
            pending: VecDeque::new(),
        }
    }

    /// The next event; `None` after [`ProcessEvent::Exited`] has been received.
    /// Cancel-safe: use it in `select!`.
    pub async fn recv(&mut self) -> Option<ProcessEvent> {
        std::future::poll_fn(|cx| self.poll_recv(cx)).await
    }

    fn poll_recv(&mut self, cx: &mut Context<'_>) -> Poll<Option<ProcessEvent>> {
        loop {
            if let Some(event) = self.pending.pop_front() {
                return Poll::Ready(Some(event));
            }
            // Stdout read inline comes first: the exit is only sent on the channel once
            // that reader has ended and handed over its last batch.
            if let Some(inline) = &mut self.inline {
                match inline.poll_batch(cx) {
                    Poll::Ready(Some(batch)) => {
                        self.pending.extend(batch);
                        continue;
                    }
                    Poll::Ready(None) => self.inline = None,
                    Poll::Pending => {}
                }
            }
            match self.rx.poll_recv(cx) {
                Poll::Ready(Some(batch)) => self.pending.extend(batch),
                Poll::Ready(None) => return Poll::Ready(None),
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

/// A running child, owned. See the [module docs](super) for the whole picture.
///
/// **Drop**: has the child's whole process group killed (SIGKILL) if it has not exited
/// yet, and everything else it started once it is reaped; should the runtime never run
/// the supervising task again, dropping that task closes the reaper's socket and the
/// reaper kills everything at once. To end a child gracefully, call
/// [`stop`](Self::stop) first.
#[derive(Debug)]
pub struct Child {
    control: ChildControl,
    events: Option<Events>,
    stdin: Option<StdinWriter>,
}

impl Child {
    pub(crate) fn new(control: ChildControl, events: Events, stdin: Option<StdinWriter>) -> Self {
        Child {
            control,
            events: Some(events),
            stdin,
        }
    }

    /// The child's pid, which is also its process group id.
    #[must_use]
    pub fn pid(&self) -> u32 {
        self.control.pid()
    }

    /// See [`ChildControl::identity`].
    #[must_use]
    pub fn identity(&self) -> ProcessIdentity {
        self.control.identity()
    }

    /// A clonable remote control for this child.
    #[must_use]
    pub fn control(&self) -> ChildControl {
        self.control.clone()
    }

    /// The child's stdin, when it was spawned with [`StdinMode::Piped`](super::StdinMode::Piped).
    #[must_use]
    pub fn stdin(&self) -> Option<StdinWriter> {
        self.stdin.clone()
    }

    /// Take the event receiver, to read events in another task. After this,
    /// [`next_event`](Self::next_event) returns `None`.
    pub fn take_events(&mut self) -> Option<Events> {
        self.events.take()
    }

    /// The next event (see [`ProcessEvent`]); `None` after `Exited`, or if the events
    /// were taken. Cancel-safe.
    pub async fn next_event(&mut self) -> Option<ProcessEvent> {
        match &mut self.events {
            Some(events) => events.recv().await,
            None => None,
        }
    }

    /// What the child is doing now.
    #[must_use]
    pub fn state(&self) -> ProcessState {
        self.control.state()
    }

    /// True until the child has been reaped.
    #[must_use]
    pub fn is_running(&self) -> bool {
        self.control.is_running()
    }

    /// See [`ChildControl::request_stop`].
    pub fn request_stop(&self) {
        self.control.request_stop();
    }

    /// See [`ChildControl::stop`].
    pub async fn stop(&self) -> ExitReport {
        self.control.stop().await
    }

    /// See [`ChildControl::kill`].
    pub async fn kill(&self) -> ExitReport {
        self.control.kill().await
    }

    /// See [`ChildControl::signal`].
    pub fn signal(&self, signal: Signal) {
        self.control.signal(signal);
    }

    /// See [`ChildControl::wait`].
    pub async fn wait(&self) -> ExitReport {
        self.control.wait().await
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        if self.control.is_running() {
            self.control.request_kill();
        }
    }
}
