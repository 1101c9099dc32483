//! Context windows learned per model, remembered across sessions and runs.

use rusqlite::{OptionalExtension, params};

use super::{StateError, Store, now};

impl Store {
    /// Remember the context window an agent reported for a model.
    ///
    /// # Errors
    /// On SQLite failure.
    pub fn learn_context_window(&self, model: &str, window: u64) -> Result<(), StateError> {
        self.execute(
            "remember a context window",
            "INSERT INTO model_windows (model, context_window, learned_at) VALUES (?1, ?2, ?3)
                 ON CONFLICT (model) DO UPDATE SET context_window = excluded.context_window, learned_at = excluded.learned_at",
            params![model, window, now()],
        )
    }

    /// Every context window learned, by model name (the table holds one row per model
    /// an agent ever reported).
    ///
    /// # Errors
    /// On SQLite failure.
    pub fn context_windows(&self) -> Result<std::collections::BTreeMap<String, u64>, StateError> {
        let mut statement = self
            .conn
            .prepare("SELECT model, context_window FROM model_windows")
            .map_err(self.sql("read the context windows"))?;
        let rows = statement
            .query_map([], |row| {
                Ok((row.get::<_, String>(0)?, row.get::<_, u64>(1)?))
            })
            .map_err(self.sql("read the context windows"))?;
        rows.collect::<Result<_, _>>()
            .map_err(self.sql("read the context windows"))
    }

    /// The context window learned for a model, if any.
    ///
    /// # Errors
    /// On SQLite failure.
    pub fn context_window(&self, model: &str) -> Result<Option<u64>, StateError> {
        self.conn
            .query_row(
                "SELECT context_window FROM model_windows WHERE model = ?1",
                [model],
                |row| row.get(0),
            )
            .optional()
            .map_err(self.sql("read a context window"))
    }
}
