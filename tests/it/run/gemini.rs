//! `debussy run` end to end with the real Gemini CLI against the scripted model server's
//! Gemini API, in temporary git repositories: a phase completes with its context
//! estimated and its totals billed, its shell allowed by debussy's policy rule and denied
//! by the user's; a large tool result crosses the threshold by the estimate alone and
//! the restart carries the checkpoint; a model that never answers is timed out, and the
//! CLI's second process with it.

use std::path::Path;
use std::time::Duration;

use serde_json::json;

use crate::support::agent_project::{self, AgentProject};
use crate::support::gemini::{NO_RELAUNCH_ENV, Sandbox};
use crate::support::model_server::{ModelServer, Scenario, Turn, Usage};
use crate::support::processes::assert_no_process_left;
use crate::support::project::{self, events_named as named};

/// A shell command for the Gemini CLI's `run_shell_command` tool.
fn shell(command: &str) -> Turn {
    Turn::new().tool_use("run_shell_command", json!({ "command": command }))
}

type Project = AgentProject<Sandbox>;

/// The first file under `dir` whose name ends with `suffix`.
fn find_file(dir: &Path, suffix: &str) -> Option<std::path::PathBuf> {
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let path = entry.path();
        if path.is_dir() {
            if let Some(found) = find_file(&path, suffix) {
                return Some(found);
            }
        } else if path.to_string_lossy().ends_with(suffix) {
            return Some(path);
        }
    }
    None
}

#[test]
#[ignore = "needs the pinned Gemini CLI (scripts/test-tools)"]
fn a_gemini_phase_completes_with_an_estimated_context_and_billed_totals() {
    let server = ModelServer::serving([
        shell("echo a > a.txt").usage(Usage::new(1_000, 0, 0, 5)),
        Turn::reply("Phase 1 is done.").usage(Usage::new(1_100, 0, 0, 7)),
    ]);
    let project = Project::new(&server);
    project.plan("test -f a.txt", 1_000_000, "");
    let (code, events) = project.run();
    assert_eq!(code, 0, "events: {events:#?}");
    let context = named(&events, "context");
    let last = &context.last().expect("context figures")["snapshot"];
    assert_eq!(last["exactness"], "estimated", "{last}");
    assert!(last["tokens"].as_u64().unwrap_or(0) > 0, "{last}");
    let billed = &named(&events, "run_finished")[0]["summary"]["billed"];
    assert_eq!(
        billed["input"], 2_100,
        "the result's totals are billed: {billed}"
    );
    assert_eq!(billed["output"], 12, "{billed}");
    // Gemini's own compression moved above debussy's threshold, for this session only,
    // over the user's settings.
    let settings = find_file(
        &project.root().join(".debussy/runs"),
        ".home/.gemini/settings.json",
    )
    .expect("the session's settings file");
    let settings: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(settings).expect("read")).expect("JSON");
    assert_eq!(settings["model"]["compressionThreshold"], 0.9, "{settings}");
    assert_eq!(
        settings["security"]["auth"]["selectedType"], "gemini-api-key",
        "{settings}"
    );
    // The CLI read them: it skips a system settings file that is not root's in a tree
    // only root can write, as debussy's own was, and says so on stderr. The shell ran
    // by the session's policy rule, not by the deprecated `--allowed-tools`.
    let stderr = find_file(&project.root().join(".debussy/runs"), ".stderr.log")
        .map(|path| std::fs::read_to_string(path).expect("read"))
        .unwrap_or_default();
    assert!(!stderr.contains("Skipping"), "{stderr}");
    assert!(!stderr.contains("deprecated"), "{stderr}");
    project.assert_completed_commit();
    server.assert_all_scripted();
}

/// debussy's policy rule lets `accept-edits` run shell commands; a rule of the user's
/// own that denies one, at a higher priority, still wins in the session's home.
#[test]
#[ignore = "needs the pinned Gemini CLI (scripts/test-tools)"]
fn a_policy_of_the_users_still_denies_what_it_denies() {
    let server = ModelServer::serving([
        shell("echo a > a.txt"),
        shell("touch denied.txt"),
        Turn::reply("Phase 1 is done."),
    ]);
    let project = Project::new(&server);
    let policies = project.home().join(".gemini/policies");
    std::fs::create_dir_all(&policies).expect("mkdir");
    std::fs::write(
        policies.join("mine.toml"),
        "[[rule]]\ntoolName = \"run_shell_command\"\ncommandPrefix = \"touch\"\n\
         decision = \"deny\"\npriority = 500\n",
    )
    .expect("write the user's policy");
    project.plan("test -f a.txt && test ! -e denied.txt", 1_000_000, "");
    let (code, events) = project.run();
    assert_eq!(code, 0, "events: {events:#?}");
    assert!(!project.root().join("denied.txt").exists());
    server.assert_all_scripted();
}

