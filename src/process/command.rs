//! What to run and how: the program, its arguments, environment and stdio, the line
//! cap and the stop ladder; and turning that into a running [`Child`].

use std::ffi::{OsStr, OsString};
use std::io::{self, BufRead};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

use super::ProcessError;
use super::child::{Child, ChildControl, Events, ProcessState};
use super::event::Stream;
use super::group::{GroupGuard, Starting};
use super::inline::InlineReader;
use super::lines::{BatchSink, DEFAULT_MAX_LINE, ReaderDone, spawn_reader};
use super::reaper::{self, LaunchError, Launched};
use super::role::Role;
use super::stdin::StdinWriter;
use super::stop::StopLadder;
use super::supervise::Supervisor;

/// Default wait, after the child exits, for its group to empty and its pipes to close
/// before calling it a leak.
const DEFAULT_LEAK_GRACE: Duration = Duration::from_millis(200);

/// Default number of reads' worth of events buffered before the readers (and so the
/// child) wait: at most 64 × 64 KiB of output, plus any long line being completed.
const DEFAULT_EVENT_CAPACITY: usize = 64;

/// What the child's stdin is.
#[derive(Clone, PartialEq, Eq, Default)]
pub enum StdinMode {
    /// `/dev/null`: the child reads end of file at once.
    #[default]
    Null,
    /// These bytes, then end of file (a headless agent's prompt: no argv length limit).
    /// Written by a background task, so a child that never reads cannot block anyone.
    Payload(Vec<u8>),
    /// A pipe kept open for [`Child::stdin`] (an MCP server's JSON-RPC input).
    Piped,
}

impl std::fmt::Debug for StdinMode {
    /// A payload is shown by size: it may be a whole prompt.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StdinMode::Null => f.write_str("Null"),
            StdinMode::Payload(bytes) => write!(f, "Payload({} bytes)", bytes.len()),
            StdinMode::Piped => f.write_str("Piped"),
        }
    }
}

/// Who reads the child's stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum StdoutReader {
    /// A task of its own, whether or not the owner polls [`Events`].
    #[default]
    Task,
    /// The owner's polling of [`Events`] (see [`ProcessCommand::read_stdout_inline`]).
    Inline,
}

/// A program to run as a supervised child. Build it, then [`spawn`](Self::spawn) it as
/// many times as needed (a restarted MCP server is the same command again).
#[derive(Debug, Clone)]
pub struct ProcessCommand {
    program: OsString,
    args: Vec<OsString>,
    cwd: Option<PathBuf>,
    env: Vec<(OsString, Option<OsString>)>,
    env_clear: bool,
    stdin: StdinMode,
    inherit_stderr: bool,
    max_line: usize,
    ladder: StopLadder,
    leak_grace: Duration,
    event_capacity: usize,
    stdout_reader: StdoutReader,
    role: Role,
}

impl ProcessCommand {
    /// Run `program`, looked up on `PATH` unless it contains a `/`.
    pub fn new(program: impl AsRef<OsStr>) -> Self {
        ProcessCommand {
            program: program.as_ref().to_owned(),
            args: Vec::new(),
            cwd: None,
            env: Vec::new(),
            env_clear: false,
            stdin: StdinMode::Null,
            inherit_stderr: false,
            max_line: DEFAULT_MAX_LINE,
            ladder: StopLadder::default(),
            leak_grace: DEFAULT_LEAK_GRACE,
            event_capacity: DEFAULT_EVENT_CAPACITY,
            stdout_reader: StdoutReader::Task,
            role: Role::Other,
        }
    }

    /// Add one argument.
    #[must_use]
    pub fn arg(mut self, arg: impl AsRef<OsStr>) -> Self {
        self.args.push(arg.as_ref().to_owned());
        self
    }

