//! The reaper process itself: a debussy binary started with [`MARKER`] as its first
//! argument, between debussy and one program it runs.
//!
//! It makes itself a child subreaper, starts the program in a process group of its own
//! (with the reaper's standard input, output and error, which are the pipes debussy
//! reads), and then serves one socket — file descriptor 3, whose other end only debussy
//! holds — until nothing is left below it:
//!
//! - it reports the program's pid and start time, its exit, and what it left behind;
//! - it signals the program's group when debussy asks (the stop ladder), only while the
//!   program is not yet reaped, so its number cannot have been reused;
//! - when the program has exited, it gives the processes still below it the leak grace to
//!   exit by themselves, then kills them all, wherever they went;
//! - when the socket closes — debussy died, by SIGKILL or otherwise, or dropped the child
//!   — or it is sent SIGTERM, SIGINT, SIGHUP or SIGQUIT, it sends everything below it
//!   SIGTERM, gives it [`TERM_GRACE`] to exit, then kills what is left and exits: git
//!   removes its lock files on SIGTERM, where a SIGKILL mid-command leaves
//!   `.git/index.lock` or `.git/packed-refs.lock` behind and every later git command in
//!   the repository fails until someone deletes it;
//! - when debussy asks it to kill (the last step of a stop), it kills everything at once.
//!
//! It is single-threaded and synchronous: `poll` over the socket and a `signalfd` for
//! SIGCHLD, with every signal it handles blocked. The program is started with
//! `posix_spawnp` and an explicit empty signal mask and default dispositions (the mask
//! would otherwise be inherited, and a program with SIGINT blocked never stops on the
//! ladder's first step).
//!
//! [`MARKER`]: super::protocol::MARKER

use std::ffi::{CString, OsString};
use std::io::{Read as _, Write as _};
use std::os::fd::{AsFd as _, FromRawFd as _, OwnedFd};
use std::os::unix::ffi::{OsStrExt as _, OsStringExt as _};
use std::os::unix::net::UnixStream;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::spawn::{PosixSpawnAttr, PosixSpawnFileActions, PosixSpawnFlags, posix_spawnp};
use nix::sys::signal::{SigSet, Signal, killpg};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::Pid;

use super::protocol::{Invocation, MAX_LINE, Report, Request};
use super::tree;
use crate::process::{ExitStatus, procfs};

/// The descriptor debussy hands the reaper its end of the socket on.
pub(crate) const CONTROL_FD: i32 = 3;

/// The longest the reaper keeps killing what is below it before it gives up (a process
/// stuck in the kernel ignores SIGKILL until it leaves the kernel).
const KILL_BOUND: Duration = Duration::from_secs(5);

/// How long the reaper waits for SIGCHLD between two rounds of killing.
const KILL_ROUND: Duration = Duration::from_millis(10);

/// How long what is below the reaper has to exit after SIGTERM when debussy is gone,
/// before SIGKILL.
const TERM_GRACE: Duration = Duration::from_millis(500);

/// The signals the reaper handles itself, through its `signalfd`.
const HANDLED: [Signal; 5] = [
    Signal::SIGCHLD,
    Signal::SIGTERM,
    Signal::SIGINT,
    Signal::SIGHUP,
    Signal::SIGQUIT,
];

/// Serve as the reaper for the program named in `args` (the arguments after the
/// marker). Returns the reaper's exit code, which nobody reads: what matters is on the
/// socket.
pub(crate) fn serve(args: impl Iterator<Item = OsString>) -> ExitCode {
    let Some(control) = adopt_control() else {
        eprintln!(
            "debussy: `{}` is started by debussy itself, with its socket on descriptor {CONTROL_FD}",
            super::protocol::MARKER
        );
        return ExitCode::from(2);
    };
    let mut reaper = match Reaper::start(control, args) {
        Ok(reaper) => reaper,
        Err(code) => return code,
    };
    reaper.run();
    ExitCode::SUCCESS
}

