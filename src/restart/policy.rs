//! The MCP supervisor's restart policy: throttled requested restarts, crash backoff,
//! and the crash-intensity limit that leaves the supervisor degraded.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use super::exit::ChildExit;

/// What to do after an exit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RestartDecision {
    /// Do not restart: the server shut down cleanly, so the supervisor shuts down.
    Stop,
    /// Start the child again after this delay (zero: at once).
    RestartAfter(Duration),
    /// Too many crashes in the window: do not restart on your own; answer requests with
    /// an error until [`RestartPolicy::manual_restart`].
    Degraded,
}

/// One tier of a crash backoff: crashes up to `up_to` (1-based, in a streak) wait
/// `delay`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BackoffTier {
    /// The last crash number of the streak this tier covers.
    pub up_to: u32,
    /// The delay before restarting after such a crash.
    pub delay: Duration,
}

/// Delay before restarting after the n-th crash in a row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Backoff {
    tiers: Vec<BackoffTier>,
    after: Duration,
}

impl Backoff {
    /// Tiers (in any order) and the delay for crashes past the last tier.
    #[must_use]
    pub fn new(tiers: impl IntoIterator<Item = BackoffTier>, after: Duration) -> Self {
        let mut tiers: Vec<BackoffTier> = tiers.into_iter().collect();
        tiers.sort_by_key(|tier| tier.up_to);
        Backoff { tiers, after }
    }

    /// The delay after crash number `crash` of a streak (1 = the first).
    #[must_use]
    pub fn delay(&self, crash: u32) -> Duration {
        self.tiers
            .iter()
            .find(|tier| crash <= tier.up_to)
            .map_or(self.after, |tier| tier.delay)
    }
}

impl Default for Backoff {
    /// 1 s for the first 3 crashes, 5 s up to the 10th, 10 s after (issue 6).
    fn default() -> Self {
        Backoff::new(
            [
                BackoffTier {
                    up_to: 3,
                    delay: Duration::from_secs(1),
                },
                BackoffTier {
                    up_to: 10,
                    delay: Duration::from_secs(5),
                },
            ],
            Duration::from_secs(10),
        )
    }
}

/// The knobs of [`RestartPolicy`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RestartConfig {
    /// Exit-42 restarts happen at most once per this interval (default 1 s), measured
    /// from the previous start.
    pub restart_interval: Duration,
    /// Delay after each crash of a streak.
    pub backoff: Backoff,
    /// This many crashes within `crash_window` make the supervisor degraded
    /// (default 5; 0 disables the limit).
    pub max_crashes: u32,
    /// The window for `max_crashes` (default 60 s).
    pub crash_window: Duration,
    /// A child that ran at least this long before crashing starts a new streak, so its
    /// backoff begins again at the first tier (default 60 s).
    pub stable_after: Duration,
}

impl Default for RestartConfig {
    fn default() -> Self {
        RestartConfig {
            restart_interval: Duration::from_secs(1),
            backoff: Backoff::default(),
            max_crashes: 5,
            crash_window: Duration::from_secs(60),
            stable_after: Duration::from_secs(60),
        }
    }
}

/// The MCP supervisor's restart state: call [`child_started`](Self::child_started)
/// whenever a child starts and [`child_exited`](Self::child_exited) whenever one ends.
#[derive(Debug, Clone)]
pub struct RestartPolicy {
    config: RestartConfig,
    started_at: Option<Instant>,
    crashes: VecDeque<Instant>,
    streak: u32,
    degraded: bool,
}

impl RestartPolicy {
    /// A policy with no history.
    #[must_use]
    pub fn new(config: RestartConfig) -> Self {
        RestartPolicy {
            config,
            started_at: None,
            crashes: VecDeque::new(),
            streak: 0,
            degraded: false,
        }
    }

    /// The configuration in force.
    #[must_use]
    pub fn config(&self) -> &RestartConfig {
        &self.config
    }

    /// A child was started at `now`.
    pub fn child_started(&mut self, now: Instant) {
        self.started_at = Some(now);
    }

    /// A child ended at `now` in the way `exit` says: what next?
    pub fn child_exited(&mut self, exit: ChildExit, now: Instant) -> RestartDecision {
        let uptime = self
            .started_at
            .take()
            .map(|started| now.saturating_duration_since(started));
        match exit {
            ChildExit::Clean => RestartDecision::Stop,
            _ if self.degraded => RestartDecision::Degraded,
            ChildExit::RestartRequested => {
                let wait = uptime.map_or(Duration::ZERO, |up| {
                    self.config.restart_interval.saturating_sub(up)
                });
                RestartDecision::RestartAfter(wait)
            }
            ChildExit::Crashed(_) => self.crashed(uptime, now),
        }
    }

