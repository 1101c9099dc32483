//! `debussy run` end to end with the real Codex CLI against the scripted model server's
//! Responses API, in temporary git repositories: a phase completes with exact context
//! figures from the rollout; the threshold is crossed on a turn and the session is
//! stopped before its next request, the restart carrying the checkpoint; a crash fails the
//! attempt with its signal and an API error with Codex's message; a bad key ends the
//! attempt at once in Codex's words with the fix; a model that never answers is timed
//! out; a phase names Codex while the run uses another agent.

use std::time::Duration;

use serde_json::{Value, json};

use crate::support::agent_project::{self, AgentProject};
use crate::support::codex::{self, DEFAULT_MODEL, Sandbox};
use crate::support::model_server::{ModelServer, Scenario, Turn, Usage};
use crate::support::project::{self, events_named as named, run_json};
use crate::support::scenario as sim;

/// Usage putting `percent` of a 100,000-token window in use after the turn (the
/// context Codex counts is the input plus the output).
fn usage(percent: u64) -> Usage {
    Usage::new(100, percent * 1_000 - 150, 0, 50)
}

/// A shell command for Codex's `exec_command` tool.
fn shell(command: &str) -> Turn {
    Turn::new().tool_use("exec_command", json!({ "cmd": command }))
}

type Project = AgentProject<Sandbox>;

#[test]
#[ignore = "needs the pinned Codex CLI (scripts/test-tools)"]
fn a_codex_phase_completes_with_exact_figures_from_its_rollout() {
    let server = ModelServer::serving([
        shell("echo a > a.txt").usage(usage(20)),
        Turn::reply("Phase 1 is done.").usage(usage(25)),
    ]);
    let project = Project::new(&server);
    project.plan("test -f a.txt", 100_000, "");
    let (code, events) = project.run();
    assert_eq!(code, 0, "events: {events:#?}");
    let context: Vec<&Value> = named(&events, "context");
    let last = &context.last().expect("context figures")["snapshot"];
    assert_eq!(last["tokens"], 25_000, "{last}");
    assert_eq!(last["exactness"], "exact", "{last}");
    assert_eq!(last["window"]["tokens"], 100_000, "{last}");
    let finished = named(&events, "run_finished");
    let billed = &finished[0]["summary"]["billed"];
    assert_eq!(
        billed["output"], 100,
        "two requests of 50 output tokens: {billed}"
    );
    let calls: Vec<&Value> = named(&events, "activity")
        .into_iter()
        .map(|e| &e["activity"]["kind"])
        .filter(|kind| kind["kind"] == "tool_call")
        .collect();
    assert!(
        calls.iter().any(|a| a["name"] == "Bash"),
        "Codex's command shows as a Bash call: {calls:#?}"
    );
    project.assert_completed_commit();
    let status = project.command(&["status"]).output().expect("status");
    let status = String::from_utf8_lossy(&status.stdout);
    assert!(
        status.contains("AGENT") && status.contains(&format!("codex {DEFAULT_MODEL}")),
        "{status}"
    );
    server.assert_all_scripted();
}

#[test]
#[ignore = "needs the pinned Codex CLI (scripts/test-tools)"]
fn crossing_the_threshold_stops_codex_before_its_next_request_and_restarts_with_the_checkpoint() {
    let server = ModelServer::serving([
        // Session 1: writes a.txt; the next turn crosses 80 % while its tool runs.
        shell("echo a > a.txt").usage(usage(40)),
        shell("sleep 30").usage(usage(85)),
        // Session 2: finishes.
        shell("echo b > b.txt").usage(usage(30)),
        Turn::reply("Phase 1 is done.").usage(usage(32)),
    ]);
    let project = Project::new(&server);
    project.plan("test -f a.txt && test -f b.txt", 100_000, "");
    // The stop does not wait for the 30-second tool.
    let (code, events) = project.run_within(Duration::from_secs(30));
    assert_eq!(code, 0, "events: {events:#?}");
    assert_eq!(named(&events, "restart").len(), 1, "{events:#?}");
    let sessions = server.main_sessions();
    assert_eq!(sessions.len(), 2, "{sessions:#?}");
    assert_eq!(
        sessions[0].len(),
        2,
        "the first session was stopped before a third request"
    );
    let second = sessions[1][0].input_text();
    assert!(
        second.contains("# Checkpoint: phase 1 (Step 1), restart 1 of 3"),
        "{second}"
    );
    assert!(second.contains("a.txt"), "{second}");
    project.assert_first_checkpoint_committed();
    server.assert_all_scripted();
}

