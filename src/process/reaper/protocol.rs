//! The lines the reaper and debussy exchange over their socket: one message a line, in
//! ASCII words, so that a message is never split across reads in a way that matters and a
//! person can read a trace of it.
//!
//! Both ways are pure: encoding and parsing do no I/O.

use std::ffi::OsString;
use std::time::Duration;

use crate::process::ExitStatus;

/// The first argument that turns a debussy binary into a reaper.
pub(crate) const MARKER: &str = "__reaper";

/// The version of this protocol, passed as the argument after [`MARKER`]: a reaper of
/// another version refuses to serve instead of misreading the messages.
pub(crate) const PROTOCOL: &str = "1";

/// The longest line either side accepts; every message is far shorter.
pub(crate) const MAX_LINE: usize = 64 * 1024;

/// What the reaper tells debussy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Report {
    /// The program runs: its pid (also its process group) and its start time.
    Started {
        /// The program's pid.
        pid: u32,
        /// Its start time in clock ticks after boot.
        start: u64,
    },
    /// The program could not be started.
    Failed {
        /// The OS error number, 0 when there was none.
        errno: i32,
        /// What the reaper's spawn said.
        message: String,
    },
    /// The program exited and was reaped.
    Exited(ExitStatus),
    /// Processes below the program still alive once the leak grace had passed; they
    /// were killed.
    Leftover {
        /// Those still in the program's process group.
        group: Vec<u32>,
        /// Those that had left it (`setsid`, `setpgid`).
        escaped: Vec<u32>,
    },
    /// Nothing below the reaper is left; it exits next.
    Done,
}

/// What debussy asks of the reaper.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Request {
    /// Send this signal to the program's process group, while the program lives.
    Signal(i32),
    /// Kill the program and everything below it now.
    Kill,
}

impl Report {
    /// The message as one line, newline included.
    pub(crate) fn encode(&self) -> String {
        match self {
            Report::Started { pid, start } => format!("started {pid} {start}\n"),
            Report::Failed { errno, message } => {
                format!("failed {errno} {}\n", message.replace('\n', " "))
            }
            Report::Exited(ExitStatus::Code(code)) => format!("exited code {code}\n"),
            Report::Exited(ExitStatus::Signal(signal)) => format!("exited signal {signal}\n"),
            Report::Exited(ExitStatus::Unknown) => "exited unknown\n".to_owned(),
            Report::Leftover { group, escaped } => {
                format!("leftover group={} escaped={}\n", list(group), list(escaped))
            }
            Report::Done => "done\n".to_owned(),
        }
    }

    /// Read one line (without its newline); `None` for anything else.
    pub(crate) fn parse(line: &str) -> Option<Report> {
        let mut words = line.split(' ');
        match words.next()? {
            "started" => Some(Report::Started {
                pid: words.next()?.parse().ok()?,
                start: words.next()?.parse().ok()?,
            }),
            "failed" => Some(Report::Failed {
                errno: words.next()?.parse().ok()?,
                message: words.collect::<Vec<_>>().join(" "),
            }),
            "exited" => Some(Report::Exited(match (words.next()?, words.next()) {
                ("code", Some(code)) => ExitStatus::Code(code.parse().ok()?),
                ("signal", Some(signal)) => ExitStatus::Signal(signal.parse().ok()?),
                ("unknown", None) => ExitStatus::Unknown,
                _ => return None,
            })),
            "leftover" => Some(Report::Leftover {
                group: pids(words.next()?.strip_prefix("group=")?)?,
                escaped: pids(words.next()?.strip_prefix("escaped=")?)?,
            }),
            "done" => Some(Report::Done),
            _ => None,
        }
    }
}

impl Request {
    /// The message as one line, newline included.
    pub(crate) fn encode(self) -> String {
        match self {
            Request::Signal(signal) => format!("signal {signal}\n"),
            Request::Kill => "kill\n".to_owned(),
        }
    }

    /// Read one line (without its newline); `None` for anything else.
    pub(crate) fn parse(line: &str) -> Option<Request> {
        match line.split_once(' ') {
            Some(("signal", number)) => number.parse().ok().map(Request::Signal),
            None if line == "kill" => Some(Request::Kill),
            _ => None,
        }
    }
}

/// The reaper's arguments after [`MARKER`]: the protocol version, the leak grace in
/// milliseconds, `--`, then the program and its arguments.
pub(crate) fn arguments(grace: Duration, program: &OsString, args: &[OsString]) -> Vec<OsString> {
    let millis = u64::try_from(grace.as_millis()).unwrap_or(u64::MAX);
    let mut all: Vec<OsString> = vec![
        MARKER.into(),
        PROTOCOL.into(),
        millis.to_string().into(),
        "--".into(),
        program.clone(),
    ];
    all.extend(args.iter().cloned());
    all
}

