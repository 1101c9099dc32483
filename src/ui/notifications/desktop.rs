//! Delivery to the desktop: `notify-send` on Linux and other free desktops, `osascript`
//! on macOS, run as a short-lived child process. When neither is installed the first
//! notice logs that once and the rest are dropped quietly.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::{Deliver, Notice, NotifyError, Priority};

/// Longest time the notifier program may take.
const TIMEOUT: Duration = Duration::from_secs(5);

/// How often a running notifier program is checked on.
const POLL: Duration = Duration::from_millis(20);

/// Which program shows notifications.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Program {
    /// `notify-send` (libnotify).
    NotifySend(PathBuf),
    /// `osascript` (macOS).
    Osascript(PathBuf),
    /// Neither was found.
    Missing {
        /// Whether the user has been told.
        told: bool,
    },
}

/// Shows notices with the desktop's notifier.
#[derive(Debug)]
pub struct Desktop {
    program: Program,
}

impl Desktop {
    /// Find the notifier on `PATH`.
    #[must_use]
    pub fn from_env() -> Desktop {
        Desktop::search(std::env::var_os("PATH"))
    }

    /// Find the notifier on the given search path (`PATH`'s syntax).
    #[must_use]
    pub fn search(path: Option<OsString>) -> Desktop {
        let cwd = std::env::current_dir().unwrap_or_default();
        let find = |name: &str| which::which_in(name, path.as_ref(), &cwd).ok();
        let program = if cfg!(target_os = "macos") {
            find("osascript").map(Program::Osascript)
        } else {
            find("notify-send").map(Program::NotifySend)
        };
        Desktop {
            program: program.unwrap_or(Program::Missing { told: false }),
        }
    }

    fn command(&self, notice: &Notice) -> Option<Command> {
        match &self.program {
            Program::NotifySend(path) => {
                let urgency = match notice.priority {
                    Priority::Low => "low",
                    Priority::Default => "normal",
                    Priority::High | Priority::Urgent => "critical",
                };
                let mut command = Command::new(path);
                command
                    .arg("--app-name=debussy")
                    .arg(format!("--urgency={urgency}"))
                    .arg("--")
                    .arg(&notice.title)
                    .arg(&notice.message);
                Some(command)
            }
            Program::Osascript(path) => {
                let mut command = Command::new(path);
                command.arg("-e").arg(format!(
                    "display notification {} with title {}",
                    applescript_string(&notice.message),
                    applescript_string(&notice.title)
                ));
                Some(command)
            }
            Program::Missing { .. } => None,
        }
    }
}

impl Deliver for Desktop {
    fn deliver(&mut self, notice: &Notice) -> Result<(), NotifyError> {
        let Some(mut command) = self.command(notice) else {
            if let Program::Missing { told } = &mut self.program
                && !*told
            {
                *told = true;
                let wanted = if cfg!(target_os = "macos") {
                    "osascript"
                } else {
                    "notify-send (package libnotify-bin or libnotify)"
                };
                tracing::warn!("desktop notifications need {wanted} on PATH; none will be shown");
            }
            return Ok(());
        };
        let program = command.get_program().to_string_lossy().into_owned();
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|source| NotifyError::Spawn {
                program: program.clone(),
                source,
            })?;
        let deadline = Instant::now() + TIMEOUT;
        loop {
            match child.try_wait() {
                Ok(Some(status)) if status.success() => return Ok(()),
                Ok(Some(status)) => {
                    return Err(NotifyError::Program {
                        program,
                        how: format!("exited with {status}"),
                    });
                }
                Ok(None) if Instant::now() < deadline => std::thread::sleep(POLL),
                Ok(None) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(NotifyError::Program {
                        program,
                        how: format!("did not finish within {}s", TIMEOUT.as_secs()),
                    });
                }
                Err(source) => return Err(NotifyError::Spawn { program, source }),
            }
        }
    }
}

/// `text` as an AppleScript string literal.
fn applescript_string(text: &str) -> String {
    format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn applescript_strings_are_escaped() {
        assert_eq!(
            applescript_string(r#"say "hi" \o/"#),
            r#""say \"hi\" \\o/""#
        );
    }

    #[test]
    fn a_missing_notifier_is_not_an_error() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut desktop = Desktop::search(Some(dir.path().as_os_str().to_owned()));
        let notice = Notice {
            title: "t".into(),
            message: "m".into(),
            priority: Priority::Default,
            tags: vec![],
        };
        assert!(desktop.deliver(&notice).is_ok());
        assert!(desktop.deliver(&notice).is_ok());
        assert_eq!(desktop.program, Program::Missing { told: true });
    }
}
