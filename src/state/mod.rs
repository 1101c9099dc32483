//! The project's run history in SQLite (`.debussy/state.db`): runs, phase executions,
//! sessions, restarts, gate results, the agent's completion signals and progress log,
//! and the context windows learned per model.
//!
//! The database runs in WAL mode with a busy timeout, so a `debussy run` and the agent's
//! `debussy done` / `debussy progress` calls (or two runs) share it safely. Every call is
//! blocking; async callers use `spawn_blocking`. This module stores facts; it never
//! decides what a run does next.

mod owner;
mod prompts;
mod records;
mod schema;

use std::collections::BTreeSet;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, Row, params};

pub use owner::Owner;
pub use prompts::PromptRecord;

pub use records::{
    CompletionSignal, CompletionStatus, ExecutionEnd, ExecutionRecord, ExecutionStatus, GateRecord,
    PauseRecord, ProgressEntry, RestartRecord, RunRecord, RunStatus, SessionRecord, StartedWith,
    now,
};

/// The database file, relative to the project root.
pub const STATE_DB: &str = ".debussy/state.db";

/// Mode of `.debussy/`: run data (prompts, transcripts, state) is the user's alone.
pub const PRIVATE_DIR_MODE: u32 = 0o700;
/// Mode of the database and its `-wal`/`-shm` files.
pub const PRIVATE_FILE_MODE: u32 = 0o600;

/// How long a write waits for another process's transaction before failing.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// Errors from the state store.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum StateError {
    /// The `.debussy` directory could not be created.
    #[error("failed to create {}", .path.display())]
    CreateDir {
        /// The directory.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// SQLite failed.
    #[error("state database {} failed while trying to {action}", .path.display())]
    Sqlite {
        /// The database file.
        path: PathBuf,
        /// What was being done.
        action: &'static str,
        /// SQLite's error.
        #[source]
        source: rusqlite::Error,
    },
    /// The database was written by a newer debussy.
    #[error(
        "state database {} has schema version {found}, newer than this debussy understands ({known}); upgrade debussy",
        .path.display()
    )]
    TooNew {
        /// The database file.
        path: PathBuf,
        /// Version found.
        found: usize,
        /// Newest version known.
        known: usize,
    },
    /// A stored value could not be read back.
    #[error("state database {} holds an unreadable value: {detail}", .path.display())]
    Corrupt {
        /// The database file.
        path: PathBuf,
        /// What was wrong.
        detail: String,
    },
}

/// An open state database.
#[derive(Debug)]
pub struct Store {
    conn: Connection,
    path: PathBuf,
}

impl Store {
    /// Open (creating if needed) the project's `.debussy/state.db` and migrate it.
    ///
    /// # Errors
    /// When the file cannot be created or opened, or was written by a newer debussy.
    pub fn open(project_root: &Path) -> Result<Store, StateError> {
        Store::open_at(&project_root.join(STATE_DB))
    }

    /// Open the project's store if it exists; `None` when no run has happened yet.
    ///
    /// # Errors
    /// As [`Store::open`].
    pub fn open_existing(project_root: &Path) -> Result<Option<Store>, StateError> {
        let path = project_root.join(STATE_DB);
        if path.exists() {
            Store::open_at(&path).map(Some)
        } else {
            Ok(None)
        }
    }

    /// Open (creating if needed) a database at `path` and migrate it.
    ///
    /// # Errors
    /// As [`Store::open`].
    pub fn open_at(path: &Path) -> Result<Store, StateError> {
        if let Some(dir) = path.parent() {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(PRIVATE_DIR_MODE)
                .create(dir)
                .map_err(|source| StateError::CreateDir {
                    path: dir.to_path_buf(),
                    source,
                })?;
        }
        make_private(path).map_err(|source| StateError::CreateDir {
            path: path.to_path_buf(),
            source,
        })?;
        let err = |action| {
            let path = path.to_path_buf();
            move |source| StateError::Sqlite {
                path,
                action,
                source,
            }
        };
        let conn = Connection::open(path).map_err(err("open"))?;
        conn.busy_timeout(BUSY_TIMEOUT)
            .map_err(err("set the busy timeout"))?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(err("enable WAL"))?;
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(err("set synchronous"))?;
        conn.pragma_update(None, "foreign_keys", "ON")
            .map_err(err("enable foreign keys"))?;
        let mut store = Store {
            conn,
            path: path.to_path_buf(),
        };
        store.migrate()?;
        Ok(store)
    }

