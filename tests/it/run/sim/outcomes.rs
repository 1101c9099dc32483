//! How phases end in a run: gates and remediation, unmet dependencies, an agent
//! reporting blocked, a failure recorded where it happened, skips, and `plan init`.

use std::time::Duration;

use crate::support::project::{Project, events_named, sim_run_args};
use serde_json::Value;

use super::kit::{summary, wrong_first};
use crate::support::scenario::{Scenario, Script, Status, Turn};

#[test]
fn a_failing_gate_is_fixed_by_a_remediation_attempt() {
    let project = Project::new();
    let scenario = Scenario::new().script(wrong_first()).script(
        Script::phase("1")
            .attempt(2)
            .expect_prompt("needs these fixes")
            .expect_prompt("gate `check` failed")
            .turns([Turn::write(10, "out.txt", "right"), Turn::done()]),
    );
    project.plan(&[("1", "N/A", "grep -q right out.txt")], &scenario);
    let (code, events) = project.run(&[]);
    assert_eq!(code, 0, "events: {events:#?}");
    let gates = events_named(&events, "gate_finished");
    assert_eq!(
        gates
            .iter()
            .map(|g| g["passed"].as_bool())
            .collect::<Vec<_>>(),
        [Some(false), Some(true)]
    );
    let started = events_named(&events, "phase_started");
    assert_eq!(started[1]["kind"], "remediation");
    let sessions = events_named(&events, "session_started");
    assert!(sessions[0].get("no_restart").is_none(), "{:#}", sessions[0]);
    assert_eq!(
        sessions[1]["no_restart"], "fix_session",
        "{:#}",
        sessions[1]
    );
    let status = project.status_json();
    assert_eq!(status["executions"][0]["status"], "failed");
    assert_eq!(status["executions"][0]["gates"][0]["passed"], false);
    assert_eq!(status["executions"][1]["status"], "completed");
    assert_eq!(status["executions"][1]["remediation"], true);
}

#[test]
fn an_unmet_dependency_blocks_the_phase_and_fails_the_run() {
    let project = Project::new();
    let scenario = Scenario::playing([Turn::notes("1"), Turn::done()]);
    project.plan(&[("1", "Phase 7", "true")], &scenario);
    let (code, events) = project.run(&[]);
    assert_eq!(code, 1);
    let finished = events_named(&events, "phase_finished");
    assert_eq!(finished[0]["status"], "blocked");
    assert!(
        finished[0]["error"]
            .as_str()
            .is_some_and(|e| e.contains("phase 7 is not in the plan"))
    );
    assert!(
        events_named(&events, "session_started").is_empty(),
        "a blocked phase runs no agent"
    );
}

#[test]
fn an_agent_reporting_blocked_blocks_the_phase() {
    let project = Project::new();
    let scenario = Scenario::playing([Turn::say("stuck").done_as(Status::Blocked)]);
    project.plan(&[("1", "N/A", "true"), ("2", "Phase 1", "true")], &scenario);
    let (code, events) = project.run(&[]);
    assert_eq!(code, 1);
    let phases = &summary(&events)["phases"];
    assert_eq!(phases[0]["status"], "blocked");
    assert_eq!(
        phases[1]["status"], "not run",
        "its dependent never ran: it is not run, not blocked (which needs a human)"
    );
}

