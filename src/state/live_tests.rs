use super::*;
use crate::state::{ExecutionStatus, Owner, RestartRecord, RunStatus};

fn store() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path()).expect("open");
    (dir, store)
}

/// A run whose owner process has died, as a SIGKILLed debussy leaves it.
fn dead_run(store: &Store) -> String {
    let run = store.create_run("/p", "P").expect("run");
    let mut child = std::process::Command::new("true").spawn().expect("spawn");
    let pid = child.id();
    let start = crate::process::start_time(pid).unwrap_or(1);
    child.wait().expect("wait");
    store
        .set_run_owner(&run, Some(Owner { pid, start }))
        .expect("owner");
    run
}

fn live(execution_id: i64, session_index: u32) -> LiveSession {
    LiveSession {
        phase_id: "1".into(),
        execution_id,
        session_index,
        agent: "sim".into(),
        model: "claude-sim".into(),
        log_path: "/p/.debussy/runs/r/1/attempt-1-session-1.jsonl".into(),
        started_at: now(),
        billed: Billed::default(),
        cost_usd: 0.0,
        cost_estimated: false,
        context_percent: 0.0,
        tool_calls: 0,
    }
}

fn spent(input: u64, output: u64, cost_usd: f64) -> LiveFigures {
    LiveFigures {
        billed: Billed {
            input,
            cache_write: 0,
            cache_read: 0,
            output,
        },
        cost_usd,
        cost_estimated: false,
        context_percent: 12.0,
        tool_calls: 3,
    }
}

/// A dead run's attempt at phase 1, its first session live: the run and the attempt.
fn running_attempt(store: &Store) -> (String, i64) {
    let run = dead_run(store);
    let execution = store
        .start_execution(&run, "1", 1, false, None)
        .expect("execution");
    store
        .start_live_session(&run, &live(execution, 0))
        .expect("live");
    (run, execution)
}

#[test]
fn a_killed_runs_attempt_keeps_what_its_running_session_spent_once_settled() {
    let (_dir, store) = store();
    let (run, execution) = running_attempt(&store);
    let figures = spent(20_000, 84, 0.058);
    store
        .update_live_session(&run, "1", &figures)
        .expect("update");
    let before = store.totals(&run, None).expect("totals");

    let settled = store.settle_interrupted().expect("settle");
    assert_eq!(settled.len(), 1);

    let executions = store.executions(&run).expect("executions");
    assert_eq!(executions[0].status, ExecutionStatus::Interrupted);
    assert_eq!(executions[0].billed, figures.billed, "{executions:#?}");
    assert!(
        (executions[0].cost_usd - 0.058).abs() < 1e-9,
        "{executions:#?}"
    );
    // The session it left is recorded as interrupted, and counted once.
    let sessions = store.sessions(execution).expect("sessions");
    assert_eq!(sessions.len(), 1, "{sessions:#?}");
    assert_eq!(sessions[0].outcome, "interrupted");
    assert_eq!(sessions[0].billed, figures.billed);
    assert!(store.live_sessions(&run).expect("live").is_empty());
    assert_eq!(store.totals(&run, None).expect("totals"), before);
    assert_eq!(recorded_status(&store, &run), RunStatus::Interrupted);
}

#[test]
fn a_killed_runs_attempt_sums_its_recorded_sessions_and_the_one_left_running_and_its_restarts() {
    let (_dir, store) = store();
    let (run, execution) = running_attempt(&store);
    store
        .update_live_session(&run, "1", &spent(1_000, 10, 0.01))
        .expect("update");
    // The first session ended (a context restart) and the second was killed.
    store.end_live_session(&run, "1").expect("end");
    let mut first = interrupted(&live(execution, 0));
    first.outcome = "context_limit".into();
    first.billed = spent(1_000, 10, 0.01).billed;
    first.cost_usd = 0.01;
    store.record_session(execution, &first).expect("record");
    let restart = RestartRecord {
        restart_number: 1,
        reason: "context".into(),
        context_percent: Some(85.0),
        commit_id: None,
        at: now(),
    };
    store.record_restart(execution, &restart).expect("restart");
    store
        .start_live_session(&run, &live(execution, 1))
        .expect("live");
    store
        .update_live_session(&run, "1", &spent(2_000, 20, 0.02))
        .expect("update");

    store.settle_interrupted().expect("settle");

    let executions = store.executions(&run).expect("executions");
    assert_eq!(executions[0].billed.input, 3_000, "{executions:#?}");
    assert_eq!(executions[0].billed.output, 30, "{executions:#?}");
    assert!(
        (executions[0].cost_usd - 0.03).abs() < 1e-9,
        "{executions:#?}"
    );
    assert_eq!(store.sessions(execution).expect("sessions").len(), 2);
    assert_eq!(executions[0].restarts, 1, "{executions:#?}");
}

fn recorded_status(store: &Store, run: &str) -> RunStatus {
    store.run(run).expect("read").expect("recorded").status
}

#[test]
fn a_running_sessions_figures_wait_for_another_process_briefly_and_later_writes_as_long_as_ever() {
    let (_dir, store) = store();
    let (run, execution) = running_attempt(&store);
    store
        .start_live_session(&run, &live(execution, 0))
        .expect("start");
    let holder = rusqlite::Connection::open(store.path()).expect("open");
    holder.execute_batch("BEGIN IMMEDIATE").expect("lock");
    let asked = std::time::Instant::now();
    let err = store
        .update_live_session(&run, "1", &spent(1_000, 10, 0.01))
        .expect_err("locked");
    assert!(asked.elapsed() < std::time::Duration::from_secs(2), "{err}");
    assert!(
        err.to_string().contains("past the 100-millisecond wait"),
        "{err}"
    );
    holder.execute_batch("ROLLBACK").expect("let go");
    // The next figures go in, and every other write waits as long as it did.
    store
        .update_live_session(&run, "1", &spent(2_000, 20, 0.02))
        .expect("written once free");
    let timeout: i64 = store
        .conn
        .query_row("PRAGMA busy_timeout", [], |row| row.get(0))
        .expect("busy timeout");
    assert_eq!(timeout, 10_000);
}