    /// The database file.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn sql(&self, action: &'static str) -> impl FnOnce(rusqlite::Error) -> StateError + '_ {
        move |source| StateError::Sqlite {
            path: self.path.clone(),
            action,
            source,
        }
    }

    fn migrate(&mut self) -> Result<(), StateError> {
        let path = self.path.clone();
        let err = |action| {
            let path = path.clone();
            move |source| StateError::Sqlite {
                path,
                action,
                source,
            }
        };
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(err("begin the migration"))?;
        let version: usize = tx
            .pragma_query_value(None, "user_version", |row| row.get(0))
            .map_err(err("read the schema version"))?;
        let known = schema::MIGRATIONS.len();
        if version > known {
            return Err(StateError::TooNew {
                path,
                found: version,
                known,
            });
        }
        for migration in &schema::MIGRATIONS[version..] {
            tx.execute_batch(migration)
                .map_err(err("migrate the schema"))?;
        }
        if version < known {
            tx.pragma_update(None, "user_version", known)
                .map_err(err("record the schema version"))?;
        }
        tx.commit().map_err(err("commit the migration"))
    }

    /// Record a new run and return its id.
    ///
    /// # Errors
    /// On SQLite failure.
    pub fn create_run(&self, plan_path: &str, plan_title: &str) -> Result<String, StateError> {
        let id = uuid::Uuid::new_v4().to_string();
        self.conn
            .execute(
                "INSERT INTO runs (id, plan_path, plan_title, status, started_at) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![id, plan_path, plan_title, RunStatus::Running.as_str(), now()],
            )
            .map_err(self.sql("create a run"))?;
        Ok(id)
    }

    /// Update a run's status, current phase and error; sets the end time for final states.
    ///
    /// # Errors
    /// On SQLite failure.
    pub fn update_run(
        &self,
        run_id: &str,
        status: RunStatus,
        current_phase: Option<&str>,
        error: Option<&str>,
    ) -> Result<(), StateError> {
        let ended = (status != RunStatus::Running).then(now);
        self.conn
            .execute(
                "UPDATE runs SET status = ?2, current_phase = COALESCE(?3, current_phase), error = ?4, ended_at = ?5 WHERE id = ?1",
                params![run_id, status.as_str(), current_phase, error, ended],
            )
            .map_err(self.sql("update a run"))?;
        Ok(())
    }

    /// One run by id (a unique prefix of the id works too).
    ///
    /// # Errors
    /// On SQLite failure.
    pub fn run(&self, id: &str) -> Result<Option<RunRecord>, StateError> {
        let pattern = format!("{}%", id.replace(['%', '_'], ""));
        let mut stmt = self
            .conn
            .prepare("SELECT * FROM runs WHERE id LIKE ?1 ORDER BY started_at DESC LIMIT 2")
            .map_err(self.sql("read a run"))?;
        let rows: Vec<RunRecord> = stmt
            .query_map([pattern], |row| Ok(self.run_row(row)))
            .map_err(self.sql("read a run"))?
            .collect::<Result<Result<_, _>, _>>()
            .map_err(self.sql("read a run"))??;
        Ok(if rows.len() == 1 {
            rows.into_iter().next()
        } else {
            None
        })
    }

    /// The newest runs, newest first; only those of `plan_path` when given.
    ///
    /// # Errors
    /// On SQLite failure.
    pub fn runs(&self, plan_path: Option<&str>, limit: u32) -> Result<Vec<RunRecord>, StateError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT * FROM runs WHERE (?1 IS NULL OR plan_path = ?1) ORDER BY started_at DESC, rowid DESC LIMIT ?2",
            )
            .map_err(self.sql("list runs"))?;
        stmt.query_map(params![plan_path, limit], |row| Ok(self.run_row(row)))
            .map_err(self.sql("list runs"))?
            .collect::<Result<Result<_, _>, _>>()
            .map_err(self.sql("list runs"))?
    }

    /// A run as stored, except that a run still `running` whose owner process is gone
    /// (or whose pid now belongs to another process) reads as `interrupted`.
    fn run_row(&self, row: &Row<'_>) -> Result<RunRecord, StateError> {
        let get = |e: rusqlite::Error| self.corrupt(e.to_string());
        let lines = |text: Option<String>| -> Vec<String> {
            text.map(|t| t.lines().map(str::to_owned).collect())
                .unwrap_or_default()
        };
        let owner_pid: Option<u32> = row.get("owner_pid").map_err(get)?;
        let owner_start: Option<i64> = row.get("owner_start").map_err(get)?;
        let owner_start = owner_start.and_then(|s| u64::try_from(s).ok());
        let mut status: RunStatus = self.parse(&row.get::<_, String>("status").map_err(get)?)?;
        if status == RunStatus::Running
            && let (Some(pid), Some(start)) = (owner_pid, owner_start)
            && !(Owner { pid, start }).is_alive()
        {
            status = RunStatus::Interrupted;
        }
        let started_with = match row.get::<_, Option<String>>("overrides").map_err(get)? {
            Some(text) => serde_json::from_str(&text)
                .map_err(|e| self.corrupt(format!("the run's recorded flags: {e}")))?,
            None => StartedWith::default(),
        };
        let pause_base: Option<String> = row.get("pause_base").map_err(get)?;
        let pause_commit: Option<String> = row.get("pause_commit").map_err(get)?;
        let pause_files = lines(row.get("pause_files").map_err(get)?);
        let pause = (status == RunStatus::Paused
            && (pause_base.is_some() || pause_commit.is_some() || !pause_files.is_empty()))
        .then_some(PauseRecord {
            base: pause_base,
            commit: pause_commit,
            files: pause_files,
        });
        Ok(RunRecord {
            id: row.get("id").map_err(get)?,
            plan_path: row.get("plan_path").map_err(get)?,
            plan_title: row.get("plan_title").map_err(get)?,
            status,
            current_phase: row.get("current_phase").map_err(get)?,
            error: row.get("error").map_err(get)?,
            started_at: row.get("started_at").map_err(get)?,
            ended_at: row.get("ended_at").map_err(get)?,
            owner_pid,
            owner_start,
            agent_pgid: row.get("agent_pgid").map_err(get)?,
            phase_ids: lines(row.get("phase_ids").map_err(get)?),
            started_with,
            pause,
        })
    }

    /// Record as `interrupted` every run still marked `running` whose owner process is
    /// gone; returns them (with the agent group each left behind, if any).
    ///
    /// # Errors
    /// On SQLite failure.
    pub fn settle_interrupted(&self) -> Result<Vec<RunRecord>, StateError> {
        let mut stmt = self
            .conn
            .prepare("SELECT * FROM runs WHERE status = 'running' AND owner_pid IS NOT NULL")
            .map_err(self.sql("find interrupted runs"))?;
        let runs: Vec<RunRecord> = stmt
            .query_map([], |row| Ok(self.run_row(row)))
            .map_err(self.sql("find interrupted runs"))?
            .collect::<Result<Result<_, _>, _>>()
            .map_err(self.sql("find interrupted runs"))??;
        let mut settled = Vec::new();
        for run in runs
            .into_iter()
            .filter(|r| r.status == RunStatus::Interrupted)
        {
            self.update_run(
                &run.id,
                RunStatus::Interrupted,
                None,
                Some("the debussy process running it died"),
            )?;
            settled.push(run);
        }
        Ok(settled)
    }

    /// Record `owner` as the process running the run (taking it over on `--resume`).
    ///
    /// # Errors
    /// On SQLite failure.
    pub fn set_run_owner(&self, run_id: &str, owner: Option<Owner>) -> Result<(), StateError> {
        let start = owner.and_then(|o| i64::try_from(o.start).ok());
        self.conn
            .execute(
                "UPDATE runs SET owner_pid = ?2, owner_start = ?3 WHERE id = ?1",
                params![run_id, owner.map(|o| o.pid), start],
            )
            .map_err(self.sql("record the run's owner"))?;
        Ok(())
    }

    /// Record the process group of the agent session now running (`None` between sessions).
    ///
    /// # Errors
    /// On SQLite failure.
    pub fn set_agent_group(&self, run_id: &str, pgid: Option<i32>) -> Result<(), StateError> {
        self.conn
            .execute(
                "UPDATE runs SET agent_pgid = ?2 WHERE id = ?1",
                params![run_id, pgid],
            )
            .map_err(self.sql("record the agent's process group"))?;
        Ok(())
    }

    /// Record the plan's phase ids for the run, so reports for other phases are refused.
    ///
    /// # Errors
    /// On SQLite failure.
    pub fn set_run_phases(&self, run_id: &str, phase_ids: &[String]) -> Result<(), StateError> {
        self.conn
            .execute(
                "UPDATE runs SET phase_ids = ?2 WHERE id = ?1",
                params![run_id, phase_ids.join("\n")],
            )
            .map_err(self.sql("record the run's phases"))?;
        Ok(())
    }

    /// Record the configuration flags and variables the run was started with, so
    /// `--resume` reuses them.
    ///
    /// # Errors
    /// On SQLite failure.
    pub fn set_run_started_with(
        &self,
        run_id: &str,
        started_with: &StartedWith,
    ) -> Result<(), StateError> {
        let text = serde_json::to_string(started_with).map_err(|e| self.corrupt(e.to_string()))?;
        self.conn
            .execute(
                "UPDATE runs SET overrides = ?2 WHERE id = ?1",
                params![run_id, text],
            )
            .map_err(self.sql("record the run's flags"))?;
        Ok(())
    }

    /// Record (or with `None`, forget) where a pause left the work.
    ///
    /// # Errors
    /// On SQLite failure.
    pub fn set_pause(&self, run_id: &str, pause: Option<&PauseRecord>) -> Result<(), StateError> {
        self.conn
            .execute(
                "UPDATE runs SET pause_base = ?2, pause_commit = ?3, pause_files = ?4 WHERE id = ?1",
                params![
                    run_id,
                    pause.and_then(|p| p.base.clone()),
                    pause.and_then(|p| p.commit.clone()),
                    pause.map(|p| p.files.join("\n")).filter(|f| !f.is_empty()),
                ],
            )
            .map_err(self.sql("record the pause"))?;
        Ok(())
    }

    fn corrupt(&self, detail: String) -> StateError {
        StateError::Corrupt {
            path: self.path.clone(),
            detail,
        }
    }

    fn parse<T: std::str::FromStr<Err = String>>(&self, text: &str) -> Result<T, StateError> {
        text.parse().map_err(|detail| self.corrupt(detail))
    }

    /// Phases of `plan_path` that some run completed (for `--resume`).
    ///
    /// # Errors
    /// On SQLite failure.
    pub fn completed_phases(&self, plan_path: &str) -> Result<BTreeSet<String>, StateError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT DISTINCT e.phase_id FROM phase_executions e JOIN runs r ON r.id = e.run_id
                 WHERE r.plan_path = ?1 AND e.status = 'completed'",
            )
            .map_err(self.sql("read completed phases"))?;
        stmt.query_map([plan_path], |row| row.get(0))
            .map_err(self.sql("read completed phases"))?
            .collect::<Result<_, _>>()
            .map_err(self.sql("read completed phases"))
    }

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
    ) -> Result<i64, StateError> {
        self.conn
            .execute(
                "INSERT INTO phase_executions (run_id, phase_id, attempt, remediation, status, started_at)
                 VALUES (?1, ?2, ?3, ?4, 'running', ?5)",
                params![run_id, phase_id, attempt, remediation, now()],
            )
            .map_err(self.sql("start an execution"))?;
        Ok(self.conn.last_insert_rowid())
    }

    /// Set an execution's status while it runs (e.g. `validating`).
    ///
    /// # Errors
    /// On SQLite failure.
    pub fn set_execution_status(
        &self,
        execution_id: i64,
        status: ExecutionStatus,
    ) -> Result<(), StateError> {
        self.conn
            .execute(
                "UPDATE phase_executions SET status = ?2 WHERE id = ?1",
                params![execution_id, status.as_str()],
            )
            .map_err(self.sql("update an execution"))?;
        Ok(())
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
        self.conn
            .execute(
                "UPDATE phase_executions SET status = ?2, restarts = ?3, outcome_code = ?4, tokens = ?5,
                 cost_usd = ?6, commit_id = ?7, error = ?8, ended_at = ?9, cost_estimated = ?10 WHERE id = ?1",
                params![
                    execution_id,
                    end.status.as_str(),
                    end.restarts,
                    end.outcome_code,
                    end.tokens,
                    end.cost_usd,
                    end.commit_id,
                    end.error,
                    now(),
                    end.cost_estimated
                ],
            )
            .map_err(self.sql("finish an execution"))?;
        Ok(())
    }

    /// The executions of a run, oldest first.
    ///
    /// # Errors
    /// On SQLite failure.
    pub fn executions(&self, run_id: &str) -> Result<Vec<ExecutionRecord>, StateError> {
        let mut stmt = self
            .conn
            .prepare("SELECT * FROM phase_executions WHERE run_id = ?1 ORDER BY id")
            .map_err(self.sql("list executions"))?;
        stmt.query_map([run_id], |row| Ok(self.execution_row(row)))
            .map_err(self.sql("list executions"))?
            .collect::<Result<Result<_, _>, _>>()
            .map_err(self.sql("list executions"))?
    }

    fn execution_row(&self, row: &Row<'_>) -> Result<ExecutionRecord, StateError> {
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
            tokens: row.get("tokens").map_err(get)?,
            cost_usd: row.get("cost_usd").map_err(get)?,
            cost_estimated: row.get("cost_estimated").map_err(get)?,
            commit_id: row.get("commit_id").map_err(get)?,
            error: row.get("error").map_err(get)?,
            started_at: row.get("started_at").map_err(get)?,
            ended_at: row.get("ended_at").map_err(get)?,
        })
    }

    /// Record a finished session of an execution.
    ///
    /// # Errors
    /// On SQLite failure.
    pub fn record_session(&self, execution_id: i64, s: &SessionRecord) -> Result<(), StateError> {
        self.conn
            .execute(
                "INSERT INTO sessions (execution_id, session_index, agent_session_id, model, outcome, outcome_code,
                 context_tokens, context_window, context_percent, tool_calls, cost_usd, log_path, started_at, ended_at, agent_pgid, cost_estimated)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)",
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
                    s.cost_estimated
                ],
            )
            .map_err(self.sql("record a session"))?;
        Ok(())
    }

    /// The sessions of an execution, in order.
    ///
    /// # Errors
    /// On SQLite failure.
    pub fn sessions(&self, execution_id: i64) -> Result<Vec<SessionRecord>, StateError> {
        let mut stmt = self
            .conn
            .prepare("SELECT * FROM sessions WHERE execution_id = ?1 ORDER BY session_index, id")
            .map_err(self.sql("list sessions"))?;
        stmt.query_map([execution_id], |row| {
            Ok(SessionRecord {
                session_index: row.get("session_index")?,
                agent_session_id: row.get("agent_session_id")?,
                model: row.get("model")?,
                outcome: row.get("outcome")?,
                outcome_code: row.get("outcome_code")?,
                context_tokens: row.get("context_tokens")?,
                context_window: row.get("context_window")?,
                context_percent: row.get("context_percent")?,
                tool_calls: row.get("tool_calls")?,
                cost_usd: row.get("cost_usd")?,
                cost_estimated: row.get("cost_estimated")?,
                log_path: row.get("log_path")?,
                agent_pgid: row.get("agent_pgid")?,
                started_at: row.get("started_at")?,
                ended_at: row.get("ended_at")?,
            })
        })
        .map_err(self.sql("list sessions"))?
        .collect::<Result<_, _>>()
        .map_err(self.sql("list sessions"))
    }

    /// Record a context restart.
    ///
    /// # Errors
    /// On SQLite failure.
    pub fn record_restart(&self, execution_id: i64, r: &RestartRecord) -> Result<(), StateError> {
        self.conn
            .execute(
                "INSERT INTO restart_events (execution_id, restart_number, reason, context_percent, commit_id, at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![execution_id, r.restart_number, r.reason, r.context_percent, r.commit_id, r.at],
            )
            .map_err(self.sql("record a restart"))?;
        Ok(())
    }

    /// The restarts of an execution, in order.
    ///
    /// # Errors
    /// On SQLite failure.
    pub fn restarts(&self, execution_id: i64) -> Result<Vec<RestartRecord>, StateError> {
        let mut stmt = self
            .conn
            .prepare("SELECT * FROM restart_events WHERE execution_id = ?1 ORDER BY id")
            .map_err(self.sql("list restarts"))?;
        stmt.query_map([execution_id], |row| {
            Ok(RestartRecord {
                restart_number: row.get("restart_number")?,
                reason: row.get("reason")?,
                context_percent: row.get("context_percent")?,
                commit_id: row.get("commit_id")?,
                at: row.get("at")?,
            })
        })
        .map_err(self.sql("list restarts"))?
        .collect::<Result<_, _>>()
        .map_err(self.sql("list restarts"))
    }

    /// Record a gate's result against the execution it validated.
    ///
    /// # Errors
    /// On SQLite failure.
    pub fn record_gate(&self, execution_id: i64, g: &GateRecord) -> Result<(), StateError> {
        self.conn
            .execute(
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
            .map_err(self.sql("record a gate result"))?;
        Ok(())
    }

    /// The gate results of an execution, in order.
    ///
    /// # Errors
    /// On SQLite failure.
    pub fn gates(&self, execution_id: i64) -> Result<Vec<GateRecord>, StateError> {
        let mut stmt = self
            .conn
            .prepare("SELECT * FROM gate_results WHERE execution_id = ?1 ORDER BY id")
            .map_err(self.sql("list gate results"))?;
        stmt.query_map([execution_id], |row| {
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
        })
        .map_err(self.sql("list gate results"))?
        .collect::<Result<_, _>>()
        .map_err(self.sql("list gate results"))
    }

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
        self.conn
            .execute(
                "INSERT INTO completion_signals (run_id, phase_id, status, reason, at) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![run_id, phase_id, status.as_str(), reason, now()],
            )
            .map_err(self.sql("record a completion signal"))?;
        Ok(())
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
        self.conn
            .execute(
                "INSERT INTO progress_log (run_id, phase_id, step, at) VALUES (?1, ?2, ?3, ?4)",
                params![run_id, phase_id, step, now()],
            )
            .map_err(self.sql("record progress"))?;
        Ok(())
    }

    /// The progress steps for a phase of a run, oldest first.
    ///
    /// # Errors
    /// On SQLite failure.
    pub fn progress(&self, run_id: &str, phase_id: &str) -> Result<Vec<ProgressEntry>, StateError> {
        let mut stmt = self
            .conn
            .prepare("SELECT phase_id, step, at FROM progress_log WHERE run_id = ?1 AND phase_id = ?2 ORDER BY id")
            .map_err(self.sql("read progress"))?;
        stmt.query_map(params![run_id, phase_id], |row| {
            Ok(ProgressEntry {
                phase_id: row.get(0)?,
                step: row.get(1)?,
                at: row.get(2)?,
            })
        })
        .map_err(self.sql("read progress"))?
        .collect::<Result<_, _>>()
        .map_err(self.sql("read progress"))
    }

    /// Remember the context window an agent reported for a model.
    ///
    /// # Errors
    /// On SQLite failure.
    pub fn learn_context_window(&self, model: &str, window: u64) -> Result<(), StateError> {
        self.conn
            .execute(
                "INSERT INTO model_windows (model, context_window, learned_at) VALUES (?1, ?2, ?3)
                 ON CONFLICT (model) DO UPDATE SET context_window = excluded.context_window, learned_at = excluded.learned_at",
                params![model, window, now()],
            )
            .map_err(self.sql("remember a context window"))?;
        Ok(())
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

/// Create the database file readable by its owner only, and narrow the mode of an
/// existing one and of its `-wal`/`-shm` files (SQLite gives those the database's mode).
fn make_private(db: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    if !db.exists() {
        std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .mode(PRIVATE_FILE_MODE)
            .open(db)?;
    }
    for suffix in ["", "-wal", "-shm"] {
        let mut name = db.as_os_str().to_owned();
        name.push(suffix);
        let file = PathBuf::from(name);
        if let Ok(meta) = std::fs::metadata(&file)
            && meta.permissions().mode() & 0o077 != 0
        {
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(PRIVATE_FILE_MODE))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
