//! No-progress detection: an attempt whose context restarts keep ending with nothing to
//! show fails instead of spending the rest of its restarts (`no_progress_restarts`).

/// The outcome code of an attempt that failed for making no progress.
pub const NO_PROGRESS: i32 = -6;

/// What one session stopped for its context left behind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SessionProgress {
    /// The working tree differs from what it was when the session started.
    pub changed_files: bool,
    /// The agent logged a new step with `debussy progress`.
    pub logged_progress: bool,
    /// The agent's todo list has more completed items than before the session.
    pub completed_todos: bool,
}

impl SessionProgress {
    /// Whether any of the three moved.
    #[must_use]
    pub fn moved(self) -> bool {
        self.changed_files || self.logged_progress || self.completed_todos
    }
}

/// Counts the context-stopped sessions in a row that made no progress.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProgressWatch {
    limit: u32,
    stalled: u32,
}

impl ProgressWatch {
    /// A watch that gives up after `limit` stalled sessions in a row (0: never).
    #[must_use]
    pub fn new(limit: u32) -> Self {
        ProgressWatch { limit, stalled: 0 }
    }

    /// A session ended in a context stop having made `progress`. Returns the number of
    /// stalled sessions in a row when that reaches the limit: the attempt should fail.
    pub fn after_stop(&mut self, progress: SessionProgress) -> Option<u32> {
        if progress.moved() {
            self.stalled = 0;
            return None;
        }
        self.stalled += 1;
        (self.limit > 0 && self.stalled >= self.limit).then_some(self.stalled)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STALLED: SessionProgress = SessionProgress {
        changed_files: false,
        logged_progress: false,
        completed_todos: false,
    };

    #[test]
    fn two_stalled_stops_in_a_row_give_up() {
        let mut watch = ProgressWatch::new(2);
        assert_eq!(watch.after_stop(STALLED), None);
        assert_eq!(watch.after_stop(STALLED), Some(2));
    }

    #[test]
    fn any_kind_of_progress_resets_the_count() {
        for moved in [
            SessionProgress {
                changed_files: true,
                ..STALLED
            },
            SessionProgress {
                logged_progress: true,
                ..STALLED
            },
            SessionProgress {
                completed_todos: true,
                ..STALLED
            },
        ] {
            let mut watch = ProgressWatch::new(2);
            assert_eq!(watch.after_stop(STALLED), None);
            assert_eq!(watch.after_stop(moved), None, "{moved:?}");
            assert_eq!(watch.after_stop(STALLED), None, "{moved:?}");
            assert_eq!(watch.after_stop(STALLED), Some(2), "{moved:?}");
        }
    }

    #[test]
    fn zero_never_gives_up() {
        let mut watch = ProgressWatch::new(0);
        for _ in 0..100 {
            assert_eq!(watch.after_stop(STALLED), None);
        }
    }
}
