//! [`Location`]: a place in a plan file, which every item the audit can point at carries.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Serialize, Serializer};

/// A place in a plan file: the file and, when known, the 1-based line.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Location {
    /// The file, as reached from the path the user gave (relative paths stay relative).
    pub file: PathBuf,
    /// The 1-based line, or `None` when the whole file is meant.
    pub line: Option<usize>,
}

impl Location {
    /// A line in a file.
    #[must_use]
    pub fn line(file: &Path, line: usize) -> Self {
        Location {
            file: file.to_path_buf(),
            line: Some(line),
        }
    }

    /// A whole file.
    #[must_use]
    pub fn file(file: &Path) -> Self {
        Location {
            file: file.to_path_buf(),
            line: None,
        }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{line}", self.file.display()),
            None => write!(f, "{}", self.file.display()),
        }
    }
}

impl Serialize for Location {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    #[test]
    fn locations_display_as_file_colon_line() {
        assert_eq!(
            Location::line(Path::new("a/b.md"), 7).to_string(),
            "a/b.md:7"
        );
        assert_eq!(Location::file(Path::new("a/b.md")).to_string(), "a/b.md");
    }
}
