//! "Did you mean": the plan a mistyped path most likely meant, found among its
//! neighbours on disk (`plans/exmaple` → `plans/example`, `MASTER_PLN.md` →
//! `MASTER_PLAN.md`), and the master plan beside a phase file given in its place.

use std::path::{Path, PathBuf};

use super::load::MASTER_FILE;

/// How many directory levels up a path may be mistyped.
const MAX_DEPTH: usize = 4;
/// How many entries of one directory are compared.
const MAX_ENTRIES: usize = 2_000;
/// How alike two names must be (Jaro-Winkler) to be offered.
const LIKENESS: f64 = 0.8;

/// The existing plan path that `wanted` (which does not exist) most likely meant: a
/// master plan file or a directory holding one, found by correcting each component
/// that does not exist to its closest neighbour.
#[must_use]
pub fn nearby(wanted: &Path) -> Option<PathBuf> {
    let found = correct(wanted, MAX_DEPTH)?;
    let is_plan = found.is_dir() && found.join(MASTER_FILE).is_file()
        || found.is_file() && found.extension().is_some_and(|ext| ext == "md");
    (is_plan && found != wanted).then_some(found)
}

/// The master plan beside `phase_file`, if there is one.
#[must_use]
pub fn master_beside(phase_file: &Path) -> Option<PathBuf> {
    let dir = phase_file.parent()?;
    let master = dir.join(MASTER_FILE);
    (master.is_file() && master != phase_file).then_some(master)
}

/// `path` with each missing component replaced by the closest existing name.
fn correct(path: &Path, depth: usize) -> Option<PathBuf> {
    if path.exists() {
        return Some(path.to_path_buf());
    }
    if depth == 0 {
        return None;
    }
    let name = path.file_name()?.to_string_lossy().into_owned();
    let parent = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => correct(parent, depth - 1)?,
        _ => PathBuf::new(),
    };
    let listed = if parent.as_os_str().is_empty() {
        Path::new(".")
    } else {
        parent.as_path()
    };
    let exact = parent.join(&name);
    if exact.exists() {
        return Some(exact);
    }
    let names: Vec<String> = std::fs::read_dir(listed)
        .ok()?
        .take(MAX_ENTRIES)
        .flatten()
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect();
    closest(&name, &names).map(|best| parent.join(best))
}

fn closest<'a>(word: &str, names: &'a [String]) -> Option<&'a str> {
    let word = word.to_lowercase();
    names
        .iter()
        .map(|name| (strsim::jaro_winkler(&word, &name.to_lowercase()), name))
        .filter(|(score, _)| *score >= LIKENESS)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, name)| name.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree() -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("temp dir");
        let plan = dir.path().join("plans/example");
        std::fs::create_dir_all(&plan).expect("mkdir");
        std::fs::write(plan.join(MASTER_FILE), "# P\n").expect("write");
        std::fs::write(plan.join("phase-1.md"), "# P1\n").expect("write");
        dir
    }

    #[test]
    fn a_mistyped_directory_or_file_is_corrected() {
        let dir = tree();
        let root = dir.path();
        assert_eq!(
            nearby(&root.join("plans/exmaple")),
            Some(root.join("plans/example"))
        );
        assert_eq!(
            nearby(&root.join("plan/example")),
            Some(root.join("plans/example"))
        );
        assert_eq!(
            nearby(&root.join("plans/example/MASTER_PLN.md")),
            Some(root.join("plans/example/MASTER_PLAN.md"))
        );
        assert_eq!(nearby(&root.join("elsewhere/entirely")), None);
        assert_eq!(
            master_beside(&root.join("plans/example/phase-1.md")),
            Some(root.join("plans/example/MASTER_PLAN.md"))
        );
        assert_eq!(
            master_beside(&root.join("plans/example/MASTER_PLAN.md")),
            None
        );
    }
}
