//! The prompt each session was given and, after a context restart, the checkpoint it
//! carried: what `debussy show` answers "what was the agent told?" with. The transcript
//! does not hold them (the prompt goes in on stdin), so they are stored here.

use rusqlite::params;

use super::{StateError, Store};

/// What one session was told.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PromptRecord {
    /// 0-based index within the execution (= restart number).
    pub session_index: u32,
    /// The whole prompt, checkpoint included.
    pub prompt: String,
    /// The checkpoint text alone, for sessions that continued after a restart.
    pub checkpoint: Option<String>,
}

impl Store {
    /// Record the prompt of session `session_index` of an execution (replacing an earlier
    /// record of the same session).
    ///
    /// # Errors
    /// On SQLite failure.
    pub fn record_prompt(
        &self,
        execution_id: i64,
        session_index: u32,
        prompt: &str,
        checkpoint: Option<&str>,
    ) -> Result<(), StateError> {
        self.execute(
            "record a prompt",
            "INSERT OR REPLACE INTO session_prompts
                     (execution_id, session_index, prompt, checkpoint) VALUES (?1, ?2, ?3, ?4)",
            params![execution_id, session_index, prompt, checkpoint],
        )
    }

    /// The prompts of an execution's sessions, in session order.
    ///
    /// # Errors
    /// On SQLite failure.
    pub fn prompts(&self, execution_id: i64) -> Result<Vec<PromptRecord>, StateError> {
        self.rows(
            "read prompts",
            "SELECT session_index, prompt, checkpoint FROM session_prompts
                 WHERE execution_id = ?1 ORDER BY session_index",
            params![execution_id],
            |row| {
                Ok(PromptRecord {
                    session_index: row.get(0)?,
                    prompt: row.get(1)?,
                    checkpoint: row.get(2)?,
                })
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use crate::state::test_store::OneAttempt;

    #[test]
    fn prompts_are_kept_per_session_in_order() {
        let one = OneAttempt::new();
        let (store, execution) = (&one.store, one.execution);
        store
            .record_prompt(execution, 1, "Phase 1 again", Some("## Checkpoint"))
            .expect("record");
        store
            .record_prompt(execution, 0, "Phase 1", None)
            .expect("record");
        let prompts = store.prompts(execution).expect("read");
        assert_eq!(prompts.len(), 2);
        assert_eq!(prompts[0].prompt, "Phase 1");
        assert_eq!(prompts[0].checkpoint, None);
        assert_eq!(prompts[1].checkpoint.as_deref(), Some("## Checkpoint"));
    }
}
