//! The real Claude Code CLI against the scripted model server, driven by `session::run`.
//! Each test saves the session log and the requests the server saw under
//! `target/tmp/artifacts/session/<test>/`.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use debussy::agent::claude::ClaudeBackend;
use debussy::agent::{BackendSettings, FailureKind};
use debussy::checkpoint::{Todo, TodoStatus};
use debussy::config::Config;
use debussy::context::StopReason;
use debussy::process::ExitStatus;
use debussy::session::{
    CONTEXT_LIMIT_MARKER, LimitReason, SessionControl, SessionEvent, SessionOutcome, SessionSpec,
    Thread,
};
use serde_json::json;

use super::common::{Finished, SETTLE, STOP_LATENCY_LIMIT, log_path, run, run_env, run_with};
use crate::support::artifacts;
use crate::support::claude::{self, Harness, Sandbox};
use crate::support::model_server::{Refusal, Scenario, Turn, Usage, unreachable_url};
use crate::support::processes::{left_after, processes_in};

const MODEL: &str = claude::DEFAULT_MODEL;

/// What the session tests do with the real CLI.
impl Harness {
    /// A session running the pinned CLI the way the harness does (`acceptEdits`, the
    /// allowed tools, the sandbox's complete environment), threshold 80%.
    fn spec(&self) -> SessionSpec {
        let config = Config {
            model: MODEL.into(),
            context_threshold: debussy::context::ContextLimit::At(80.0),
            timeout: debussy::config::Seconds(60),
            ..Config::default()
        };
        let agent = BackendSettings {
            command: Some(self.cli.path().to_string_lossy().into_owned()),
            args: vec![
                "--permission-mode".into(),
                "acceptEdits".into(),
                "--allowedTools".into(),
                claude::DEFAULT_ALLOWED_TOOLS.join(","),
            ],
            ..debussy::session::default_backend_settings(&config)
        };
        let mut spec = SessionSpec::from_config(
            &config,
            &agent,
            Arc::new(ClaudeBackend::new(&agent)),
            "Do the scripted work.",
            self.sandbox.cwd(),
            log_path(self.sandbox.cwd()),
        )
        .expect("spec")
        .with_env(self.sandbox.envs(&self.server))
        .with_env(run_env(self.sandbox.cwd()).vars());
        spec.inherit_env = false;
        spec
    }

    /// Save the session log and the server's requests as artifacts.
    fn save(&self, name: &str, finished: &Finished) {
        let dir = artifacts::dir(name).expect("artifact dir");
        self.server
            .save_requests(&dir.join("requests.jsonl"))
            .expect("save requests");
        let _ = std::fs::copy(&finished.report.log_path, dir.join("session.jsonl"));
        eprintln!(
            "{name}: {} in {:.2?}; artifacts in {}",
            finished.report.outcome,
            finished.report.duration,
            dir.display()
        );
    }

    /// Nothing of this sandbox's Claude Code (or its tools) is still running.
    fn assert_nothing_left(&self) {
        let left = left_after(SETTLE, || processes_in(self.sandbox.cwd()));
        assert!(
            left.is_empty(),
            "processes survived in the sandbox: {left:?}"
        );
    }
}