#[test]
#[ignore = "needs the pinned Gemini CLI (scripts/test-tools)"]
fn a_large_tool_result_crosses_the_estimated_threshold_and_the_restart_carries_the_checkpoint() {
    let server = ModelServer::serving([
        // Session 1: writes a.txt, then prints ~6,000 tokens the estimate counts.
        shell("echo a > a.txt"),
        shell("seq 1 3000"),
        Turn::reply("never sent: the session is stopped").stall(),
        // Session 2: finishes.
        shell("echo b > b.txt"),
        Turn::reply("Phase 1 is done."),
    ]);
    let project = Project::new(&server);
    project.plan("test -f a.txt && test -f b.txt", 10_000, "");
    let (code, events) = project.run_within(Duration::from_secs(60));
    server.release();
    assert_eq!(code, 0, "events: {events:#?}");
    let restarts = named(&events, "restart");
    assert_eq!(restarts.len(), 1, "{events:#?}");
    let text = serde_json::to_string(&restarts[0]).expect("json");
    assert!(text.contains("context"), "{text}");
    let checkpointed = server.main_requests().iter().any(|request| {
        request
            .body
            .to_string()
            .contains("# Checkpoint: phase 1 (Step 1), restart 1 of 3")
    });
    assert!(checkpointed, "no request carried the checkpoint");
    project.assert_first_checkpoint_committed();
}

/// Run as users run it, the CLI starts itself again with a larger heap and waits on
/// that second process: the timeout must stop both.
#[test]
#[ignore = "needs the pinned Gemini CLI (scripts/test-tools)"]
fn a_gemini_model_that_never_answers_is_timed_out_with_both_of_its_processes() {
    let server = ModelServer::start(Scenario::new().turn(Turn::reply("late").stall()))
        .expect("model server");
    let project = Project::new(&server);
    project.plan("true", 100_000, "timeout: 3\n");
    let mut command = project.command(&["run", "plan/MASTER_PLAN.md", "--output-format", "json"]);
    command.env_remove(NO_RELAUNCH_ENV);
    project::assert_timed_out(|| project::run_json(command, Duration::from_secs(180)));
    server.release();
    assert_no_process_left(project.root());
}

#[test]
#[ignore = "needs the pinned Gemini CLI (scripts/test-tools)"]
fn a_bad_key_ends_the_attempt_in_the_gemini_clis_words_with_the_fix() {
    agent_project::assert_a_bad_key_ends_the_attempt::<Sandbox>(
        "API key not valid",
        "GEMINI_API_KEY",
    );
}

#[test]
#[ignore = "needs the pinned Gemini CLI (scripts/test-tools)"]
fn a_usage_limit_past_max_wait_pauses_the_run() {
    agent_project::assert_a_usage_limit_past_max_wait_pauses_the_run::<Sandbox>();
}

#[test]
#[ignore = "needs the pinned Gemini CLI (scripts/test-tools)"]
fn an_unknown_model_fails_without_a_retry() {
    agent_project::assert_an_unknown_model_fails_without_a_retry::<Sandbox>("is not found");
}

#[test]
#[ignore = "needs the pinned Gemini CLI (scripts/test-tools)"]
fn a_project_without_billing_fails_without_a_wait_or_a_retry() {
    agent_project::assert_used_up_credit_fails_without_a_wait_or_a_retry::<Sandbox>(
        "requires billing to be enabled",
        "the Google Cloud project's billing",
    );
}

#[test]
#[ignore = "needs the pinned Gemini CLI (scripts/test-tools)"]
fn an_unreachable_api_pauses_without_spending_an_attempt() {
    agent_project::assert_an_unreachable_api_pauses_without_spending_an_attempt::<Sandbox>(
        "fetch failed",
    );
}
