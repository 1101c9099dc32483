//! What an MCP server's exit means: clean, restart requested, or crashed.

use std::fmt;

use crate::process::ExitStatus;

/// The exit code with which an MCP server asks to be restarted.
pub const RESTART_EXIT_CODE: i32 = 42;

/// What an MCP server's exit means (DESIGN.md, "Types carry meaning").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChildExit {
    /// Exit code 0: the server shut down on purpose; the supervisor exits too.
    Clean,
    /// Exit code 42: the server asks to be started again.
    RestartRequested,
    /// Any other code, or a signal: the server crashed.
    Crashed(ExitStatus),
}

impl ChildExit {
    /// Classify an exit status.
    #[must_use]
    pub fn classify(status: ExitStatus) -> Self {
        match status {
            ExitStatus::Code(0) => ChildExit::Clean,
            ExitStatus::Code(RESTART_EXIT_CODE) => ChildExit::RestartRequested,
            other => ChildExit::Crashed(other),
        }
    }
}

impl From<ExitStatus> for ChildExit {
    fn from(status: ExitStatus) -> Self {
        ChildExit::classify(status)
    }
}

impl fmt::Display for ChildExit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ChildExit::Clean => f.write_str("clean shutdown (exit code 0)"),
            ChildExit::RestartRequested => {
                write!(f, "restart requested (exit code {RESTART_EXIT_CODE})")
            }
            ChildExit::Crashed(status) => write!(f, "crashed ({status})"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_exits() {
        assert_eq!(ChildExit::classify(ExitStatus::Code(0)), ChildExit::Clean);
        assert_eq!(
            ChildExit::classify(ExitStatus::Code(42)),
            ChildExit::RestartRequested
        );
        assert_eq!(
            ChildExit::from(ExitStatus::Code(1)),
            ChildExit::Crashed(ExitStatus::Code(1))
        );
        assert_eq!(
            ChildExit::from(ExitStatus::Signal(9)),
            ChildExit::Crashed(ExitStatus::Signal(9))
        );
        assert_eq!(
            ChildExit::from(ExitStatus::Unknown),
            ChildExit::Crashed(ExitStatus::Unknown)
        );
        assert_eq!(
            ChildExit::Crashed(ExitStatus::Signal(9)).to_string(),
            "crashed (signal 9 (SIGKILL))"
        );
    }
}