/// Take ownership of descriptor 3, checking first that it is an open socket.
#[expect(
    unsafe_code,
    reason = "adopting an inherited descriptor has no safe API; this is the one place"
)]
fn adopt_control() -> Option<UnixStream> {
    let target = std::fs::read_link(format!("/proc/self/fd/{CONTROL_FD}")).ok()?;
    if !target.to_string_lossy().starts_with("socket:") {
        return None;
    }
    // SAFETY: descriptor 3 is open (its /proc entry names a socket) and nothing in this
    // process owns it: debussy mapped it there for the reaper, and this runs first in
    // `main`, before anything else could have opened or adopted a descriptor.
    let fd = unsafe { OwnedFd::from_raw_fd(CONTROL_FD) };
    // Inherited without close-on-exec; the program must not inherit it in turn.
    nix::fcntl::fcntl(
        &fd,
        nix::fcntl::FcntlArg::F_SETFD(nix::fcntl::FdFlag::FD_CLOEXEC),
    )
    .ok()?;
    Some(UnixStream::from(fd))
}

/// Whether the reaper has reaped the program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Program {
    /// Running (or a zombie not yet reaped: its pid is still reserved).
    Running,
    /// Reaped with this status; `reported` once debussy was told.
    Reaped { status: ExitStatus, reported: bool },
}

/// Whether any child is left to the reaper, after reaping those that exited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Children {
    /// At least one child is alive.
    Some,
    /// None: since the reaper is a subreaper, nothing at all is below it.
    None,
}

struct Reaper {
    control: UnixStream,
    signals: SignalFd,
    program_pid: Pid,
    program: Program,
    grace: Duration,
    received: Vec<u8>,
}

/// How the reaper's service ends.
enum Ending {
    /// Debussy is gone (the socket closed or broke) or the reaper was signalled: ask
    /// everything to exit, then kill what is left.
    Abandoned,
    /// Debussy asked for it: kill everything now.
    KillAll,
    /// The program and everything it started are gone by themselves.
    Empty,
    /// The leak grace has passed: kill what is left and report it.
    GraceOver,
}

impl Reaper {
    fn start(
        mut control: UnixStream,
        args: impl Iterator<Item = OsString>,
    ) -> Result<Reaper, ExitCode> {
        let mut fail = |errno: i32, message: String| {
            let _ = control.write_all(Report::Failed { errno, message }.encode().as_bytes());
            ExitCode::from(2)
        };
        let invocation = Invocation::parse(args).map_err(|message| fail(0, message))?;
        let mut mask = SigSet::empty();
        for signal in HANDLED {
            mask.add(signal);
        }
        mask.thread_block()
            .map_err(|errno| fail(errno as i32, format!("block signals: {errno}")))?;
        let signals = SignalFd::with_flags(&mask, SfdFlags::SFD_NONBLOCK | SfdFlags::SFD_CLOEXEC)
            .map_err(|errno| fail(errno as i32, format!("make a signalfd: {errno}")))?;
        nix::sys::prctl::set_child_subreaper(true)
            .map_err(|errno| fail(errno as i32, format!("become a child subreaper: {errno}")))?;
        let pid = match spawn_program(&invocation) {
            Ok(pid) => pid,
            Err((errno, message)) => return Err(fail(errno, message)),
        };
        // The program is this process's unreaped child: its stat is its own.
        let start = procfs::stat_of(pid).map_or(0, |stat| stat.start);
        release_stdio();
        let mut reaper = Reaper {
            control,
            signals,
            program_pid: Pid::from_raw(i32::try_from(pid).unwrap_or(i32::MAX)),
            program: Program::Running,
            grace: invocation.grace,
            received: Vec::new(),
        };
        if !reaper.send(&Report::Started { pid, start }) {
            reaper.terminate_all();
            return Err(ExitCode::from(2));
        }
        Ok(reaper)
    }

    fn run(&mut self) {
        let ending = self.serve();
        match ending {
            Ending::Abandoned => self.terminate_all(),
            Ending::KillAll => self.kill_all(),
            Ending::Empty => {}
            Ending::GraceOver => {
                let me = std::process::id();
                let left = tree::descendants(me);
                self.kill_all();
                let group = self.program_pid.as_raw();
                let (in_group, escaped): (Vec<tree::Member>, Vec<tree::Member>) =
                    left.iter().partition(|member| member.pgrp == group);
                let report = Report::Leftover {
                    group: in_group.iter().map(|member| member.pid).collect(),
                    escaped: escaped.iter().map(|member| member.pid).collect(),
                };
                if !left.is_empty() {
                    self.send(&report);
                }
            }
        }
        self.report_exit();
        self.send(&Report::Done);
    }

