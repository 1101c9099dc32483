use std::path::Path;
use std::sync::Arc;

use rusqlite::Connection;

use super::*;

fn store() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path()).expect("open");
    (dir, store)
}

/// The run `id` as the store reads it; it must be there.
fn recorded(store: &Store, id: &str) -> RunRecord {
    store.run(id).expect("read").expect("recorded")
}

fn end(status: ExecutionStatus) -> ExecutionEnd {
    ExecutionEnd {
        status,
        restarts: 2,
        outcome_code: Some(0),
        billed: crate::context::cost::Billed {
            input: 1000,
            cache_write: 200,
            cache_read: 0,
            output: 34,
        },
        cost_usd: 0.5,
        cost_estimated: false,
        commit_id: Some("abc".into()),
        error: None,
    }
}

/// A project whose state database an older debussy made: the schema of `version`.
fn database_at_version(version: usize) -> (tempfile::TempDir, Connection) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join(STATE_DB);
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    let conn = Connection::open(&path).expect("open");
    for migration in &schema::MIGRATIONS[..version] {
        conn.execute_batch(migration).expect("migrate");
    }
    conn.pragma_update(None, "user_version", version)
        .expect("version");
    (dir, conn)
}

#[test]
fn creates_the_database_in_wal_mode_and_reopens_it() {
    let (dir, store) = store();
    assert!(dir.path().join(STATE_DB).exists());
    let mode: String = store
        .conn
        .pragma_query_value(None, "journal_mode", |r| r.get(0))
        .expect("pragma");
    assert_eq!(mode, "wal");
    drop(store);
    let again = Store::open(dir.path()).expect("reopen");
    let version: usize = again
        .conn
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .expect("pragma");
    assert_eq!(version, schema::MIGRATIONS.len());
}

#[test]
fn refuses_a_database_from_a_newer_version() {
    let (dir, store) = store();
    store
        .conn
        .pragma_update(None, "user_version", 99)
        .expect("pragma");
    drop(store);
    let err = Store::open(dir.path()).expect_err("too new");
    assert!(matches!(err, StateError::TooNew { found: 99, .. }), "{err}");
    assert!(err.to_string().contains("upgrade debussy"));
}

#[test]
fn open_existing_does_not_create() {
    let dir = tempfile::tempdir().expect("tempdir");
    assert!(Store::open_existing(dir.path()).expect("open").is_none());
    assert!(!dir.path().join(".debussy").exists());
}

#[test]
fn runs_round_trip_and_resolve_by_prefix() {
    let (_dir, store) = store();
    let first = store.create_run("/p/MASTER.md", "Plan").expect("run");
    let second = store.create_run("/q/MASTER.md", "Other").expect("run");
    store
        .update_run(&first, RunStatus::Paused, Some("2"), Some("interrupted"))
        .expect("update");

    let run = recorded(&store, &first[..8]);
    assert_eq!(run.status, RunStatus::Paused);
    assert_eq!(run.current_phase.as_deref(), Some("2"));
    assert!(run.ended_at.is_some());
    assert!(store.run("zzz").expect("read").is_none());

    let all = store.runs(None, 10).expect("list");
    assert_eq!(all.len(), 2);
    assert_eq!(all[0].id, second, "newest first");
    assert_eq!(store.runs(Some("/p/MASTER.md"), 10).expect("list").len(), 1);
    assert_eq!(store.runs(None, 1).expect("list").len(), 1);
}

