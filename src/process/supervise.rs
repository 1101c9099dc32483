//! The task that owns one child: it reads the reaper's reports, walks the stop ladder,
//! publishes the state, and reports what the child left behind.

use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

use super::child::{ProcessState, Request};
use super::event::{ExitReport, Leak, ProcessEvent, StopReport, Stream};
use super::exit::ExitStatus;
use super::group::GroupGuard;
use super::identity::ProcessIdentity;
use super::lines::{EventBatch, ReaderDone, ReaderEnd};
use super::reaper::{self, Report, Reports};
use super::stdin::StdinWriter;
use super::stop::{Effect, LadderRun, StopAction, StopLadder};

/// How long, past the leak grace, the reaper may take to kill what is left and say it is
/// done. A hang guard: killing takes milliseconds.
const REAPER_END: Duration = Duration::from_secs(10);

/// Everything the supervising task owns.
pub(crate) struct Supervisor {
    pub(crate) reaper: tokio::process::Child,
    pub(crate) reports: Reports,
    pub(crate) guard: GroupGuard,
    pub(crate) program: ProcessIdentity,
    pub(crate) requests: mpsc::UnboundedReceiver<Request>,
    pub(crate) state: watch::Sender<ProcessState>,
    pub(crate) ladder: StopLadder,
    pub(crate) stdin: Option<StdinWriter>,
    pub(crate) readers: Vec<(Stream, ReaderDone)>,
    pub(crate) events: mpsc::Sender<EventBatch>,
    pub(crate) exited: CancellationToken,
    pub(crate) abandon: CancellationToken,
    pub(crate) leak_grace: Duration,
}

impl Supervisor {
    /// Run until the child is reaped, its leftovers handled and its last event sent.
    pub(crate) async fn run(self) {
        let Supervisor {
            mut reaper,
            mut reports,
            guard,
            program,
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
        let pid = program.pid;
        let mut act = |action: StopAction| perform(&guard, stdin.as_ref(), action);
        let mut run: Option<LadderRun> = None;
        let mut deadline: Option<Instant> = None;
        let mut requests_open = true;

        let reported = loop {
            tokio::select! {
                report = reports.next() => match report {
                    Some(Report::Exited(status)) => break Some(status),
                    Some(other) => tracing::debug!(pid, ?other, "reaper report before the exit"),
                    None => break None,
                },
                request = requests.recv(), if requests_open => {
                    let now = Instant::now();
                    match request {
                        Some(Request::Stop) => {
                            if run.is_none() {
                                tracing::debug!(pid, "stopping child");
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
                            guard.send(reaper::Request::Signal(signal as i32));
                        }
                    }
                }
                () = sleep_until(deadline), if deadline.is_some() => {
                    if let Some(ladder_run) = run.as_mut() {
                        deadline = ladder_run.advance(Instant::now(), &mut act);
                    }
                }
            }
        };
        let reaped_at = Instant::now();
        let status = reported.unwrap_or_else(|| {
            // The reaper died without a word (killed by hand, say): the child may be
            // running on without it. Its group is killed if its leader is still the
            // process that was started; what had left the group cannot be found.
            tracing::error!(
                pid,
                "the reaper of this child is gone; killing the child's group"
            );
            program.signal_group(Signal::SIGKILL);
            ExitStatus::Unknown
        });
        let report = ExitReport {
            status,
            stop: run.map(|run| StopReport {
                actions: run.taken().to_vec(),
                took: reaped_at.saturating_duration_since(run.started()),
                escalated: run.escalated(),
            }),
        };
        tracing::debug!(pid, status = %report.status, "child exited");
        state.send_replace(ProcessState::Exited(report.clone()));
        if let Some(stdin) = &stdin {
            stdin.close();
        }
        exited.cancel();

        let leftover = if reported.is_some() {
            wait_until_done(&mut reports, leak_grace + REAPER_END).await
        } else {
            None
        };
        drop(reports);
        guard.release();
        if tokio::time::timeout(REAPER_END, reaper.wait())
            .await
            .is_err()
        {
            tracing::warn!(pid, "the reaper did not exit after its socket closed");
        }

        // Pipes close when their last writer exits, and the reaper has killed every
        // writer below it. What holds them still got a descriptor some other way (passed
        // over a socket to a process outside the tree): give it the grace too, then
        // abandon the pipe.
        let mut readers: Vec<(Stream, Option<ReaderEnd>, ReaderDone)> = readers
            .into_iter()
            .map(|(stream, handle)| (stream, None, handle))
            .collect();
        let _ = tokio::time::timeout(leak_grace, async {
            for (_, end, handle) in &mut readers {
                *end = Some(handle.await);
            }
        })
        .await;
        abandon.cancel();
        let mut open_pipes = Vec::new();
        for (stream, end, handle) in readers {
            let end = match end {
                Some(end) => end,
                None => handle.await,
            };
            if end == ReaderEnd::Abandoned {
                open_pipes.push(stream);
            }
        }
        let (group_pids, escaped_pids) = leftover.unwrap_or_default();
        if !group_pids.is_empty() || !escaped_pids.is_empty() || !open_pipes.is_empty() {
            let leak = Leak {
                group_pids,
                escaped_pids,
                open_pipes,
            };
            tracing::debug!(pid, "child left processes behind: {leak}");
            let _ = events.send(vec![ProcessEvent::Leaked(leak)]).await;
        }
        let _ = events.send(vec![ProcessEvent::Exited(report)]).await;
    }
}

/// Read the reaper's last reports until it is done (or gone, or `bound` has passed):
/// what it killed after the grace, in the child's group and outside it.
async fn wait_until_done(reports: &mut Reports, bound: Duration) -> Option<(Vec<u32>, Vec<u32>)> {
    let mut leftover = None;
    let read = async {
        while let Some(report) = reports.next().await {
            match report {
                Report::Leftover { group, escaped } => leftover = Some((group, escaped)),
                Report::Done => return,
                other => tracing::debug!(?other, "reaper report after the exit"),
            }
        }
    };
    if tokio::time::timeout(bound, read).await.is_err() {
        tracing::warn!("the reaper did not finish within {} s", bound.as_secs());
    }
    leftover
}

/// Carry out one stop action on the child.
fn perform(guard: &GroupGuard, stdin: Option<&StdinWriter>, action: StopAction) -> Effect {
    match action {
        StopAction::CloseStdin => match stdin {
            Some(stdin) if !stdin.is_closed() => {
                stdin.close();
                Effect::Done
            }
            _ => Effect::Skipped,
        },
        StopAction::Signal(signal) => {
            // A reaper already gone means the child is gone: the reports will say so.
            guard.send(reaper::Request::Signal(signal as i32));
            Effect::Done
        }
    }
}

async fn sleep_until(deadline: Option<Instant>) {
    if let Some(deadline) = deadline {
        tokio::time::sleep_until(deadline.into()).await;
    }
}