    /// Serve the socket and reap children until the service ends.
    fn serve(&mut self) -> Ending {
        let mut deadline: Option<Instant> = None;
        loop {
            if self.reap() == Children::None && deadline.is_some() {
                return Ending::Empty;
            }
            if matches!(
                self.program,
                Program::Reaped {
                    reported: false,
                    ..
                }
            ) {
                if !self.report_exit() {
                    return Ending::Abandoned;
                }
                deadline = Some(Instant::now() + self.grace);
                continue;
            }
            let timeout = match deadline {
                None => PollTimeout::NONE,
                Some(deadline) => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return Ending::GraceOver;
                    }
                    PollTimeout::try_from(left).unwrap_or(PollTimeout::MAX)
                }
            };
            let Ok((control_ready, signal_ready)) = self.wait(timeout) else {
                return Ending::Abandoned;
            };
            if signal_ready && self.drain_signals() {
                return Ending::Abandoned;
            }
            if control_ready && let Some(ending) = self.read_requests() {
                return ending;
            }
        }
    }

    /// Wait for the socket or a signal; which are ready. `Err` when polling fails.
    fn wait(&self, timeout: PollTimeout) -> Result<(bool, bool), ()> {
        let mut fds = [
            PollFd::new(self.control.as_fd(), PollFlags::POLLIN),
            PollFd::new(self.signals.as_fd(), PollFlags::POLLIN),
        ];
        match poll(&mut fds, timeout) {
            Ok(_) | Err(Errno::EINTR) => {}
            Err(_) => return Err(()),
        }
        let ready = |fd: &PollFd<'_>| fd.revents().is_some_and(|events| !events.is_empty());
        Ok((ready(&fds[0]), ready(&fds[1])))
    }

    /// Read what the signalfd holds. True when a signal asks the reaper to end.
    fn drain_signals(&mut self) -> bool {
        let mut end = false;
        while let Ok(Some(info)) = self.signals.read_signal() {
            let signal = i32::try_from(info.ssi_signo).ok();
            end |= signal.is_some_and(|signal| signal != Signal::SIGCHLD as i32);
        }
        end
    }

    /// Read and carry out debussy's requests. How the service ends when debussy asked
    /// for a kill, the socket closed or it carried something debussy never writes.
    fn read_requests(&mut self) -> Option<Ending> {
        let mut buf = [0_u8; 1024];
        let read = match self.control.read(&mut buf) {
            Ok(0) | Err(_) => return Some(Ending::Abandoned),
            Ok(read) => read,
        };
        self.received.extend_from_slice(&buf[..read]);
        while let Some(end) = self.received.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.received.drain(..=end).collect();
            let text = String::from_utf8_lossy(&line[..end]);
            match Request::parse(&text) {
                Some(Request::Signal(number)) => self.signal_program(number),
                Some(Request::Kill) => return Some(Ending::KillAll),
                None => return Some(Ending::Abandoned),
            }
        }
        (self.received.len() > MAX_LINE).then_some(Ending::Abandoned)
    }

    /// Signal the program's group, only while the program is unreaped: its pid, and so
    /// its group's number, cannot have been given to anyone else.
    fn signal_program(&self, number: i32) {
        if self.program == Program::Running
            && let Ok(signal) = Signal::try_from(number)
        {
            let _ = killpg(self.program_pid, signal);
        }
    }

    /// Reap every child that exited, noting the program's status.
    fn reap(&mut self) -> Children {
        loop {
            match waitpid(Pid::from_raw(-1), Some(WaitPidFlag::WNOHANG)) {
                Ok(WaitStatus::Exited(pid, code)) => self.reaped(pid, ExitStatus::Code(code)),
                Ok(WaitStatus::Signaled(pid, signal, _)) => {
                    self.reaped(pid, ExitStatus::Signal(signal as i32));
                }
                Ok(WaitStatus::StillAlive) => return Children::Some,
                Ok(_) | Err(Errno::EINTR) => {}
                Err(Errno::ECHILD) => return Children::None,
                Err(_) => return Children::Some,
            }
        }
    }

    fn reaped(&mut self, pid: Pid, status: ExitStatus) {
        if pid == self.program_pid && self.program == Program::Running {
            self.program = Program::Reaped {
                status,
                reported: false,
            };
        }
    }

    /// Tell debussy how the program ended, once. False when debussy is gone.
    fn report_exit(&mut self) -> bool {
        match self.program {
            Program::Reaped {
                status,
                reported: false,
            } => {
                self.program = Program::Reaped {
                    status,
                    reported: true,
                };
                self.send(&Report::Exited(status))
            }
            _ => true,
        }
    }

    /// Send SIGTERM to everything below the reaper and wait up to [`TERM_GRACE`] for it
    /// to exit, then kill what is left.
    fn terminate_all(&mut self) {
        let deadline = Instant::now() + TERM_GRACE;
        for member in tree::descendants(std::process::id()) {
            tree::signal_member(member, Signal::SIGTERM);
        }
        while self.reap() == Children::Some {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            self.wait_for_children(left.min(KILL_ROUND));
        }
        self.kill_all();
    }

    /// Wait up to `timeout` for SIGCHLD, and take the signals that came.
    fn wait_for_children(&mut self, timeout: Duration) {
        let timeout = PollTimeout::try_from(timeout).unwrap_or(PollTimeout::MAX);
        let mut fds = [PollFd::new(self.signals.as_fd(), PollFlags::POLLIN)];
        let _ = poll(&mut fds, timeout);
        while let Ok(Some(_)) = self.signals.read_signal() {}
    }

    /// Kill everything below the reaper, round after round, until nothing is left (or
    /// [`KILL_BOUND`] has passed).
    fn kill_all(&mut self) {
        let me = std::process::id();
        let deadline = Instant::now() + KILL_BOUND;
        loop {
            if self.reap() == Children::None {
                return;
            }
            for member in tree::descendants(me) {
                tree::signal_member(member, Signal::SIGKILL);
            }
            if Instant::now() >= deadline {
                return;
            }
            self.wait_for_children(KILL_ROUND);
        }
    }

    /// Write one report. False when debussy is gone.
    fn send(&mut self, report: &Report) -> bool {
        self.control.write_all(report.encode().as_bytes()).is_ok()
    }
}