    fn crashed(&mut self, uptime: Option<Duration>, now: Instant) -> RestartDecision {
        if uptime.is_some_and(|up| up >= self.config.stable_after) {
            self.streak = 0;
        }
        self.streak = self.streak.saturating_add(1);
        self.crashes.push_back(now);
        self.prune(now);
        let limit = usize::try_from(self.config.max_crashes).unwrap_or(usize::MAX);
        if limit > 0 && self.crashes.len() >= limit {
            self.degraded = true;
            return RestartDecision::Degraded;
        }
        RestartDecision::RestartAfter(self.config.backoff.delay(self.streak))
    }

    /// Forget crashes older than the window.
    fn prune(&mut self, now: Instant) {
        while let Some(oldest) = self.crashes.front() {
            if now.saturating_duration_since(*oldest) >= self.config.crash_window {
                self.crashes.pop_front();
            } else {
                break;
            }
        }
    }

    /// Someone asked for a restart by hand (the `restart_server` tool): leave degraded
    /// mode and forget the crash history, so the next crash backs off from the start.
    pub fn manual_restart(&mut self) {
        self.degraded = false;
        self.streak = 0;
        self.crashes.clear();
    }

    /// True after the crash limit was hit, until [`manual_restart`](Self::manual_restart).
    #[must_use]
    pub fn is_degraded(&self) -> bool {
        self.degraded
    }

    /// Crashes in the current streak.
    #[must_use]
    pub fn crash_streak(&self) -> u32 {
        self.streak
    }

    /// Crashes within the window ending at `now`.
    #[must_use]
    pub fn crashes_in_window(&self, now: Instant) -> usize {
        self.crashes
            .iter()
            .filter(|at| now.saturating_duration_since(**at) < self.config.crash_window)
            .count()
    }
}