#[tokio::test]
#[ignore = "needs the pinned Claude Code CLI (scripts/test-tools)"]
async fn claude_a_session_completes_and_reports_what_it_did() {
    let sandbox = Sandbox::new().expect("sandbox");
    let target = sandbox.cwd().join("notes.md");
    let scenario = Scenario::new()
        .turn(
            Turn::new()
                .text("Planning.")
                .tool_use(
                    "TaskCreate",
                    json!({"subject": "Write the notes", "description": "notes.md"}),
                )
                .tool_use(
                    "TaskCreate",
                    json!({"subject": "Review them", "description": "read back"}),
                )
                .usage(Usage::new(10, 12_000, 1_000, 30)),
        )
        .turn(
            Turn::new()
                .tool_use(
                    "TaskUpdate",
                    json!({"taskId": "1", "status": "in_progress"}),
                )
                .tool_use(
                    "Write",
                    json!({"file_path": target, "content": "# Notes\n"}),
                )
                .usage(Usage::new(12, 14_000, 800, 30)),
        )
        .turn(
            Turn::new()
                .tool_use("TaskUpdate", json!({"taskId": "1", "status": "completed"}))
                .usage(Usage::new(8, 15_500, 400, 20)),
        )
        .turn(Turn::reply("All done.").usage(Usage::new(5, 16_000, 200, 7)));
    let harness = Harness::with_sandbox(sandbox, scenario);
    let finished = run(harness.spec(), SessionControl::new()).await;
    harness.save("claude_completes", &finished);
    let report = &finished.report;

    assert!(report.outcome.is_success(), "{:?}", report.outcome);
    assert_eq!(report.code(), 0);
    assert_eq!(report.last_message.as_deref(), Some("All done."));
    assert_eq!(report.model.as_deref(), Some(MODEL));
    let session_ids = harness.server.session_ids();
    assert_eq!(
        report.agent_session_id.as_deref(),
        session_ids.first().map(String::as_str)
    );
    let window = report.reported_window.as_ref().expect("reported window");
    assert_eq!((window.model.as_str(), window.tokens), (MODEL, 200_000));
    assert_eq!(report.snapshot.tokens, 16_205);
    assert_eq!(report.snapshot.turns, 4);
    assert_eq!(report.snapshot.tool_calls, 5);
    assert!(
        report.files_written.contains(&target),
        "{:?}",
        report.files_written
    );
    assert_eq!(
        report.todos,
        [
            Todo {
                content: "Write the notes".into(),
                status: TodoStatus::Completed
            },
            Todo {
                content: "Review them".into(),
                status: TodoStatus::Pending
            },
        ]
    );
    let lines = finished.log_json(false);
    assert_eq!(
        lines.last().map(|line| line["type"].clone()),
        Some(json!("result"))
    );
    assert_eq!(harness.server.main_requests().len(), 4);
    harness.assert_nothing_left();
}

#[tokio::test]
#[ignore = "needs the pinned Claude Code CLI (scripts/test-tools)"]
async fn claude_crossing_the_threshold_on_turn_three_stops_before_a_fourth_request() {
    let bash =
        |n: u32| json!({"command": format!("echo step {n}"), "description": format!("Step {n}")});
    let scenario = Scenario::new()
        .turn(
            Turn::new()
                .tool_use("Bash", bash(1))
                .usage(Usage::new(10, 50_000, 2_000, 30)),
        )
        .turn(
            Turn::new()
                .tool_use("Bash", bash(2))
                .usage(Usage::new(10, 100_000, 2_000, 30)),
        )
        // 170,010 of 200,000 = 85%: past 80%. Held open, so Claude Code cannot send a
        // fourth request unless the session fails to stop it.
        .turn(
            Turn::new()
                .text("Third step.")
                .tool_use("Bash", bash(3))
                .usage(Usage::new(10, 168_000, 2_000, 30))
                .hold(),
        )
        .turn(Turn::reply("FOURTH-TURN"));
    let harness = Harness::new(scenario);
    let finished = run(harness.spec(), SessionControl::new()).await;
    harness.save("claude_threshold_turn_three", &finished);
    let report = &finished.report;

    assert_eq!(report.code(), -2, "{:?}", report.outcome);
    let SessionOutcome::ContextLimit {
        reason: LimitReason::Meter(StopReason::ContextThreshold { tokens, .. }),
        snapshot,
    } = &report.outcome
    else {
        panic!("not a threshold stop: {:?}", report.outcome)
    };
    assert_eq!(*tokens, 170_010);
    assert_eq!(snapshot.turns, 3);
    assert_eq!(harness.server.main_requests().len(), 3);
    let stop = report.stop.as_ref().expect("a stop");
    eprintln!(
        "claude: threshold line → agent reaped in {:?} ({:?})",
        stop.latency, stop.actions
    );
    assert!(
        stop.latency < STOP_LATENCY_LIMIT,
        "stop took {:?} ({:?})",
        stop.latency,
        stop.actions
    );
    let text = finished.log_text();
    assert!(text.starts_with(&format!("{CONTEXT_LIMIT_MARKER}\n")));
    assert!(!text.contains("FOURTH-TURN"));
    finished.log_json(true);
    harness.assert_nothing_left();
}

