//! How many activity and stderr lines a session passes on to the run's outputs.
//!
//! An agent can print far faster than a terminal, a JSON log or the HUD can show, and
//! every line passed on waits in the run's event queue until its sink takes it. So the
//! lines shown are rate-limited by a token bucket: a burst of [`BURST`] lines, then
//! [`PER_SECOND`] a second. Lines over the budget are counted, not queued, and the next
//! line shown is preceded by a note saying how many were left out; nothing is lost, since
//! the transcript and the stderr log keep every line. Lifecycle events (start, context,
//! stops, warnings) never pass through here. Pure: the caller passes the time.

use std::time::Instant;

/// Lines that may be shown at once after a quiet spell.
pub(crate) const BURST: u32 = 1_000;

/// Lines shown per second once the burst is spent.
pub(crate) const PER_SECOND: u32 = 200;

/// What to do with one line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Admit {
    /// Show it.
    Show,
    /// Show it, after a note that this many lines before it were left out.
    ShowAfterGap(u64),
    /// Leave it out (it was counted).
    Drop,
}

/// A token bucket over lines.
#[derive(Debug, Clone)]
pub(crate) struct Throttle {
    tokens: f64,
    refilled: Instant,
    dropped: u64,
}

impl Throttle {
    /// A full bucket at `now`.
    pub(crate) fn new(now: Instant) -> Self {
        Throttle {
            tokens: f64::from(BURST),
            refilled: now,
            dropped: 0,
        }
    }

    /// Decide about one line arriving at `now`.
    pub(crate) fn admit(&mut self, now: Instant) -> Admit {
        let elapsed = now.saturating_duration_since(self.refilled);
        self.refilled = now;
        self.tokens =
            (self.tokens + elapsed.as_secs_f64() * f64::from(PER_SECOND)).min(f64::from(BURST));
        if self.tokens < 1.0 {
            self.dropped += 1;
            return Admit::Drop;
        }
        self.tokens -= 1.0;
        match std::mem::take(&mut self.dropped) {
            0 => Admit::Show,
            gap => Admit::ShowAfterGap(gap),
        }
    }

    /// Lines left out since the last one shown (for a closing note).
    pub(crate) fn take_dropped(&mut self) -> u64 {
        std::mem::take(&mut self.dropped)
    }
}

/// How long after a burst the bucket is full again.
#[cfg(test)]
fn refill_time() -> std::time::Duration {
    std::time::Duration::from_secs_f64(f64::from(BURST) / f64::from(PER_SECOND))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn a_burst_passes_then_the_rate_holds_and_gaps_are_counted() {
        let start = Instant::now();
        let mut throttle = Throttle::new(start);
        for _ in 0..BURST {
            assert_eq!(throttle.admit(start), Admit::Show);
        }
        for _ in 0..5 {
            assert_eq!(throttle.admit(start), Admit::Drop);
        }
        // One line's worth of time later, one line passes, after a note about the five.
        let later = start + Duration::from_secs_f64(1.0 / f64::from(PER_SECOND));
        assert_eq!(throttle.admit(later), Admit::ShowAfterGap(5));
        assert_eq!(throttle.admit(later), Admit::Drop);
        assert_eq!(throttle.take_dropped(), 1);
        assert_eq!(throttle.take_dropped(), 0);
    }

    #[test]
    fn a_quiet_spell_refills_the_burst_but_no_more() {
        let start = Instant::now();
        let mut throttle = Throttle::new(start);
        for _ in 0..BURST {
            throttle.admit(start);
        }
        let later = start + refill_time() * 10;
        for _ in 0..BURST {
            assert_eq!(throttle.admit(later), Admit::Show);
        }
        assert_eq!(throttle.admit(later), Admit::Drop);
    }
}