#[test]
fn executions_sessions_restarts_and_gates_link_to_their_execution() {
    let (_dir, store) = store();
    let run = store.create_run("/p/M.md", "Plan").expect("run");
    let first = store
        .start_execution(&run, "1", 1, false, None)
        .expect("exec");
    let second = store
        .start_execution(&run, "1", 2, true, None)
        .expect("exec");
    store
        .set_execution_status(first, ExecutionStatus::Validating)
        .expect("status");
    store
        .finish_execution(first, &end(ExecutionStatus::Failed))
        .expect("finish");
    store
        .record_gate(
            first,
            &GateRecord {
                name: "tests".into(),
                command: "cargo test".into(),
                passed: false,
                exit_code: Some(101),
                timed_out: false,
                output: "1 failed".into(),
                duration_ms: 12,
                at: now(),
            },
        )
        .expect("gate");
    store
        .record_restart(
            second,
            &RestartRecord {
                restart_number: 1,
                reason: "context 85.0% >= 80%".into(),
                context_percent: Some(85.0),
                commit_id: Some("def".into()),
                at: now(),
            },
        )
        .expect("restart");
    let session = SessionRecord {
        session_index: 0,
        kind: crate::state::SessionKind::Work,
        agent_session_id: Some("s-1".into()),
        agent: Some("claude".into()),
        model: Some("opus".into()),
        outcome: "context_limit".into(),
        outcome_code: -2,
        context_tokens: 170_000,
        context_window: 200_000,
        window_source: Some("table".into()),
        context_percent: 85.0,
        tool_calls: 7,
        cost_usd: 0.25,
        cost_estimated: false,
        billed: crate::context::cost::Billed {
            input: 100,
            cache_write: 20_000,
            cache_read: 150_000,
            output: 900,
        },
        log_path: Some(".debussy/runs/x/1/attempt-2-session-1.jsonl".into()),
        agent_pgid: Some(4242),
        started_at: now(),
        ended_at: now(),
    };
    store.record_session(second, &session).expect("session");

    let executions = store.executions(&run).expect("list");
    assert_eq!(executions.len(), 2);
    assert_eq!(executions[0].status, ExecutionStatus::Failed);
    assert_eq!(executions[0].commit_id.as_deref(), Some("abc"));
    assert!(executions[1].remediation);
    assert_eq!(store.gates(first).expect("gates").len(), 1);
    assert!(store.gates(second).expect("gates").is_empty());
    assert_eq!(
        store.restarts(second).expect("restarts")[0]
            .commit_id
            .as_deref(),
        Some("def")
    );
    assert_eq!(
        store.sessions(second).expect("sessions"),
        std::slice::from_ref(&session)
    );
    assert_eq!(executions[0].billed, end(ExecutionStatus::Failed).billed);

    let handoff = SessionRecord {
        kind: SessionKind::Handoff,
        cost_usd: 0.05,
        billed: crate::context::cost::Billed {
            input: 10,
            cache_write: 0,
            cache_read: 170_000,
            output: 400,
        },
        ..session.clone()
    };
    store.record_session(second, &handoff).expect("handoff");
    let totals = store.totals(&run, None).expect("totals");
    assert_eq!(totals.sessions, 1, "a handoff is not a working session");
    assert_eq!(totals.handoffs, 1);
    assert!((totals.cost_usd - 0.30).abs() < 1e-9, "{totals:?}");
    assert!((totals.handoff_cost_usd - 0.05).abs() < 1e-9, "{totals:?}");
    assert_eq!(totals.billed, session.billed + handoff.billed);
    assert_eq!(
        store.totals(&run, Some("other")).expect("totals"),
        RunTotals::default()
    );
    assert_eq!(
        store.sessions(second).expect("sessions")[1].kind,
        SessionKind::Handoff
    );
}

#[test]
fn completed_phases_come_from_any_run_of_the_same_plan() {
    let (_dir, store) = store();
    let a = store.create_run("/p/M.md", "Plan").expect("run");
    let b = store.create_run("/other/M.md", "Other").expect("run");
    for (run, phase, status) in [
        (&a, "1", ExecutionStatus::Completed),
        (&a, "2", ExecutionStatus::Failed),
        (&b, "3", ExecutionStatus::Completed),
    ] {
        let execution = store
            .start_execution(run, phase, 1, false, None)
            .expect("exec");
        store
            .finish_execution(execution, &end(status))
            .expect("finish");
    }
    let phases = store.completed_phases("/p/M.md").expect("phases");
    assert_eq!(phases.into_iter().collect::<Vec<_>>(), ["1"]);
}

#[test]
fn completion_signals_and_progress_are_scoped_to_their_run() {
    let (_dir, store) = store();
    for (run, status, reason) in [
        ("run-a", CompletionStatus::Blocked, Some("needs a key")),
        ("run-a", CompletionStatus::Completed, None),
        ("run-b", CompletionStatus::Failed, None),
    ] {
        store
            .record_completion(run, "1", status, reason)
            .expect("done");
    }
    let latest = store.completion("run-a", "1").expect("read").expect("some");
    assert_eq!(latest.status, CompletionStatus::Completed);
    assert!(store.completion("run-a", "2").expect("read").is_none());

    for (run, step) in [
        ("run-a", "wrote the parser"),
        ("run-a", "added tests"),
        ("run-b", "elsewhere"),
    ] {
        store.record_progress(run, "1", step).expect("progress");
    }
    let steps: Vec<_> = store
        .progress("run-a", "1")
        .expect("read")
        .into_iter()
        .map(|p| p.step)
        .collect();
    assert_eq!(steps, ["wrote the parser", "added tests"]);
}

