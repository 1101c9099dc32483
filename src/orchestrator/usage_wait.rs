//! Waiting out an agent's usage limit, or an API the agent could not reach: a session the
//! limit refused, or the network cut off, does not count as an attempt; the run waits
//! until the limit resets (or backs off while the network may come back) and the same
//! attempt goes on.
//!
//! The wait ([`UsageWait::plan`], pure) lasts until the reset the agent named (Claude
//! Code's `rate_limit_event`, Codex's "try again at …", the Gemini CLI's suggested
//! retry, a Gemini daily quota's midnight in Mountain View), a couple of seconds past it
//! for clocks that disagree; when the agent named none, and always for an unreachable
//! API, it backs off: 30 s, doubling up to 15 min. It never goes past
//! `limits.max_wait` counted from the first refusal: a reset further away pauses the run
//! at once (exit 3), and so does a backoff that would run past it.
//!
//! While it waits ([`Runner::wait_for_usage_limit`]) the run says until when (a
//! `waiting_for_limit` event, the state store for `debussy status`), serves the user's
//! requests (Ctrl-C pauses the run as during a session) and keeps to `max_duration`,
//! which counts the wait. It ends at the reset by the wall clock too, for a machine that
//! slept through it.

use std::time::Duration;

use jiff::Timestamp;

use crate::agent::{AgentFailure, FailureKind};
use crate::config::RunDuration;
use crate::events::Event;
use crate::state::LimitWait;

use super::guards::LimitHit;
use super::runner::Runner;

/// The first backoff when the agent named no reset.
pub(crate) const FIRST_BACKOFF: Duration = Duration::from_secs(30);

/// The longest backoff.
pub(crate) const MAX_BACKOFF: Duration = Duration::from_secs(15 * 60);

/// Time added to a reset the agent named, for clocks that disagree a little.
const PAST_RESET: Duration = Duration::from_secs(2);

/// The waits of one attempt for a usage limit: how many refusals in a row, and how long
/// the run has waited since the first.
#[derive(Debug)]
pub(crate) struct UsageWait {
    max_wait: Option<RunDuration>,
    refusals: u32,
    waited: Duration,
    address: AddressTrust,
}

/// What an answer from the address of an API the agent could not reach says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AddressTrust {
    /// The agent has just failed to reach it: an answer means it is back.
    AgentFailed,
    /// A wait ended because it answered, and the agent still could not reach its API
    /// (the trouble is past the first hop): only an answer after a refused try counts.
    AnsweredInVain,
}

/// What to do about one refusal.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum WaitPlan {
    /// Wait this long, then start the session again.
    Wait {
        /// How long.
        wait: Duration,
        /// Whether the agent named the reset (else a backoff).
        reset_known: bool,
    },
    /// Waiting would pass `limits.max_wait`: pause the run.
    Pause(LimitHit),
}

impl UsageWait {
    /// No refusal yet; waits end at `max_wait` (`None`: however long the reset takes).
    pub(crate) fn new(max_wait: Option<RunDuration>) -> Self {
        UsageWait {
            max_wait,
            refusals: 0,
            waited: Duration::ZERO,
            address: AddressTrust::AgentFailed,
        }
    }

    /// A session went through: the next refusal starts over.
    pub(crate) fn reset(&mut self) {
        self.refusals = 0;
        self.waited = Duration::ZERO;
        self.address = AddressTrust::AgentFailed;
    }

    /// What an answer from the unreachable API's address says in the next wait.
    pub(crate) fn address_trust(&self) -> AddressTrust {
        self.address
    }

    /// The last wait ended `unused` before its end because the API's address answered:
    /// that time was not waited, and the next answer must follow a refused try.
    pub(crate) fn answered(&mut self, unused: Duration) {
        self.waited = self.waited.saturating_sub(unused);
        self.address = AddressTrust::AnsweredInVain;
    }