impl Default for RestartPolicy {
    fn default() -> Self {
        RestartPolicy::new(RestartConfig::default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::process::ExitStatus;

    const S: Duration = Duration::from_secs(1);

    fn crash() -> ChildExit {
        ChildExit::Crashed(ExitStatus::Code(1))
    }

    /// The default policy without the crash limit (`max_crashes: 0`).
    fn never_degrading() -> RestartPolicy {
        RestartPolicy::new(RestartConfig {
            max_crashes: 0,
            ..RestartConfig::default()
        })
    }

    #[test]
    fn clean_exit_stops_even_when_degraded() {
        let t0 = Instant::now();
        let mut policy = RestartPolicy::default();
        policy.child_started(t0);
        assert_eq!(
            policy.child_exited(ChildExit::Clean, t0 + S),
            RestartDecision::Stop
        );
        for i in 0..5 {
            policy.child_exited(crash(), t0 + S * i);
        }
        assert!(policy.is_degraded());
        assert_eq!(
            policy.child_exited(ChildExit::Clean, t0 + S * 6),
            RestartDecision::Stop
        );
    }

    #[test]
    fn exit_42_is_throttled_from_the_last_start() {
        let t0 = Instant::now();
        let mut policy = RestartPolicy::default();
        policy.child_started(t0);
        let ms = Duration::from_millis;
        assert_eq!(
            policy.child_exited(ChildExit::RestartRequested, t0 + ms(300)),
            RestartDecision::RestartAfter(ms(700))
        );
        policy.child_started(t0 + S);
        assert_eq!(
            policy.child_exited(ChildExit::RestartRequested, t0 + S + ms(1500)),
            RestartDecision::RestartAfter(Duration::ZERO)
        );
        // Without a recorded start there is nothing to throttle against.
        assert_eq!(
            policy.child_exited(ChildExit::RestartRequested, t0 + S * 10),
            RestartDecision::RestartAfter(Duration::ZERO)
        );
        assert_eq!(policy.crash_streak(), 0);
    }

    #[test]
    fn exit_42_loops_never_degrade() {
        let t0 = Instant::now();
        let mut policy = RestartPolicy::default();
        for i in 0..100 {
            policy.child_started(t0 + S * i);
            let decision = policy.child_exited(ChildExit::RestartRequested, t0 + S * i);
            assert_eq!(decision, RestartDecision::RestartAfter(S));
        }
        assert!(!policy.is_degraded());
    }

    #[test]
    fn crash_backoff_follows_the_default_tiers() {
        let t0 = Instant::now();
        let mut policy = never_degrading();
        let mut delays = Vec::new();
        let mut now = t0;
        for _ in 0..12 {
            policy.child_started(now);
            now += Duration::from_millis(10);
            match policy.child_exited(crash(), now) {
                RestartDecision::RestartAfter(delay) => delays.push(delay.as_secs()),
                other => panic!("unexpected {other:?}"),
            }
        }
        assert_eq!(delays, vec![1, 1, 1, 5, 5, 5, 5, 5, 5, 5, 10, 10]);
        assert!(!policy.is_degraded());
    }

    #[test]
    fn intensity_limit_degrades_on_the_nth_crash_in_the_window() {
        let t0 = Instant::now();
        let mut policy = RestartPolicy::default();
        for i in 0..4 {
            policy.child_started(t0 + S * (i * 10));
            assert!(matches!(
                policy.child_exited(crash(), t0 + S * (i * 10 + 1)),
                RestartDecision::RestartAfter(_)
            ));
        }
        assert_eq!(policy.crashes_in_window(t0 + S * 31), 4);
        policy.child_started(t0 + S * 40);
        assert_eq!(
            policy.child_exited(crash(), t0 + S * 41),
            RestartDecision::Degraded
        );
        assert!(policy.is_degraded());
        // Stays degraded for any further non-clean exit.
        assert_eq!(
            policy.child_exited(ChildExit::RestartRequested, t0 + S * 500),
            RestartDecision::Degraded
        );
        assert_eq!(
            policy.child_exited(crash(), t0 + S * 500),
            RestartDecision::Degraded
        );
    }

    #[test]
    fn crashes_outside_the_window_do_not_count() {
        let t0 = Instant::now();
        let mut policy = RestartPolicy::default();
        // One crash every 20 s: never 5 within 60 s.
        for i in 0..20 {
            let decision = policy.child_exited(crash(), t0 + S * (i * 20));
            assert!(matches!(decision, RestartDecision::RestartAfter(_)), "{i}");
        }
        assert_eq!(policy.crashes_in_window(t0 + S * 380), 3);
        assert!(!policy.is_degraded());
    }

    #[test]
    fn a_stable_run_resets_the_streak() {
        let t0 = Instant::now();
        let mut policy = never_degrading();
        for i in 0..4 {
            policy.child_started(t0 + S * i);
            policy.child_exited(crash(), t0 + S * i);
        }
        assert_eq!(policy.crash_streak(), 4);
        policy.child_started(t0 + S * 10);
        assert_eq!(
            policy.child_exited(crash(), t0 + S * 70),
            RestartDecision::RestartAfter(S)
        );
        assert_eq!(policy.crash_streak(), 1);
    }

    #[test]
    fn manual_restart_leaves_degraded_and_resets_history() {
        let t0 = Instant::now();
        let mut policy = RestartPolicy::default();
        for i in 0..5 {
            policy.child_exited(crash(), t0 + S * i);
        }
        assert!(policy.is_degraded());
        policy.manual_restart();
        assert!(!policy.is_degraded());
        assert_eq!(policy.crash_streak(), 0);
        assert_eq!(policy.crashes_in_window(t0 + S * 5), 0);
        policy.child_started(t0 + S * 6);
        assert_eq!(
            policy.child_exited(crash(), t0 + S * 7),
            RestartDecision::RestartAfter(S)
        );
    }

    #[test]
    fn custom_backoff_and_limits() {
        let ms = Duration::from_millis;
        let backoff = Backoff::new(
            [
                BackoffTier {
                    up_to: 2,
                    delay: ms(50),
                },
                BackoffTier {
                    up_to: 1,
                    delay: ms(10),
                },
            ],
            ms(200),
        );
        assert_eq!(backoff.delay(1), ms(10));
        assert_eq!(backoff.delay(2), ms(50));
        assert_eq!(backoff.delay(3), ms(200));
        assert_eq!(Backoff::new([], S).delay(1), S);
        let mut policy = RestartPolicy::new(RestartConfig {
            restart_interval: ms(250),
            backoff,
            max_crashes: 2,
            crash_window: ms(100),
            stable_after: S,
        });
        let t0 = Instant::now();
        assert_eq!(
            policy.child_exited(crash(), t0),
            RestartDecision::RestartAfter(ms(10))
        );
        assert_eq!(
            policy.child_exited(crash(), t0 + ms(100)),
            RestartDecision::RestartAfter(ms(50))
        );
        assert_eq!(
            policy.child_exited(crash(), t0 + ms(150)),
            RestartDecision::Degraded
        );
    }
}
