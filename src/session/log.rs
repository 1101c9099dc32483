//! The session log: every raw line the agent prints on stdout, saved as it arrives, at
//! `.debussy/runs/<run>/<phase>/attempt-<n>-session-<k>.jsonl` (the caller picks the
//! path).
//!
//! Each line goes to the file in one `write` as soon as it is read, unbuffered, so the
//! log is complete up to the last line even if debussy itself dies. (A write to a
//! regular file lands in the page cache; it does not block the runtime the way network
//! or pipe I/O can.) When the session ends at a context limit the file is rewritten to
//! start with the line [`CONTEXT_LIMIT_MARKER`]: the marker and the original bytes go to
//! a temporary file beside it, which then replaces the log in one `rename`, so the log is
//! at every moment either the plain NDJSON or the marker followed by all of it.

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Create `path` (and its directories) mode 0600, emptying a file already there; a link
/// in its place is refused, never written through.
pub(crate) fn create_private(path: &Path) -> io::Result<File> {
    if let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty()) {
        fs::create_dir_all(dir)?;
    }
    crate::files::create_private(path)
}

/// Where a session's stderr goes: beside its transcript, `…-session-<k>.stderr.log`.
#[must_use]
pub fn stderr_log_path(transcript: &Path) -> PathBuf {
    transcript.with_extension("stderr.log")
}

/// Every stderr line of a session, buffered (stderr is for people; losing the last
/// buffer when debussy itself is killed is acceptable, unlike the transcript).
#[derive(Debug)]
pub(crate) struct StderrLog {
    writer: io::BufWriter<File>,
}

impl StderrLog {
    /// Create the stderr log for the transcript at `transcript`.
    pub(crate) fn create(transcript: &Path) -> io::Result<Self> {
        Ok(StderrLog {
            writer: io::BufWriter::new(create_private(&stderr_log_path(transcript))?),
        })
    }

    /// Append one line.
    pub(crate) fn write_line(&mut self, line: &[u8]) -> io::Result<()> {
        self.writer.write_all(line)?;
        self.writer.write_all(b"\n")
    }

    /// Flush what is buffered.
    pub(crate) fn finish(mut self) -> io::Result<()> {
        self.writer.flush()
    }
}

/// A log written a line at a time.
pub(crate) trait LineLog {
    /// Append one line (a newline is added).
    fn write_line(&mut self, line: &[u8]) -> io::Result<()>;
}

impl LineLog for StderrLog {
    fn write_line(&mut self, line: &[u8]) -> io::Result<()> {
        StderrLog::write_line(self, line)
    }
}

impl LineLog for SessionLog {
    fn write_line(&mut self, line: &[u8]) -> io::Result<()> {
        SessionLog::write_line(self, line)
    }
}

/// One of a session's logs, and what became of it. A failure is reported once, by the
/// call that met it; after it nothing more is written, and a log that was opened is
/// still closed at the end.
#[derive(Debug)]
pub(crate) enum LogState<T> {
    /// Not opened yet (the stderr log opens on the first stderr line).
    Unopened,
    /// Open and written.
    Writing(T),
    /// A write failed: the lines after it are not saved.
    WriteFailed(T),
    /// It could not be created.
    Missing,
}

/// Why a line was not saved.
#[derive(Debug)]
pub(crate) enum LogFailure {
    /// The log could not be created.
    Create(io::Error),
    /// Writing to it failed.
    Write(io::Error),
}

impl<T: LineLog> LogState<T> {
    /// Append `line`, opening the log with `open` first if it is not open yet. Says
    /// what failed the first time something does; silent after that.
    pub(crate) fn write(
        &mut self,
        line: &[u8],
        open: impl FnOnce() -> io::Result<T>,
    ) -> Result<(), LogFailure> {
        if let LogState::Unopened = self {
            match open() {
                Ok(log) => *self = LogState::Writing(log),
                Err(err) => {
                    *self = LogState::Missing;
                    return Err(LogFailure::Create(err));
                }
            }
        }
        self.append(line).map_err(LogFailure::Write)
    }