    /// The plan for `failure` at `now`: a usage limit that resets at its `resets_at`
    /// (seconds since the epoch), if the agent said, or an API it could not reach. A
    /// reset in the past counts as unknown.
    pub(crate) fn plan(&mut self, failure: &AgentFailure, now: Timestamp) -> WaitPlan {
        let reset = failure
            .resets_at
            .and_then(|secs| Timestamp::from_second(secs).ok())
            .filter(|at| *at > now);
        let wait = match reset {
            Some(at) => {
                let until = now.duration_until(at);
                Duration::try_from(until).unwrap_or_default() + PAST_RESET
            }
            None => {
                let doubled = FIRST_BACKOFF.saturating_mul(1 << self.refusals.min(8));
                doubled.min(MAX_BACKOFF)
            }
        };
        self.refusals = self.refusals.saturating_add(1);
        if let Some(limit) = self.max_wait
            && self.waited + wait > limit.get()
        {
            return WaitPlan::Pause(LimitHit::UsageWait {
                kind: failure.kind,
                resets_at: reset,
                needed: self.waited + wait,
                waited: self.waited,
                limit,
            });
        }
        self.waited += wait;
        WaitPlan::Wait {
            wait,
            reset_known: reset.is_some(),
        }
    }
}

/// How a wait ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WaitEnd {
    /// The limit should have reset: go on.
    Ready,
    /// The address of the API the agent could not reach answered `unused` before the
    /// wait's end: go on.
    Answered {
        /// The part of the wait not waited.
        unused: Duration,
    },
    /// The user interrupted or skipped, or a run limit was reached: stop the attempt.
    Stopped,
}

impl Runner<'_> {
    /// Wait `wait` for the usage limit (or the API the agent could not reach) `failure`
    /// reported, in `phase_id`'s `attempt`, serving the user's requests; see the
    /// [module docs](self).
    pub(crate) async fn wait_for_usage_limit(
        &mut self,
        phase_id: &str,
        attempt: u32,
        failure: &AgentFailure,
        wait: Duration,
        reset_known: bool,
        trust: AddressTrust,
    ) -> WaitEnd {
        let now = Timestamp::now();
        let until = now
            .checked_add(jiff::SignedDuration::try_from(wait).unwrap_or_default())
            .unwrap_or(now);
        let what = failure.kind.waiting_for();
        tracing::debug!(until = %until, "{failure}; waiting for {what}");
        self.emit(Event::WaitingForLimit {
            phase_id: phase_id.to_owned(),
            kind: failure.kind,
            attempt,
            until: until.to_string(),
            reset_known,
            wait_secs: wait.as_secs(),
            said: failure.said.clone(),
        });
        let record = LimitWait {
            kind: failure.kind,
            until: until.to_string(),
            said: Some(failure.said.clone()),
        };
        if let Err(err) = self
            .run
            .store
            .set_limit_wait(&self.run.run_id, phase_id, Some(&record))
        {
            self.warn(format!("could not record the wait for {what}: {err}"));
        }
        let watched = (failure.kind == FailureKind::Unreachable)
            .then(|| self.session_spec(phase_id).backend.api_endpoint())
            .flatten()
            .and_then(|endpoint| super::reachable::first_hop(&endpoint));
        let end = self
            .wait_until(
                phase_id,
                tokio::time::Instant::now() + wait,
                until,
                watched.map(|(host, port)| (host, port, trust)),
            )
            .await;
        if let Err(err) = self
            .run
            .store
            .set_limit_wait(&self.run.run_id, phase_id, None)
        {
            self.could_not("record the end of the wait", &err);
        }
        if end != WaitEnd::Stopped {
            tracing::debug!(
                "the wait for {what} (until {}) is over",
                crate::words::local_time(until)
            );
        }
        end
    }

    /// Sleep until `deadline`, or the wall clock's `until` if the machine slept through
    /// it, or until the `watched` address of an API the agent could not reach answers
    /// again ([`super::reachable`]), serving requests and keeping to `max_duration`.
    async fn wait_until(
        &mut self,
        phase_id: &str,
        deadline: tokio::time::Instant,
        until: Timestamp,
        watched: Option<(String, u16, AddressTrust)>,
    ) -> WaitEnd {
        let sleep = sleep_until_either(deadline, until, Timestamp::now);
        tokio::pin!(sleep);
        let address = watched
            .as_ref()
            .map(|(host, port, _)| format!("{host}:{port}"));
        let back = async move {
            match watched {
                Some((host, port, trust)) => {
                    let seen_down = trust == AddressTrust::AgentFailed;
                    super::reachable::answers_again(host, port, seen_down).await;
                }
                None => std::future::pending().await,
            }
        };
        tokio::pin!(back);
        loop {
            let run_deadline = self.guards.deadline();
            tokio::select! {
                () = &mut sleep => return WaitEnd::Ready,
                () = &mut back => {
                    tracing::info!(
                        address = address.as_deref().unwrap_or_default(),
                        "the agent's API answers again; going on before the wait's end"
                    );
                    let unused = deadline.saturating_duration_since(tokio::time::Instant::now());
                    return WaitEnd::Answered { unused };
                }
                () = sleep_until(run_deadline), if run_deadline.is_some() => {
                    if self.must_pause(phase_id, 0.0) {
                        return WaitEnd::Stopped;
                    }
                }
                Some(request) = self.requests.recv() => {
                    if self.handle_idle_request(request) {
                        return WaitEnd::Stopped;
                    }
                }
            }
        }
    }
}

