//! The agent cut off from its API: its own retries say the API cannot be reached, and
//! nothing has come from the model since. Claude Code and the Gemini CLI give up after
//! a few minutes of retries; Codex waits for the network without end. Past
//! `agent.offline_grace` the session is stopped as an agent failure (`Unreachable`), so
//! the run can wait for the network instead of letting the agent retry until the
//! session's timeout.

use std::time::{Duration, Instant};

/// Since when the agent has only been failing to reach its API.
#[derive(Debug, Default)]
pub(super) struct Outage {
    since: Option<Instant>,
}

impl Outage {
    /// One of the agent's retries at `now` said the API cannot be reached: whether the
    /// outage has lasted `grace` or longer.
    pub(super) fn unreachable(&mut self, now: Instant, grace: Duration) -> bool {
        let since = *self.since.get_or_insert(now);
        now.duration_since(since) >= grace
    }

    /// The model answered: whatever cut the agent off is over.
    pub(super) fn answered(&mut self) {
        self.since = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_outage_lasts_from_its_first_retry_until_the_model_answers() {
        let grace = Duration::from_secs(60);
        let start = Instant::now();
        let mut outage = Outage::default();
        assert!(!outage.unreachable(start, grace));
        assert!(!outage.unreachable(start + Duration::from_secs(59), grace));
        assert!(outage.unreachable(start + Duration::from_secs(60), grace));
        outage.answered();
        assert!(!outage.unreachable(start + Duration::from_secs(90), grace));
        assert!(outage.unreachable(start + Duration::from_secs(150), grace));
        assert!(Outage::default().unreachable(start, Duration::ZERO));
    }
}
