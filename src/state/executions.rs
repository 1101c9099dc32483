//! Phase executions (attempts) and what happened in each: sessions, restarts, gates.

use rusqlite::{Row, params};

use super::{
    ExecutionEnd, ExecutionRecord, ExecutionStatus, GateRecord, RestartRecord, RunRecord,
    RunStatus, SessionKind, SessionRecord, StateError, Store, now,
};
use crate::context::cost::Billed;

/// The four `billed_*` columns of a row.
pub(super) fn billed(row: &Row<'_>) -> rusqlite::Result<Billed> {
    Ok(Billed {
        input: row.get("billed_input")?,
        cache_write: row.get("billed_cache_write")?,
        cache_read: row.get("billed_cache_read")?,
        output: row.get("billed_output")?,
    })
}

impl Store {
    /// Record the start of an attempt at a phase; returns the execution id.
    ///
    /// # Errors
    /// On SQLite failure.
    pub fn start_execution(
        &self,
        run_id: &str,
        phase_id: &str,
        attempt: u32,
        remediation: bool,
        workdir: Option<&str>,
    ) -> Result<i64, StateError> {
        self.conn
            .execute(
                "INSERT INTO phase_executions (run_id, phase_id, attempt, remediation, status, started_at, workdir)
                 VALUES (?1, ?2, ?3, ?4, 'running', ?5, ?6)",
                params![run_id, phase_id, attempt, remediation, now(), workdir],
            )
            .map_err(self.sql("start an execution"))?;
        Ok(self.conn.last_insert_rowid())
    }

    /// Set an execution's status while it runs (e.g. `validating`), or after it ended
    /// when its merge needs a human (`awaiting_human`).
    ///
    /// # Errors
    /// On SQLite failure.
    pub fn set_execution_status(
        &self,
        execution_id: i64,
        status: ExecutionStatus,
    ) -> Result<(), StateError> {
        self.execute(
            "update an execution",
            "UPDATE phase_executions SET status = ?2 WHERE id = ?1",
            params![execution_id, status.as_str()],
        )
    }

    /// Record the commit `HEAD` was at when the attempt's phase started, which a resumed
    /// attempt lists the phase's changes from.
    ///
    /// # Errors
    /// On SQLite failure.
    pub fn set_execution_base(&self, execution_id: i64, base: &str) -> Result<(), StateError> {
        self.execute(
            "record where the phase started",
            "UPDATE phase_executions SET base = ?2 WHERE id = ?1",
            params![execution_id, base],
        )
    }

    /// Record the tip of the phase's branch a completed attempt left to merge.
    ///
    /// # Errors
    /// On SQLite failure.
    pub fn set_execution_branch_tip(&self, execution_id: i64, tip: &str) -> Result<(), StateError> {
        self.execute(
            "record the phase's branch tip",
            "UPDATE phase_executions SET branch_tip = ?2 WHERE id = ?1",
            params![execution_id, tip],
        )
    }

    /// Record how an execution ended.
    ///
    /// # Errors
    /// On SQLite failure.
    pub fn finish_execution(
        &self,
        execution_id: i64,
        end: &ExecutionEnd,
    ) -> Result<(), StateError> {
        self.execute(
            "finish an execution",
            "UPDATE phase_executions SET status = ?2, restarts = ?3, outcome_code = ?4, tokens = ?5,
                 cost_usd = ?6, commit_id = ?7, error = ?8, ended_at = ?9, cost_estimated = ?10,
                 billed_input = ?11, billed_cache_write = ?12, billed_cache_read = ?13, billed_output = ?14
                 WHERE id = ?1",
            params![
                execution_id,
                end.status.as_str(),
                end.restarts,
                end.outcome_code,
                end.billed.total(),
                end.cost_usd,
                end.commit_id,
                end.error,
                now(),
                end.cost_estimated,
                end.billed.input,
                end.billed.cache_write,
                end.billed.cache_read,
                end.billed.output
            ],
        )
    }

    /// The executions of a run, oldest first.
    ///
    /// # Errors
    /// On SQLite failure.
    pub fn executions(&self, run_id: &str) -> Result<Vec<ExecutionRecord>, StateError> {
        self.rows(
            "list executions",
            "SELECT * FROM phase_executions WHERE run_id = ?1 ORDER BY id",
            [run_id],
            |row| Ok(self.execution_row(row)),
        )?
    }

    /// The executions of `run`, oldest first, as they stand: an attempt a dead run left
    /// running (its debussy killed before anything recorded its end) reads as
    /// `interrupted`, even before the next run records it so.
    ///
    /// # Errors
    /// On SQLite failure.
    pub fn executions_of(&self, run: &RunRecord) -> Result<Vec<ExecutionRecord>, StateError> {
        let mut executions = self.executions(&run.id)?;
        if run.status == RunStatus::Interrupted {
            for execution in executions.iter_mut().filter(|e| e.ended_at.is_none()) {
                execution.status = ExecutionStatus::Interrupted;
            }
        }
        Ok(executions)
    }

