//! A pipe read by the owner's own polling of [`Events`](super::Events), not by a task of
//! its own (see [`ProcessCommand::read_stdout_inline`](super::ProcessCommand::read_stdout_inline)):
//! a proxy's hot path, a line in and a line out, then costs no task hand-off.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use tokio::io::AsyncRead;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::event::Stream;
use super::lines::{BatchSink, EventBatch, ReaderDone, ReaderEnd, read_lines};

/// The reader of one pipe, polled from [`Events`](super::Events).
pub(crate) struct InlineReader {
    /// Only ever reached through `&mut self` (`Mutex::get_mut`, no locking): the mutex
    /// makes the reader `Sync`, as `Events` and `Child` are.
    reader: Mutex<Pin<Box<dyn Future<Output = ()> + Send>>>,
    slot: Arc<Mutex<Option<EventBatch>>>,
    ended: bool,
}

impl std::fmt::Debug for InlineReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InlineReader")
            .field("ended", &self.ended)
            .finish_non_exhaustive()
    }
}

impl InlineReader {
    /// The reader of `pipe`, and how it ended, for the supervising task: it reports the
    /// child's exit only after its readers are done. Dropping the reader (with its
    /// `Events`) closes the pipe; the supervising task then hears [`ReaderEnd::Failed`].
    pub(crate) fn new<R>(
        pipe: R,
        stream: Stream,
        max_line: usize,
        exited: CancellationToken,
        abandon: CancellationToken,
    ) -> (Self, ReaderDone)
    where
        R: AsyncRead + Unpin + Send + 'static,
    {
        let slot = Arc::new(Mutex::new(None));
        let sink = BatchSink::Slot(Arc::clone(&slot));
        let (done_tx, done_rx) = oneshot::channel();
        let reader: Pin<Box<dyn Future<Output = ()> + Send>> = Box::pin(async move {
            let end = read_lines(pipe, stream, max_line, sink, exited, abandon).await;
            let _ = done_tx.send(end);
        });
        let done: ReaderDone = Box::pin(async move { done_rx.await.unwrap_or(ReaderEnd::Failed) });
        (
            InlineReader {
                reader: Mutex::new(reader),
                slot,
                ended: false,
            },
            done,
        )
    }

    /// The next batch the pipe gave; `None` once the reader has ended and handed over
    /// everything.
    pub(crate) fn poll_batch(&mut self, cx: &mut Context<'_>) -> Poll<Option<EventBatch>> {
        loop {
            let batch = self
                .slot
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take();
            if let Some(batch) = batch {
                return Poll::Ready(Some(batch));
            }
            if self.ended {
                return Poll::Ready(None);
            }
            let reader = self
                .reader
                .get_mut()
                .unwrap_or_else(PoisonError::into_inner);
            match reader.as_mut().poll(cx) {
                Poll::Ready(()) => self.ended = true,
                // Waiting on the pipe (its waker is registered) or on a full slot (taken
                // at the top of the loop, and the reader polled again).
                Poll::Pending => {
                    let full = self
                        .slot
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .is_some();
                    if !full {
                        return Poll::Pending;
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {

    use super::super::group_tests::a_held_stdout_is_abandoned;
    use super::super::tests::{all_events, exit_of, lines_of, sh, within};
    use super::super::{ExitStatus, Stream};

    #[tokio::test]
    async fn lines_come_in_order_and_the_exit_after_the_last() {
        let mut child = sh("echo out1; echo err1 >&2; echo out2; printf 'tail'")
            .read_stdout_inline()
            .spawn()
            .expect("spawn");
        let events = all_events(&mut child).await;
        assert_eq!(lines_of(&events, Stream::Stdout), ["out1", "out2", "tail"]);
        assert_eq!(lines_of(&events, Stream::Stderr), ["err1"]);
        assert_eq!(exit_of(&events).status, ExitStatus::Code(0));
        assert_eq!(child.next_event().await, None);
    }

    #[tokio::test]
    async fn floods_on_both_pipes_are_drained_together() {
        let mut child = sh("i=0; while [ $i -lt 3000 ]; do \
                              echo \"out $i\"; echo \"err $i\" >&2; i=$((i+1)); done")
        .read_stdout_inline()
        .event_capacity(8)
        .spawn()
        .expect("spawn");
        let events = all_events(&mut child).await;
        let stdout = lines_of(&events, Stream::Stdout);
        assert_eq!(stdout.len(), 3000);
        assert_eq!(stdout[2999], "out 2999");
        assert_eq!(lines_of(&events, Stream::Stderr).len(), 3000);
    }

    #[tokio::test]
    async fn a_pipe_held_outside_the_tree_is_abandoned() {
        a_held_stdout_is_abandoned(sh("echo $$; read line || :").read_stdout_inline()).await;
    }

    #[tokio::test]
    async fn dropping_the_events_closes_stdout_and_the_child_still_ends() {
        let mut child = sh("while :; do echo line; done")
            .read_stdout_inline()
            .spawn()
            .expect("spawn");
        drop(child.take_events());
        // Writing to a closed pipe ends the loop (SIGPIPE); nothing waits on a reader.
        let report = within("the exit", child.wait()).await;
        assert_ne!(report.status, ExitStatus::Code(0));
    }
}
