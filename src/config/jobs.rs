//! [`Jobs`]: how many phases a run works on at once (`jobs`, `--jobs`), read once where
//! the configuration loads instead of wherever the number is used.

use std::fmt;
use std::num::NonZeroU32;

use serde::{Deserialize, Serialize};

/// How many phases run at once. Written as a number: `1` (the default) runs one phase
/// at a time in the working tree itself, `0` every phase that is ready, and any other
/// number that many side by side, each in its own git worktree.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "u32", into = "u32")]
pub enum Jobs {
    /// One phase at a time, in the working tree (`1`).
    #[default]
    InPlace,
    /// Up to this many phases at once (at least 2), each in a worktree of its own.
    Worktrees(NonZeroU32),
    /// Every phase that is ready, each in a worktree of its own (`0`).
    AllReady,
}

impl Jobs {
    /// Whether phases run side by side in worktrees (anything but [`Jobs::InPlace`]).
    #[must_use]
    pub fn side_by_side(self) -> bool {
        !matches!(self, Jobs::InPlace)
    }

    /// How many of a plan's `phases` may run at once.
    #[must_use]
    pub fn at_once(self, phases: usize) -> usize {
        match self {
            Jobs::InPlace => 1,
            Jobs::Worktrees(jobs) => usize::try_from(jobs.get()).unwrap_or(usize::MAX),
            Jobs::AllReady => phases.max(1),
        }
    }
}

impl From<u32> for Jobs {
    fn from(jobs: u32) -> Self {
        match jobs {
            0 => Jobs::AllReady,
            1 => Jobs::InPlace,
            jobs => NonZeroU32::new(jobs).map_or(Jobs::AllReady, Jobs::Worktrees),
        }
    }
}

impl From<Jobs> for u32 {
    fn from(jobs: Jobs) -> Self {
        match jobs {
            Jobs::InPlace => 1,
            Jobs::Worktrees(jobs) => jobs.get(),
            Jobs::AllReady => 0,
        }
    }
}

impl fmt::Display for Jobs {
    /// As the configuration writes it: `1`, `3`, `0`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", u32::from(*self))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_number_reads_as_its_meaning_and_back() {
        for (number, jobs) in [
            (0, Jobs::AllReady),
            (1, Jobs::InPlace),
            (3, Jobs::Worktrees(NonZeroU32::new(3).expect("3"))),
        ] {
            assert_eq!(Jobs::from(number), jobs);
            assert_eq!(u32::from(jobs), number);
            assert_eq!(jobs.to_string(), number.to_string());
        }
        assert!(!Jobs::InPlace.side_by_side());
        assert!(Jobs::from(2).side_by_side());
        assert!(Jobs::AllReady.side_by_side());
    }

    #[test]
    fn at_once_counts_the_phases_that_may_run_together() {
        assert_eq!(Jobs::InPlace.at_once(5), 1);
        assert_eq!(Jobs::from(3).at_once(5), 3);
        assert_eq!(Jobs::AllReady.at_once(5), 5);
        assert_eq!(Jobs::AllReady.at_once(0), 1);
    }

    #[test]
    fn it_is_written_and_read_as_a_number() {
        let yaml: Jobs = serde_norway::from_str("4").expect("read");
        assert_eq!(yaml, Jobs::from(4));
        assert_eq!(serde_json::to_string(&Jobs::AllReady).expect("write"), "0");
    }
}
