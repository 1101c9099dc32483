//! [`ContextLimit`]: where the meter stops a session for its context. The rule that a
//! `context_threshold` of 100 turns context restarts off lives here and nowhere else.

use std::fmt;

use serde::{Deserialize, Serialize};

/// The context a session may fill before the meter stops it for a restart: a percent of
/// the window, or no limit (`context_threshold: 100`).
///
/// It reads and writes as the plain number the user gave (`80`, `100`), so config files,
/// `debussy config` and the JSON events show what they always did. A value outside
/// `0 < x ≤ 100` can be held (it is what the user wrote) until [`ContextLimit::check`]
/// rejects it at validation; everything downstream sees a checked limit.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(from = "f64", into = "f64")]
pub enum ContextLimit {
    /// Stop at this percent of the window.
    At(f64),
    /// Never stop for the context (`100`); also what holds until a limit is given.
    #[default]
    Off,
}

/// The number that turns context restarts off.
const OFF: f64 = 100.0;

impl ContextLimit {
    /// The limit as a percent, or `None` when it is off.
    #[must_use]
    pub fn percent(self) -> Option<f64> {
        match self {
            ContextLimit::At(percent) => Some(percent),
            ContextLimit::Off => None,
        }
    }

    /// Where an agent may compact its own context without coming before debussy's stop:
    /// halfway between the limit and the full window (80% gives 0.9), as a fraction of the
    /// window. `None` when the limit is off (the agent keeps its own setting).
    #[must_use]
    pub fn agent_compaction_point(self) -> Option<f64> {
        self.percent()
            .map(|percent| f64::midpoint(percent.clamp(0.0, 100.0), 100.0) / 100.0)
    }

    /// Whether a context limit applies.
    #[must_use]
    pub fn is_on(self) -> bool {
        matches!(self, ContextLimit::At(_))
    }

    /// The number as the user gives it: the percent, or 100 when off.
    #[must_use]
    pub fn as_number(self) -> f64 {
        self.into()
    }

    /// Accept only what a user may write: more than 0 and at most 100.
    ///
    /// # Errors
    ///
    /// The rule the value breaks, in words (`must be greater than 0 and at most 100`).
    pub fn check(self) -> Result<Self, &'static str> {
        match self {
            ContextLimit::At(percent)
                if !(percent.is_finite() && percent > 0.0 && percent < OFF) =>
            {
                Err("must be greater than 0 and at most 100")
            }
            limit => Ok(limit),
        }
    }
}

impl From<f64> for ContextLimit {
    fn from(number: f64) -> Self {
        if number == OFF {
            ContextLimit::Off
        } else {
            ContextLimit::At(number)
        }
    }
}

impl From<ContextLimit> for f64 {
    fn from(limit: ContextLimit) -> Self {
        match limit {
            ContextLimit::At(percent) => percent,
            ContextLimit::Off => OFF,
        }
    }
}

impl fmt::Display for ContextLimit {
    /// The number as the user gave it (`80`, `62.5`, `100`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.as_number().fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_hundred_is_off_and_reads_back_as_one_hundred() {
        assert_eq!(ContextLimit::from(100.0), ContextLimit::Off);
        assert_eq!(ContextLimit::Off.percent(), None);
        assert_eq!(ContextLimit::Off.to_string(), "100");
        assert_eq!(ContextLimit::from(80.0).percent(), Some(80.0));
        assert_eq!(
            serde_json::to_string(&ContextLimit::Off).expect("serialize"),
            "100.0"
        );
        let limit: ContextLimit = serde_json::from_str("75").expect("deserialize");
        assert_eq!(limit, ContextLimit::At(75.0));
    }

    #[test]
    fn only_a_percent_above_zero_passes() {
        for bad in [0.0, -5.0, 150.0, f64::NAN, f64::INFINITY] {
            assert!(ContextLimit::from(bad).check().is_err(), "{bad}");
        }
        for good in [0.1, 50.0, 99.9, 100.0] {
            assert!(ContextLimit::from(good).check().is_ok(), "{good}");
        }
    }
}
