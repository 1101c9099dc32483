//! What an attempt's sessions did that its compliance check judges beyond the tree: the
//! subagents they used (a phase's required agents) and the tool calls the agent was
//! refused. Recorded as it happens, a subagent as soon as a session starts it, so that
//! an attempt `--resume` goes on with, after a pause or a kill, is judged on what all
//! its sessions did.

use std::collections::BTreeSet;

use rusqlite::params;

use super::{StateError, Store};
use crate::agent::DeniedCall;

impl Store {
    /// Record that a session of an execution used the subagent `agent` (once per
    /// execution: a second record of it changes nothing).
    ///
    /// # Errors
    /// On SQLite failure.
    pub fn record_agent_used(&self, execution_id: i64, agent: &str) -> Result<(), StateError> {
        self.execute(
            "record a subagent used",
            "INSERT OR IGNORE INTO execution_agents (execution_id, agent) VALUES (?1, ?2)",
            params![execution_id, agent],
        )
    }

    /// The subagents the sessions of an execution used.
    ///
    /// # Errors
    /// On SQLite failure.
    pub fn agents_used(&self, execution_id: i64) -> Result<BTreeSet<String>, StateError> {
        self.rows(
            "read the subagents used",
            "SELECT agent FROM execution_agents WHERE execution_id = ?1",
            [execution_id],
            |row| row.get(0),
        )
    }

    /// Record the tool calls a session of an execution was refused.
    ///
    /// # Errors
    /// On SQLite failure.
    pub fn record_refused_calls(
        &self,
        execution_id: i64,
        calls: &[DeniedCall],
    ) -> Result<(), StateError> {
        let tx = self
            .conn
            .unchecked_transaction()
            .map_err(self.sql("record refused calls"))?;
        for call in calls {
            tx.execute(
                "INSERT INTO execution_refusals (execution_id, tool_name, tool_use_id, tool_input)
                 VALUES (?1, ?2, ?3, ?4)",
                params![
                    execution_id,
                    call.tool_name,
                    call.tool_use_id,
                    call.tool_input.to_string()
                ],
            )
            .map_err(self.sql("record refused calls"))?;
        }
        tx.commit().map_err(self.sql("record refused calls"))
    }

    /// The tool calls the sessions of an execution were refused, in order.
    ///
    /// # Errors
    /// On SQLite failure, or an input that is not the JSON it was stored as.
    pub fn refused_calls(&self, execution_id: i64) -> Result<Vec<DeniedCall>, StateError> {
        let rows: Vec<(String, Option<String>, String)> = self.rows(
            "read refused calls",
            "SELECT tool_name, tool_use_id, tool_input FROM execution_refusals
                 WHERE execution_id = ?1 ORDER BY id",
            [execution_id],
            |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
        )?;
        rows.into_iter()
            .map(|(tool_name, tool_use_id, input)| {
                let tool_input = serde_json::from_str(&input)
                    .map_err(|err| self.corrupt(format!("a refused call's input: {err}")))?;
                Ok(DeniedCall {
                    tool_name,
                    tool_use_id,
                    tool_input,
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::test_store::OneAttempt;

    #[test]
    fn a_database_of_the_version_before_keeps_its_attempts_and_records_what_they_used() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join(crate::state::STATE_DB);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        let conn = rusqlite::Connection::open(&path).expect("open");
        for migration in &crate::state::schema::MIGRATIONS[..13] {
            conn.execute_batch(migration).expect("migrate");
        }
        conn.execute_batch(
            "INSERT INTO runs (id, plan_path, plan_title, status, started_at)
                 VALUES ('r', '/p.md', 'Plan', 'paused', '2026-11-28T10:00:00Z');
             INSERT INTO phase_executions (id, run_id, phase_id, attempt, status, started_at)
                 VALUES (7, 'r', '1', 2, 'paused', '2026-11-28T10:00:00Z');
             PRAGMA user_version = 13;",
        )
        .expect("an attempt of before");
        drop(conn);

        let store = Store::open(dir.path()).expect("migrated");
        assert!(store.agents_used(7).expect("read").is_empty());
        store.record_agent_used(7, "Explore").expect("record");
        assert_eq!(store.agents_used(7).expect("read").len(), 1);
    }

    #[test]
    fn an_attempts_subagents_and_refused_calls_are_kept_per_execution() {
        let one = OneAttempt::new();
        let (store, run, stopped) = (&one.store, &one.run, one.execution);
        let resumed = store
            .start_execution(run, "1", 1, false, None)
            .expect("execution");
        for agent in ["Explore", "task-validator", "Explore"] {
            store.record_agent_used(stopped, agent).expect("agent");
        }
        let refused = DeniedCall {
            tool_name: "Bash".into(),
            tool_use_id: Some("toolu_1".into()),
            tool_input: serde_json::json!({"command": "npm test"}),
        };
        store
            .record_refused_calls(stopped, std::slice::from_ref(&refused))
            .expect("refused");

        assert_eq!(
            store.agents_used(stopped).expect("read"),
            ["Explore".to_owned(), "task-validator".to_owned()].into()
        );
        assert_eq!(store.refused_calls(stopped).expect("read"), [refused]);
        assert!(store.agents_used(resumed).expect("read").is_empty());
        assert!(store.refused_calls(resumed).expect("read").is_empty());
    }
}
