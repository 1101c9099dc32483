//! Pure restart policy: what an exit means and when to start the child again.
//!
//! Two users. The MCP supervisor asks [`RestartPolicy`] after every server exit: exit 0
//! is a clean shutdown, exit 42 a requested restart (throttled), anything else a crash
//! (restart with backoff, until too many crashes in a window leave it degraded). The
//! orchestrator asks [`RestartBudget`] before each context restart of an agent session
//! (`max_restarts` per attempt).
//!
//! No I/O and no clock: every method takes the current [`Instant`] from the caller, so
//! tests drive time by hand (issue 6, "crash and backoff timing with an injected clock").

use std::collections::VecDeque;
use std::fmt;
use std::time::{Duration, Instant};

use crate::process::ExitStatus;

/// The exit code with which an MCP server asks to be restarted.
pub const RESTART_EXIT_CODE: i32 = 42;

/// What an MCP server's exit means (DESIGN.md, "Types carry meaning").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChildExit {
    /// Exit code 0: the server shut down on purpose; the supervisor exits too.
    Clean,
    /// Exit code 42: the server asks to be started again.
    RestartRequested,
    /// Any other code, or a signal: the server crashed.
    Crashed(ExitStatus),
}

impl ChildExit {
    /// Classify an exit status.
    #[must_use]
    pub fn classify(status: ExitStatus) -> Self {
        match status {
            ExitStatus::Code(0) => ChildExit::Clean,
            ExitStatus::Code(RESTART_EXIT_CODE) => ChildExit::RestartRequested,
            other => ChildExit::Crashed(other),
        }
    }
}

impl From<ExitStatus> for ChildExit {
    fn from(status: ExitStatus) -> Self {
        ChildExit::classify(status)
    }
}

impl fmt::Display for ChildExit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ChildExit::Clean => f.write_str("clean shutdown (exit code 0)"),
            ChildExit::RestartRequested => {
                write!(f, "restart requested (exit code {RESTART_EXIT_CODE})")
            }
            ChildExit::Crashed(status) => write!(f, "crashed ({status})"),
        }
    }
}

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

/// The session outcome code for "max restarts exceeded" (issue 3's outcome codes).
pub const MAX_RESTARTS_EXCEEDED: i32 = -3;

/// Context restarts allowed for one phase attempt (`max_restarts`; 0 disables them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RestartBudget {
    max: u32,
    used: u32,
}

/// The answer to "may I restart again?".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BudgetDecision {
    /// Yes: this is restart number `number` (1-based) of this attempt.
    Restart {
        /// Which restart this is.
        number: u32,
    },
    /// No: all `max` restarts were used (or restarts are disabled with 0).
    Exhausted {
        /// The configured maximum.
        max: u32,
    },
}

impl BudgetDecision {
    /// True when the restart may go ahead.
    #[must_use]
    pub fn is_allowed(self) -> bool {
        matches!(self, BudgetDecision::Restart { .. })
    }

    /// The session outcome code for an exhausted budget, [`MAX_RESTARTS_EXCEEDED`].
    #[must_use]
    pub fn code(self) -> Option<i32> {
        match self {
            BudgetDecision::Restart { .. } => None,
            BudgetDecision::Exhausted { .. } => Some(MAX_RESTARTS_EXCEEDED),
        }
    }
}

impl fmt::Display for BudgetDecision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BudgetDecision::Restart { number } => write!(f, "restart {number}"),
            BudgetDecision::Exhausted { max: 0 } => {
                f.write_str("max restarts exceeded (restarts are disabled: max_restarts is 0)")
            }
            BudgetDecision::Exhausted { max } => {
                write!(f, "max restarts exceeded (all {max} used)")
            }
        }
    }
}

impl RestartBudget {
    /// A fresh budget of `max_restarts` (0 disables restarts).
    #[must_use]
    pub fn new(max_restarts: u32) -> Self {
        RestartBudget {
            max: max_restarts,
            used: 0,
        }
    }

    /// Ask to restart once more; an allowed restart is counted.
    pub fn try_restart(&mut self) -> BudgetDecision {
        if self.used < self.max {
            self.used += 1;
            BudgetDecision::Restart { number: self.used }
        } else {
            BudgetDecision::Exhausted { max: self.max }
        }
    }

    /// Restarts used so far.
    #[must_use]
    pub fn used(&self) -> u32 {
        self.used
    }

    /// Restarts still allowed.
    #[must_use]
    pub fn remaining(&self) -> u32 {
        self.max - self.used
    }

    /// The configured maximum.
    #[must_use]
    pub fn max(&self) -> u32 {
        self.max
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);

    fn crash() -> ChildExit {
        ChildExit::Crashed(ExitStatus::Code(1))
    }

    #[test]
    fn classifies_exits() {
        assert_eq!(ChildExit::classify(ExitStatus::Code(0)), ChildExit::Clean);
        assert_eq!(
            ChildExit::classify(ExitStatus::Code(42)),
            ChildExit::RestartRequested
        );
        assert_eq!(
            ChildExit::from(ExitStatus::Code(1)),
            ChildExit::Crashed(ExitStatus::Code(1))
        );
        assert_eq!(
            ChildExit::from(ExitStatus::Signal(9)),
            ChildExit::Crashed(ExitStatus::Signal(9))
        );
        assert_eq!(
            ChildExit::from(ExitStatus::Unknown),
            ChildExit::Crashed(ExitStatus::Unknown)
        );
        assert_eq!(
            ChildExit::Crashed(ExitStatus::Signal(9)).to_string(),
            "crashed (signal 9 (SIGKILL))"
        );
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
        let config = RestartConfig {
            max_crashes: 0,
            ..RestartConfig::default()
        };
        let mut policy = RestartPolicy::new(config);
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
        let config = RestartConfig {
            max_crashes: 0,
            ..RestartConfig::default()
        };
        let mut policy = RestartPolicy::new(config);
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

    #[test]
    fn budget_counts_restarts_and_reports_exhaustion() {
        let mut budget = RestartBudget::new(2);
        assert_eq!(budget.remaining(), 2);
        assert_eq!(budget.try_restart(), BudgetDecision::Restart { number: 1 });
        assert_eq!(budget.try_restart(), BudgetDecision::Restart { number: 2 });
        let exhausted = budget.try_restart();
        assert_eq!(exhausted, BudgetDecision::Exhausted { max: 2 });
        assert!(!exhausted.is_allowed());
        assert_eq!(exhausted.code(), Some(-3));
        assert_eq!(exhausted.to_string(), "max restarts exceeded (all 2 used)");
        assert_eq!(budget.used(), 2);
        assert_eq!(budget.remaining(), 0);
        assert_eq!(budget.try_restart(), BudgetDecision::Exhausted { max: 2 });
    }

    #[test]
    fn zero_budget_disables_restarts() {
        let mut budget = RestartBudget::new(0);
        let decision = budget.try_restart();
        assert_eq!(decision, BudgetDecision::Exhausted { max: 0 });
        assert_eq!(decision.code(), Some(MAX_RESTARTS_EXCEEDED));
        assert!(decision.to_string().contains("disabled"));
        assert_eq!(budget.max(), 0);
        assert_eq!(BudgetDecision::Restart { number: 1 }.code(), None);
    }
}
