//! What a run has spent so far, summed from its recorded sessions and the ones running
//! now (or left running by a debussy that died).

use rusqlite::params;
use serde::Serialize;

use super::{StateError, Store};
use crate::context::cost::Billed;

/// A run's spending: every recorded session of every attempt, handoffs included.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct RunTotals {
    /// Sessions recorded (handoffs not counted).
    pub sessions: u32,
    /// Tokens billed, by kind, summed over every request.
    pub billed: Billed,
    /// Cost in US dollars.
    pub cost_usd: f64,
    /// Whether some of `cost_usd` is debussy's estimate.
    pub cost_estimated: bool,
    /// Handoffs made after context stops.
    pub handoffs: u32,
    /// What the handoffs cost (part of `cost_usd`).
    pub handoff_cost_usd: f64,
}

impl Store {
    /// The totals of `run_id` over its recorded sessions and its live ones (what they
    /// have spent so far); `phase_id` narrows them to one phase.
    ///
    /// # Errors
    /// On SQLite failure.
    pub fn totals(&self, run_id: &str, phase_id: Option<&str>) -> Result<RunTotals, StateError> {
        let mut totals = self
            .conn
            .query_row(
                "SELECT
                    COALESCE(SUM(s.kind = 'work'), 0),
                    COALESCE(SUM(s.billed_input), 0),
                    COALESCE(SUM(s.billed_cache_write), 0),
                    COALESCE(SUM(s.billed_cache_read), 0),
                    COALESCE(SUM(s.billed_output), 0),
                    COALESCE(SUM(s.cost_usd), 0.0),
                    COALESCE(MAX(s.cost_estimated), 0),
                    COALESCE(SUM(s.kind = 'handoff'), 0),
                    COALESCE(SUM(CASE WHEN s.kind = 'handoff' THEN s.cost_usd ELSE 0 END), 0.0)
                 FROM sessions s JOIN phase_executions e ON s.execution_id = e.id
                 WHERE e.run_id = ?1 AND (?2 IS NULL OR e.phase_id = ?2)",
                params![run_id, phase_id],
                |row| {
                    Ok(RunTotals {
                        sessions: row.get(0)?,
                        billed: Billed {
                            input: row.get(1)?,
                            cache_write: row.get(2)?,
                            cache_read: row.get(3)?,
                            output: row.get(4)?,
                        },
                        cost_usd: row.get(5)?,
                        cost_estimated: row.get(6)?,
                        handoffs: row.get(7)?,
                        handoff_cost_usd: row.get(8)?,
                    })
                },
            )
            .map_err(self.sql("sum a run's sessions"))?;
        for live in self
            .live_sessions(run_id)?
            .into_iter()
            .filter(|live| phase_id.is_none_or(|phase| phase == live.phase_id))
        {
            totals.sessions += 1;
            totals.billed += live.billed;
            totals.cost_usd += live.cost_usd;
            totals.cost_estimated |= live.cost_estimated;
        }
        Ok(totals)
    }
}