    pub(super) fn execution_row(&self, row: &Row<'_>) -> Result<ExecutionRecord, StateError> {
        let get = |e: rusqlite::Error| self.corrupt(e.to_string());
        Ok(ExecutionRecord {
            id: row.get("id").map_err(get)?,
            run_id: row.get("run_id").map_err(get)?,
            phase_id: row.get("phase_id").map_err(get)?,
            attempt: row.get("attempt").map_err(get)?,
            remediation: row.get("remediation").map_err(get)?,
            status: self.parse(&row.get::<_, String>("status").map_err(get)?)?,
            restarts: row.get("restarts").map_err(get)?,
            outcome_code: row.get("outcome_code").map_err(get)?,
            billed: billed(row).map_err(get)?,
            cost_usd: row.get("cost_usd").map_err(get)?,
            cost_estimated: row.get("cost_estimated").map_err(get)?,
            commit_id: row.get("commit_id").map_err(get)?,
            error: row.get("error").map_err(get)?,
            started_at: row.get("started_at").map_err(get)?,
            ended_at: row.get("ended_at").map_err(get)?,
            workdir: row.get("workdir").map_err(get)?,
            branch_tip: row.get("branch_tip").map_err(get)?,
            base: row.get("base").map_err(get)?,
        })
    }

    /// Record a finished session of an execution; it is no longer a live one
    /// ([`Store::start_live_session`]).
    ///
    /// # Errors
    /// On SQLite failure.
    pub fn record_session(&self, execution_id: i64, s: &SessionRecord) -> Result<(), StateError> {
        let tx = self
            .conn
            .unchecked_transaction()
            .map_err(self.sql("record a session"))?;
        tx.execute(
                "INSERT INTO sessions (execution_id, session_index, agent_session_id, model, outcome, outcome_code,
                 context_tokens, context_window, context_percent, tool_calls, cost_usd, log_path, started_at, ended_at, agent_pgid, cost_estimated,
                 billed_input, billed_cache_write, billed_cache_read, billed_output, kind, agent, window_source)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23)",
                params![
                    execution_id,
                    s.session_index,
                    s.agent_session_id,
                    s.model,
                    s.outcome,
                    s.outcome_code,
                    s.context_tokens,
                    s.context_window,
                    s.context_percent,
                    s.tool_calls,
                    s.cost_usd,
                    s.log_path,
                    s.started_at,
                    s.ended_at,
                    s.agent_pgid,
                    s.cost_estimated,
                    s.billed.input,
                    s.billed.cache_write,
                    s.billed.cache_read,
                    s.billed.output,
                    s.kind.as_str(),
                    s.agent,
                    s.window_source
                ],
            )
            .map_err(self.sql("record a session"))?;
        tx.execute(
            "DELETE FROM live_sessions WHERE execution_id = ?1 AND session_index = ?2",
            params![execution_id, s.session_index],
        )
        .map_err(self.sql("record a session"))?;
        tx.commit().map_err(self.sql("record a session"))
    }

    /// The sessions of an execution, in order.
    ///
    /// # Errors
    /// On SQLite failure.
    pub fn sessions(&self, execution_id: i64) -> Result<Vec<SessionRecord>, StateError> {
        self.rows(
            "list sessions",
            "SELECT * FROM sessions WHERE execution_id = ?1 ORDER BY session_index, id",
            [execution_id],
            |row| {
                Ok(SessionRecord {
                    session_index: row.get("session_index")?,
                    kind: SessionKind::from_stored(&row.get::<_, String>("kind")?),
                    agent_session_id: row.get("agent_session_id")?,
                    agent: row.get("agent")?,
                    model: row.get("model")?,
                    outcome: row.get("outcome")?,
                    outcome_code: row.get("outcome_code")?,
                    context_tokens: row.get("context_tokens")?,
                    context_window: row.get("context_window")?,
                    window_source: row.get("window_source")?,
                    context_percent: row.get("context_percent")?,
                    tool_calls: row.get("tool_calls")?,
                    cost_usd: row.get("cost_usd")?,
                    cost_estimated: row.get("cost_estimated")?,
                    billed: billed(row)?,
                    log_path: row.get("log_path")?,
                    agent_pgid: row.get("agent_pgid")?,
                    started_at: row.get("started_at")?,
                    ended_at: row.get("ended_at")?,
                })
            },
        )
    }

    /// Record a context restart.
    ///
    /// # Errors
    /// On SQLite failure.
    pub fn record_restart(&self, execution_id: i64, r: &RestartRecord) -> Result<(), StateError> {
        self.execute(
            "record a restart",
            "INSERT INTO restart_events (execution_id, restart_number, reason, context_percent, commit_id, at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![execution_id, r.restart_number, r.reason, r.context_percent, r.commit_id, r.at],
        )
    }

    /// The restarts of an execution, in order.
    ///
    /// # Errors
    /// On SQLite failure.
    pub fn restarts(&self, execution_id: i64) -> Result<Vec<RestartRecord>, StateError> {
        self.rows(
            "list restarts",
            "SELECT * FROM restart_events WHERE execution_id = ?1 ORDER BY id",
            [execution_id],
            |row| {
                Ok(RestartRecord {
                    restart_number: row.get("restart_number")?,
                    reason: row.get("reason")?,
                    context_percent: row.get("context_percent")?,
                    commit_id: row.get("commit_id")?,
                    at: row.get("at")?,
                })
            },
        )
    }

    /// Record the handoff the session stopped for restart `restart_number` of an
    /// execution wrote, for the session after it (and a resume of it) to read.
    ///
    /// # Errors
    /// On SQLite failure.
    pub fn record_handoff(
        &self,
        execution_id: i64,
        restart_number: u32,
        text: &str,
    ) -> Result<(), StateError> {
        self.execute(
            "record the handoff",
            "UPDATE restart_events SET handoff = ?3 WHERE execution_id = ?1 AND restart_number = ?2",
            params![execution_id, restart_number, text],
        )
    }

    /// The handoff recorded with restart `restart_number` of an execution, if its stopped
    /// session wrote one.
    ///
    /// # Errors
    /// On SQLite failure.
    pub fn handoff(
        &self,
        execution_id: i64,
        restart_number: u32,
    ) -> Result<Option<String>, StateError> {
        let found: Vec<Option<String>> = self.rows(
            "read the handoff",
            "SELECT handoff FROM restart_events WHERE execution_id = ?1 AND restart_number = ?2
                 ORDER BY id DESC LIMIT 1",
            params![execution_id, restart_number],
            |row| row.get::<_, Option<String>>(0),
        )?;
        Ok(found.into_iter().flatten().next())
    }

    /// Record a gate's result against the execution it validated.
    ///
    /// # Errors
    /// On SQLite failure.
    pub fn record_gate(&self, execution_id: i64, g: &GateRecord) -> Result<(), StateError> {
        self.execute(
            "record a gate result",
            "INSERT INTO gate_results (execution_id, name, command, passed, exit_code, timed_out, output, duration_ms, at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            params![
                execution_id,
                g.name,
                g.command,
                g.passed,
                g.exit_code,
                g.timed_out,
                g.output,
                g.duration_ms,
                g.at
            ],
        )
    }

    /// The gate results of an execution, in order.
    ///
    /// # Errors
    /// On SQLite failure.
    pub fn gates(&self, execution_id: i64) -> Result<Vec<GateRecord>, StateError> {
        self.rows(
            "list gate results",
            "SELECT * FROM gate_results WHERE execution_id = ?1 ORDER BY id",
            [execution_id],
            |row| {
                Ok(GateRecord {
                    name: row.get("name")?,
                    command: row.get("command")?,
                    passed: row.get("passed")?,
                    exit_code: row.get("exit_code")?,
                    timed_out: row.get("timed_out")?,
                    output: row.get("output")?,
                    duration_ms: row.get("duration_ms")?,
                    at: row.get("at")?,
                })
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::test_store::OneAttempt;

    #[test]
    fn where_a_phase_started_and_a_restarts_handoff_are_kept_for_a_resume() {
        let one = OneAttempt::new();
        let (store, run, execution) = (&one.store, &one.run, one.execution);
        store.set_execution_base(execution, "abc123").expect("base");
        let restart = |number| RestartRecord {
            restart_number: number,
            reason: "context 85.0% >= 80%".into(),
            context_percent: Some(85.0),
            commit_id: Some("def".into()),
            at: now(),
        };
        for number in [1, 2] {
            store
                .record_restart(execution, &restart(number))
                .expect("restart");
        }
        store
            .record_handoff(execution, 1, "## Goal\ngo on")
            .expect("handoff");

        assert_eq!(
            store.executions(run).expect("executions")[0]
                .base
                .as_deref(),
            Some("abc123")
        );
        assert_eq!(
            store.handoff(execution, 1).expect("handoff").as_deref(),
            Some("## Goal\ngo on")
        );
        // A stop whose handoff was not written (skipped, failed, or killed) has none.
        assert_eq!(store.handoff(execution, 2).expect("handoff"), None);
        assert_eq!(store.handoff(execution, 3).expect("handoff"), None);
    }
}
