//! The limits an unattended run keeps to (`max_cost_usd`, `max_phase_cost_usd`,
//! `max_duration`, and `limits.max_wait` for an agent's usage limit), and what the run
//! has spent against them.
//!
//! Pure: the run tells [`Guards`] what it spent and when, and asks [`Guards::check`]
//! with the running session's figures; the clock is passed in.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fmt;
use std::rc::Rc;
use std::time::Duration;

use tokio::time::Instant;

use crate::agent::FailureKind;
use crate::config::{Config, RunDuration};
use crate::words;

/// A limit that was reached.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum LimitHit {
    /// The run's cost reached `max_cost_usd`.
    RunCost {
        /// Spent so far, in US dollars.
        spent: f64,
        /// The limit.
        limit: f64,
    },
    /// One phase's cost reached `max_phase_cost_usd`.
    PhaseCost {
        /// The phase.
        phase: String,
        /// Spent on it so far.
        spent: f64,
        /// The limit.
        limit: f64,
    },
    /// The run has been running for `max_duration`.
    Duration {
        /// How long it has run (this invocation and the ones before a `--resume`).
        ran: Duration,
        /// The limit.
        limit: RunDuration,
    },
    /// Waiting for the agent's usage limit to reset would pass `limits.max_wait`.
    UsageWait {
        /// What was waited for: a usage limit, or an API the agent could not reach.
        kind: FailureKind,
        /// When the agent said the limit resets, if it said.
        resets_at: Option<jiff::Timestamp>,
        /// The wait the run needed to go on, counted from the first refusal: until the
        /// reset, or through the next backoff.
        needed: Duration,
        /// How long the run already waited for it.
        waited: Duration,
        /// The limit.
        limit: RunDuration,
    },
}

impl LimitHit {
    /// The configuration key of the limit.
    pub(crate) fn key(&self) -> &'static str {
        match self {
            LimitHit::RunCost { .. } => "max_cost_usd",
            LimitHit::PhaseCost { .. } => "max_phase_cost_usd",
            LimitHit::Duration { .. } => "max_duration",
            LimitHit::UsageWait { .. } => "limits.max_wait",
        }
    }

    /// The flag that raises it on `--resume`, with a value twice the limit as an example.
    pub(crate) fn raise_hint(&self) -> String {
        match self {
            LimitHit::RunCost { limit, .. } => {
                format!("--max-cost {}", words::round_dollars(limit * 2.0))
            }
            LimitHit::PhaseCost { limit, .. } => {
                format!("--max-phase-cost {}", words::round_dollars(limit * 2.0))
            }
            LimitHit::Duration { limit, .. } => format!("--max-duration {}", doubled(*limit)),
            LimitHit::UsageWait {
                resets_at: Some(_),
                needed,
                ..
            } => {
                // Whole hours, half an hour or more past what the reset needs.
                let hours = (needed.as_secs() + 1_800).div_ceil(3_600);
                format!("--max-wait {hours}h")
            }
            LimitHit::UsageWait { needed, limit, .. } => {
                // Twice the limit, or the next backoff if that is longer.
                let secs = (limit.get().as_secs() * 2).max(needed.as_secs());
                format!("--max-wait {}", span(Duration::from_secs(secs)))
            }
        }
    }
}

impl fmt::Display for LimitHit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LimitHit::RunCost { spent, limit } => write!(
                f,
                "the run's cost reached ${spent:.2} (max_cost_usd ${})",
                words::round_dollars(*limit)
            ),
            LimitHit::PhaseCost {
                phase,
                spent,
                limit,
            } => write!(
                f,
                "phase {phase}'s cost reached ${spent:.2} (max_phase_cost_usd ${})",
                words::round_dollars(*limit)
            ),
            LimitHit::Duration { ran, limit } => write!(
                f,
                "the run has been running for {} (max_duration {limit})",
                span(*ran)
            ),
            LimitHit::UsageWait {
                resets_at: Some(at),
                limit,
                ..
            } => write!(
                f,
                "the agent's usage limit resets at {}, past limits.max_wait ({limit})",
                crate::words::local_time(*at)
            ),
            LimitHit::UsageWait {
                kind,
                waited,
                needed,
                limit,
                ..
            } if waited.is_zero() => {
                let what = match kind {
                    FailureKind::Unreachable => "the agent could not reach its API",
                    FailureKind::Overloaded => "the agent's API was overloaded",
                    _ => "the agent's usage limit refused it",
                };
                write!(
                    f,
                    "{what}, and a first wait of {} is past limits.max_wait ({limit})",
                    span(*needed)
                )
            }
            LimitHit::UsageWait {
                kind: FailureKind::Unreachable,
                waited,
                limit,
                ..
            } => write!(
                f,
                "the agent still could not reach its API after {} of waiting (limits.max_wait {limit})",
                span(*waited)
            ),
            LimitHit::UsageWait {
                kind: FailureKind::Overloaded,
                waited,
                limit,
                ..
            } => write!(
                f,
                "the agent's API was still overloaded after {} of waiting (limits.max_wait {limit})",
                span(*waited)
            ),
            LimitHit::UsageWait {
                resets_at: None,
                waited,
                limit,
                ..
            } => write!(
                f,
                "the agent's usage limit still refused it after {} of waiting (limits.max_wait {limit})",
                span(*waited)
            ),
        }
    }
}

