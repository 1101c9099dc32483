//! The restart marker: `<state-dir>/restart_marker.json`, rewritten at every restart
//! request so that an agent (or a human) can check that a restart it asked for happened.
//!
//! Written atomically with [`crate::files::write_private`]: a temporary file in the same
//! directory, created with mode 0600 and never through a link, fsynced, then renamed
//! over the marker, so a reader sees the old marker or the new one, never half of one
//! (issue 6, "Audit trail and marker"). The directory is not fsynced:
//! after a machine crash the rename may be lost, leaving the previous marker, which the
//! audit log (synced before the child is stopped) still records.

use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The marker's content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RestartMarker {
    /// When the restart was asked for, in seconds since the Unix epoch.
    pub timestamp: f64,
    /// The pid of the child being restarted, if one was running.
    pub pid: Option<u32>,
    /// Why.
    pub reason: String,
    /// `timestamp` as ISO 8601 UTC.
    pub iso_time: String,
    /// The generation of the child being restarted.
    pub generation: u64,
}

impl RestartMarker {
    /// A marker for a restart asked for now.
    #[must_use]
    pub fn now(pid: Option<u32>, generation: u64, reason: &str) -> Self {
        let now = jiff::Timestamp::now();
        #[expect(
            clippy::cast_precision_loss,
            reason = "microseconds since 1970 fit in an f64's 53-bit mantissa until year 2255"
        )]
        let timestamp = now.as_microsecond() as f64 / 1e6;
        RestartMarker {
            timestamp,
            pid,
            reason: reason.to_owned(),
            iso_time: crate::mcp::iso(now),
            generation,
        }
    }

    /// Write the marker atomically to `<dir>/restart_marker.json` and return its path.
    ///
    /// # Errors
    /// Creating, writing, syncing or renaming the file failed.
    pub fn write(&self, dir: &Path) -> io::Result<PathBuf> {
        std::fs::create_dir_all(dir)?;
        let path = dir.join("restart_marker.json");
        let mut bytes = serde_json::to_vec_pretty(self)?;
        bytes.push(b'\n');
        crate::files::write_private(&path, &bytes)?;
        Ok(path)
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn marker_is_replaced_atomically_with_private_mode() {
        let dir = tempfile::tempdir().expect("tempdir");
        let first = RestartMarker::now(Some(10), 1, "first");
        let path = first.write(dir.path()).expect("write");
        let second = RestartMarker::now(None, 2, "second");
        second.write(dir.path()).expect("rewrite");
        let read: RestartMarker =
            serde_json::from_str(&std::fs::read_to_string(&path).expect("read")).expect("json");
        assert_eq!(read, second);
        assert!(read.iso_time.ends_with('Z'));
        assert!(read.timestamp > 1.7e9);
        let mode = std::fs::metadata(&path).expect("meta").permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let leftovers: Vec<_> = std::fs::read_dir(dir.path())
            .expect("list")
            .filter_map(Result::ok)
            .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
            .collect();
        assert!(leftovers.is_empty());
    }
}