    /// Append `line` to the log if it is open and has not failed. Says what failed the
    /// first time a write does; silent after that.
    pub(crate) fn append(&mut self, line: &[u8]) -> io::Result<()> {
        let LogState::Writing(log) = self else {
            return Ok(());
        };
        let Err(err) = log.write_line(line) else {
            return Ok(());
        };
        if let LogState::Writing(log) = std::mem::replace(self, LogState::Missing) {
            *self = LogState::WriteFailed(log);
        }
        Err(err)
    }

    /// The open log, to close it; the state is left [`LogState::Missing`].
    pub(crate) fn take(&mut self) -> Option<T> {
        match std::mem::replace(self, LogState::Missing) {
            LogState::Writing(log) | LogState::WriteFailed(log) => Some(log),
            LogState::Unopened | LogState::Missing => None,
        }
    }
}

/// The first line of the log of a session stopped for a context restart.
pub const CONTEXT_LIMIT_MARKER: &str = "CONTEXT_LIMIT_RESTART";

/// An open session log.
#[derive(Debug)]
pub(crate) struct SessionLog {
    path: PathBuf,
    file: File,
    scratch: Vec<u8>,
}

impl SessionLog {
    /// Create the log (and its directories), replacing any file already at `path`.
    /// Readable by its owner only: transcripts hold whatever the agent read.
    pub(crate) fn create(path: &Path) -> io::Result<Self> {
        let file = create_private(path)?;
        Ok(SessionLog {
            path: path.to_path_buf(),
            file,
            scratch: Vec::new(),
        })
    }

    /// Append one line (a newline is added), in one write.
    pub(crate) fn write_line(&mut self, line: &[u8]) -> io::Result<()> {
        self.scratch.clear();
        self.scratch.reserve(line.len() + 1);
        self.scratch.extend_from_slice(line);
        self.scratch.push(b'\n');
        self.file.write_all(&self.scratch)
    }

    /// Close the log, first making it start with [`CONTEXT_LIMIT_MARKER`] when `marker`
    /// is set. Blocking: call it on a blocking thread for large logs.
    pub(crate) fn finish(self, marker: bool) -> io::Result<()> {
        let SessionLog { path, file, .. } = self;
        file.sync_data()?;
        drop(file);
        if marker {
            prepend_marker(&path)?;
        }
        Ok(())
    }
}

/// Rewrite `path` to start with the marker line, atomically.
fn prepend_marker(path: &Path) -> io::Result<()> {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".marking");
    let temp = path.with_file_name(name);
    let result = (|| {
        let mut out = create_private(&temp)?;
        out.write_all(CONTEXT_LIMIT_MARKER.as_bytes())?;
        out.write_all(b"\n")?;
        io::copy(&mut File::open(path)?, &mut out)?;
        out.sync_data()?;
        fs::rename(&temp, path)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&temp);
    }
    result
}