#[test]
fn learned_context_windows_are_updated_in_place() {
    let (_dir, store) = store();
    assert_eq!(store.context_window("opus").expect("read"), None);
    store.learn_context_window("opus", 200_000).expect("learn");
    store
        .learn_context_window("opus", 1_000_000)
        .expect("learn");
    assert_eq!(store.context_window("opus").expect("read"), Some(1_000_000));
}

#[test]
fn two_connections_writing_at_once_lose_nothing() {
    let dir = Arc::new(tempfile::tempdir().expect("tempdir"));
    Store::open(dir.path()).expect("create");
    let writers: Vec<_> = (0..4)
        .map(|writer| {
            let dir = Arc::clone(&dir);
            std::thread::spawn(move || {
                let store = Store::open(dir.path()).expect("open");
                for step in 0..50 {
                    store
                        .record_progress("run", "1", &format!("{writer}-{step}"))
                        .expect("write");
                }
            })
        })
        .collect();
    for writer in writers {
        writer.join().expect("writer thread");
    }
    let store = Store::open(dir.path()).expect("open");
    assert_eq!(store.progress("run", "1").expect("read").len(), 200);
}

#[test]
fn a_version_1_database_is_migrated_keeping_its_runs() {
    let (dir, conn) = database_at_version(1);
    conn.execute(
        "INSERT INTO runs (id, plan_path, plan_title, status, started_at) VALUES ('old', '/p', 'P', 'running', 'then')",
        [],
    )
    .expect("insert");
    drop(conn);
    let store = Store::open(dir.path()).expect("migrate");
    let run = recorded(&store, "old");
    // No owner was recorded, so nothing says it died: it stays as it was.
    assert_eq!(run.status, RunStatus::Running);
    assert!(run.phase_ids.is_empty() && run.started_with == StartedWith::default());
}

#[test]
fn agent_groups_recorded_before_version_8_are_read_without_a_leader_start() {
    let (dir, conn) = database_at_version(7);
    conn.execute_batch(
        "INSERT INTO runs (id, plan_path, plan_title, status, started_at, agent_pgid)
             VALUES ('old', '/p', 'P', 'interrupted', 'then', 11);
         INSERT INTO phase_agents (run_id, phase_id, pgid) VALUES ('old', '1', 4242);",
    )
    .expect("insert");
    drop(conn);
    let store = Store::open(dir.path()).expect("migrate");
    let run = recorded(&store, "old");
    assert_eq!(
        run.agent_groups,
        [AgentGroup::Unidentified(11), AgentGroup::Unidentified(4242)]
    );
    let leader = crate::process::ProcessIdentity {
        pid: 4242,
        start: 9,
    };
    store
        .set_agent_group("old", "1", Some(leader))
        .expect("record");
    let run = recorded(&store, "old");
    assert_eq!(run.agent_groups[1], AgentGroup::Identified(leader));
}

#[test]
fn a_running_run_whose_owner_died_reads_and_settles_as_interrupted() {
    let (_dir, store) = store();
    let live = store.create_run("/p", "P").expect("run");
    store.set_run_owner(&live, Owner::current()).expect("owner");
    let dead = store.create_run("/p", "P").expect("run");
    let mut child = std::process::Command::new("true").spawn().expect("spawn");
    let pid = child.id();
    let start = crate::process::start_time(pid).unwrap_or(1);
    child.wait().expect("wait");
    store
        .set_run_owner(&dead, Some(Owner { pid, start }))
        .expect("owner");
    let first = crate::process::ProcessIdentity {
        pid: 4242,
        start: 77,
    };
    let second = crate::process::ProcessIdentity {
        pid: 4343,
        start: 88,
    };
    store
        .set_agent_group(&dead, "1", Some(first))
        .expect("group");
    store
        .set_agent_group(&dead, "2", Some(second))
        .expect("group");

    assert_eq!(recorded(&store, &live).status, RunStatus::Running);
    assert_eq!(recorded(&store, &dead).status, RunStatus::Interrupted);
    let settled = store.settle_interrupted().expect("settle");
    assert_eq!(settled.len(), 1);
    assert_eq!(settled[0].id, dead);
    assert_eq!(
        settled[0].agent_groups,
        [
            AgentGroup::Identified(first),
            AgentGroup::Identified(second)
        ]
    );
    store.clear_agent_groups(&dead).expect("clear");
    assert!(recorded(&store, &dead).agent_groups.is_empty());
    let record = recorded(&store, &dead);
    assert_eq!(record.status, RunStatus::Interrupted);
    assert!(record.ended_at.is_some());
    assert!(store.settle_interrupted().expect("again").is_empty());
}