#[test]
fn a_run_failing_in_phase_1_records_phase_1() {
    let project = Project::new();
    let failing =
        Scenario::new().script(Script::phase("1").turn(Turn::say("no").done_as(Status::Failed)));
    project.plan(
        &[
            ("1", "N/A", "true"),
            ("2", "Phase 1", "true"),
            ("3", "N/A", "true"),
        ],
        &failing,
    );
    let (code, events) = project.run(&["--max-retries", "0"]);
    assert_eq!(code, 1, "{events:#?}");
    let status = project.status_json();
    assert_eq!(status["run"]["current_phase"], "1", "{status:#}");
    let history = project.command(&["history"]).output().expect("history");
    let text = String::from_utf8_lossy(&history.stdout);
    assert!(
        !text.contains("phase 3") && !text.contains("phase 2"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn skipping_a_phase_skips_the_phases_that_depend_on_it() {
    use debussy::events::{Event, RunRequest};
    let project = Project::new();
    let scenario = Scenario::new()
        .script(Script::phase("2").turn(Turn::sleep(60_000)))
        .script(Script::any().turns([Turn::notes("${PHASE}"), Turn::done()]));
    project.plan(
        &[
            ("1", "N/A", "true"),
            ("2", "Phase 1", "true"),
            ("3", "Phase 2", "true"),
            ("4", "Phase 1", "true"),
        ],
        &scenario,
    );
    let overrides: debussy::config::Overrides = [
        (
            "agent.kind".to_owned(),
            debussy::config::FlagValue::Text("sim".into()),
        ),
        (
            "agent.command".to_owned(),
            debussy::config::FlagValue::Text(crate::support::DEBUSSY.into()),
        ),
        (
            "restart_delay".to_owned(),
            debussy::config::FlagValue::Whole(0),
        ),
    ]
    .into();
    let loaded = debussy::config::load(&debussy::config::LoadOptions {
        cwd: project.root().to_path_buf(),
        config_home: None,
        config_file: None,
        env: Default::default(),
        overrides: Some(&overrides),
    })
    .expect("config");
    let plan = debussy::plan::load(&project.root().join("plan/MASTER_PLAN.md")).expect("plan");
    let backend = debussy::agent::backend(
        &debussy::session::default_backend_settings(&loaded.config),
        debussy::agent::BackendContext {
            project_root: project.root(),
            plan_path: Some(&plan.master),
        },
    )
    .expect("backend");
    let (events, mut received) = debussy::events::channel();
    let (requests, request_receiver) = tokio::sync::mpsc::unbounded_channel();
    let run = debussy::orchestrator::run(debussy::orchestrator::RunSetup {
        loaded,
        plan,
        backend: std::sync::Arc::from(backend),
        options: debussy::orchestrator::RunOptions::default(),
        events,
        requests: request_receiver,
        lock: debussy::orchestrator::lock::take(project.root()).expect("the run lock"),
    });
    let watch = async {
        let mut skipped = Vec::new();
        let mut sessions = Vec::new();
        // Ends when the run drops its sender.
        while let Some(event) = received.recv().await {
            match event {
                // The HUD's `s` while phase 2's agent works.
                Event::SessionStarted { phase_id, .. } => {
                    if phase_id == "2" {
                        requests.send(RunRequest::SkipPhase).expect("request");
                    }
                    sessions.push(phase_id);
                }
                Event::PhaseSkipped { phase_id, reason } => skipped.push((phase_id, reason)),
                _ => {}
            }
        }
        (skipped, sessions)
    };
    let (summary, (skipped, sessions)) =
        tokio::time::timeout(Duration::from_secs(90), async { tokio::join!(run, watch) })
            .await
            .expect("the run ends");
    let summary = summary.expect("run");
    assert_eq!(sessions, ["1", "2", "4"], "phase 3 must not run");
    assert!(
        skipped
            .iter()
            .any(|(id, reason)| id == "3" && reason.contains("phase 2")),
        "{skipped:?}"
    );
    let statuses: Vec<(&str, &str)> = summary
        .phases
        .iter()
        .map(|p| (p.id.as_str(), p.status.as_str()))
        .collect();
    assert_eq!(
        statuses,
        [
            ("1", "completed"),
            ("2", "skipped"),
            ("3", "skipped"),
            ("4", "completed")
        ]
    );
}

#[test]
fn the_plan_init_writes_runs_with_the_simulated_agent() {
    let project = Project::new();
    let init = project.command(&["init"]).output().expect("init");
    assert!(
        init.status.success(),
        "{}",
        String::from_utf8_lossy(&init.stderr)
    );
    for file in [
        "plans/example/sim-scenario.yaml",
        ".debussy/.gitignore",
        ".debussy/config.yaml",
    ] {
        assert!(
            project.root().join(file).exists(),
            "init did not write {file}"
        );
    }
    project.commit_all("debussy init");
    let output = project
        .command(&sim_run_args(
            "plans/example",
            &["--restart-delay", "0", "--output-format", "json"],
        ))
        .output()
        .expect("run");
    let events: Vec<Value> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).expect("json"))
        .collect();
    assert_eq!(output.status.code(), Some(0), "{events:#?}");
    assert_eq!(
        events_named(&events, "restart").len(),
        1,
        "the example shows a context restart"
    );
    assert_eq!(summary(&events)["status"], "completed");
    assert!(
        project.root().join("demo/greeting.txt").exists()
            && project.root().join("demo/farewell.txt").exists()
    );
}

#[test]
fn a_warning_is_said_once_as_the_runs_own_event_not_again_in_the_log() {
    let project = Project::new();
    let scenario = Scenario::playing([
        Turn::write(10, "plan/notes/phase-1.md", "Did it.\n"),
        Turn::done(),
    ]);
    project.plan(&[("1", "N/A", "true")], &scenario);
    let output =
        crate::support::project::output_within(project.run_command(&[]), Duration::from_secs(60));
    let (stdout, stderr) = (
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
    );
    assert_eq!(output.status.code(), Some(0), "{stdout}\n{stderr}");
    let events: Vec<Value> = stdout
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect();
    let warnings: Vec<&str> = events_named(&events, "warning")
        .iter()
        .filter_map(|warning| warning["message"].as_str())
        .collect();
    assert!(
        warnings
            .iter()
            .any(|message| message.contains("accepted despite")),
        "{warnings:?}"
    );
    assert!(
        !stderr.contains("accepted despite"),
        "the warning was logged over the run's own output too: {stderr}"
    );
}