#[tokio::test]
#[ignore = "needs the pinned Claude Code CLI (scripts/test-tools)"]
async fn claude_subagent_traffic_past_the_threshold_does_not_stop_the_session() {
    let harness = Harness::new(Scenario::delegating_to_a_subagent(
        [
            Usage::new(10, 20_000, 1_000, 30),
            Usage::new(12, 22_000, 800, 20),
        ],
        [
            Usage::new(5, 170_000, 10_000, 40),
            Usage::new(7, 185_000, 5_000, 50),
        ],
    ));
    let finished = run(harness.spec(), SessionControl::new()).await;
    harness.save("claude_subagent_no_stop", &finished);
    let report = &finished.report;

    assert!(report.outcome.is_success(), "{:?}", report.outcome);
    assert!(report.stop.is_none() && report.snapshot.stop.is_none());
    assert_eq!(report.snapshot.tokens, 22_812);
    assert_eq!(
        report.invoked_agents,
        BTreeSet::from(["general-purpose".to_owned()])
    );
    assert_eq!(
        report.last_message.as_deref(),
        Some("The subagent finished.")
    );
    let sub_lines: Vec<_> = finished
        .activity()
        .into_iter()
        .filter_map(|(thread, kind)| match thread {
            Thread::Subagent(sub) => Some((sub, kind)),
            Thread::Main => None,
        })
        .collect();
    assert!(!sub_lines.is_empty());
    assert!(
        sub_lines
            .iter()
            .all(|(sub, _)| sub.parent_tool_use_id == "toolu_task_1"
                && sub.subagent_type.as_deref() == Some("general-purpose"))
    );
    assert_eq!(harness.server.subagent_requests().len(), 2);
    harness.assert_nothing_left();
}

#[tokio::test]
#[ignore = "needs the pinned Claude Code CLI (scripts/test-tools)"]
async fn claude_a_compact_boundary_stops_the_session() {
    let scenario = Scenario::new()
        .turn(Turn::past_the_auto_compact_threshold())
        .turn(Turn::reply("Continuing after compaction.").stall())
        .compact_summary("SUMMARY-MARKER-42: one step was asked for.");
    let harness = Harness::new(scenario);
    let mut spec = harness.spec();
    // Only the compaction may stop this session: the percent check is off.
    spec.meter.threshold = debussy::context::ContextLimit::Off;
    spec.env
        .push(("CLAUDE_CODE_AUTO_COMPACT_WINDOW".into(), "200000".into()));
    let finished = run(spec, SessionControl::new()).await;
    harness.save("claude_compact_boundary", &finished);
    let (trigger, pre_tokens) = finished.compaction();
    assert_eq!(trigger.as_deref(), Some("auto"));
    assert!(pre_tokens.unwrap_or_default() >= 190_000, "{pre_tokens:?}");
    let lines = finished.log_json(true);
    assert!(
        lines
            .iter()
            .any(|line| line["type"] == "system" && line["subtype"] == "compact_boundary")
    );
    harness.assert_nothing_left();
}

#[tokio::test]
#[ignore = "needs the pinned Claude Code CLI (scripts/test-tools)"]
async fn claude_a_session_over_its_timeout_is_stopped() {
    let harness = Harness::new(Scenario::new().turn(Turn::reply("never sent").stall()));
    let mut spec = harness.spec();
    spec.timeout = Some(Duration::from_secs(3));
    let finished = run(spec, SessionControl::new()).await;
    harness.save("claude_timeout", &finished);
    let report = &finished.report;
    assert_eq!(report.outcome, SessionOutcome::Timeout);
    assert_eq!(report.code(), -1);
    let stop = report.stop.as_ref().expect("a stop");
    eprintln!(
        "claude: timeout → agent reaped in {:?} ({:?})",
        stop.latency, stop.actions
    );
    assert!(report.duration < Duration::from_secs(3) + Duration::from_secs(10));
    finished.log_json(false);
    harness.assert_nothing_left();
}

#[tokio::test]
#[ignore = "needs the pinned Claude Code CLI (scripts/test-tools)"]
async fn claude_an_agent_that_crashes_fails_with_its_signal() {
    let harness = Harness::new(Scenario::killing_the_agent());
    let finished = run(harness.spec(), SessionControl::new()).await;
    harness.save("claude_crash", &finished);
    let report = &finished.report;
    assert_eq!(
        report.outcome,
        SessionOutcome::Failed {
            exit: ExitStatus::Signal(9)
        }
    );
    assert_eq!(report.code(), 137);
    assert!(report.result.is_none());
    assert_eq!(harness.server.main_requests().len(), 1);
    harness.assert_nothing_left();
}

