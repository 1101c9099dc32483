//! Phase ids ([`PhaseId`]) and dependencies between phases ([`Dependency`], [`DependencyTarget`]).

use std::fmt;
use std::path::PathBuf;

use serde::{Serialize, Serializer};

use super::Location;

/// A phase identifier such as `1`, `2` or `3.1`: dot-separated decimal numbers.
///
/// Leading zeros are dropped (`01` and `1` are the same phase), so ids compare by value.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PhaseId(String);

impl PhaseId {
    /// Parse an id, accepting an optional leading `Phase` word (`Phase 2` → `2`).
    #[must_use]
    pub fn parse(text: &str) -> Option<Self> {
        let mut text = text.trim();
        if let Some(rest) = text
            .get(..5)
            .filter(|head| head.eq_ignore_ascii_case("phase"))
            .and_then(|_| text.get(5..))
        {
            text = rest.trim_start();
        }
        let text = text.trim_start_matches('#').trim();
        if text.is_empty() {
            return None;
        }
        let mut parts = Vec::new();
        for part in text.split('.') {
            if part.is_empty() || !part.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            let trimmed = part.trim_start_matches('0');
            parts.push(if trimmed.is_empty() { "0" } else { trimmed });
        }
        Some(PhaseId(parts.join(".")))
    }

    /// The id as text.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The id as a single whole number, when it is one (`3` but not `3.1`).
    #[must_use]
    pub fn as_number(&self) -> Option<u64> {
        self.0.parse().ok()
    }
}

impl fmt::Display for PhaseId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Serialize for PhaseId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

/// What a dependency points at.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum DependencyTarget {
    /// A phase named by id (`Phase 2`).
    Id(PhaseId),
    /// A phase file named only by a link whose text names no phase id; the loader turns
    /// it into an [`DependencyTarget::Id`] when the file is one of the plan's phases.
    File(PathBuf),
}

impl fmt::Display for DependencyTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DependencyTarget::Id(id) => write!(f, "phase {id}"),
            DependencyTarget::File(path) => write!(f, "{}", path.display()),
        }
    }
}

/// A phase this phase must wait for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dependency {
    /// The phase depended on.
    pub target: DependencyTarget,
    /// Where the dependency is written.
    pub location: Location,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phase_ids_parse_and_normalize() {
        assert_eq!(PhaseId::parse("1").map(|id| id.0), Some("1".into()));
        assert_eq!(PhaseId::parse(" 3.1 ").map(|id| id.0), Some("3.1".into()));
        assert_eq!(PhaseId::parse("01").map(|id| id.0), Some("1".into()));
        assert_eq!(PhaseId::parse("Phase 2").map(|id| id.0), Some("2".into()));
        assert_eq!(PhaseId::parse("#4").map(|id| id.0), Some("4".into()));
        assert_eq!(PhaseId::parse(""), None);
        assert_eq!(PhaseId::parse("TBD"), None);
        assert_eq!(PhaseId::parse("1."), None);
        assert_eq!(PhaseId::parse("1a"), None);
        assert_eq!(PhaseId::parse("3").and_then(|id| id.as_number()), Some(3));
        assert_eq!(PhaseId::parse("3.1").and_then(|id| id.as_number()), None);
    }
}