/// Make sure every directory from `files_root` (when the log is inside a project) to
/// the log's own is debussy's (see
/// [`SessionSpec::files_root`](super::SessionSpec::files_root)).
pub(super) fn own_log_dir(files_root: Option<&Path>, log_path: &Path) -> io::Result<()> {
    let (Some(root), Some(dir)) = (files_root, log_path.parent()) else {
        return Ok(());
    };
    let relative = dir.strip_prefix(root).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("it is not inside {}", root.display()),
        )
    })?;
    crate::files::private_dir(root, relative).map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_written_as_they_come_and_dirs_are_created() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("runs/r1/1/attempt-1-session-1.jsonl");
        let mut log = SessionLog::create(&path).expect("create");
        log.write_line(br#"{"type":"system"}"#).expect("write");
        // Visible before the log is closed.
        assert_eq!(
            fs::read_to_string(&path).expect("read"),
            "{\"type\":\"system\"}\n"
        );
        log.write_line(b"not json \xff").expect("write");
        log.finish(false).expect("finish");
        assert_eq!(
            fs::read(&path).expect("read"),
            b"{\"type\":\"system\"}\nnot json \xff\n"
        );
    }

    #[test]
    fn a_context_limit_log_starts_with_the_marker_and_keeps_every_line() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("s.jsonl");
        let mut log = SessionLog::create(&path).expect("create");
        let lines: Vec<String> = (0..2_000)
            .map(|n| format!(r#"{{"n":{n},"pad":"{}"}}"#, "x".repeat(n % 300)))
            .collect();
        for line in &lines {
            log.write_line(line.as_bytes()).expect("write");
        }
        log.finish(true).expect("finish");
        let text = fs::read_to_string(&path).expect("read");
        let mut read = text.lines();
        assert_eq!(read.next(), Some(CONTEXT_LIMIT_MARKER));
        assert_eq!(read.collect::<Vec<_>>(), lines);
        let leftovers: Vec<_> = fs::read_dir(dir.path())
            .expect("list")
            .map(|entry| entry.expect("entry").file_name())
            .collect();
        assert_eq!(leftovers, ["s.jsonl"]);
    }

    #[test]
    fn an_existing_log_is_replaced() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("s.jsonl");
        fs::write(&path, "old\n").expect("write");
        let log = SessionLog::create(&path).expect("create");
        log.finish(true).expect("finish");
        assert_eq!(
            fs::read_to_string(&path).expect("read"),
            format!("{CONTEXT_LIMIT_MARKER}\n")
        );
    }

    #[test]
    fn an_unwritable_place_is_an_error() {
        let dir = tempfile::tempdir().expect("tempdir");
        let blocker = dir.path().join("file");
        fs::write(&blocker, "").expect("write");
        assert!(SessionLog::create(&blocker.join("s.jsonl")).is_err());
    }

    /// A log whose writes fail from the `fail_from`-th on, recording what it kept.
    struct Flaky {
        kept: Vec<Vec<u8>>,
        fail_from: usize,
    }

    impl LineLog for Flaky {
        fn write_line(&mut self, line: &[u8]) -> io::Result<()> {
            if self.kept.len() + 1 >= self.fail_from {
                return Err(io::Error::other("no space left on device"));
            }
            self.kept.push(line.to_vec());
            Ok(())
        }
    }

    #[test]
    fn a_log_that_failed_a_write_is_neither_written_nor_opened_again() {
        let mut opened = 0;
        let mut log = LogState::Unopened;
        let mut open = || {
            opened += 1;
            Ok(Flaky {
                kept: Vec::new(),
                fail_from: 3,
            })
        };
        assert!(log.write(b"one", &mut open).is_ok());
        assert!(log.write(b"two", &mut open).is_ok());
        assert!(matches!(
            log.write(b"three", &mut open),
            Err(LogFailure::Write(_))
        ));
        assert!(log.write(b"four", &mut open).is_ok(), "said once only");
        assert_eq!(opened, 1, "never opened (and emptied) again");
        let kept = log.take().expect("still closed at the end").kept;
        assert_eq!(kept, [b"one".to_vec(), b"two".to_vec()]);
        assert!(log.take().is_none());
    }

    #[test]
    fn a_log_that_could_not_be_created_is_said_once_and_not_tried_again() {
        let mut tries = 0;
        let mut log: LogState<Flaky> = LogState::Unopened;
        let mut open = || {
            tries += 1;
            Err(io::Error::from(io::ErrorKind::PermissionDenied))
        };
        assert!(matches!(
            log.write(b"one", &mut open),
            Err(LogFailure::Create(_))
        ));
        assert!(log.write(b"two", &mut open).is_ok());
        assert_eq!(tries, 1);
        assert!(log.take().is_none());
    }
}
