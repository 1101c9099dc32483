//! The task that owns one child: it reaps it, walks the stop ladder, publishes the
//! state, and checks for leaks after the exit.

use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use process_wrap::tokio::ChildWrapper;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::child::ProcessState;
use super::event::{ExitReport, Leak, ProcessEvent, StopReport, Stream};
use super::exit::ExitStatus;
use super::group::{Group, GroupGuard, Members};
use super::lines::{EventBatch, ReaderEnd};
use super::stdin::StdinWriter;
use super::stop::{Effect, LadderRun, StopAction, StopLadder};

/// How often the group is checked for stragglers while waiting out the leak grace.
const GROUP_POLL: Duration = Duration::from_millis(5);

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

/// Everything the supervising task owns.
pub(crate) struct Supervisor {
    pub(crate) child: Box<dyn ChildWrapper>,
    pub(crate) guard: GroupGuard,
    pub(crate) requests: mpsc::UnboundedReceiver<Request>,
    pub(crate) state: watch::Sender<ProcessState>,
    pub(crate) ladder: StopLadder,
    pub(crate) stdin: Option<StdinWriter>,
    pub(crate) readers: Vec<(Stream, JoinHandle<ReaderEnd>)>,
    pub(crate) events: mpsc::Sender<EventBatch>,
    pub(crate) exited: CancellationToken,
    pub(crate) abandon: CancellationToken,
    pub(crate) leak_grace: Duration,
}

impl Supervisor {
    /// Run until the child is reaped, its leaks handled and its last event sent.
    pub(crate) async fn run(self) {
        let Supervisor {
            mut child,
            guard,
            mut requests,
            state,
            ladder,
            stdin,
            readers,
            events,
            exited,
            abandon,
            leak_grace,
        } = self;
        let group = guard.group();
        let mut act = |action: StopAction| perform(group, stdin.as_ref(), action);
        let mut run: Option<LadderRun> = None;
        let mut deadline: Option<Instant> = None;
        let mut requests_open = true;

        let waited = {
            let mut wait = child.wait();
            loop {
                tokio::select! {
                    waited = &mut wait => break waited,
                    request = requests.recv(), if requests_open => {
                        let now = Instant::now();
                        match request {
                            Some(Request::Stop) => {
                                if run.is_none() {
                                    tracing::debug!(pgid = ?group, "stopping child");
                                    let mut ladder_run = LadderRun::new(&ladder, now);
                                    deadline = ladder_run.advance(now, &mut act);
                                    run = Some(ladder_run);
                                    state.send_replace(ProcessState::Stopping);
                                }
                            }
                            Some(Request::Kill) | None => {
                                // No handle left (`None`) means nobody can ever stop it.
                                requests_open &= request.is_some();
                                run.get_or_insert_with(|| LadderRun::new(&ladder, now))
                                    .escalate(&mut act);
                                deadline = None;
                                state.send_replace(ProcessState::Stopping);
                            }
                            Some(Request::Signal(signal)) => {
                                group.signal(signal);
                            }
                        }
                    }
                    () = sleep_until(deadline), if deadline.is_some() => {
                        if let Some(ladder_run) = run.as_mut() {
                            deadline = ladder_run.advance(Instant::now(), &mut act);
                        }
                    }
                }
            }
        };
        let reaped_at = Instant::now();
        let status = match waited {
            Ok(status) => ExitStatus::from(status),
            Err(err) => {
                tracing::error!(pgid = ?group, error = %err, "failed to collect the child's exit status");
                ExitStatus::Unknown
            }
        };
        drop(child);
        let report = ExitReport {
            status,
            stop: run.map(|run| StopReport {
                actions: run.taken().to_vec(),
                took: reaped_at.saturating_duration_since(run.started()),
                escalated: run.escalated(),
            }),
        };
        tracing::debug!(pgid = ?group, status = %report.status, "child exited");
        state.send_replace(ProcessState::Exited(report.clone()));
        if let Some(stdin) = &stdin {
            stdin.close();
        }
        exited.cancel();

        let group_pids = match wait_for_empty_group(group, reaped_at + leak_grace).await {
            Members::Empty => None,
            Members::Alive(pids) => {
                group.signal(Signal::SIGKILL);
                Some(pids)
            }
        };
        guard.release();

        // Pipes close when their last writer exits. Give writers killed just now (or
        // exiting by themselves) the grace too, then abandon pipes still held open.
        let mut readers: Vec<(Stream, Option<ReaderEnd>, JoinHandle<ReaderEnd>)> = readers
            .into_iter()
            .map(|(stream, handle)| (stream, None, handle))
            .collect();
        let _ = tokio::time::timeout(leak_grace, async {
            for (_, end, handle) in &mut readers {
                *end = Some(handle.await.unwrap_or(ReaderEnd::Failed));
            }
        })
        .await;
        abandon.cancel();
        let mut open_pipes = Vec::new();
        for (stream, end, handle) in readers {
            let end = match end {
                Some(end) => end,
                None => handle.await.unwrap_or(ReaderEnd::Failed),
            };
            if end == ReaderEnd::Abandoned {
                open_pipes.push(stream);
            }
        }
        if group_pids.is_some() || !open_pipes.is_empty() {
            let leak = Leak {
                group_pids: group_pids.unwrap_or_default(),
                open_pipes,
            };
            tracing::warn!(pgid = ?group, "child leaked: {leak}");
            let _ = events.send(vec![ProcessEvent::Leaked(leak)]).await;
        }
        let _ = events.send(vec![ProcessEvent::Exited(report)]).await;
    }
}

/// Carry out one stop action on the child.
fn perform(group: Group, stdin: Option<&StdinWriter>, action: StopAction) -> Effect {
    match action {
        StopAction::CloseStdin => match stdin {
            Some(stdin) if !stdin.is_closed() => {
                stdin.close();
                Effect::Done
            }
            _ => Effect::Skipped,
        },
        StopAction::Signal(signal) => {
            // A group already gone means the leader is exiting: the wait will see it.
            group.signal(signal);
            Effect::Done
        }
    }
}

async fn sleep_until(deadline: Option<Instant>) {
    if let Some(deadline) = deadline {
        tokio::time::sleep_until(deadline.into()).await;
    }
}

/// Give processes that the child started, and that were told to stop along with it,
/// until `deadline` to exit. There is no way to wait on processes that are not our
/// children, so this polls; with no stragglers (the usual case) it returns at once.
async fn wait_for_empty_group(group: Group, deadline: Instant) -> Members {
    loop {
        let members = group.members();
        if members == Members::Empty || Instant::now() >= deadline {
            return members;
        }
        tokio::time::sleep(GROUP_POLL).await;
    }
}
