//! The per-attempt budget of agent context restarts (`max_restarts`).

use std::fmt;

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

    /// The budget of an attempt taken up again (`--resume`) after `used` restarts: the
    /// next restart is number `used + 1`, and at most `max_restarts` are counted in all.
    #[must_use]
    pub fn resumed(max_restarts: u32, used: u32) -> Self {
        RestartBudget {
            max: max_restarts,
            used: used.min(max_restarts),
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
    fn a_resumed_budget_counts_on_from_the_restarts_used_before() {
        let mut budget = RestartBudget::resumed(3, 1);
        assert_eq!(budget.used(), 1);
        assert_eq!(budget.try_restart(), BudgetDecision::Restart { number: 2 });
        assert_eq!(budget.try_restart(), BudgetDecision::Restart { number: 3 });
        assert_eq!(budget.try_restart(), BudgetDecision::Exhausted { max: 3 });
        // Resumed with fewer allowed than were used: none is left.
        let mut lowered = RestartBudget::resumed(1, 2);
        assert_eq!(lowered.remaining(), 0);
        assert_eq!(lowered.try_restart(), BudgetDecision::Exhausted { max: 1 });
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
