//! Delivery to the desktop: `notify-send` on Linux and other free desktops, `osascript`
//! on macOS, run as a short-lived child through the process layer (stopped with whatever
//! it started past its time limit). When neither is installed the first notice logs that
//! once and the rest are dropped quietly.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use super::{Deliver, Notice, NotifyError, Priority};
use crate::process::{Finish, ProcessCommand};

/// Longest time the notifier program may take.
const TIMEOUT: Duration = Duration::from_secs(5);

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

    fn command(&self, notice: &Notice) -> Option<ProcessCommand> {
        match &self.program {
            Program::NotifySend(path) => {
                let urgency = match notice.priority {
                    Priority::Low => "low",
                    Priority::Default => "normal",
                    Priority::High | Priority::Urgent => "critical",
                };
                Some(
                    ProcessCommand::new(path)
                        .arg("--app-name=debussy")
                        .arg(format!("--urgency={urgency}"))
                        .arg("--")
                        .arg(&notice.title)
                        .arg(markup_text(&notice.message)),
                )
            }
            Program::Osascript(path) => Some(ProcessCommand::new(path).arg("-e").arg(format!(
                "display notification {} with title {}",
                applescript_string(&notice.message),
                applescript_string(&notice.title)
            ))),
            Program::Missing { .. } => None,
        }
    }
}

impl Deliver for Desktop {
    fn deliver(&mut self, notice: &Notice) -> Result<(), NotifyError> {
        let Some(command) = self.command(notice) else {
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
        let program = command.program().to_string_lossy().into_owned();
        let output = command
            .stdin_payload(Vec::new())
            .output_blocking(TIMEOUT)
            .map_err(|source| NotifyError::Spawn { source })?;
        match output.finish {
            Finish::Exited(status) if status.is_success() => Ok(()),
            Finish::Exited(status) => Err(NotifyError::Program {
                program,
                how: format!("exited with {status}"),
            }),
            Finish::TimedOut(limit) => Err(NotifyError::Program {
                program,
                how: format!("did not finish within {}s", limit.as_secs()),
            }),
        }
    }
}

/// `text` as text in a notification's body, which notification servers read as markup
/// (`<b>`, `<a href>`): a gate's `a && b` or an agent's `<tag>` is shown as written,
/// where unescaped some servers render it and others fail to parse the body.
fn markup_text(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
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
    fn a_body_is_text_not_markup() {
        assert_eq!(
            markup_text("gate `test -f a && grep -q <b> a` failed"),
            "gate `test -f a &amp;&amp; grep -q &lt;b&gt; a` failed"
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

    #[cfg(not(target_os = "macos"))]
    #[test]
    fn notify_send_gets_the_notice_and_a_failure_says_how_it_ended() {
        let dir = tempfile::tempdir().expect("tempdir");
        let said = dir.path().join("said");
        super::super::tests::stand_in_notify_send(
            dir.path(),
            &format!(
                "printf '%s\\n' \"$@\" > {}\n[ \"$4\" = fail ] && exit 3\nexit 0\n",
                said.display()
            ),
        );
        let mut desktop = Desktop::search(Some(dir.path().as_os_str().to_owned()));
        let mut notice = Notice {
            title: "Run done".into(),
            message: "2 phases".into(),
            priority: Priority::High,
            tags: vec![],
        };
        desktop.deliver(&notice).expect("delivered");
        assert_eq!(
            std::fs::read_to_string(&said).expect("said"),
            "--app-name=debussy\n--urgency=critical\n--\nRun done\n2 phases\n"
        );
        notice.title = "fail".into();
        let err = desktop.deliver(&notice).expect_err("failed");
        assert!(err.to_string().contains("exited with exit code 3"), "{err}");
    }
}
