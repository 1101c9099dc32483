//! The agent cut off from its API: its own retries say the API cannot be reached, and
//! nothing has come from the model since. Claude Code and the Gemini CLI give up after
//! a few minutes of retries; Codex waits for the network without end. Past
//! `agent.offline_grace` the session is stopped as an agent failure (`Unreachable`), so
//! the run can wait for the network instead of letting the agent retry until the
//! session's timeout.
//!
//! The stop lands when the grace ends if the agent is then waiting out the backoff its
//! last retry announced (Claude Code says how long): it has not tried again, so nothing
//! has changed. Otherwise a request may be on its way, and the stop waits for the next
//! retry to say it failed too.

use std::time::Duration;

use tokio::time::Instant;

use crate::agent::ApiRetry;

/// Since when the agent has only been failing to reach its API, and its latest retry.
#[derive(Debug, Default)]
pub(super) struct Outage {
    current: Option<Current>,
}

#[derive(Debug)]
struct Current {
    since: Instant,
    latest: ApiRetry,
    /// Until when the agent waits before its next try, when its retry says.
    backoff_until: Option<Instant>,
}

impl Outage {
    /// One of the agent's retries at `now` said the API cannot be reached: whether the
    /// outage has lasted `grace` or longer.
    pub(super) fn unreachable(&mut self, retry: &ApiRetry, now: Instant, grace: Duration) -> bool {
        let backoff_until = retry
            .delay_ms
            .map(|delay| now + Duration::from_millis(delay));
        let current = self.current.get_or_insert_with(|| Current {
            since: now,
            latest: retry.clone(),
            backoff_until,
        });
        current.latest = retry.clone();
        current.backoff_until = backoff_until;
        now.duration_since(current.since) >= grace
    }

    /// When the grace ends with the agent still waiting out its backoff, so the session
    /// can be stopped then rather than at the next retry.
    pub(super) fn cut_off_at(&self, grace: Duration) -> Option<Instant> {
        let current = self.current.as_ref()?;
        let ends = current.since + grace;
        (ends < current.backoff_until?).then_some(ends)
    }

    /// The latest of the retries that found the API unreachable.
    pub(super) fn latest(&self) -> Option<&ApiRetry> {
        self.current.as_ref().map(|current| &current.latest)
    }

    /// The model answered: whatever cut the agent off is over.
    pub(super) fn answered(&mut self) {
        self.current = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::FailureKind;

    fn refused(delay_ms: Option<u64>) -> ApiRetry {
        ApiRetry {
            attempt: Some(1),
            max_retries: Some(10),
            delay_ms,
            status: None,
            error: "unknown".to_owned(),
            kind: Some(FailureKind::Unreachable),
        }
    }

    #[test]
    fn an_outage_lasts_from_its_first_retry_until_the_model_answers() {
        let grace = Duration::from_secs(60);
        let start = Instant::now();
        let retry = refused(None);
        let mut outage = Outage::default();
        assert!(!outage.unreachable(&retry, start, grace));
        assert!(!outage.unreachable(&retry, start + Duration::from_secs(59), grace));
        assert!(outage.unreachable(&retry, start + Duration::from_secs(60), grace));
        outage.answered();
        assert!(!outage.unreachable(&retry, start + Duration::from_secs(90), grace));
        assert!(outage.unreachable(&retry, start + Duration::from_secs(150), grace));
        assert!(Outage::default().unreachable(&retry, start, Duration::ZERO));
    }

    #[test]
    fn the_grace_ends_on_a_timer_only_while_the_agent_waits_out_its_backoff() {
        let grace = Duration::from_secs(60);
        let start = Instant::now();
        let mut outage = Outage::default();
        assert_eq!(outage.cut_off_at(grace), None);
        outage.unreachable(&refused(Some(1_000)), start, grace);
        // The agent tries again after a second: by the grace's end it may have got through.
        assert_eq!(outage.cut_off_at(grace), None);
        outage.unreachable(
            &refused(Some(32_000)),
            start + Duration::from_secs(31),
            grace,
        );
        assert_eq!(outage.cut_off_at(grace), Some(start + grace));
        // An agent that does not say when it retries is stopped at a retry.
        outage.unreachable(&refused(None), start + Duration::from_secs(40), grace);
        assert_eq!(outage.cut_off_at(grace), None);
        assert_eq!(outage.latest().and_then(|retry| retry.delay_ms), None);
        outage.answered();
        assert_eq!(outage.latest(), None);
    }
}
