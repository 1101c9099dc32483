//! What the agent tells debussy from inside a session: `debussy done` (completion
//! signals) and `debussy progress` (the progress log).

use rusqlite::{OptionalExtension, params};

use super::{CompletionSignal, CompletionStatus, ProgressEntry, StateError, Store, now};

impl Store {
    /// Record the agent's `debussy done` for a phase of a run.
    ///
    /// # Errors
    /// On SQLite failure.
    pub fn record_completion(
        &self,
        run_id: &str,
        phase_id: &str,
        status: CompletionStatus,
        reason: Option<&str>,
    ) -> Result<(), StateError> {
        self.execute(
            "record a completion signal",
            "INSERT INTO completion_signals (run_id, phase_id, status, reason, at) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![run_id, phase_id, status.as_str(), reason, now()],
        )
    }

    /// The latest completion signal for a phase of a run, if the agent sent one.
    ///
    /// # Errors
    /// On SQLite failure.
    pub fn completion(
        &self,
        run_id: &str,
        phase_id: &str,
    ) -> Result<Option<CompletionSignal>, StateError> {
        let row = self
            .conn
            .query_row(
                "SELECT id, phase_id, status, reason, at FROM completion_signals
                 WHERE run_id = ?1 AND phase_id = ?2 ORDER BY id DESC LIMIT 1",
                params![run_id, phase_id],
                |row| {
                    Ok((
                        row.get(0)?,
                        row.get(1)?,
                        row.get::<_, String>(2)?,
                        row.get(3)?,
                        row.get(4)?,
                    ))
                },
            )
            .optional()
            .map_err(self.sql("read a completion signal"))?;
        row.map(|(id, phase_id, status, reason, at)| {
            Ok(CompletionSignal {
                id,
                phase_id,
                status: self.parse(&status)?,
                reason,
                at,
            })
        })
        .transpose()
    }

    /// Append a progress step for a phase of a run.
    ///
    /// # Errors
    /// On SQLite failure.
    pub fn record_progress(
        &self,
        run_id: &str,
        phase_id: &str,
        step: &str,
    ) -> Result<(), StateError> {
        self.execute(
            "record progress",
            "INSERT INTO progress_log (run_id, phase_id, step, at) VALUES (?1, ?2, ?3, ?4)",
            params![run_id, phase_id, step, now()],
        )
    }

    /// The progress steps for a phase of a run, oldest first.
    ///
    /// # Errors
    /// On SQLite failure.
    pub fn progress(&self, run_id: &str, phase_id: &str) -> Result<Vec<ProgressEntry>, StateError> {
        self.rows(
            "read progress",
            "SELECT phase_id, step, at FROM progress_log WHERE run_id = ?1 AND phase_id = ?2 ORDER BY id",
            params![run_id, phase_id],
            |row| {
            Ok(ProgressEntry {
                phase_id: row.get(0)?,
                step: row.get(1)?,
                at: row.get(2)?,
            })
        },
        )
    }
}
