//! The whole plan ([`Plan`]), the problems found reading it ([`Problem`]), and how its paths resolve ([`resolve_path`]).

use std::path::{Path, PathBuf};

use super::{Location, Phase, PhaseId};

/// Which file a parse problem is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProblemScope {
    /// The master plan.
    Master,
    /// A phase file (the index into [`Plan::phases`]).
    Phase(usize),
}

/// Something in a plan file that could not be understood.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// Which file.
    pub scope: ProblemScope,
    /// What is wrong, as a lowercase sentence fragment.
    pub message: String,
    /// Where.
    pub location: Location,
    /// How to fix it.
    pub hint: String,
}

/// A master plan and its phases.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// The title: the master plan's first H1 without a trailing "- Master Plan", else the
    /// file name.
    pub title: String,
    /// The master plan file.
    pub master: PathBuf,
    /// Where the phases table starts; `None` when the master plan has none.
    pub phases_table: Option<Location>,
    /// The phases, in table order.
    pub phases: Vec<Phase>,
    /// What could not be parsed.
    pub problems: Vec<Problem>,
    /// Where a master plan without a phases table reads like a phase file instead: its
    /// `**Status:**`, `**Depends On:**` or `## Tasks` line.
    pub phase_like: Option<Location>,
}

impl Plan {
    /// The first phase with this id.
    #[must_use]
    pub fn phase(&self, id: &PhaseId) -> Option<&Phase> {
        self.phases.iter().find(|phase| &phase.id == id)
    }

    /// The directory holding the master plan (the base for its relative links).
    #[must_use]
    pub fn dir(&self) -> &Path {
        self.master.parent().unwrap_or(Path::new(""))
    }
}

/// Join `relative` onto `base` and remove `.` and `..` components without touching the
/// file system, so plan paths stay as the user wrote them (relative stays relative).
#[must_use]
pub fn resolve_path(base: &Path, relative: &str) -> PathBuf {
    use std::path::Component;
    let joined = base.join(relative);
    let mut out = PathBuf::new();
    for component in joined.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                let last_is_normal =
                    matches!(out.components().next_back(), Some(Component::Normal(_)));
                if last_is_normal {
                    out.pop();
                } else if !matches!(
                    out.components().next_back(),
                    Some(Component::RootDir | Component::Prefix(_))
                ) {
                    out.push("..");
                }
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    #[test]
    fn paths_resolve_lexically() {
        for (dir, link, resolved) in [
            ("plans/a", "phase-1.md", "plans/a/phase-1.md"),
            ("plans/a", "./../b/phase.md", "plans/b/phase.md"),
            ("", "../x.md", "../x.md"),
            ("/r", "../../x.md", "/x.md"),
        ] {
            assert_eq!(
                resolve_path(Path::new(dir), link),
                PathBuf::from(resolved),
                "{link} from {dir:?}"
            );
        }
    }
}
