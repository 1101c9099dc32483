//! debussy's side of a reaper: starting it with its socket, the handshake that says
//! whether the program runs, and the two directions of the socket afterwards.

use std::io::{self, Read as _, Write as _};
use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;
use std::sync::Arc;
use std::time::Duration;

use command_fds::{CommandFdExt as _, FdMapping};
use tokio::io::AsyncReadExt as _;

use super::protocol::{MAX_LINE, Report, Request};
use super::serve::CONTROL_FD;
use crate::process::ProcessIdentity;

/// How long the reaper may take to start the program and say so. A hang guard: it
/// answers within milliseconds.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(30);

/// A started reaper and the program it runs.
#[derive(Debug)]
pub(crate) struct Launched {
    /// The reaper process (its pipes are the program's).
    pub(crate) reaper: tokio::process::Child,
    /// What the reaper reports.
    pub(crate) reports: Reports,
    /// Where requests go.
    pub(crate) requests: Requests,
    /// The program, as the reaper found it right after starting it.
    pub(crate) program: ProcessIdentity,
}

/// Why a reaper did not end up running the program.
#[derive(Debug)]
pub(crate) enum LaunchError {
    /// The reaper itself could not be started.
    Reaper(io::Error),
    /// The reaper could not start the program; the OS error it got.
    Program(io::Error),
    /// The reaper started but did not answer as a reaper of this version does.
    Silent(io::Error),
}

/// Start `command` — the reaper program with its arguments, and the environment,
/// working directory and standard streams meant for the program — and wait for the
/// reaper to say the program runs.
///
/// Blocks for the handshake (the reaper's start and the program's `exec`, milliseconds).
pub(crate) fn launch(mut command: tokio::process::Command) -> Result<Launched, LaunchError> {
    let (ours, theirs) = UnixStream::pair().map_err(LaunchError::Reaper)?;
    command
        .fd_mappings(vec![FdMapping {
            parent_fd: OwnedFd::from(theirs),
            child_fd: CONTROL_FD,
        }])
        .map_err(|collision| LaunchError::Reaper(io::Error::other(collision)))?;
    // Its own group: a signal meant for debussy's group (the terminal's Ctrl-C) never
    // reaches it.
    command.process_group(0);
    let spawned = command.spawn();
    // The command holds the reaper's end until dropped: without that, the reaper's death
    // could never be seen as the end of the socket.
    drop(command);
    let mut reaper = spawned.map_err(LaunchError::Reaper)?;
    let mut ours = ours;
    match handshake(&mut ours) {
        Ok(Report::Started { pid, start }) => {
            let requests = ours.try_clone().map_err(LaunchError::Silent)?;
            ours.set_nonblocking(true).map_err(LaunchError::Silent)?;
            let stream = tokio::net::UnixStream::from_std(ours).map_err(LaunchError::Silent)?;
            Ok(Launched {
                reaper,
                reports: Reports {
                    stream,
                    buffer: Vec::new(),
                },
                requests: Requests(Arc::new(requests)),
                program: ProcessIdentity { pid, start },
            })
        }
        Ok(Report::Failed { errno, message }) => Err(LaunchError::Program(if errno == 0 {
            io::Error::other(message)
        } else {
            io::Error::from_raw_os_error(errno)
        })),
        Ok(other) => {
            let _ = reaper.start_kill();
            Err(LaunchError::Silent(io::Error::other(format!(
                "it answered {other:?} before starting the program"
            ))))
        }
        Err(err) => {
            let _ = reaper.start_kill();
            Err(LaunchError::Silent(err))
        }
    }
}

/// Read the reaper's first line, one byte at a time so that nothing after it is taken
/// from the socket before the asynchronous reader owns it.
fn handshake(stream: &mut UnixStream) -> io::Result<Report> {
    stream.set_read_timeout(Some(HANDSHAKE_TIMEOUT))?;
    let mut line = Vec::new();
    let mut byte = [0_u8; 1];
    loop {
        match stream.read(&mut byte) {
            Ok(0) => {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "it exited without a word (not a reaper of this version?)",
                ));
            }
            Ok(_) if byte[0] == b'\n' => break,
            Ok(_) if line.len() < MAX_LINE => line.push(byte[0]),
            Ok(_) => return Err(io::Error::other("its first line is too long")),
            Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
            Err(err)
                if matches!(
                    err.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("it did not answer within {} s", HANDSHAKE_TIMEOUT.as_secs()),
                ));
            }
            Err(err) => return Err(err),
        }
    }
    stream.set_read_timeout(None)?;
    let text = String::from_utf8_lossy(&line);
    Report::parse(&text).ok_or_else(|| io::Error::other(format!("it answered {text:?}")))
}

/// The reports of one reaper, read as they come.
#[derive(Debug)]
pub(crate) struct Reports {
    stream: tokio::net::UnixStream,
    buffer: Vec<u8>,
}

impl Reports {
    /// The next report; `None` once the reaper is gone (or said something no reaper
    /// says, which is logged). Cancel-safe.
    pub(crate) async fn next(&mut self) -> Option<Report> {
        loop {
            if let Some(end) = self.buffer.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = self.buffer.drain(..=end).collect();
                let text = String::from_utf8_lossy(&line[..end]);
                let report = Report::parse(&text);
                if report.is_none() {
                    tracing::error!(line = %text, "the reaper sent a line no reaper sends");
                }
                return report;
            }
            if self.buffer.len() > MAX_LINE {
                tracing::error!("the reaper sent an over-long line");
                return None;
            }
            let mut chunk = [0_u8; 1024];
            match self.stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return None,
                Ok(read) => self.buffer.extend_from_slice(&chunk[..read]),
            }
        }
    }
}

/// Where requests to one reaper go. Cheap to clone; the socket closes (and the reaper
/// kills everything) once every clone and the [`Reports`] are dropped.
#[derive(Debug, Clone)]
pub(crate) struct Requests(Arc<UnixStream>);

impl Requests {
    /// Send `request`. False when the reaper is gone, or (never in practice: requests
    /// are a few bytes and the reaper reads them at once) its socket is full.
    pub(crate) fn send(&self, request: Request) -> bool {
        match (&*self.0).write_all(request.encode().as_bytes()) {
            Ok(()) => true,
            Err(err) => {
                tracing::debug!(?request, error = %err, "the reaper did not take a request");
                false
            }
        }
    }
}
