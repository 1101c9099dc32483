//! `debussy done`, `progress`, `status` and `history` against a real state database.

use assert_cmd::Command;
use debussy::run_env;
use debussy::state::{ExecutionEnd, ExecutionStatus, RunStatus, Store};
use predicates::prelude::PredicateBooleanExt;
use predicates::str::contains;

struct Project {
    dir: tempfile::TempDir,
}

impl Project {
    fn new() -> Project {
        let dir = crate::support::project::dir_with_state();
        Project { dir }
    }

    fn debussy(&self) -> Command {
        let mut cmd = Command::new(crate::support::DEBUSSY);
        cmd.current_dir(self.dir.path())
            .env("HOME", self.dir.path())
            .env("XDG_CONFIG_HOME", self.dir.path().join("xdg"))
            .env_remove(run_env::RUN_ID)
            .env_remove(run_env::PHASE_ID)
            .env_remove(run_env::PROJECT_ROOT);
        cmd
    }

    fn agent(&self, run_id: &str) -> Command {
        let mut cmd = self.debussy();
        cmd.env(run_env::RUN_ID, run_id)
            .env(run_env::PROJECT_ROOT, self.dir.path());
        cmd
    }

    fn store(&self) -> Store {
        Store::open(self.dir.path()).expect("store")
    }
}

#[test]
fn done_records_a_completion_for_the_run_in_the_environment() {
    let project = Project::new();
    let run = project
        .store()
        .create_run("/plan/MASTER_PLAN.md", "Plan")
        .expect("run");
    let other = project
        .store()
        .create_run("/plan/MASTER_PLAN.md", "Plan")
        .expect("run");

    project
        .agent(&run)
        .args([
            "done",
            "--phase",
            "2",
            "--status",
            "blocked",
            "--reason",
            "needs a key",
        ])
        .assert()
        .success()
        .stdout(contains("phase 2 blocked"));
    project
        .agent(&other)
        .args(["done", "1", "failed"])
        .assert()
        .success();

    let store = project.store();
    let signal = store
        .completion(&run, "2")
        .expect("read")
        .expect("recorded");
    assert_eq!(signal.status.as_str(), "blocked");
    assert_eq!(signal.reason.as_deref(), Some("needs a key"));
    assert!(
        store.completion(&run, "1").expect("read").is_none(),
        "runs never mix"
    );
    assert_eq!(
        store
            .completion(&other, "1")
            .expect("read")
            .expect("recorded")
            .status
            .as_str(),
        "failed"
    );
}

#[test]
fn done_defaults_to_completed_and_the_phase_from_the_environment() {
    let project = Project::new();
    let run = project.store().create_run("/p.md", "Plan").expect("run");
    project
        .agent(&run)
        .env(run_env::PHASE_ID, "3")
        .arg("done")
        .assert()
        .success();
    let signal = project
        .store()
        .completion(&run, "3")
        .expect("read")
        .expect("recorded");
    assert_eq!(signal.status.as_str(), "completed");
}

#[test]
fn done_outside_a_run_says_why_and_exits_2() {
    let project = Project::new();
    project
        .debussy()
        .args(["done", "--phase", "1"])
        .assert()
        .code(2)
        .stderr(contains("DEBUSSY_RUN_ID is not set"));
    project
        .agent("no-such-run")
        .args(["done", "--phase", "1"])
        .assert()
        .code(2)
        .stderr(contains("no debussy state"));
    project.store();
    project
        .agent("no-such-run")
        .args(["done", "--phase", "1"])
        .assert()
        .code(2)
        .stderr(contains("is not recorded"));
}

#[test]
fn progress_appends_steps() {
    let project = Project::new();
    let run = project.store().create_run("/p.md", "Plan").expect("run");
    project
        .agent(&run)
        .args(["progress", "--phase", "1", "wrote", "the", "parser"])
        .assert()
        .success();
    project
        .agent(&run)
        .args(["progress", "--phase", "1", "added tests"])
        .assert()
        .success();
    let steps: Vec<String> = project
        .store()
        .progress(&run, "1")
        .expect("read")
        .into_iter()
        .map(|p| p.step)
        .collect();
    assert_eq!(steps, ["wrote the parser", "added tests"]);

    let long = format!("began {} ended", "x".repeat(100_000));
    let said = project
        .agent(&run)
        .args(["progress", "--phase", "1", &long])
        .assert()
        .success();
    let echo = String::from_utf8_lossy(&said.get_output().stdout).into_owned();
    assert!(echo.contains("began") && echo.contains("ended"), "{echo}");
    assert!(
        echo.len() < 1_000,
        "the agent reads {} bytes back",
        echo.len()
    );
    let last = project.store().progress(&run, "1").expect("read");
    assert_eq!(
        last.last().map(|p| p.step.len()),
        Some(long.len()),
        "kept whole"
    );
}