/// Start the program as the leader of a new process group, with this process's
/// environment, directory and standard streams, an empty signal mask and the handled
/// signals (and SIGPIPE, which Rust ignores) at their defaults. Its pid, or the OS error
/// number and what it means.
fn spawn_program(invocation: &Invocation) -> Result<u32, (i32, String)> {
    let nul = |what: &str| (0, format!("the {what} contains a NUL byte"));
    let program = CString::new(invocation.program.as_bytes()).map_err(|_| nul("program"))?;
    let mut argv = vec![program.clone()];
    for arg in &invocation.args {
        argv.push(CString::new(arg.as_bytes()).map_err(|_| nul("argument"))?);
    }
    let envp = std::env::vars_os()
        .map(|(key, value)| {
            let mut pair = key.into_vec();
            pair.push(b'=');
            pair.extend(value.into_vec());
            CString::new(pair).map_err(|_| nul("environment"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let os = |what: &str, errno: Errno| (errno as i32, format!("{what}: {}", errno.desc()));
    let mut attr = PosixSpawnAttr::init().map_err(|errno| os("prepare the spawn", errno))?;
    let mut defaults = SigSet::empty();
    for signal in HANDLED.into_iter().chain([Signal::SIGPIPE]) {
        defaults.add(signal);
    }
    attr.set_sigmask(&SigSet::empty())
        .and_then(|()| attr.set_sigdefault(&defaults))
        .and_then(|()| attr.set_pgroup(Pid::from_raw(0)))
        .and_then(|()| {
            attr.set_flags(
                PosixSpawnFlags::POSIX_SPAWN_SETPGROUP
                    | PosixSpawnFlags::POSIX_SPAWN_SETSIGMASK
                    | PosixSpawnFlags::POSIX_SPAWN_SETSIGDEF,
            )
        })
        .map_err(|errno| os("prepare the spawn", errno))?;
    let actions = PosixSpawnFileActions::init().map_err(|errno| os("prepare the spawn", errno))?;
    let pid = posix_spawnp(&program, &actions, &attr, &argv, &envp).map_err(|errno| {
        (
            errno as i32,
            std::io::Error::from_raw_os_error(errno as i32).to_string(),
        )
    })?;
    u32::try_from(pid.as_raw()).map_err(|_| (0, format!("a negative pid {pid}")))
}

/// Give up the reaper's own copies of the program's standard streams, so that their
/// ends are held by the program alone: debussy sees end of file when the program (and
/// whatever inherited them) is done with them.
fn release_stdio() {
    if let Ok(null) = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")
    {
        let _ = nix::unistd::dup2_stdin(&null);
        let _ = nix::unistd::dup2_stdout(&null);
        let _ = nix::unistd::dup2_stderr(&null);
    }
}