#[test]
fn phases_flags_and_pauses_round_trip() {
    let (_dir, store) = store();
    let run = store.create_run("/p", "P").expect("run");
    store
        .set_run_phases(&run, &["1".into(), "2a".into()])
        .expect("phases");
    let started_with = StartedWith {
        flags: vec!["--agent".into(), "sim".into()],
        env: [("DEBUSSY_MODEL".to_owned(), "m".to_owned())].into(),
    };
    store
        .set_run_started_with(&run, &started_with)
        .expect("flags");
    let pause = PauseRecord {
        base: Some("abc".into()),
        commit: None,
        files: vec!["a.txt".into(), "dir/b.txt".into()],
    };
    store.set_pause(&run, "2a", Some(&pause)).expect("pause");
    let other = PauseRecord {
        base: None,
        commit: Some("def".into()),
        files: Vec::new(),
    };
    store.set_pause(&run, "1", Some(&other)).expect("pause");
    store
        .update_run(&run, RunStatus::Paused, Some("2a"), None)
        .expect("pause run");
    let record = recorded(&store, &run);
    assert_eq!(record.phase_ids, ["1", "2a"]);
    assert_eq!(record.started_with, started_with);
    assert_eq!(
        record.pauses,
        [("1".to_owned(), other), ("2a".to_owned(), pause)].into()
    );
    store.set_pause(&run, "1", None).expect("forget one");
    assert_eq!(recorded(&store, &run).pauses.len(), 1);
    store.clear_pauses(&run).expect("forget");
    assert!(recorded(&store, &run).pauses.is_empty());
}

#[test]
fn the_database_and_its_directory_are_private() {
    use std::os::unix::fs::PermissionsExt;
    let (dir, store) = store();
    store.create_run("/p", "P").expect("write something");
    let mode = |p: &Path| std::fs::metadata(p).expect("meta").permissions().mode() & 0o777;
    assert_eq!(mode(&dir.path().join(".debussy")), PRIVATE_DIR_MODE);
    for name in ["state.db", "state.db-wal", "state.db-shm"] {
        let path = dir.path().join(".debussy").join(name);
        if path.exists() {
            assert_eq!(mode(&path), PRIVATE_FILE_MODE, "{name}");
        }
    }
    drop(store);
    let db = dir.path().join(STATE_DB);
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let _again = Store::open(dir.path()).expect("reopen");
    assert_eq!(
        mode(&db),
        PRIVATE_FILE_MODE,
        "an existing database is narrowed"
    );
}

#[test]
fn a_wait_for_a_usage_limit_shows_while_its_run_lives_and_ends_when_cleared() {
    let (_dir, store) = store();
    let live = store.create_run("/p", "P").expect("run");
    store.set_run_owner(&live, Owner::current()).expect("owner");
    let wait = crate::state::LimitWait {
        kind: crate::agent::FailureKind::UsageLimit,
        until: "2026-11-26T05:00:00Z".into(),
        said: Some("You've hit your 5-hour limit".into()),
    };
    store.set_limit_wait(&live, "2", Some(&wait)).expect("wait");
    // Recorded again, for the agent's API this time: the wait is replaced.
    let offline = crate::state::LimitWait {
        kind: crate::agent::FailureKind::Unreachable,
        ..wait.clone()
    };
    store
        .set_limit_wait(&live, "2", Some(&offline))
        .expect("again");
    let run = recorded(&store, &live);
    assert_eq!(run.limit_waits.get("2"), Some(&offline));
    store.set_limit_wait(&live, "2", None).expect("over");
    let run = recorded(&store, &live);
    assert!(run.limit_waits.is_empty());
    // A run that is not running waits for nothing, whatever a killed run left behind.
    store.set_limit_wait(&live, "3", Some(&wait)).expect("wait");
    store
        .update_run(&live, RunStatus::Paused, None, None)
        .expect("paused");
    let run = recorded(&store, &live);
    assert!(run.limit_waits.is_empty());
}

