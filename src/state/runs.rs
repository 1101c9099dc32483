//! Runs: created, updated, owned, paused, settled when their process died, and listed.

use std::collections::{BTreeMap, BTreeSet};

use rusqlite::{Row, params};

use super::{
    AgentGroup, ExecutionStatus, LimitWait, Owner, PauseRecord, RunRecord, RunStatus, StartedWith,
    StateError, Store, now,
};
use crate::agent::FailureKind;
use crate::process::ProcessIdentity;

impl Store {
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
        self.execute(
            "update a run",
            "UPDATE runs SET status = ?2, current_phase = COALESCE(?3, current_phase), error = ?4, ended_at = ?5 WHERE id = ?1",
            params![run_id, status.as_str(), current_phase, error, ended],
        )
    }

    /// One run by id (a unique prefix of the id works too).
    ///
    /// # Errors
    /// On SQLite failure.
    pub fn run(&self, id: &str) -> Result<Option<RunRecord>, StateError> {
        let pattern = format!("{}%", id.replace(['%', '_'], ""));
        let rows: Vec<RunRecord> = self.rows::<_, Result<Vec<RunRecord>, _>>(
            "read a run",
            "SELECT * FROM runs WHERE id LIKE ?1 ORDER BY started_at DESC LIMIT 2",
            [pattern],
            |row| Ok(self.run_row(row)),
        )??;
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
        self.rows(
            "list runs",
            "SELECT * FROM runs WHERE (?1 IS NULL OR plan_path = ?1) ORDER BY started_at DESC, rowid DESC LIMIT ?2",
            params![plan_path, limit],
            |row| Ok(self.run_row(row)),
        )?
    }

    /// A run as stored, except that a run still `running` whose owner process is gone
    /// (or whose pid now belongs to another process) reads as `interrupted`.
    pub(super) fn run_row(&self, row: &Row<'_>) -> Result<RunRecord, StateError> {
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
        let id: String = row.get("id").map_err(get)?;
        let current_phase: Option<String> = row.get("current_phase").map_err(get)?;
        let mut pauses = BTreeMap::new();
        if status == RunStatus::Paused {
            // Runs recorded before phases ran side by side kept one pause, on the run.
            let legacy = PauseRecord {
                base: row.get("pause_base").map_err(get)?,
                commit: row.get("pause_commit").map_err(get)?,
                files: lines(row.get("pause_files").map_err(get)?),
            };
            if let Some(phase) = &current_phase
                && !legacy.is_empty()
            {
                pauses.insert(phase.clone(), legacy);
            }
            pauses.extend(self.phase_pauses(&id)?);
        }
        let mut agent_groups: Vec<AgentGroup> = row
            .get::<_, Option<i32>>("agent_pgid")
            .map_err(get)?
            .into_iter()
            .map(AgentGroup::Unidentified)
            .collect();
        agent_groups.extend(self.phase_agents(&id)?);
        let limit_waits = if status == RunStatus::Running {
            self.limit_waits(&id)?
        } else {
            BTreeMap::new()
        };
        Ok(RunRecord {
            id,
            plan_path: row.get("plan_path").map_err(get)?,
            plan_title: row.get("plan_title").map_err(get)?,
            status,
            current_phase,
            error: row.get("error").map_err(get)?,
            started_at: row.get("started_at").map_err(get)?,
            ended_at: row.get("ended_at").map_err(get)?,
            owner_pid,
            owner_start,
            agent_groups,
            phase_ids: lines(row.get("phase_ids").map_err(get)?),
            started_with,
            pauses,
            active_secs: row.get("active_secs").map_err(get)?,
            start_branch: row.get("start_branch").map_err(get)?,
            limit_waits,
        })
    }

    /// Record as `interrupted` every run still marked `running` whose owner process is
    /// gone, and the attempts it left running, each with what its sessions spent: the
    /// sessions it left running become `interrupted` sessions with their last figures.
    /// Returns the runs (with the agent group each left behind, if any). Idempotent: a
    /// settled run is not running any more.
    ///
    /// # Errors
    /// On SQLite failure.
    pub fn settle_interrupted(&self) -> Result<Vec<RunRecord>, StateError> {
        let runs: Vec<RunRecord> = self.rows::<_, Result<Vec<RunRecord>, _>>(
            "find interrupted runs",
            "SELECT * FROM runs WHERE status = 'running' AND owner_pid IS NOT NULL",
            [],
            |row| Ok(self.run_row(row)),
        )??;
        let mut settled = Vec::new();
        for run in runs
            .into_iter()
            .filter(|r| r.status == RunStatus::Interrupted)
        {
            // First, while the run still reads as running: a settle cut short goes again.
            self.record_left_sessions(&run.id)?;
            self.update_run(
                &run.id,
                RunStatus::Interrupted,
                None,
                Some("the debussy process running it died"),
            )?;
            // An attempt records what it spent and the restarts it took when it ends;
            // these never ended, so what their sessions spent and the restarts recorded
            // are theirs.
            self.conn
                .execute(
                    "UPDATE phase_executions SET status = ?2, ended_at = ?3,
                     error = COALESCE(error, 'debussy was stopped while it ran (killed or crashed)'),
                     restarts = (SELECT COUNT(*) FROM restart_events r
                                 WHERE r.execution_id = phase_executions.id),
                     billed_input = spent.input, billed_cache_write = spent.cache_write,
                     billed_cache_read = spent.cache_read, billed_output = spent.output,
                     tokens = spent.input + spent.cache_write + spent.cache_read + spent.output,
                     cost_usd = spent.cost, cost_estimated = spent.estimated
                     FROM (SELECT e.id AS id,
                                  COALESCE(SUM(s.billed_input), 0) AS input,
                                  COALESCE(SUM(s.billed_cache_write), 0) AS cache_write,
                                  COALESCE(SUM(s.billed_cache_read), 0) AS cache_read,
                                  COALESCE(SUM(s.billed_output), 0) AS output,
                                  COALESCE(SUM(s.cost_usd), 0.0) AS cost,
                                  COALESCE(MAX(s.cost_estimated), 0) AS estimated
                           FROM phase_executions e LEFT JOIN sessions s ON s.execution_id = e.id
                           WHERE e.run_id = ?1 AND e.ended_at IS NULL
                           GROUP BY e.id) AS spent
                     WHERE phase_executions.id = spent.id",
                    params![run.id, ExecutionStatus::Interrupted.as_str(), now()],
                )
                .map_err(self.sql("record the interrupted attempts"))?;
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
        self.execute(
            "record the run's owner",
            "UPDATE runs SET owner_pid = ?2, owner_start = ?3 WHERE id = ?1",
            params![run_id, owner.map(|o| o.pid), start],
        )
    }

    /// Record that `phase_id` waits for its agent's usage limit until `wait.until`, or
    /// (`None`) that it no longer waits.
    ///
    /// # Errors
    /// On SQLite failure.
    pub fn set_limit_wait(
        &self,
        run_id: &str,
        phase_id: &str,
        wait: Option<&LimitWait>,
    ) -> Result<(), StateError> {
        let action = "record the wait for the usage limit";
        match wait {
            Some(wait) => self.execute(
                action,
                "INSERT INTO limit_waits (run_id, phase_id, until, said, kind) VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT (run_id, phase_id) DO UPDATE
                 SET until = excluded.until, said = excluded.said, kind = excluded.kind",
                params![run_id, phase_id, wait.until, wait.said, wait.kind.as_str()],
            ),
            None => self.forget_phase_row(action, "limit_waits", run_id, phase_id),
        }
    }

    fn limit_waits(&self, run_id: &str) -> Result<BTreeMap<String, LimitWait>, StateError> {
        self.rows(
            "read the waits for usage limits",
            "SELECT phase_id, until, said, kind FROM limit_waits WHERE run_id = ?1",
            [run_id],
            |row| {
                let kind = match row.get::<_, Option<String>>(3)?.as_deref() {
                    Some("unreachable") => FailureKind::Unreachable,
                    _ => FailureKind::UsageLimit,
                };
                Ok((
                    row.get::<_, String>(0)?,
                    LimitWait {
                        kind,
                        until: row.get(1)?,
                        said: row.get(2)?,
                    },
                ))
            },
        )
    }

    /// Record the process group of `phase_id`'s agent session now running, by its
    /// leader (the agent leads its own group) as it was started (`None` between its
    /// sessions).
    ///
    /// # Errors
    /// On SQLite failure.
    pub fn set_agent_group(
        &self,
        run_id: &str,
        phase_id: &str,
        leader: Option<ProcessIdentity>,
    ) -> Result<(), StateError> {
        let action = "record the agent's process group";
        match leader {
            Some(leader) => self.execute(
                action,
                "INSERT INTO phase_agents (run_id, phase_id, pgid, leader_start)
                 VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (run_id, phase_id)
                 DO UPDATE SET pgid = excluded.pgid, leader_start = excluded.leader_start",
                params![
                    run_id,
                    phase_id,
                    leader.pid,
                    i64::try_from(leader.start).unwrap_or(i64::MAX)
                ],
            ),
            None => self.forget_phase_row(action, "phase_agents", run_id, phase_id),
        }
    }

    /// Forget every agent process group recorded for the run (they are gone).
    ///
    /// # Errors
    /// On SQLite failure.
    pub fn clear_agent_groups(&self, run_id: &str) -> Result<(), StateError> {
        self.conn
            .execute(
                "UPDATE runs SET agent_pgid = NULL WHERE id = ?1",
                params![run_id],
            )
            .and_then(|_| {
                self.conn.execute(
                    "DELETE FROM phase_agents WHERE run_id = ?1",
                    params![run_id],
                )
            })
            .map_err(self.sql("forget the agents' process groups"))?;
        Ok(())
    }

    fn phase_agents(&self, run_id: &str) -> Result<Vec<AgentGroup>, StateError> {
        self.rows(
            "read the agents' process groups",
            "SELECT pgid, leader_start FROM phase_agents WHERE run_id = ?1 ORDER BY phase_id",
            [run_id],
            |row| {
                let pgid: i32 = row.get(0)?;
                let start: Option<i64> = row.get(1)?;
                Ok(
                    match (
                        u32::try_from(pgid),
                        start.and_then(|s| u64::try_from(s).ok()),
                    ) {
                        (Ok(pid), Some(start)) => {
                            AgentGroup::Identified(ProcessIdentity { pid, start })
                        }
                        _ => AgentGroup::Unidentified(pgid),
                    },
                )
            },
        )
    }

    /// Record the plan's phase ids for the run, so reports for other phases are refused.
    ///
    /// # Errors
    /// On SQLite failure.
    pub fn set_run_phases(&self, run_id: &str, phase_ids: &[String]) -> Result<(), StateError> {
        self.execute(
            "record the run's phases",
            "UPDATE runs SET phase_ids = ?2 WHERE id = ?1",
            params![run_id, phase_ids.join("\n")],
        )
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
        self.execute(
            "record the run's flags",
            "UPDATE runs SET overrides = ?2 WHERE id = ?1",
            params![run_id, text],
        )
    }

    /// Record the branch the run merges its phases into.
    ///
    /// # Errors
    /// On SQLite failure.
    pub fn set_run_branch(&self, run_id: &str, branch: &str) -> Result<(), StateError> {
        self.execute(
            "record the run's branch",
            "UPDATE runs SET start_branch = ?2 WHERE id = ?1",
            params![run_id, branch],
        )
    }

    /// Add the running time of one invocation to the run's total.
    ///
    /// # Errors
    /// On SQLite failure.
    pub fn add_active_secs(&self, run_id: &str, secs: f64) -> Result<(), StateError> {
        self.execute(
            "record the run's time",
            "UPDATE runs SET active_secs = active_secs + ?2 WHERE id = ?1",
            params![run_id, secs],
        )
    }

    /// Record (or with `None`, forget) where a pause left `phase_id`'s work.
    ///
    /// # Errors
    /// On SQLite failure.
    pub fn set_pause(
        &self,
        run_id: &str,
        phase_id: &str,
        pause: Option<&PauseRecord>,
    ) -> Result<(), StateError> {
        let action = "record the pause";
        match pause {
            Some(pause) => self.execute(
                action,
                "INSERT INTO phase_pauses (run_id, phase_id, base, commit_id, files) VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT (run_id, phase_id) DO UPDATE
                 SET base = excluded.base, commit_id = excluded.commit_id, files = excluded.files",
                params![
                    run_id,
                    phase_id,
                    pause.base,
                    pause.commit,
                    Some(pause.files.join("\n")).filter(|f| !f.is_empty()),
                ],
            ),
            None => self.forget_phase_row(action, "phase_pauses", run_id, phase_id),
        }
    }

    /// Forget every pause of the run (it is being resumed).
    ///
    /// # Errors
    /// On SQLite failure.
    pub fn clear_pauses(&self, run_id: &str) -> Result<(), StateError> {
        self.conn
            .execute(
                "UPDATE runs SET pause_base = NULL, pause_commit = NULL, pause_files = NULL WHERE id = ?1",
                params![run_id],
            )
            .and_then(|_| {
                self.conn
                    .execute("DELETE FROM phase_pauses WHERE run_id = ?1", params![run_id])
            })
            .map_err(self.sql("forget the pauses"))?;
        Ok(())
    }

    fn phase_pauses(&self, run_id: &str) -> Result<BTreeMap<String, PauseRecord>, StateError> {
        self.rows(
            "read the pauses",
            "SELECT phase_id, base, commit_id, files FROM phase_pauses WHERE run_id = ?1",
            [run_id],
            |row| {
                let files: Option<String> = row.get(3)?;
                Ok((
                    row.get(0)?,
                    PauseRecord {
                        base: row.get(1)?,
                        commit: row.get(2)?,
                        files: files
                            .map(|t| t.lines().map(str::to_owned).collect())
                            .unwrap_or_default(),
                    },
                ))
            },
        )
    }

    /// Delete the row of `phase_id` in the table `table` of per-phase rows; `action`
    /// names it in an error.
    fn forget_phase_row(
        &self,
        action: &'static str,
        table: &str,
        run_id: &str,
        phase_id: &str,
    ) -> Result<(), StateError> {
        self.execute(
            action,
            &format!("DELETE FROM {table} WHERE run_id = ?1 AND phase_id = ?2"),
            params![run_id, phase_id],
        )
    }

    /// Phases of `plan_path` that some run completed (for `--resume`).
    ///
    /// # Errors
    /// On SQLite failure.
    pub fn completed_phases(&self, plan_path: &str) -> Result<BTreeSet<String>, StateError> {
        self.rows(
            "read completed phases",
            "SELECT DISTINCT e.phase_id FROM phase_executions e JOIN runs r ON r.id = e.run_id
                 WHERE r.plan_path = ?1 AND e.status = 'completed'",
            [plan_path],
            |row| row.get(0),
        )
    }
}
