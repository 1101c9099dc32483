//! The watched files one round of build and restart is for.

use std::collections::BTreeSet;

/// How many changed files are kept by name; more are only counted.
const NAMED: usize = 1_000;

/// Changed files under the watched paths: the first [`NAMED`] by name, the rest
/// counted, so that a flood of changes during a long build holds bounded memory.
#[derive(Debug, Default)]
pub(crate) struct ChangedFiles {
    named: BTreeSet<String>,
    unnamed: usize,
}

impl ChangedFiles {
    /// Note `paths` as changed.
    pub(crate) fn add(&mut self, paths: impl IntoIterator<Item = String>) {
        for path in paths {
            if self.named.len() < NAMED || self.named.contains(&path) {
                self.named.insert(path);
            } else {
                self.unnamed += 1;
            }
        }
    }

    /// Note everything `other` holds as changed.
    pub(crate) fn merge(&mut self, other: ChangedFiles) {
        self.unnamed += other.unnamed;
        self.add(other.named);
    }

    /// Whether no file is noted.
    pub(crate) fn is_empty(&self) -> bool {
        self.named.is_empty() && self.unnamed == 0
    }

    /// The files in a few words: `src/a.py`, or `src/a.py and 3 more`.
    pub(crate) fn summary(&self) -> String {
        let Some(first) = self.named.first() else {
            return "unknown files".to_owned();
        };
        match self.named.len() - 1 + self.unnamed {
            0 => first.clone(),
            more => format!("{first} and {more} more"),
        }
    }
}

impl From<Vec<String>> for ChangedFiles {
    fn from(paths: Vec<String>) -> Self {
        let mut changed = ChangedFiles::default();
        changed.add(paths);
        changed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(paths: &[&str]) -> ChangedFiles {
        ChangedFiles::from(paths.iter().map(|p| (*p).to_owned()).collect::<Vec<_>>())
    }

    #[test]
    fn summaries_are_short() {
        assert_eq!(files(&["a"]).summary(), "a");
        assert_eq!(files(&["c", "a", "b"]).summary(), "a and 2 more");
        assert_eq!(files(&[]).summary(), "unknown files");
    }

    #[test]
    fn a_file_changed_twice_counts_once() {
        let mut changed = files(&["a", "b"]);
        changed.merge(files(&["b", "c"]));
        assert_eq!(changed.summary(), "a and 2 more");
    }

    #[test]
    fn a_flood_is_counted_past_the_named_files() {
        let mut changed = ChangedFiles::default();
        changed.add((0..NAMED * 3).map(|i| format!("f{i:05}")));
        changed.add(["f00000".to_owned()]);
        assert_eq!(changed.named.len(), NAMED);
        assert_eq!(
            changed.summary(),
            format!("f00000 and {} more", NAMED * 3 - 1)
        );
    }
}
