//! How often a session passes its context figures on to the run's outputs.
//!
//! The meter sees every line, but a flood of output must not flood the outputs with
//! figures they would redraw at once: a changed figure goes out at most every
//! [`INTERVAL`]. One that comes sooner is held, and goes out when the interval ends (the
//! session's loop waits for [`SnapshotPacing::due`]) or when the session stops. Figures
//! equal to the last one sent are not sent again. Pure: the caller passes the time, on
//! tokio's clock, which tests can pause.

use std::time::Duration;

use tokio::time::Instant;

/// Shortest time between two context figures passed on to the outputs.
pub(super) const INTERVAL: Duration = Duration::from_millis(50);

/// Where the pacing stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pace {
    /// Nothing sent yet: the first figure goes out at once.
    Unsent,
    /// Last sent at this time; nothing waits.
    Sent(Instant),
    /// Last sent at this time, and a newer figure waits for the interval to end.
    Held(Instant),
}

/// The pacing of one session's context figures (`T`: the meter's `Snapshot`), and the
/// last figure sent.
#[derive(Debug)]
pub(super) struct SnapshotPacing<T> {
    pace: Pace,
    last: Option<T>,
}

impl<T: PartialEq + Clone> SnapshotPacing<T> {
    /// Nothing sent yet.
    pub(super) fn new() -> Self {
        SnapshotPacing {
            pace: Pace::Unsent,
            last: None,
        }
    }

    /// When a held figure is due to go out, if one is held.
    pub(super) fn due(&self) -> Option<Instant> {
        match self.pace {
            Pace::Held(sent) => Some(sent + INTERVAL),
            Pace::Unsent | Pace::Sent(_) => None,
        }
    }

    /// Whether a changed figure must wait, at `now`: it must while the interval since
    /// the last one sent runs, unless the session is stopping. A figure that waits is
    /// remembered as held.
    pub(super) fn hold(&mut self, now: Instant, stopping: bool) -> bool {
        let sent = match self.pace {
            Pace::Unsent => return false,
            Pace::Sent(sent) | Pace::Held(sent) => sent,
        };
        if stopping || now.duration_since(sent) >= INTERVAL {
            return false;
        }
        self.pace = Pace::Held(sent);
        true
    }

    /// The figure to send now, at `now`: `snapshot` unless it equals the last one sent.
    /// Nothing is held afterwards either way.
    pub(super) fn release(&mut self, snapshot: T, now: Instant) -> Option<T> {
        if self.last.as_ref() == Some(&snapshot) {
            if let Pace::Held(sent) = self.pace {
                self.pace = Pace::Sent(sent);
            }
            return None;
        }
        self.pace = Pace::Sent(now);
        self.last = Some(snapshot.clone());
        Some(snapshot)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_figure_goes_out_at_once_and_a_quick_second_is_held_until_due() {
        let start = Instant::now();
        let mut pacing = SnapshotPacing::new();
        assert!(!pacing.hold(start, false));
        assert_eq!(pacing.release(1, start), Some(1));
        assert_eq!(pacing.due(), None);

        let soon = start + INTERVAL / 2;
        assert!(pacing.hold(soon, false));
        assert_eq!(pacing.due(), Some(start + INTERVAL));

        let due = start + INTERVAL;
        assert!(!pacing.hold(due, false));
        assert_eq!(pacing.release(2, due), Some(2));
        assert_eq!(pacing.due(), None);
    }

    #[test]
    fn a_stopping_session_is_never_held_and_an_unchanged_figure_is_not_sent() {
        let start = Instant::now();
        let mut pacing = SnapshotPacing::new();
        assert_eq!(pacing.release(1, start), Some(1));
        assert!(!pacing.hold(start, true));
        assert!(pacing.hold(start, false));
        assert_eq!(pacing.release(1, start), None, "the same figure");
        assert_eq!(pacing.due(), None, "nothing waits once released");
    }
}