#[test]
fn status_and_history_report_recorded_runs() {
    let project = Project::new();
    project
        .debussy()
        .arg("history")
        .assert()
        .success()
        .stdout(contains("no runs recorded"));
    project
        .debussy()
        .arg("status")
        .assert()
        .code(1)
        .stderr(contains("no runs recorded"));

    let store = project.store();
    let run = store
        .create_run("/p/MASTER_PLAN.md", "Greeting Demo")
        .expect("run");
    let execution = store
        .start_execution(&run, "1", 1, false, None)
        .expect("exec");
    store
        .finish_execution(
            execution,
            &ExecutionEnd {
                status: ExecutionStatus::Completed,
                restarts: 1,
                outcome_code: Some(0),
                billed: debussy::context::cost::Billed {
                    input: 910,
                    cache_write: 4_000,
                    cache_read: 20_000,
                    output: 0,
                },
                cost_usd: 0.12,
                cost_estimated: false,
                commit_id: None,
                error: None,
            },
        )
        .expect("finish");
    store
        .update_run(&run, RunStatus::Completed, Some("1"), None)
        .expect("update");

    project
        .debussy()
        .arg("status")
        .assert()
        .success()
        .stdout(contains("Greeting Demo"))
        .stdout(contains("completed"))
        .stdout(contains("24,910"));
    let json = project
        .debussy()
        .args(["status", "--run", &run[..8], "--format", "json"])
        .assert()
        .success();
    let value: serde_json::Value = serde_json::from_slice(&json.get_output().stdout).expect("json");
    assert_eq!(value["run"]["id"], run.as_str());
    assert_eq!(value["executions"][0]["restarts"], 1);
    assert_eq!(value["executions"][0]["status"], "completed");

    project
        .debussy()
        .args(["status", "--run", "nope"])
        .assert()
        .code(2)
        .stderr(contains("no run matches"));
    project
        .debussy()
        .arg("history")
        .assert()
        .success()
        .stdout(contains(&run[..8]));
    let json = project
        .debussy()
        .args(["history", "--format", "json"])
        .assert()
        .success();
    let value: serde_json::Value = serde_json::from_slice(&json.get_output().stdout).expect("json");
    assert_eq!(value.as_array().map(Vec::len), Some(1));
}

#[test]
fn history_of_a_plan_titled_in_70_000_characters_cuts_the_title() {
    let project = Project::new();
    let title = format!("A{}Z", "t".repeat(70_000));
    let store = project.store();
    let run = store.create_run("/p/MASTER_PLAN.md", &title).expect("run");
    store
        .update_run(&run, RunStatus::Completed, Some("1"), None)
        .expect("update");
    project
        .debussy()
        .args(["history", "--limit", "0"])
        .assert()
        .code(2)
        .stderr(contains("0 is not in 1.."));
    let output = project.debussy().arg("history").output().expect("history");
    let said = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let row = said.lines().nth(1).expect("a row");
    assert!(row.contains("Attt") && row.contains("ttZ"), "{row}");
    assert!(row.chars().count() < 200, "{row}");
}

#[test]
fn concurrent_debussy_processes_lose_no_writes() {
    let project = Project::new();
    let run = project.store().create_run("/p.md", "Plan").expect("run");
    let writers: Vec<std::process::Child> = (0..6)
        .map(|writer| {
            let script = (0..10)
                .map(|step| {
                    format!(
                        "\"$DEBUSSY\" progress --phase 1 step-{writer}-{step} >/dev/null || exit 1"
                    )
                })
                .collect::<Vec<_>>()
                .join("\n");
            std::process::Command::new("sh")
                .arg("-c")
                .arg(script)
                .current_dir(project.dir.path())
                .env("DEBUSSY", crate::support::DEBUSSY)
                .env("HOME", project.dir.path())
                .env(run_env::RUN_ID, &run)
                .env(run_env::PROJECT_ROOT, project.dir.path())
                .spawn()
                .expect("spawn")
        })
        .collect();
    for mut writer in writers {
        assert!(writer.wait().expect("wait").success(), "a writer failed");
    }
    assert_eq!(project.store().progress(&run, "1").expect("read").len(), 60);
}

#[test]
fn done_and_progress_for_a_phase_not_in_the_run_name_the_runs_phases_and_exit_2() {
    let project = Project::new();
    let store = project.store();
    let run = store
        .create_run("/plan/MASTER_PLAN.md", "Plan")
        .expect("run");
    store
        .set_run_phases(&run, &["1".to_owned(), "2".to_owned()])
        .expect("phases");

    project
        .agent(&run)
        .args(["done", "--phase", "99"])
        .assert()
        .code(2)
        .stderr(contains("phase 99").and(contains("1, 2")));
    project
        .agent(&run)
        .args(["progress", "--phase", "99", "did", "things"])
        .assert()
        .code(2)
        .stderr(contains("phase 99").and(contains("1, 2")));
    assert!(
        project
            .store()
            .completion(&run, "99")
            .expect("read")
            .is_none(),
        "nothing is recorded for a phase the run does not have"
    );

    // "Phase 2" and "2" name the same phase.
    project
        .agent(&run)
        .args(["done", "--phase", "Phase 2"])
        .assert()
        .success();
    project
        .agent(&run)
        .args(["progress", "--phase", "1", "ok"])
        .assert()
        .success();
}