#[test]
#[ignore = "needs the pinned Codex CLI (scripts/test-tools)"]
fn an_api_error_ends_the_attempt_with_codexs_message() {
    let server = ModelServer::start(Scenario::new().turn(Turn::api_error(
        400,
        "invalid_request_error",
        "scripted refusal",
    )))
    .expect("model server");
    let project = Project::new(&server);
    project.plan("true", 100_000, "");
    let (code, events) = project.run();
    assert_eq!(code, 1, "events: {events:#?}");
    let text = serde_json::to_string(&events).expect("json");
    assert!(text.contains("scripted refusal"), "{events:#?}");
}

#[test]
#[ignore = "needs the pinned Codex CLI (scripts/test-tools)"]
fn a_bad_key_ends_the_attempt_in_codexs_words_with_the_fix() {
    agent_project::assert_a_bad_key_ends_the_attempt::<Sandbox>(
        "Incorrect API key",
        "OPENAI_API_KEY",
    );
}

#[test]
#[ignore = "needs the pinned Codex CLI (scripts/test-tools)"]
fn a_usage_limit_past_max_wait_pauses_the_run() {
    agent_project::assert_a_usage_limit_past_max_wait_pauses_the_run::<Sandbox>();
}

#[test]
#[ignore = "needs the pinned Codex CLI (scripts/test-tools)"]
fn used_up_credit_fails_without_a_wait_or_a_retry() {
    agent_project::assert_used_up_credit_fails_without_a_wait_or_a_retry::<Sandbox>(
        "Quota exceeded. Check your plan and billing details.",
        "platform.openai.com/settings/organization/billing",
    );
}

#[test]
#[ignore = "needs the pinned Codex CLI (scripts/test-tools)"]
fn an_unknown_model_fails_without_a_retry() {
    agent_project::assert_an_unknown_model_fails_without_a_retry::<Sandbox>("does not exist");
}

#[test]
#[ignore = "needs the pinned Codex CLI (scripts/test-tools)"]
fn a_model_that_never_answers_is_timed_out() {
    agent_project::assert_a_silent_model_is_timed_out::<Sandbox>();
}

