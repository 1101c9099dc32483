//! The session running now in each phase, with what it has spent so far: written when
//! it starts, updated as it reports usage, removed once it is recorded as a session.
//!
//! `status` shows it while the run goes on; a row left behind by a debussy that died is
//! the interrupted session's record, counted in the run's totals, and becomes an
//! `interrupted` session, with the figures it last had, when the next debussy settles
//! the dead run ([`Store::settle_interrupted`]), or at the latest when the phase runs
//! again.

use rusqlite::{OptionalExtension, Row, params};
use serde::Serialize;

use super::executions::billed;
use super::records::{SessionKind, SessionRecord, now};
use super::{StateError, Store};
use crate::context::cost::Billed;

/// A session that has started and is not recorded yet.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LiveSession {
    /// The phase it works on.
    pub phase_id: String,
    /// The attempt (execution row) it belongs to.
    pub execution_id: i64,
    /// Its 0-based index in the attempt (its restart number).
    pub session_index: u32,
    /// The agent running it.
    pub agent: String,
    /// The model it was started with.
    pub model: String,
    /// Its transcript.
    pub log_path: String,
    /// RFC 3339 start time.
    pub started_at: String,
    /// Tokens billed so far.
    pub billed: Billed,
    /// Cost so far, in US dollars.
    pub cost_usd: f64,
    /// Whether some of the cost is debussy's estimate.
    pub cost_estimated: bool,
    /// The latest context reading, in percent of the window.
    pub context_percent: f64,
    /// Main-thread tool calls so far.
    pub tool_calls: u32,
}

/// The figures a running session last reported.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct LiveFigures {
    /// Tokens billed so far.
    pub billed: Billed,
    /// Cost so far.
    pub cost_usd: f64,
    /// Whether some of the cost is an estimate.
    pub cost_estimated: bool,
    /// Context in percent of the window.
    pub context_percent: f64,
    /// Main-thread tool calls.
    pub tool_calls: u32,
}

impl Store {
    /// Record that `session` started in its phase of `run_id`. A row the phase still has
    /// is a session a dead debussy left behind: it is recorded first, as interrupted.
    ///
    /// # Errors
    /// On SQLite failure.
    pub fn start_live_session(
        &self,
        run_id: &str,
        session: &LiveSession,
    ) -> Result<(), StateError> {
        if let Some(left) = self.live_session(run_id, &session.phase_id)? {
            self.record_session(left.execution_id, &interrupted(&left))?;
        }
        self.execute(
            "record a starting session",
            "INSERT OR REPLACE INTO live_sessions (run_id, phase_id, execution_id, session_index,
                 agent, model, log_path, started_at, billed_input, billed_cache_write,
                 billed_cache_read, billed_output, cost_usd, cost_estimated, context_percent,
                 tool_calls)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 0, 0, 0, 0, 0.0, 0, 0.0, 0)",
            params![
                run_id,
                session.phase_id,
                session.execution_id,
                session.session_index,
                session.agent,
                session.model,
                session.log_path,
                session.started_at,
            ],
        )
    }

    /// Record what the running session of `phase_id` has spent so far. Another
    /// process's lock is waited for only briefly: the next figures replace these.
    ///
    /// # Errors
    /// On SQLite failure, or when another process holds the database's lock.
    pub fn update_live_session(
        &self,
        run_id: &str,
        phase_id: &str,
        figures: &LiveFigures,
    ) -> Result<(), StateError> {
        self.briefly(|| {
            self.execute(
                "record a running session's figures",
                "UPDATE live_sessions SET billed_input = ?3, billed_cache_write = ?4,
                 billed_cache_read = ?5, billed_output = ?6, cost_usd = ?7, cost_estimated = ?8,
                 context_percent = ?9, tool_calls = ?10
                 WHERE run_id = ?1 AND phase_id = ?2",
                params![
                    run_id,
                    phase_id,
                    figures.billed.input,
                    figures.billed.cache_write,
                    figures.billed.cache_read,
                    figures.billed.output,
                    figures.cost_usd,
                    figures.cost_estimated,
                    figures.context_percent,
                    figures.tool_calls,
                ],
            )
        })
    }

    /// The running session of `phase_id` ended (and is recorded as a session).
    ///
    /// # Errors
    /// On SQLite failure.
    pub fn end_live_session(&self, run_id: &str, phase_id: &str) -> Result<(), StateError> {
        self.execute(
            "record a session's end",
            "DELETE FROM live_sessions WHERE run_id = ?1 AND phase_id = ?2",
            params![run_id, phase_id],
        )
    }

    /// The sessions of `run_id` running now (or left behind by a debussy that died), by
    /// phase.
    ///
    /// # Errors
    /// On SQLite failure.
    pub fn live_sessions(&self, run_id: &str) -> Result<Vec<LiveSession>, StateError> {
        self.rows(
            "list running sessions",
            "SELECT * FROM live_sessions WHERE run_id = ?1 ORDER BY phase_id",
            [run_id],
            live_row,
        )
    }

    /// Record the sessions a dead debussy left running in `run_id` as the interrupted
    /// sessions they are, with what they had spent; they are live no more.
    ///
    /// # Errors
    /// On SQLite failure.
    pub(super) fn record_left_sessions(&self, run_id: &str) -> Result<(), StateError> {
        for left in self.live_sessions(run_id)? {
            self.record_session(left.execution_id, &interrupted(&left))?;
        }
        Ok(())
    }

    fn live_session(
        &self,
        run_id: &str,
        phase_id: &str,
    ) -> Result<Option<LiveSession>, StateError> {
        self.conn
            .query_row(
                "SELECT * FROM live_sessions WHERE run_id = ?1 AND phase_id = ?2",
                params![run_id, phase_id],
                live_row,
            )
            .optional()
            .map_err(self.sql("read a running session"))
    }
}

fn live_row(row: &Row<'_>) -> rusqlite::Result<LiveSession> {
    Ok(LiveSession {
        phase_id: row.get("phase_id")?,
        execution_id: row.get("execution_id")?,
        session_index: row.get("session_index")?,
        agent: row.get("agent")?,
        model: row.get("model")?,
        log_path: row.get("log_path")?,
        started_at: row.get("started_at")?,
        billed: billed(row)?,
        cost_usd: row.get("cost_usd")?,
        cost_estimated: row.get("cost_estimated")?,
        context_percent: row.get("context_percent")?,
        tool_calls: row.get("tool_calls")?,
    })
}

/// A session a dead debussy left running, as the session record it never wrote.
fn interrupted(left: &LiveSession) -> SessionRecord {
    SessionRecord {
        session_index: left.session_index,
        kind: SessionKind::Work,
        agent_session_id: None,
        agent: Some(left.agent.clone()),
        model: Some(left.model.clone()).filter(|model| !model.is_empty()),
        outcome: "interrupted".to_owned(),
        outcome_code: i64::from(crate::session::CODE_INTERRUPTED),
        context_tokens: 0,
        context_window: 0,
        context_percent: left.context_percent,
        tool_calls: left.tool_calls,
        cost_usd: left.cost_usd,
        cost_estimated: left.cost_estimated,
        billed: left.billed,
        log_path: Some(left.log_path.clone()),
        agent_pgid: None,
        window_source: None,
        started_at: left.started_at.clone(),
        ended_at: now(),
    }
}

#[cfg(test)]
#[path = "live_tests.rs"]
mod tests;
