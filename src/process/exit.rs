//! How a child ended: its exit code or the signal that killed it.
//!
//! This is the process layer's own view of an exit: it says what happened, not what to
//! do about it. What an exit *means* for an MCP server (clean, restart requested,
//! crashed) is decided in [`crate::restart::ChildExit`]; what it means for an agent
//! session is decided in `session`.

use std::fmt;
use std::os::unix::process::ExitStatusExt;

/// How a child process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ExitStatus {
    /// The process called `exit` with this code.
    Code(i32),
    /// The process was killed by this signal number (see [`ExitStatus::signal_name`]).
    Signal(i32),
    /// The status could not be collected: something else reaped the process first.
    ///
    /// debussy never reaps children behind its own back, so seeing this means another
    /// part of the program called `waitpid(-1)` or set `SIGCHLD` to `SIG_IGN`.
    Unknown,
}

impl ExitStatus {
    /// True only for exit code 0.
    #[must_use]
    pub fn is_success(self) -> bool {
        self == ExitStatus::Code(0)
    }

    /// The exit code, when the process exited normally.
    #[must_use]
    pub fn code(self) -> Option<i32> {
        match self {
            ExitStatus::Code(code) => Some(code),
            _ => None,
        }
    }

    /// The number of the signal that killed the process, if one did.
    #[must_use]
    pub fn signal(self) -> Option<i32> {
        match self {
            ExitStatus::Signal(signal) => Some(signal),
            _ => None,
        }
    }

    /// The conventional name of the killing signal (`"SIGKILL"`), if one did and it has
    /// a name on this platform.
    #[must_use]
    pub fn signal_name(self) -> Option<&'static str> {
        self.signal().and_then(signal_name)
    }

    /// The shell's convention for a single number: the code, or 128 + the signal number.
    ///
    /// Useful for logs and for tools that expect one integer; `Unknown` maps to -1.
    #[must_use]
    pub fn as_shell_code(self) -> i32 {
        match self {
            ExitStatus::Code(code) => code,
            ExitStatus::Signal(signal) => 128 + signal,
            ExitStatus::Unknown => -1,
        }
    }
}

impl From<std::process::ExitStatus> for ExitStatus {
    fn from(status: std::process::ExitStatus) -> Self {
        if let Some(code) = status.code() {
            ExitStatus::Code(code)
        } else if let Some(signal) = status.signal() {
            ExitStatus::Signal(signal)
        } else {
            // `wait` only reports exited or signalled processes; stopped/continued states
            // never reach here, but an honest fallback beats a panic.
            ExitStatus::Unknown
        }
    }
}

impl fmt::Display for ExitStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExitStatus::Code(code) => write!(f, "exit code {code}"),
            ExitStatus::Signal(signal) => match signal_name(*signal) {
                Some(name) => write!(f, "signal {signal} ({name})"),
                None => write!(f, "signal {signal}"),
            },
            ExitStatus::Unknown => f.write_str("unknown exit status"),
        }
    }
}

/// The conventional name of a signal number on this platform (`9` → `"SIGKILL"`).
#[must_use]
pub fn signal_name(signal: i32) -> Option<&'static str> {
    nix::sys::signal::Signal::try_from(signal)
        .ok()
        .map(nix::sys::signal::Signal::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn success_is_only_code_zero() {
        assert!(ExitStatus::Code(0).is_success());
        assert!(!ExitStatus::Code(1).is_success());
        assert!(!ExitStatus::Signal(2).is_success());
        assert!(!ExitStatus::Unknown.is_success());
    }

    #[test]
    fn accessors() {
        assert_eq!(ExitStatus::Code(42).code(), Some(42));
        assert_eq!(ExitStatus::Code(42).signal(), None);
        assert_eq!(ExitStatus::Signal(15).signal(), Some(15));
        assert_eq!(ExitStatus::Signal(15).code(), None);
        assert_eq!(ExitStatus::Signal(15).signal_name(), Some("SIGTERM"));
        assert_eq!(ExitStatus::Signal(9).as_shell_code(), 137);
        assert_eq!(ExitStatus::Code(3).as_shell_code(), 3);
        assert_eq!(ExitStatus::Unknown.as_shell_code(), -1);
    }

    #[test]
    fn display_names_the_signal() {
        assert_eq!(ExitStatus::Code(3).to_string(), "exit code 3");
        assert_eq!(ExitStatus::Signal(9).to_string(), "signal 9 (SIGKILL)");
        assert_eq!(ExitStatus::Signal(200).to_string(), "signal 200");
    }

    #[test]
    fn from_std_status() {
        let exited = std::process::ExitStatus::from_raw(3 << 8);
        assert_eq!(ExitStatus::from(exited), ExitStatus::Code(3));
        let killed = std::process::ExitStatus::from_raw(9);
        assert_eq!(ExitStatus::from(killed), ExitStatus::Signal(9));
    }
}
