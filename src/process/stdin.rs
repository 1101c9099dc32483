//! The write side of a child's stdin, shared between its owner and the stop ladder.
//!
//! The owner writes (JSON-RPC lines for an MCP server); the stop ladder's first MCP step
//! closes it. Closing must never wait behind a write stuck on a full pipe (a child that
//! stopped reading), so every write races a cancellation token that `close` fires
//! first.

use std::sync::Arc;

use tokio::io::AsyncWriteExt;
use tokio::process::ChildStdin;
use tokio::sync::{Mutex, MutexGuard};
use tokio_util::sync::CancellationToken;

use super::ProcessError;

/// A handle on a child's stdin. Cheap to clone; all clones write to the same pipe.
///
/// Writes are serialized: one `write_all` or `write_line` completes before the next
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
    /// Reused buffer so a line and its newline go out in one write.
    scratch: Vec<u8>,
}

impl StdinWriter {
    pub(crate) fn new(stdin: ChildStdin) -> Self {
        StdinWriter {
            inner: Arc::new(Shared {
                pipe: Mutex::new(Some(Pipe {
                    stdin,
                    scratch: Vec::new(),
                })),
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

    /// Write `line` followed by `\n`, in one write.
    ///
    /// # Errors
    /// As for [`StdinWriter::write_all`].
    pub async fn write_line(&self, line: &[u8]) -> Result<(), ProcessError> {
        let closed = &self.inner.closed;
        let mut guard = self.lock().await?;
        let Some(Pipe { stdin, scratch }) = guard.as_mut() else {
            return Err(ProcessError::StdinClosed);
        };
        scratch.clear();
        scratch.extend_from_slice(line);
        scratch.push(b'\n');
        let result = tokio::select! {
            biased;
            () = closed.cancelled() => None,
            result = stdin.write_all(scratch) => Some(result),
        };
        self.settle(guard, result)
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