#[tokio::test]
async fn claude_a_missing_binary_is_a_spawn_error_saying_how_to_install_it() {
    // Needs no CLI: the point is that there is none.
    let sandbox = Sandbox::new().expect("sandbox");
    let missing = sandbox.cwd().join("bin/claude");
    let config = Config::default();
    let agent = BackendSettings {
        command: Some(missing.to_string_lossy().into_owned()),
        ..debussy::session::default_backend_settings(&config)
    };
    let spec = SessionSpec::from_config(
        &config,
        &agent,
        Arc::new(ClaudeBackend::new(&agent)),
        "Hello.",
        sandbox.cwd(),
        log_path(sandbox.cwd()),
    )
    .expect("spec");
    let finished = run(spec, SessionControl::new()).await;
    let failure = finished.spawn_failure(&missing);
    let help = failure.help.as_deref().unwrap_or_default();
    assert!(
        help.contains("npm install -g @anthropic-ai/claude-code"),
        "{help}"
    );
    assert!(help.contains("agents.claude.command"), "{help}");
    // The session still has its (empty) log.
    assert_eq!(finished.log_text(), "");
}

#[tokio::test]
#[ignore = "needs the pinned Claude Code CLI (scripts/test-tools)"]
async fn claude_a_bad_key_ends_the_session_at_the_first_retry() {
    let harness = Harness::new(
        Scenario::new()
            .turn(Turn::reply("Done."))
            .refuse(Refusal::BadKey, None),
    );
    let finished = run(harness.spec(), SessionControl::new()).await;
    harness.save(
        "claude_a_bad_key_ends_the_session_at_the_first_retry",
        &finished,
    );
    let SessionOutcome::AgentFailure(failure) = &finished.report.outcome else {
        panic!("{}", finished.report.outcome)
    };
    assert_eq!(failure.kind, FailureKind::Auth);
    assert!(failure.said.contains("401"), "{failure}");
    assert!(
        finished.report.duration < Duration::from_secs(30),
        "{:?}",
        finished.report.duration
    );
    let retries: Vec<_> = finished
        .events
        .iter()
        .filter_map(|event| match event {
            SessionEvent::ApiRetry(retry) => Some(retry.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(retries[0].kind, Some(FailureKind::Auth));
    harness.assert_nothing_left();
}

#[tokio::test]
#[ignore = "needs the pinned Claude Code CLI (scripts/test-tools)"]
async fn claude_an_unreachable_api_shows_the_agents_retries_as_they_happen() {
    let harness = Harness::new(Scenario::new());
    let (unreachable, _reserved) = unreachable_url();
    let spec = harness
        .spec()
        .with_env([("ANTHROPIC_BASE_URL", unreachable.as_str())]);
    let finished = run_with(spec, SessionControl::new(), |event, control| {
        if let SessionEvent::ApiRetry(retry) = event
            && retry.kind == Some(FailureKind::Unreachable)
        {
            control.interrupt();
        }
    })
    .await;
    let retry = finished
        .events
        .iter()
        .find_map(|event| match event {
            SessionEvent::ApiRetry(retry) => Some(retry.clone()),
            _ => None,
        })
        .expect("a retry was shown");
    assert_eq!(retry.status, None);
    assert_eq!(retry.attempt, Some(1));
    assert!(
        retry
            .to_string()
            .starts_with("the agent's API request got no answer ("),
        "{retry}"
    );
    assert_eq!(finished.report.outcome, SessionOutcome::Interrupted);
    harness.assert_nothing_left();
}

#[tokio::test]
#[ignore = "needs the pinned Claude Code CLI (scripts/test-tools)"]
async fn claude_cut_off_from_its_api_is_stopped_after_the_offline_grace() {
    let harness = Harness::new(Scenario::new());
    let (unreachable, _reserved) = unreachable_url();
    let mut spec = harness
        .spec()
        .with_env([("ANTHROPIC_BASE_URL", unreachable.as_str())]);
    spec.offline_grace = std::time::Duration::from_secs(1);
    let finished = run_with(spec, SessionControl::new(), |_, _| {}).await;
    let SessionOutcome::AgentFailure(failure) = &finished.report.outcome else {
        panic!("{:?}", finished.report.outcome);
    };
    assert_eq!(failure.kind, FailureKind::Unreachable);
    // Claude Code calls a refused connection "unknown": the words say what it means.
    assert_eq!(
        failure.said,
        "cannot reach the API: its requests get no answer (connection refused, DNS, the network)"
    );
    harness.assert_nothing_left();
}