#[test]
#[ignore = "needs the pinned Codex CLI (scripts/test-tools)"]
fn a_phase_can_name_codex_and_its_model_while_the_run_uses_the_sim_agent() {
    let cli = codex::require();
    let server = ModelServer::serving([
        shell("echo b > b.txt").usage(usage(20)),
        Turn::reply("Phase 2 is done.").usage(usage(22)),
    ]);
    let project = Project::new(&server);
    project.write(
        "plan/MASTER_PLAN.md",
        "# Two agents\n\n| Phase | Title | Status |\n|---|---|---|\n\
         | 1 | [Sim step](phase-1.md) | Pending |\n| 2 | [Codex step](phase-2.md) | Pending |\n",
    );
    project.write(
        "plan/phase-1.md",
        "# Phase 1: Sim step\n\n**Status:** Pending\n\n## Gates\n- check: `test -f a.txt` passes\n\n## Tasks\n- [ ] 1.1: a\n",
    );
    project.write(
        "plan/phase-2.md",
        &format!(
            "# Phase 2: Codex step\n\n**Status:** Pending\n**Depends On:** Phase 1\n\
             **Agent:** codex\n**Model:** {DEFAULT_MODEL}\n\n\
             ## Gates\n- check: `test -f b.txt` passes\n\n## Tasks\n- [ ] 2.1: b\n"
        ),
    );
    project.write(
        "plan/sim-scenario.yaml",
        &sim::Scenario::new()
            .script(sim::Script::phase("1").turns([
                sim::Turn::quiet().writes("a.txt", "a\n"),
                sim::Turn::say("Done.").done_as(sim::Status::Completed),
            ]))
            .to_yaml(),
    );
    project.write(
        ".debussy/config.yaml",
        "restart_delay: 0\ntimeout: 120\nmax_retries: 0\nagent:\n  kind: sim\n  model_context_window: 100000\n",
    );
    project::commit_all(project.root(), "plan");
    // The phase's agent runs with its own defaults: `codex` from PATH.
    let bin = cli.path().parent().expect("bin dir").display().to_string();
    let path = format!("{bin}:{}", std::env::var("PATH").unwrap_or_default());
    let mut command = project.command(&["run", "plan/MASTER_PLAN.md", "--output-format", "json"]);
    command.env("PATH", &path);
    let (code, events) = run_json(command, Duration::from_secs(180));
    assert_eq!(code, 0, "events: {events:#?}");
    let started: Vec<(String, String, String)> = named(&events, "session_started")
        .iter()
        .map(|e| {
            (
                e["phase_id"].as_str().unwrap_or_default().to_owned(),
                e["agent"].as_str().unwrap_or_default().to_owned(),
                e["model"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        started,
        [
            ("1".into(), "sim".into(), "opus".into()),
            ("2".into(), "codex".into(), DEFAULT_MODEL.into()),
        ]
    );
    assert_eq!(server.main_requests()[0].model(), Some(DEFAULT_MODEL));

    // Without `codex` on PATH the run stops before anything runs, saying how to install it.
    project::commit_all(project.root(), "after the run");
    let without_codex = |args: &[&str]| {
        project
            .command(args)
            .env("PATH", "/usr/bin:/bin")
            .output()
            .expect("debussy")
    };
    let output = without_codex(&["run", "plan/MASTER_PLAN.md", "--phase", "2"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("phase 2"), "{stderr}");
    assert!(stderr.contains("npm install -g @openai/codex"), "{stderr}");
    let dry = without_codex(&["run", "plan/MASTER_PLAN.md", "--dry-run"]);
    let stdout = String::from_utf8_lossy(&dry.stdout);
    assert!(!dry.status.success(), "{stdout}");
    assert!(
        stdout.contains("phase 2: agent program `codex` not found"),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("runs on codex ({DEFAULT_MODEL})")),
        "{stdout}"
    );
    let doctor = without_codex(&["doctor", "plan/MASTER_PLAN.md"]);
    let stdout = String::from_utf8_lossy(&doctor.stdout);
    assert!(
        stdout.contains("phase 2: agent program `codex` not found"),
        "{stdout}"
    );
}

#[test]
#[ignore = "needs the pinned Codex CLI (scripts/test-tools)"]
fn a_codex_that_crashes_mid_session_fails_the_attempt_with_its_signal() {
    let server = ModelServer::serving([
        shell("echo a > a.txt").usage(usage(20)),
        // Outside Codex's sandbox (its own PID namespace), a command's parent is Codex.
        shell("kill -KILL $PPID").usage(usage(22)),
        Turn::reply("never sent").usage(usage(23)),
    ]);
    let project = Project::new(&server);
    project.plan("test -f a.txt", 100_000, "");
    let config = project.root().join(".debussy/config.yaml");
    let mut text = std::fs::read_to_string(&config).expect("config");
    text.push_str("  permissions: bypass\n");
    std::fs::write(&config, text).expect("config");
    project::commit_all(project.root(), "bypass");
    let (code, events) = project.run();
    assert_eq!(code, 1, "events: {events:#?}");
    let ended = named(&events, "session_ended");
    let text = serde_json::to_string(&ended).expect("json");
    assert!(
        text.contains("SIGKILL") || text.contains("signal 9"),
        "{ended:#?}"
    );
    assert_eq!(server.main_requests().len(), 2, "nothing after the crash");
}

#[test]
#[ignore = "needs the pinned Codex CLI (scripts/test-tools)"]
fn an_unreachable_api_pauses_without_spending_an_attempt() {
    agent_project::assert_an_unreachable_api_pauses_without_spending_an_attempt::<Sandbox>(
        "waiting for network",
    );
}

#[test]
#[ignore = "needs the pinned Codex CLI (scripts/test-tools)"]
fn an_api_that_comes_back_ends_the_wait_before_its_backoff() {
    agent_project::assert_an_api_that_comes_back_ends_the_wait::<Sandbox>();
}
