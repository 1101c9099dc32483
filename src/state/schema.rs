//! The versioned schema of `.debussy/state.db`.
//!
//! Each entry of [`MIGRATIONS`] moves the database from version `i` to `i + 1`
//! (`PRAGMA user_version`). Entries are append-only: a released migration never changes.

/// Schema migrations, oldest first.
pub(super) const MIGRATIONS: &[&str] = &[
    // 1: the initial schema.
    "
    CREATE TABLE runs (
        id            TEXT PRIMARY KEY,
        plan_path     TEXT NOT NULL,
        plan_title    TEXT NOT NULL,
        status        TEXT NOT NULL,
        current_phase TEXT,
        error         TEXT,
        started_at    TEXT NOT NULL,
        ended_at      TEXT
    );
    CREATE INDEX runs_by_plan ON runs (plan_path, started_at);

    CREATE TABLE phase_executions (
        id           INTEGER PRIMARY KEY,
        run_id       TEXT NOT NULL REFERENCES runs (id),
        phase_id     TEXT NOT NULL,
        attempt      INTEGER NOT NULL,
        remediation  INTEGER NOT NULL DEFAULT 0,
        status       TEXT NOT NULL,
        restarts     INTEGER NOT NULL DEFAULT 0,
        outcome_code INTEGER,
        tokens       INTEGER NOT NULL DEFAULT 0,
        cost_usd     REAL NOT NULL DEFAULT 0,
        commit_id    TEXT,
        error        TEXT,
        started_at   TEXT NOT NULL,
        ended_at     TEXT
    );
    CREATE INDEX executions_by_run ON phase_executions (run_id, id);

    CREATE TABLE sessions (
        id               INTEGER PRIMARY KEY,
        execution_id     INTEGER NOT NULL REFERENCES phase_executions (id),
        session_index    INTEGER NOT NULL,
        agent_session_id TEXT,
        model            TEXT,
        outcome          TEXT NOT NULL,
        outcome_code     INTEGER NOT NULL,
        context_tokens   INTEGER NOT NULL,
        context_window   INTEGER NOT NULL,
        context_percent  REAL NOT NULL,
        tool_calls       INTEGER NOT NULL,
        cost_usd         REAL NOT NULL,
        log_path         TEXT,
        started_at       TEXT NOT NULL,
        ended_at         TEXT NOT NULL
    );

    CREATE TABLE restart_events (
        id              INTEGER PRIMARY KEY,
        execution_id    INTEGER NOT NULL REFERENCES phase_executions (id),
        restart_number  INTEGER NOT NULL,
        reason          TEXT NOT NULL,
        context_percent REAL,
        commit_id       TEXT,
        at              TEXT NOT NULL
    );

    CREATE TABLE gate_results (
        id           INTEGER PRIMARY KEY,
        execution_id INTEGER NOT NULL REFERENCES phase_executions (id),
        name         TEXT NOT NULL,
        command      TEXT NOT NULL,
        passed       INTEGER NOT NULL,
        exit_code    INTEGER,
        timed_out    INTEGER NOT NULL DEFAULT 0,
        output       TEXT NOT NULL,
        duration_ms  INTEGER NOT NULL,
        at           TEXT NOT NULL
    );

    CREATE TABLE completion_signals (
        id       INTEGER PRIMARY KEY,
        run_id   TEXT NOT NULL,
        phase_id TEXT NOT NULL,
        status   TEXT NOT NULL,
        reason   TEXT,
        at       TEXT NOT NULL
    );
    CREATE INDEX completions_by_phase ON completion_signals (run_id, phase_id, id);

    CREATE TABLE progress_log (
        id       INTEGER PRIMARY KEY,
        run_id   TEXT NOT NULL,
        phase_id TEXT NOT NULL,
        step     TEXT NOT NULL,
        at       TEXT NOT NULL
    );
    CREATE INDEX progress_by_phase ON progress_log (run_id, phase_id, id);

    CREATE TABLE model_windows (
        model          TEXT PRIMARY KEY,
        context_window INTEGER NOT NULL,
        learned_at     TEXT NOT NULL
    );
    ",
    // 2: who owns a run (to tell a live run from an interrupted one), its agent's process
    // group, its phases, the flags it was started with, and where a pause left the work.
    "
    ALTER TABLE runs ADD COLUMN owner_pid INTEGER;
    ALTER TABLE runs ADD COLUMN owner_start INTEGER;
    ALTER TABLE runs ADD COLUMN agent_pgid INTEGER;
    ALTER TABLE runs ADD COLUMN phase_ids TEXT;
    ALTER TABLE runs ADD COLUMN overrides TEXT;
    ALTER TABLE runs ADD COLUMN pause_base TEXT;
    ALTER TABLE runs ADD COLUMN pause_commit TEXT;
    ALTER TABLE runs ADD COLUMN pause_files TEXT;
    ALTER TABLE sessions ADD COLUMN agent_pgid INTEGER;
    ",
    // 3: what each session was told (`debussy show`): additive, a table of its own.
    "
    CREATE TABLE session_prompts (
        execution_id  INTEGER NOT NULL REFERENCES phase_executions (id),
        session_index INTEGER NOT NULL,
        prompt        TEXT NOT NULL,
        checkpoint    TEXT,
        PRIMARY KEY (execution_id, session_index)
    );
    ",
    // 4: whether a cost is debussy's estimate (a session stopped before the agent
    // reported its cost is priced from its tokens).
    "
    ALTER TABLE phase_executions ADD COLUMN cost_estimated INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE sessions ADD COLUMN cost_estimated INTEGER NOT NULL DEFAULT 0;
    ",
    // 5: tokens billed by kind (summed over requests, not a context figure), which
    // sessions were handoffs (a stopped session asked to write its own handoff), and how
    // long a run has been running over its invocations (for `max_duration`).
    "
    ALTER TABLE phase_executions ADD COLUMN billed_input INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE phase_executions ADD COLUMN billed_cache_write INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE phase_executions ADD COLUMN billed_cache_read INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE phase_executions ADD COLUMN billed_output INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE sessions ADD COLUMN billed_input INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE sessions ADD COLUMN billed_cache_write INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE sessions ADD COLUMN billed_cache_read INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE sessions ADD COLUMN billed_output INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE sessions ADD COLUMN kind TEXT NOT NULL DEFAULT 'work';
    ALTER TABLE runs ADD COLUMN active_secs REAL NOT NULL DEFAULT 0;
    ",
    // 6: which agent ran a session (a phase may name its own).
    "
    ALTER TABLE sessions ADD COLUMN agent TEXT;
    ",
    // 7: phases running side by side (`jobs`): the agent group and the pause of each
    // phase, and the git worktree an attempt ran in.
    "
    CREATE TABLE phase_agents (
        run_id   TEXT NOT NULL REFERENCES runs (id),
        phase_id TEXT NOT NULL,
        pgid     INTEGER NOT NULL,
        PRIMARY KEY (run_id, phase_id)
    );
    CREATE TABLE phase_pauses (
        run_id    TEXT NOT NULL REFERENCES runs (id),
        phase_id  TEXT NOT NULL,
        base      TEXT,
        commit_id TEXT,
        files     TEXT,
        PRIMARY KEY (run_id, phase_id)
    );
    ALTER TABLE phase_executions ADD COLUMN workdir TEXT;
    ",
    // 8: the start time of each recorded agent group's leader, so that a resume signals
    // the group only while its number still names the agent (pid reuse).
    "
    ALTER TABLE phase_agents ADD COLUMN leader_start INTEGER;
    ",
    // 9: the branch a run merges its phases into (it may not be the one checked out
    // later), and each completed attempt's branch tip, so that "merged" is asked of the
    // repository even when the branch is gone.
    "
    ALTER TABLE runs ADD COLUMN start_branch TEXT;
    ALTER TABLE phase_executions ADD COLUMN branch_tip TEXT;
    ",
    // 10: where a session's window figure came from, and the usage limit a phase waits for.
    "
    ALTER TABLE sessions ADD COLUMN window_source TEXT;
    CREATE TABLE limit_waits (
        run_id   TEXT NOT NULL REFERENCES runs (id),
        phase_id TEXT NOT NULL,
        until    TEXT NOT NULL,
        said     TEXT,
        PRIMARY KEY (run_id, phase_id)
    );
    ",
    // 11: the session running in each phase, with what it has spent so far (`status`
    // during a run; what a killed run's session spent).
    "
    CREATE TABLE live_sessions (
        run_id             TEXT NOT NULL REFERENCES runs (id),
        phase_id           TEXT NOT NULL,
        execution_id       INTEGER NOT NULL REFERENCES phase_executions (id),
        session_index      INTEGER NOT NULL,
        agent              TEXT NOT NULL,
        model              TEXT NOT NULL,
        log_path           TEXT NOT NULL,
        started_at         TEXT NOT NULL,
        billed_input       INTEGER NOT NULL,
        billed_cache_write INTEGER NOT NULL,
        billed_cache_read  INTEGER NOT NULL,
        billed_output      INTEGER NOT NULL,
        cost_usd           REAL NOT NULL,
        cost_estimated     INTEGER NOT NULL,
        context_percent    REAL NOT NULL,
        tool_calls         INTEGER NOT NULL,
        PRIMARY KEY (run_id, phase_id)
    );
    ",
    // 12: what a phase waits for: a usage limit (NULL, as before) or the agent's API.
    "
    ALTER TABLE limit_waits ADD COLUMN kind TEXT;
    ",
    // 13: what `--resume` needs to take an attempt up where it stood: the commit `HEAD`
    // was at when its phase started (its checkpoints list the files changed since), and
    // the handoff each context restart's stopped session wrote.
    "
    ALTER TABLE phase_executions ADD COLUMN base TEXT;
    ALTER TABLE restart_events ADD COLUMN handoff TEXT;
    ",
    // 14: what an attempt's sessions did that its compliance check judges beyond the
    // tree (the subagents they used, the tool calls they were refused), kept as it
    // happens, so that an attempt `--resume` goes on with is judged on all of it.
    "
    CREATE TABLE execution_agents (
        execution_id INTEGER NOT NULL REFERENCES phase_executions (id),
        agent        TEXT NOT NULL,
        PRIMARY KEY (execution_id, agent)
    );
    CREATE TABLE execution_refusals (
        id           INTEGER PRIMARY KEY,
        execution_id INTEGER NOT NULL REFERENCES phase_executions (id),
        tool_name    TEXT NOT NULL,
        tool_use_id  TEXT,
        tool_input   TEXT NOT NULL
    );
    ",
];