    /// Add arguments.
    #[must_use]
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.args
            .extend(args.into_iter().map(|arg| arg.as_ref().to_owned()));
        self
    }

    /// What the child is to the user (default [`Role::Other`]), for the words of a stop
    /// or a kill while it runs ([`super::busy`]).
    #[must_use]
    pub fn role(mut self, role: Role) -> Self {
        self.role = role;
        self
    }

    /// Run in this directory (default: debussy's own).
    #[must_use]
    pub fn current_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cwd = Some(dir.into());
        self
    }

    /// Set an environment variable for the child.
    #[must_use]
    pub fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Self {
        self.env
            .push((key.as_ref().to_owned(), Some(value.as_ref().to_owned())));
        self
    }

    /// Set several environment variables for the child.
    #[must_use]
    pub fn envs<I, K, V>(mut self, vars: I) -> Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<OsStr>,
        V: AsRef<OsStr>,
    {
        for (key, value) in vars {
            self = self.env(key, value);
        }
        self
    }

    /// Remove an environment variable from the child's environment.
    #[must_use]
    pub fn env_remove(mut self, key: impl AsRef<OsStr>) -> Self {
        self.env.push((key.as_ref().to_owned(), None));
        self
    }

    /// Start from an empty environment instead of debussy's (variables set with
    /// [`env`](Self::env) are still applied).
    #[must_use]
    pub fn env_clear(mut self) -> Self {
        self.env_clear = true;
        self
    }

    /// What the child's stdin is (default [`StdinMode::Null`]).
    #[must_use]
    pub fn stdin(mut self, mode: StdinMode) -> Self {
        self.stdin = mode;
        self
    }

    /// Write `payload` to the child's stdin, then close it.
    #[must_use]
    pub fn stdin_payload(self, payload: impl Into<Vec<u8>>) -> Self {
        self.stdin(StdinMode::Payload(payload.into()))
    }

    /// Keep the child's stdin open as a pipe, for [`Child::stdin`].
    #[must_use]
    pub fn stdin_piped(self) -> Self {
        self.stdin(StdinMode::Piped)
    }

    /// Let the child write to debussy's own stderr instead of reading it as events.
    /// (For an MCP server whose logs should reach the client's log as they are.)
    #[must_use]
    pub fn inherit_stderr(mut self) -> Self {
        self.inherit_stderr = true;
        self
    }

    /// Longest line accepted, in bytes, excluding the newline (default 16 MiB). Longer
    /// lines are reported as [`super::ProcessEvent::LineTooLong`] and skipped.
    #[must_use]
    pub fn max_line_bytes(mut self, max: usize) -> Self {
        self.max_line = max.max(1);
        self
    }

    /// How [`Child::stop`] ends the child (default: [`StopLadder::default`]).
    #[must_use]
    pub fn stop_ladder(mut self, ladder: StopLadder) -> Self {
        self.ladder = ladder;
        self
    }

    /// How long after the child's exit its group may still have live members, or its
    /// pipes stay open, before that is reported as a leak (default 200 ms).
    #[must_use]
    pub fn leak_grace(mut self, grace: Duration) -> Self {
        self.leak_grace = grace;
        self
    }

    /// How many reads' worth of events (each one read of at most 64 KiB from a pipe,
    /// however many lines it completed) are buffered for the consumer before the
    /// child's output waits (default 64).
    #[must_use]
    pub fn event_capacity(mut self, capacity: usize) -> Self {
        self.event_capacity = capacity.max(1);
        self
    }

    /// Read stdout from the owner's own polling of [`Events`] instead of a task of its
    /// own: a line reaches the owner without a task hand-off (an MCP proxy's hot path).
    /// The owner must keep polling [`Events::recv`] until the exit: while it does not,
    /// the child's stdout waits in the pipe, and dropping the `Events` closes it.
    #[must_use]
    pub fn read_stdout_inline(mut self) -> Self {
        self.stdout_reader = StdoutReader::Inline;
        self
    }

    /// The program as given.
    #[must_use]
    pub fn program(&self) -> &OsStr {
        &self.program
    }

    /// The arguments as given.
    #[must_use]
    pub fn get_args(&self) -> &[OsString] {
        &self.args
    }

    /// The command line as a person would type it, for logs and messages.
    #[must_use]
    pub fn display(&self) -> String {
        std::iter::once(&self.program)
            .chain(&self.args)
            .map(|word| shell_quote(&word.to_string_lossy()))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// Start the program. Must be called within a Tokio runtime.
    ///
    /// The program runs below a reaper of its own (see the [module docs](super)): it
    /// leads its own process group, and everything it starts — in that group or not —
    /// is killed when it ends or when debussy dies. Blocks for as long as the reaper
    /// takes to start the program and say so (milliseconds).
    ///
    /// # Errors
    /// A [`ProcessError`] saying what was looked for when the program cannot be
    /// started: not found (with the `PATH` searched), not executable, a missing `#!`
    /// interpreter, a missing working directory; or the reaper it runs below could not
    /// be started.
    pub fn spawn(&self) -> Result<Child, ProcessError> {
        if tokio::runtime::Handle::try_current().is_err() {
            return Err(ProcessError::Spawn {
                program: self.program_name(),
                source: io::Error::other("no Tokio runtime is running on this thread"),
            });
        }
        let Some(reaper_program) = reaper::program() else {
            return Err(ProcessError::NoReaper {
                program: self.program_name(),
            });
        };
        let mut command = tokio::process::Command::new(&reaper_program);
        command.arg0("debussy-reaper").args(reaper::arguments(
            self.leak_grace,
            &self.program,
            &self.args,
        ));
        if let Some(cwd) = &self.cwd {
            command.current_dir(cwd);
        }
        if self.env_clear {
            command.env_clear();
        }
        for (key, value) in &self.env {
            match value {
                Some(value) => command.env(key, value),
                None => command.env_remove(key),
            };
        }
        command.stdin(match self.stdin {
            StdinMode::Null => Stdio::null(),
            StdinMode::Payload(_) | StdinMode::Piped => Stdio::piped(),
        });
        command.stdout(Stdio::piped());
        command.stderr(if self.inherit_stderr {
            Stdio::inherit()
        } else {
            Stdio::piped()
        });
        let starting = Starting::new(self.role.clone());
        let Launched {
            reaper: mut os_child,
            reports,
            requests,
            program,
        } = reaper::launch(command).map_err(|err| self.launch_error(err, &reaper_program))?;
        let pid = program.pid;
        let guard = GroupGuard::register(pid, requests, self.role.clone());
        drop(starting);
        tracing::debug!(pid, command = %self.display(), "started child");

        let (event_tx, event_rx) = mpsc::channel(self.event_capacity);
        let exited = CancellationToken::new();
        let abandon = CancellationToken::new();
        let mut readers: Vec<(Stream, ReaderDone)> = Vec::new();
        let mut inline = None;
        if let Some(stdout) = os_child.stdout.take() {
            let done = match self.stdout_reader {
                StdoutReader::Task => spawn_reader(
                    stdout,
                    Stream::Stdout,
                    self.max_line,
                    BatchSink::Channel(event_tx.clone()),
                    exited.clone(),
                    abandon.clone(),
                ),
                StdoutReader::Inline => {
                    let (reader, done) = InlineReader::new(
                        stdout,
                        Stream::Stdout,
                        self.max_line,
                        exited.clone(),
                        abandon.clone(),
                    );
                    inline = Some(reader);
                    done
                }
            };
            readers.push((Stream::Stdout, done));
        }
        if let Some(stderr) = os_child.stderr.take() {
            readers.push((
                Stream::Stderr,
                spawn_reader(
                    stderr,
                    Stream::Stderr,
                    self.max_line,
                    BatchSink::Channel(event_tx.clone()),
                    exited.clone(),
                    abandon.clone(),
                ),
            ));
        }
        let stdin = os_child.stdin.take().map(StdinWriter::new);
        if let (StdinMode::Payload(payload), Some(writer)) = (&self.stdin, &stdin) {
            let writer = writer.clone();
            let payload = payload.clone();
            tokio::spawn(async move {
                if let Err(err) = writer.write_all(&payload).await {
                    tracing::debug!(pid, error = %err, "stdin payload not fully written");
                }
                writer.close();
            });
        }

        let (request_tx, request_rx) = mpsc::unbounded_channel();
        let (state_tx, state_rx) = watch::channel(ProcessState::Running);
        tokio::spawn(
            Supervisor {
                reaper: os_child,
                reports,
                guard,
                program,
                requests: request_rx,
                state: state_tx,
                ladder: self.ladder.clone(),
                stdin: stdin.clone(),
                readers,
                events: event_tx,
                exited,
                abandon,
                leak_grace: self.leak_grace,
            }
            .run(),
        );

        let stdin = match self.stdin {
            StdinMode::Piped => stdin,
            StdinMode::Null | StdinMode::Payload(_) => None,
        };
        Ok(Child::new(
            ChildControl::new(program, request_tx, state_rx),
            Events::new(event_rx, inline),
            stdin,
        ))
    }

    /// Explain why the reaper did not end up running the program.
    fn launch_error(&self, err: LaunchError, reaper_program: &Path) -> ProcessError {
        match err {
            LaunchError::Program(err) => self.spawn_error(err),
            LaunchError::Reaper(err) | LaunchError::Silent(err) => {
                if let Some(cwd) = &self.cwd
                    && !cwd.is_dir()
                {
                    return ProcessError::MissingCwd {
                        program: self.program_name(),
                        cwd: cwd.clone(),
                    };
                }
                ProcessError::Reaper {
                    program: self.program_name(),
                    reaper: reaper_program.to_owned(),
                    source: err,
                }
            }
        }
    }

    fn program_name(&self) -> String {
        self.program.to_string_lossy().into_owned()
    }

    /// Explain a spawn failure: what was looked for, and where.
    fn spawn_error(&self, err: io::Error) -> ProcessError {
        let program = self.program_name();
        if let Some(cwd) = &self.cwd
            && !cwd.is_dir()
        {
            return ProcessError::MissingCwd {
                program,
                cwd: cwd.clone(),
            };
        }
        let found = self.locate();
        match err.kind() {
            io::ErrorKind::NotFound => match found {
                Some(path) if path.is_file() => match interpreter(&path) {
                    Some(interpreter) => ProcessError::InterpreterNotFound {
                        program,
                        path,
                        interpreter,
                    },
                    None => ProcessError::Spawn {
                        program,
                        source: err,
                    },
                },
                _ => ProcessError::ProgramNotFound {
                    searched: self.searched(),
                    program,
                },
            },
            io::ErrorKind::PermissionDenied => ProcessError::NotExecutable {
                path: found.unwrap_or_else(|| PathBuf::from(&self.program)),
                program,
            },
            _ => ProcessError::Spawn {
                program,
                source: err,
            },
        }
    }

    /// Where the program would be: a path (relative to the working directory), or the
    /// first match on `PATH`. Only for explaining a failed spawn, so unlike `which` it
    /// also finds a file that exists but cannot be executed.
    fn locate(&self) -> Option<PathBuf> {
        let program = Path::new(&self.program);
        if self.program.as_encoded_bytes().contains(&b'/') {
            return Some(self.relative_to_cwd(program));
        }
        let path = self.path_var()?;
        std::env::split_paths(&path)
            .map(|dir| self.relative_to_cwd(&dir.join(program)))
            .find(|candidate| candidate.exists())
    }

    fn relative_to_cwd(&self, path: &Path) -> PathBuf {
        match &self.cwd {
            Some(cwd) if path.is_relative() => cwd.join(path),
            _ => path.to_owned(),
        }
    }

    /// The `PATH` the child would be started with.
    fn path_var(&self) -> Option<OsString> {
        let mut path = if self.env_clear {
            None
        } else {
            std::env::var_os("PATH")
        };
        for (key, value) in &self.env {
            if key == "PATH" {
                path.clone_from(value);
            }
        }
        path
    }

    fn searched(&self) -> String {
        if self.program.as_encoded_bytes().contains(&b'/') {
            format!(
                "no file at {}",
                self.relative_to_cwd(Path::new(&self.program)).display()
            )
        } else {
            match self.path_var() {
                Some(path) if !path.is_empty() => {
                    format!("searched PATH={}", path.to_string_lossy())
                }
                _ => "PATH is empty or unset".to_owned(),
            }
        }
    }
}

/// The interpreter named by a script's `#!` line.
fn interpreter(path: &Path) -> Option<String> {
    let file = std::fs::File::open(path).ok()?;
    let mut first = Vec::new();
    io::BufReader::new(file)
        .take(4096)
        .read_until(b'\n', &mut first)
        .ok()?;
    let line = String::from_utf8_lossy(first.strip_prefix(b"#!")?);
    line.split_whitespace().next().map(str::to_owned)
}

use std::io::Read as _;

/// Quote a word for a POSIX shell when it needs it (for display, and for command lines
/// that really go through `sh -c`).
pub(crate) fn shell_quote(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./=:,+@%".contains(&b));
    if plain {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
#[path = "command_tests.rs"]
mod tests;