/// `limit` twice over, as a flag takes it.
fn doubled(limit: RunDuration) -> String {
    RunDuration::parse(&(limit.get().as_secs() * 2).to_string())
        .map_or_else(|_| limit.to_string(), |d| d.to_string())
}

/// A span as `2h30m`, at least a second.
pub(crate) fn span(span: Duration) -> String {
    RunDuration::parse(&span.as_secs().max(1).to_string())
        .map_or_else(|_| format!("{}s", span.as_secs()), |d| d.to_string())
}

/// What the whole run spent, shared by the phases running side by side.
#[derive(Debug, Default)]
struct RunSpend {
    /// Cost of every session that ended (this run, earlier invocations included).
    settled: f64,
    /// The running session's cost so far, by phase.
    live: BTreeMap<String, f64>,
}

/// The run's limits and its spending so far. Clones share the run's spending (each
/// phase running side by side has one) and keep their own phase's.
#[derive(Debug, Clone)]
pub(crate) struct Guards {
    max_cost: Option<f64>,
    max_phase_cost: Option<f64>,
    max_duration: Option<RunDuration>,
    run: Rc<RefCell<RunSpend>>,
    /// The phase being worked on and its recorded cost.
    phase: Option<(String, f64)>,
    /// Time the run spent running before this invocation.
    earlier: Duration,
    /// When this invocation started.
    started: Instant,
}

impl Guards {
    /// The limits of `config`, for a run that already spent `run_cost` over `earlier`
    /// (both zero for a new run), starting now at `started`.
    pub(crate) fn new(config: &Config, run_cost: f64, earlier: Duration, started: Instant) -> Self {
        Guards {
            max_cost: config.max_cost_usd,
            max_phase_cost: config.max_phase_cost_usd,
            max_duration: config.max_duration,
            run: Rc::new(RefCell::new(RunSpend {
                settled: run_cost,
                live: BTreeMap::new(),
            })),
            phase: None,
            earlier,
            started,
        }
    }

    /// Work on `phase` begins; it already cost `spent` in this run.
    pub(crate) fn enter_phase(&mut self, phase: &str, spent: f64) {
        self.phase = Some((phase.to_owned(), spent));
    }

    /// A session (or handoff) of the current phase ended, costing `cost`.
    pub(crate) fn spent(&mut self, cost: f64) {
        let mut run = self.run.borrow_mut();
        run.settled += cost;
        if let Some((name, phase)) = &mut self.phase {
            *phase += cost;
            run.live.remove(name.as_str());
        }
    }

    /// The current phase's running session has cost `live_cost` so far; the other
    /// phases' checks count it.
    pub(crate) fn running(&self, live_cost: f64) {
        if let Some((name, _)) = &self.phase {
            self.run.borrow_mut().live.insert(name.clone(), live_cost);
        }
    }

    /// How long the run has been running at `now`.
    pub(crate) fn ran(&self, now: Instant) -> Duration {
        self.earlier + now.saturating_duration_since(self.started)
    }

    /// The first limit reached at `now` with the running session's cost so far
    /// (`live_cost`, 0 between sessions), if any.
    pub(crate) fn check(&self, live_cost: f64, now: Instant) -> Option<LimitHit> {
        if let Some(limit) = self.max_cost {
            let run = self.run.borrow();
            let own = self.phase.as_ref().map(|(name, _)| name.as_str());
            let others: f64 = run
                .live
                .iter()
                .filter(|(name, _)| Some(name.as_str()) != own)
                .map(|(_, cost)| cost)
                .sum();
            let spent = run.settled + others + live_cost;
            if spent >= limit {
                return Some(LimitHit::RunCost { spent, limit });
            }
        }
        if let (Some(limit), Some((phase, cost))) = (self.max_phase_cost, &self.phase) {
            let spent = cost + live_cost;
            if spent >= limit {
                return Some(LimitHit::PhaseCost {
                    phase: phase.clone(),
                    spent,
                    limit,
                });
            }
        }
        if let Some(limit) = self.max_duration {
            let ran = self.ran(now);
            if ran >= limit.get() {
                return Some(LimitHit::Duration { ran, limit });
            }
        }
        None
    }

