//! Documented process exit codes and the error type commands return.
//!
//! Every subcommand ends in an [`Exit`]; failures carry a [`miette::Report`] that `main`
//! renders on stderr before exiting with the failure's code.

use std::fmt;

/// The exit codes debussy documents (README, "Commands").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// 0: everything asked for was done.
    Success,
    /// 1: the work failed (an audit error, a failed or blocked phase), or the disk filled
    /// up and paused the run.
    Failure,
    /// 2: bad usage or configuration; nothing was run.
    Usage,
    /// 3: a spending or time limit (`max_cost_usd`, `max_phase_cost_usd`, `max_duration`,
    /// or an agent's usage limit past `limits.max_wait`) paused the run; its work was
    /// committed and `--resume` continues it.
    LimitReached,
    /// 130: interrupted by Ctrl-C or SIGTERM; state was saved.
    Interrupted,
}

impl Exit {
    /// The numeric process exit code.
    #[must_use]
    pub fn code(self) -> u8 {
        match self {
            Exit::Success => 0,
            Exit::Failure => 1,
            Exit::Usage => 2,
            Exit::LimitReached => 3,
            Exit::Interrupted => 130,
        }
    }
}

/// A command that could not finish: the diagnostic to show and the code to exit with.
pub struct Failure {
    /// How the process should exit.
    pub exit: Exit,
    /// What to tell the user.
    pub report: miette::Report,
}

impl Failure {
    /// A usage or configuration error (exit 2).
    pub fn usage(err: impl Into<miette::Report>) -> Self {
        Failure {
            exit: Exit::Usage,
            report: err.into(),
        }
    }

    /// A failure of the work itself (exit 1).
    pub fn failed(err: impl Into<miette::Report>) -> Self {
        Failure {
            exit: Exit::Failure,
            report: err.into(),
        }
    }
}

impl fmt::Debug for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Failure({:?}): {:?}", self.exit, self.report)
    }
}

/// What a command returns.
pub type CommandResult = Result<Exit, Failure>;

/// Write `text`, meant for people, to stderr with its control characters shown rather
/// than sent ([`terminal_safe`](crate::terminal_safe::terminal_safe)), dropping it when
/// stderr is gone (`2>&1 | head`, whose reader exits early): a message nobody can read
/// is no reason to panic, and the exit code still says how the command ended.
/// `eprintln!` panics there (exit 101).
pub fn to_stderr(text: &str) {
    use std::io::Write as _;
    let text = crate::terminal_safe::terminal_safe(text);
    let mut stderr = std::io::stderr().lock();
    let _ = stderr
        .write_all(text.as_bytes())
        .and_then(|()| stderr.flush());
}

/// Write `text` to stdout, its control characters shown and dropped when stdout is
/// gone, as [`to_stderr`].
pub fn to_stdout(text: &str) {
    use std::io::Write as _;
    let text = crate::terminal_safe::terminal_safe(text);
    let mut stdout = std::io::stdout().lock();
    let _ = stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush());
}

/// The process's exit status for a command's result, with a failure's report on stderr.
/// A broken pipe (output piped into `head`, which closes early) is not worth reporting.
#[must_use]
pub fn exit_code(result: CommandResult) -> std::process::ExitCode {
    match result {
        Ok(exit) => std::process::ExitCode::from(exit.code()),
        Err(failure) if is_broken_pipe(&failure.report) => std::process::ExitCode::SUCCESS,
        Err(failure) => {
            to_stderr(&format!("{:?}\n", failure.report));
            std::process::ExitCode::from(failure.exit.code())
        }
    }
}

fn is_broken_pipe(report: &miette::Report) -> bool {
    report.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
