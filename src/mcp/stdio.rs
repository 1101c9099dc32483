//! The supervisor's own stdin and stdout, the client's side of the proxy, as
//! non-blocking async streams.
//!
//! Tokio's `stdin()`/`stdout()` hand every read and write to a blocking thread, which
//! costs a thread hop per message on the proxy's hot path and can keep the runtime from
//! shutting down while a read is pending. MCP clients connect through pipes or socket
//! pairs, which epoll can watch directly, so those are registered with the reactor.
//! Anything else (a terminal, a file) falls back to Tokio's blocking handles: switching
//! a terminal to non-blocking mode would also switch the shell that shares it.

use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::pin::Pin;
use std::task::{Context, Poll};

use nix::fcntl::{FcntlArg, OFlag, fcntl};
use nix::sys::stat::{SFlag, fstat};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::unix::pipe;

/// The client's side: what the supervisor reads.
pub(crate) type Input = Pin<Box<dyn AsyncRead + Send>>;
/// The client's side: what the supervisor writes.
pub(crate) type Output = Pin<Box<dyn AsyncWrite + Send>>;

#[derive(Debug, PartialEq, Eq)]
enum FdKind {
    Fifo,
    Socket,
    Other,
}

fn kind(fd: &OwnedFd) -> FdKind {
    match fstat(fd.as_fd()) {
        Ok(stat) => {
            let format = SFlag::from_bits_truncate(stat.st_mode) & SFlag::S_IFMT;
            if format == SFlag::S_IFIFO {
                FdKind::Fifo
            } else if format == SFlag::S_IFSOCK {
                FdKind::Socket
            } else {
                FdKind::Other
            }
        }
        Err(_) => FdKind::Other,
    }
}

fn set_nonblocking(fd: &OwnedFd) -> io::Result<()> {
    let flags = fcntl(fd.as_fd(), FcntlArg::F_GETFL)?;
    let flags = OFlag::from_bits_truncate(flags) | OFlag::O_NONBLOCK;
    fcntl(fd.as_fd(), FcntlArg::F_SETFL(flags))?;
    Ok(())
}

/// The supervisor's stdin as an async reader.
pub(crate) fn input() -> Input {
    if let Ok(fd) = io::stdin().as_fd().try_clone_to_owned() {
        let receiver = match kind(&fd) {
            FdKind::Fifo => pipe::Receiver::from_owned_fd(fd).ok(),
            FdKind::Socket => set_nonblocking(&fd)
                .and_then(|()| pipe::Receiver::from_owned_fd_unchecked(fd))
                .ok(),
            FdKind::Other => None,
        };
        if let Some(receiver) = receiver {
            return Box::pin(receiver);
        }
    }
    Box::pin(tokio::io::stdin())
}

/// The supervisor's stdout as an async writer.
pub(crate) fn output() -> Output {
    if let Ok(fd) = io::stdout().as_fd().try_clone_to_owned() {
        let sender = match kind(&fd) {
            FdKind::Fifo => pipe::Sender::from_owned_fd(fd).ok(),
            FdKind::Socket => set_nonblocking(&fd)
                .and_then(|()| pipe::Sender::from_owned_fd_unchecked(fd))
                .ok(),
            FdKind::Other => None,
        };
        if let Some(sender) = sender {
            return Box::pin(PipeWriter(sender));
        }
    }
    Box::pin(tokio::io::stdout())
}

/// A pipe sender whose shutdown does nothing: the stdout descriptor is closed when the
/// process exits, and closing a duplicate early would not signal EOF anyway.
struct PipeWriter(pipe::Sender);

impl AsyncWrite for PipeWriter {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.0.is_write_vectored()
    }
}
