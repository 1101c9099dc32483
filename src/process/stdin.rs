//! The write side of a child's stdin, shared between its owner and the stop ladder.
//!
//! The owner writes (JSON-RPC lines for an MCP server); the stop ladder's first MCP step
//! closes it. Closing must never wait behind a write stuck on a full pipe (a child that
//! stopped reading), so every write races a cancellation token that `close` fires
//! first.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::process::ChildStdin;
use tokio::sync::{Mutex, MutexGuard};
use tokio_util::sync::CancellationToken;

use super::ProcessError;

/// A handle on a child's stdin. Cheap to clone; all clones write to the same pipe.
///
/// Writes are serialized: one `write_all` (or `try_write`) completes before the next
/// starts, so lines from different clones never interleave. Closing (by any clone, by
/// the stop ladder, or when the child exits) makes every pending and later write fail
/// with [`ProcessError::StdinClosed`].
#[derive(Debug, Clone)]
pub struct StdinWriter {
    inner: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    pipe: Mutex<Option<Pipe>>,
    closed: CancellationToken,
}

#[derive(Debug)]
struct Pipe {
    stdin: ChildStdin,
}

impl StdinWriter {
    pub(crate) fn new(stdin: ChildStdin) -> Self {
        StdinWriter {
            inner: Arc::new(Shared {
                pipe: Mutex::new(Some(Pipe { stdin })),
                closed: CancellationToken::new(),
            }),
        }
    }

    /// Write all of `bytes`.
    ///
    /// # Errors
    /// [`ProcessError::StdinClosed`] once stdin was closed, [`ProcessError::StdinWrite`]
    /// if the pipe broke (the child exited or closed its stdin).
    pub async fn write_all(&self, bytes: &[u8]) -> Result<(), ProcessError> {
        let closed = &self.inner.closed;
        let mut guard = self.lock().await?;
        let Some(pipe) = guard.as_mut() else {
            return Err(ProcessError::StdinClosed);
        };
        let result = tokio::select! {
            biased;
            () = closed.cancelled() => None,
            result = pipe.stdin.write_all(bytes) => Some(result),
        };
        self.settle(guard, result)
    }

    /// Write what the pipe takes of `bytes` now, without waiting: the number of bytes
    /// written, 0 when the pipe is full or another write holds it. A caller that gets
    /// less than all of `bytes` writes the rest with [`write_all`](Self::write_all),
    /// after anything it queued before.
    ///
    /// # Errors
    /// As for [`StdinWriter::write_all`].
    pub fn try_write(&self, bytes: &[u8]) -> Result<usize, ProcessError> {
        if self.inner.closed.is_cancelled() {
            return Err(ProcessError::StdinClosed);
        }
        let Ok(mut guard) = self.inner.pipe.try_lock() else {
            return Ok(0);
        };
        let Some(pipe) = guard.as_mut() else {
            return Err(ProcessError::StdinClosed);
        };
        let mut cx = Context::from_waker(Waker::noop());
        let mut written = 0;
        while written < bytes.len() {
            match Pin::new(&mut pipe.stdin).poll_write(&mut cx, &bytes[written..]) {
                Poll::Ready(Ok(0)) => {
                    return self
                        .settle(guard, Some(Err(std::io::ErrorKind::WriteZero.into())))
                        .map(|()| written);
                }
                Poll::Ready(Ok(n)) => written += n,
                Poll::Ready(Err(err)) if err.kind() == std::io::ErrorKind::Interrupted => {}
                Poll::Ready(Err(err)) => {
                    return self.settle(guard, Some(Err(err))).map(|()| written);
                }
                Poll::Pending => break,
            }
        }
        Ok(written)
    }

    /// Take the write lock, unless stdin is (or gets) closed first.
    async fn lock(&self) -> Result<MutexGuard<'_, Option<Pipe>>, ProcessError> {
        let mut guard = tokio::select! {
            biased;
            () = self.inner.closed.cancelled() => return Err(ProcessError::StdinClosed),
            guard = self.inner.pipe.lock() => guard,
        };
        if self.inner.closed.is_cancelled() {
            *guard = None;
            return Err(ProcessError::StdinClosed);
        }
        Ok(guard)
    }

    /// Turn a write's outcome into the caller's result. Cancelled (`None`): the pipe
    /// is dropped here, since `close` could not take the lock we held. Broken: it will
    /// not heal, so close and make later writes fail fast.
    fn settle(
        &self,
        mut guard: MutexGuard<'_, Option<Pipe>>,
        result: Option<std::io::Result<()>>,
    ) -> Result<(), ProcessError> {
        match result {
            Some(Ok(())) => Ok(()),
            None => {
                *guard = None;
                Err(ProcessError::StdinClosed)
            }
            Some(Err(source)) => {
                self.inner.closed.cancel();
                *guard = None;
                Err(ProcessError::StdinWrite { source })
            }
        }
    }

    /// Close stdin: the child reads end of file once no write holds the pipe, which is
    /// at once (a write in progress is abandoned; the child may have read part of it).
    /// Idempotent.
    pub fn close(&self) {
        self.inner.closed.cancel();
        if let Ok(mut guard) = self.inner.pipe.try_lock() {
            *guard = None;
        }
        // Otherwise the write holding the lock sees the cancellation and drops the pipe.
    }

    /// True once stdin was closed (by a caller, the stop ladder, or a broken pipe).
    #[must_use]
    pub fn is_closed(&self) -> bool {
        self.inner.closed.is_cancelled()
    }
}