#[test]
fn a_database_another_process_keeps_locked_is_named_with_how_to_free_it() {
    let (_dir, store) = store();
    let holder = Connection::open(store.path()).expect("open");
    holder.execute_batch("BEGIN EXCLUSIVE").expect("lock");
    // No busy wait here: the error SQLite gives once debussy's wait is over.
    let waiting = Connection::open(store.path()).expect("open");
    waiting
        .busy_timeout(std::time::Duration::ZERO)
        .expect("no wait");
    let err = waiting
        .execute_batch("BEGIN IMMEDIATE")
        .map_err(store::sqlite_error(store.path(), "record the run"))
        .expect_err("locked");
    assert!(matches!(err, StateError::Locked { .. }), "{err:?}");
    assert!(
        err.to_string().contains("is locked by another process"),
        "{err}"
    );
    let help = miette::Diagnostic::help(&err)
        .map(|help| help.to_string())
        .unwrap_or_default();
    assert!(help.contains("fuser"), "{help}");
}

#[test]
fn a_database_nobody_may_write_is_read_as_it_stands() {
    let dir = tempfile::tempdir().expect("tempdir");
    // A path a URI must escape.
    let root = dir.path().join("it's 100% #1?");
    std::fs::create_dir(&root).expect("mkdir");
    let writer = Store::open(&root).expect("open");
    let first = writer.create_run("/p/MASTER.md", "Plan").expect("run");
    let path = root.join(STATE_DB);
    let beside = |suffix: &str| {
        let mut name = path.as_os_str().to_owned();
        name.push(suffix);
        std::path::PathBuf::from(name)
    };

    // While a writer keeps its `-wal` file, a reader sees what it wrote.
    let reader = Store::open_read_only(&path).expect("read-only");
    assert_eq!(recorded(&reader, &first).plan_title, "Plan");
    let second = writer.create_run("/p/MASTER.md", "Again").expect("run");
    assert_eq!(recorded(&reader, &second).plan_title, "Again");
    assert!(
        reader.create_run("/p/MASTER.md", "No").is_err(),
        "read-only"
    );
    drop((reader, writer));

    // With no writer, nothing is made beside it.
    assert!(!beside("-wal").exists() && !beside("-shm").exists());
    let reader = Store::open_read_only(&path).expect("read-only");
    assert_eq!(reader.runs(None, 10).expect("list").len(), 2);
    assert!(!beside("-wal").exists() && !beside("-shm").exists());
}

#[test]
fn a_database_nobody_may_write_from_an_older_debussy_says_so() {
    let (dir, conn) = database_at_version(1);
    drop(conn);
    let err = Store::open_read_only(&dir.path().join(STATE_DB)).expect_err("unmigrated");
    assert!(
        matches!(err, StateError::Unmigrated { found: 1, .. }),
        "{err}"
    );
}

#[test]
fn only_errors_of_writing_let_a_database_be_read_read_only() {
    let unwritable = StateError::CreateDir {
        path: "/ro/.debussy".into(),
        source: std::io::Error::from(std::io::ErrorKind::ReadOnlyFilesystem),
    };
    assert!(unwritable.is_unwritable());
    let read_only_file = StateError::Unopenable {
        path: "/p/.debussy/state.db".into(),
        source: std::io::Error::from(std::io::ErrorKind::PermissionDenied),
    };
    assert!(read_only_file.is_unwritable());
    let missing = StateError::CreateDir {
        path: "/gone/.debussy".into(),
        source: std::io::Error::from(std::io::ErrorKind::NotFound),
    };
    assert!(!missing.is_unwritable());
    let too_new = StateError::TooNew {
        path: "/p/.debussy/state.db".into(),
        found: 99,
        known: 1,
    };
    assert!(!too_new.is_unwritable());
}