    /// When `max_duration` will be reached, for a timer; `None` without one.
    pub(crate) fn deadline(&self) -> Option<Instant> {
        let limit = self.max_duration?.get();
        Some(self.started + limit.saturating_sub(self.earlier))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(cost: Option<f64>, phase: Option<f64>, duration: Option<&str>) -> Config {
        Config {
            max_cost_usd: cost,
            max_phase_cost_usd: phase,
            max_duration: duration.map(|d| RunDuration::parse(d).expect("duration")),
            ..Config::default()
        }
    }

    #[test]
    fn no_limits_never_stop() {
        let start = Instant::now();
        let guards = Guards::new(&config(None, None, None), 1e9, Duration::ZERO, start);
        assert_eq!(
            guards.check(1e9, start + Duration::from_secs(1_000_000)),
            None
        );
        assert_eq!(guards.deadline(), None);
    }

    #[test]
    fn the_run_cost_counts_earlier_sessions_and_the_live_one() {
        let start = Instant::now();
        let mut guards = Guards::new(&config(Some(5.0), None, None), 3.0, Duration::ZERO, start);
        guards.enter_phase("2", 0.0);
        assert_eq!(guards.check(1.99, start), None);
        guards.spent(1.5);
        let hit = guards.check(0.5, start).expect("over");
        assert_eq!(hit.key(), "max_cost_usd");
        assert_eq!(
            hit.to_string(),
            "the run's cost reached $5.00 (max_cost_usd $5)"
        );
        assert_eq!(hit.raise_hint(), "--max-cost 10");
    }

    #[test]
    fn phases_side_by_side_count_each_others_spending() {
        let start = Instant::now();
        let run = Guards::new(&config(Some(5.0), None, None), 1.0, Duration::ZERO, start);
        let (mut two, mut three) = (run.clone(), run.clone());
        two.enter_phase("2", 0.0);
        three.enter_phase("3", 0.0);
        two.running(2.0);
        assert_eq!(three.check(1.5, start), None, "1 + 2 + 1.5 is under 5");
        let hit = three.check(2.0, start).expect("1 + 2 + 2 reaches 5");
        assert_eq!(hit.key(), "max_cost_usd");
        two.spent(2.5);
        assert!(
            three.check(0.5, start).is_none(),
            "1 + 2.5 + 0.5 is under 5"
        );
        assert!(
            three.check(1.5, start).is_some(),
            "the settled cost replaced the live one"
        );
    }

    #[test]
    fn the_phase_cost_starts_from_what_the_phase_spent() {
        let start = Instant::now();
        let mut guards = Guards::new(&config(None, Some(0.5), None), 10.0, Duration::ZERO, start);
        guards.enter_phase("1", 0.25);
        assert_eq!(guards.check(0.2, start), None);
        let hit = guards.check(0.3, start).expect("over");
        assert_eq!(
            hit,
            LimitHit::PhaseCost {
                phase: "1".into(),
                spent: 0.55,
                limit: 0.5
            }
        );
        assert!(
            hit.to_string().starts_with("phase 1's cost reached $0.55"),
            "{hit}"
        );
        guards.enter_phase("2", 0.0);
        assert_eq!(
            guards.check(0.3, start),
            None,
            "a new phase starts its own count"
        );
    }

    #[test]
    fn the_duration_counts_earlier_invocations() {
        let start = Instant::now();
        let guards = Guards::new(
            &config(None, None, Some("1h")),
            0.0,
            Duration::from_secs(50 * 60),
            start,
        );
        assert_eq!(guards.deadline(), Some(start + Duration::from_secs(600)));
        assert_eq!(guards.check(0.0, start + Duration::from_secs(599)), None);
        let hit = guards
            .check(0.0, start + Duration::from_secs(600))
            .expect("over");
        assert_eq!(
            hit.to_string(),
            "the run has been running for 1h (max_duration 1h)"
        );
        assert_eq!(hit.raise_hint(), "--max-duration 2h");
    }
}