/// How often a wait looks at the wall clock. tokio's timers run on the monotonic clock,
/// which stands still while the machine sleeps (a laptop's lid closed): a limit that
/// reset meanwhile must not be waited for again once it wakes.
const WALL_CLOCK_CHECK: Duration = Duration::from_secs(30);

/// Until the monotonic `deadline`, or until the wall clock (`now`) reads `until`,
/// whichever comes first.
async fn sleep_until_either(
    deadline: tokio::time::Instant,
    until: Timestamp,
    now: impl Fn() -> Timestamp,
) {
    let sleep = tokio::time::sleep_until(deadline);
    tokio::pin!(sleep);
    let mut looks = tokio::time::interval(WALL_CLOCK_CHECK);
    looks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            () = &mut sleep => return,
            _ = looks.tick() => {
                if now() >= until {
                    return;
                }
            }
        }
    }
}

/// Sleep until `deadline`, or forever without one.
async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::FailureKind;

    const HOUR: Duration = Duration::from_secs(3600);

    #[tokio::test(start_paused = true)]
    async fn a_wait_the_machine_slept_through_ends_at_its_next_look() {
        let start = Timestamp::now();
        let until = start + HOUR;
        let began = tokio::time::Instant::now();
        // The monotonic clock says no time passed; the wall clock says two hours did.
        let woke = move || start + 2 * HOUR;
        sleep_until_either(began + HOUR, until, woke).await;
        assert!(began.elapsed() <= WALL_CLOCK_CHECK, "{:?}", began.elapsed());
    }

    #[tokio::test(start_paused = true)]
    async fn a_wait_the_machine_stayed_awake_for_ends_at_its_deadline() {
        let start = Timestamp::now();
        let began = tokio::time::Instant::now();
        sleep_until_either(began + HOUR, start + HOUR, move || start).await;
        assert_eq!(began.elapsed(), HOUR);
    }

    fn at(secs: i64) -> Timestamp {
        Timestamp::from_second(secs).expect("timestamp")
    }

    /// A usage limit that resets at `resets_at`, if said.
    fn limit(resets_at: Option<i64>) -> AgentFailure {
        AgentFailure::new(FailureKind::UsageLimit, "limit").resetting_at(resets_at)
    }

    #[test]
    fn a_known_reset_is_waited_for_to_the_second() {
        let mut waits = UsageWait::new(RunDuration::parse("6h").ok());
        let plan = waits.plan(&limit(Some(1_000_020)), at(1_000_000));
        assert_eq!(
            plan,
            WaitPlan::Wait {
                wait: Duration::from_secs(22),
                reset_known: true
            }
        );
    }

    #[test]
    fn without_a_reset_it_backs_off_from_30s_doubling_to_15_minutes() {
        let mut waits = UsageWait::new(None);
        let mut seen = Vec::new();
        for _ in 0..8 {
            match waits.plan(&limit(None), at(1_000_000)) {
                WaitPlan::Wait { wait, reset_known } => {
                    assert!(!reset_known);
                    seen.push(wait.as_secs());
                }
                WaitPlan::Pause(hit) => panic!("no limit, yet {hit}"),
            }
        }
        assert_eq!(seen, [30, 60, 120, 240, 480, 900, 900, 900]);
        waits.reset();
        assert!(
            matches!(
                waits.plan(&limit(Some(999_000)), at(1_000_000)),
                WaitPlan::Wait { wait, reset_known: false } if wait == FIRST_BACKOFF
            ),
            "a reset in the past is no reset"
        );
    }

    #[test]
    fn a_reset_past_max_wait_pauses_at_once() {
        let mut waits = UsageWait::new(RunDuration::parse("1h").ok());
        let WaitPlan::Pause(hit) = waits.plan(&limit(Some(1_000_000 + 7_200)), at(1_000_000))
        else {
            panic!("expected a pause");
        };
        assert_eq!(hit.key(), "limits.max_wait");
        assert_eq!(
            hit.raise_hint(),
            "--max-wait 3h",
            "past the 2 h the reset needs"
        );
        assert!(
            hit.to_string().contains("past limits.max_wait (1h)"),
            "{hit}"
        );
    }

    #[test]
    fn an_api_out_of_reach_backs_off_and_pauses_in_its_own_words() {
        let mut waits = UsageWait::new(RunDuration::parse("1m").ok());
        let offline = AgentFailure::new(FailureKind::Unreachable, "cannot reach the API");
        assert_eq!(
            waits.plan(&offline, at(1_000_000)),
            WaitPlan::Wait {
                wait: FIRST_BACKOFF,
                reset_known: false
            }
        );
        let WaitPlan::Pause(hit) = waits.plan(&offline, at(1_000_030)) else {
            panic!("expected a pause");
        };
        assert_eq!(
            hit.to_string(),
            "the agent still could not reach its API after 30s of waiting (limits.max_wait 1m)"
        );
    }

    #[test]
    fn a_first_wait_past_max_wait_says_so_and_the_hint_reaches_it() {
        let offline = AgentFailure::new(FailureKind::Unreachable, "cannot reach the API");
        let mut waits = UsageWait::new(RunDuration::parse("10s").ok());
        let WaitPlan::Pause(hit) = waits.plan(&offline, at(1_000_000)) else {
            panic!("expected a pause");
        };
        assert_eq!(
            hit.to_string(),
            "the agent could not reach its API, and a first wait of 30s is past limits.max_wait (10s)"
        );
        // Twice 10 s would pause again at once.
        assert_eq!(hit.raise_hint(), "--max-wait 30s");
        let mut waits = UsageWait::new(RunDuration::parse("1m").ok());
        assert!(matches!(
            waits.plan(&limit(None), at(1_000_000)),
            WaitPlan::Wait { .. }
        ));
        let WaitPlan::Pause(hit) = waits.plan(&limit(None), at(1_000_030)) else {
            panic!("expected a pause");
        };
        assert!(hit.to_string().contains("after 30s of waiting"), "{hit}");
        assert_eq!(hit.raise_hint(), "--max-wait 2m");
    }

    #[test]
    fn backoffs_add_up_to_max_wait_then_pause() {
        let mut waits = UsageWait::new(RunDuration::parse("4m").ok());
        let mut waited = 0;
        loop {
            match waits.plan(&limit(None), at(1_000_000)) {
                WaitPlan::Wait { wait, .. } => waited += wait.as_secs(),
                WaitPlan::Pause(hit) => {
                    assert_eq!(waited, 30 + 60 + 120);
                    assert!(hit.to_string().contains("after 3m30s of waiting"), "{hit}");
                    break;
                }
            }
        }
    }

    #[test]
    fn a_wait_the_api_cut_short_counts_what_was_waited_and_trusts_the_next_answer_less() {
        let mut waits = UsageWait::new(RunDuration::parse("80s").ok());
        assert_eq!(waits.address_trust(), AddressTrust::AgentFailed);
        let unreachable = AgentFailure::new(FailureKind::Unreachable, "offline");
        assert!(matches!(
            waits.plan(&unreachable, at(1_000_000)),
            WaitPlan::Wait { wait, .. } if wait == FIRST_BACKOFF
        ));
        // The address answered 25 s into the 30 s: 5 s were waited.
        waits.answered(Duration::from_secs(25));
        assert_eq!(waits.address_trust(), AddressTrust::AnsweredInVain);
        // 5 s + 60 s fits in 80 s; 30 s + 60 s would not.
        assert!(matches!(
            waits.plan(&unreachable, at(1_000_100)),
            WaitPlan::Wait { wait, .. } if wait == 2 * FIRST_BACKOFF
        ));
        waits.reset();
        assert_eq!(waits.address_trust(), AddressTrust::AgentFailed);
    }
}