/// What a reaper was asked to run, read back from [`arguments`] (the marker already
/// taken off).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Invocation {
    /// How long the program's leftovers get to exit by themselves.
    pub(crate) grace: Duration,
    /// The program.
    pub(crate) program: OsString,
    /// Its arguments.
    pub(crate) args: Vec<OsString>,
}

impl Invocation {
    /// Read the arguments after the marker. `Err` says what is wrong (a reaper of another
    /// version, or arguments no debussy wrote).
    pub(crate) fn parse(mut args: impl Iterator<Item = OsString>) -> Result<Invocation, String> {
        let version = args.next().unwrap_or_default();
        if version != PROTOCOL {
            return Err(format!(
                "this reaper speaks protocol {PROTOCOL}, not {}",
                version.to_string_lossy()
            ));
        }
        let grace = args
            .next()
            .and_then(|millis| millis.to_str().and_then(|m| m.parse().ok()))
            .map(Duration::from_millis)
            .ok_or("the leak grace is missing")?;
        if args.next().is_none_or(|dashes| dashes != "--") {
            return Err("`--` before the program is missing".to_owned());
        }
        let program = args.next().ok_or("the program is missing")?;
        Ok(Invocation {
            grace,
            program,
            args: args.collect(),
        })
    }
}

fn list(pids: &[u32]) -> String {
    pids.iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

fn pids(text: &str) -> Option<Vec<u32>> {
    if text.is_empty() {
        return Some(Vec::new());
    }
    text.split(',').map(|pid| pid.parse().ok()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_report_reads_back_as_written() {
        let reports = [
            Report::Started {
                pid: 42,
                start: 9_000_000_001,
            },
            Report::Failed {
                errno: 2,
                message: "No such file or directory (os error 2)".to_owned(),
            },
            Report::Exited(ExitStatus::Code(3)),
            Report::Exited(ExitStatus::Signal(9)),
            Report::Exited(ExitStatus::Unknown),
            Report::Leftover {
                group: vec![7, 8],
                escaped: vec![],
            },
            Report::Leftover {
                group: vec![],
                escaped: vec![11],
            },
            Report::Done,
        ];
        for report in reports {
            let line = report.encode();
            assert!(line.ends_with('\n') && line.len() < MAX_LINE, "{line:?}");
            assert_eq!(
                Report::parse(line.trim_end_matches('\n')),
                Some(report.clone()),
                "{line:?}"
            );
        }
    }

    #[test]
    fn every_request_reads_back_as_written() {
        for request in [Request::Signal(2), Request::Signal(19), Request::Kill] {
            let line = request.encode();
            assert_eq!(Request::parse(line.trim_end_matches('\n')), Some(request));
        }
    }

    #[test]
    fn lines_no_side_wrote_are_refused() {
        for line in [
            "",
            "started",
            "started x 1",
            "exited code",
            "exited sometimes 3",
            "leftover group=1,x escaped=",
            "leftover escaped=1 group=2",
            "hello",
        ] {
            assert_eq!(Report::parse(line), None, "{line:?}");
        }
        for line in ["", "signal", "signal nine", "kill now", "KILL"] {
            assert_eq!(Request::parse(line), None, "{line:?}");
        }
    }

    #[test]
    fn a_failure_message_stays_on_one_line() {
        let report = Report::Failed {
            errno: 0,
            message: "two\nlines".to_owned(),
        };
        assert_eq!(report.encode(), "failed 0 two lines\n");
    }

    #[test]
    fn the_invocation_reads_back_and_refuses_another_version() {
        let program = OsString::from("claude");
        let args = vec![OsString::from("-p"), OsString::from("two words")];
        let all = arguments(Duration::from_millis(250), &program, &args);
        assert_eq!(all[0], MARKER);
        let parsed = Invocation::parse(all.into_iter().skip(1)).expect("parse");
        assert_eq!(
            parsed,
            Invocation {
                grace: Duration::from_millis(250),
                program,
                args
            }
        );
        let other = ["2", "250", "--", "x"].map(OsString::from);
        let err = Invocation::parse(other.into_iter()).expect_err("another version");
        assert!(err.contains("protocol 1, not 2"), "{err}");
        let no_dashes = ["1", "250", "x"].map(OsString::from);
        assert!(Invocation::parse(no_dashes.into_iter()).is_err());
    }
}
