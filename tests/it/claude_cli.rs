//! The real Claude Code CLI (`claude -p --output-format stream-json --verbose`) run
//! fully offline against the scripted model server: what it prints and what it asks
//! the model are the facts the agent parser, the context meter and the session layer
//! are built on. Each test saves its stream, stderr and the requests the server saw
//! under `target/tmp/artifacts/claude_cli/<test>/`.
//!
//! These tests are `#[ignore]`d (they need the CLI, which `scripts/test-tools` installs);
//! `scripts/check` runs them with `--run-ignored all`, and a missing CLI fails them.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::support::artifacts;
use crate::support::claude::{self, ClaudeRun, Harness, RUN_TIMEOUT, Sandbox, Transcript};
use crate::support::model_server::{RequestKind, Scenario, Turn, Usage};
use serde_json::{Value, json};
use tokio::process::Command;

const MODEL: &str = claude::DEFAULT_MODEL;

/// Set to copy each run's stream into `tests/fixtures/claude-cli/` (see the README
/// there).
pub(crate) const REFRESH_FIXTURES_ENV: &str = "DEBUSSY_REFRESH_FIXTURES";

pub(crate) fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/claude-cli")
}

impl Harness {
    /// Runs `command` to completion and saves the artifacts under `name`.
    async fn run_command(&self, name: &str, command: Command, prompt: &str) -> Transcript {
        let started = Instant::now();
        let outcome = claude::run(command, prompt, RUN_TIMEOUT).await;
        let dir = artifacts::dir(name).expect("artifact dir");
        self.server
            .save_requests(&dir.join("requests.jsonl"))
            .expect("save requests");
        let transcript = outcome.unwrap_or_else(|error| panic!("{name}: {error}"));
        let saved = transcript.save(&dir).expect("save transcript");
        if std::env::var_os(REFRESH_FIXTURES_ENV).is_some() {
            let fixture = fixtures_dir().join(format!("{name}.jsonl"));
            std::fs::copy(&saved, &fixture).expect("refresh fixture");
            eprintln!("{name}: refreshed {}", fixture.display());
        }
        eprintln!(
            "{name}: claude ran {:.2?}, {} stdout lines, {} model requests; artifacts in {}",
            started.elapsed(),
            transcript.lines.len(),
            self.server.requests().len(),
            dir.display()
        );
        transcript
    }

    async fn run(&self, name: &str, prompt: &str) -> Transcript {
        self.run_command(name, self.command(), prompt).await
    }
}

fn assert_success(transcript: &Transcript) -> Value {
    let result = transcript.result().unwrap_or_else(|| {
        panic!(
            "no result line; stderr: {}\nstdout: {:#?}",
            transcript.stderr, transcript.lines
        )
    });
    assert_eq!(result["subtype"], "success", "{result}");
    assert_eq!(result["is_error"], false, "{result}");
    assert!(
        transcript.status.success(),
        "exit status {}",
        transcript.status
    );
    result
}

fn usage_of(line: &Value) -> Usage {
    Usage::from_json(&line["message"]["usage"])
}

#[tokio::test]
#[ignore = "needs the pinned Claude Code CLI (scripts/test-tools)"]
async fn a_session_completes_and_its_stream_is_saved_as_json_lines() {
    let harness = Harness::new(
        Scenario::new().turn(Turn::reply("All done.").usage(Usage::new(20, 1_000, 200, 7))),
    );
    let transcript = harness.run("session_completes", "Say you are done.").await;

    let result = assert_success(&transcript);
    assert_eq!(result["result"], "All done.");
    assert_eq!(result["num_turns"], 1);
    let init = transcript.system("init");
    assert_eq!(init.len(), 1);
    assert_eq!(init[0]["model"], MODEL);
    assert_eq!(init[0]["apiKeySource"], "ANTHROPIC_API_KEY");
    let version = harness.cli.version();
    let number = version.split_whitespace().next().unwrap_or_default();
    assert_eq!(init[0]["claude_code_version"], number);

    let requests = harness.server.requests();
    assert_eq!(requests.len(), 1, "one model call and nothing else");
    let request = &requests[0];
    assert_eq!(request.kind, RequestKind::Main { turn: 0 });
    assert_eq!(
        request.header("x-api-key"),
        Some("sk-ant-test-offline-dummy")
    );
    assert!(request.header("anthropic-version").is_some());
    assert_eq!(request.model(), Some(MODEL));
    assert!(request.first_user_text().contains("Say you are done."));
    assert_eq!(request.session_id(), init[0]["session_id"].as_str());
    harness.server.assert_all_scripted();

    // The saved artifact is stream-json: one JSON object per line.
    let dir = artifacts::dir("session_completes_reread").expect("artifact dir");
    let saved = transcript.save(&dir).expect("save");
    let text = std::fs::read_to_string(&saved).expect("read artifact");
    let types: Vec<String> = text
        .lines()
        .enumerate()
        .map(|(number, line)| {
            let value: Value = serde_json::from_str(line).unwrap_or_else(|error| {
                panic!("{}:{}: not JSON ({error})", saved.display(), number + 1)
            });
            value["type"]
                .as_str()
                .expect("every line has a type")
                .to_owned()
        })
        .collect();
    assert_eq!(types, ["system", "assistant", "result"]);
}

#[tokio::test]
#[ignore = "needs the pinned Claude Code CLI (scripts/test-tools)"]
async fn a_write_tool_call_really_creates_the_file() {
    let sandbox = Sandbox::new().expect("create sandbox");
    let target = sandbox.cwd().join("notes").join("hello.md");
    let content = "# Hello\n\nwritten by the scripted model\n";
    let scenario = Scenario::new()
        .turn(Turn::new().text("Writing the file.").tool_use_id(
            "toolu_write_1",
            "Write",
            json!({"file_path": target, "content": content}),
        ))
        .turn(Turn::reply("Wrote notes/hello.md."));
    let harness = Harness::with_sandbox(sandbox, scenario);
    let transcript = harness.run("write_tool", "Create notes/hello.md.").await;

    assert_success(&transcript);
    assert_eq!(
        std::fs::read_to_string(&target).expect("the file exists"),
        content
    );
    let results: Vec<Value> = transcript
        .of_type("user")
        .iter()
        .filter_map(|line| line["message"]["content"].as_array())
        .flatten()
        .filter(|block| block["type"] == "tool_result")
        .cloned()
        .collect();
    assert_eq!(results.len(), 1, "{results:?}");
    assert_eq!(results[0]["tool_use_id"], "toolu_write_1");
    assert_ne!(results[0]["is_error"], true, "{results:?}");

    let main = harness.server.main_requests();
    assert_eq!(main.len(), 2);
    assert!(
        main[1]
            .last_user_text()
            .contains("File created successfully"),
        "{}",
        main[1].last_user_text()
    );
    harness.server.assert_all_scripted();
}

#[tokio::test]
#[ignore = "needs the pinned Claude Code CLI (scripts/test-tools)"]
async fn assistant_lines_carry_the_scripted_usage_exactly() {
    let usages = [
        Usage::new(3, 12_000, 2_000, 40),
        Usage::new(5, 14_100, 1_500, 60),
        Usage::new(8, 15_700, 900, 25),
    ];
    let scenario = Scenario::new()
        .turn(Turn::new().bash("echo one", "Print one").usage(usages[0]))
        .turn(
            Turn::new()
                .text("Second step.")
                .bash("echo two", "Print two")
                .usage(usages[1]),
        )
        .turn(
            Turn::new()
                .thinking("Both commands ran.")
                .text("Finished.")
                .usage(usages[2]),
        );
    let harness = Harness::new(scenario);
    let transcript = harness.run("usage_three_turns", "Run two commands.").await;
    let result = assert_success(&transcript);

    // One entry per model turn, in order, with exactly the scripted numbers.
    let seen: Vec<Usage> = transcript
        .main_usages()
        .into_iter()
        .map(|(_, usage)| usage)
        .collect();
    assert_eq!(seen, usages);
    let context: Vec<u64> = seen.iter().map(Usage::context_tokens).collect();
    assert_eq!(context, [14_003, 15_605, 16_608]);
    // Claude Code prints one line per content block; every line repeats its
    // message's id and usage.
    let lines = transcript.main_assistant_lines();
    assert_eq!(lines.len(), 5, "1 + 2 + 2 content blocks");
    for line in &lines {
        let id = line["message"]["id"].as_str().expect("message id");
        let (_, usage) = transcript
            .main_usages()
            .into_iter()
            .find(|(seen_id, _)| seen_id == id)
            .expect("known id");
        assert_eq!(usage_of(line), usage, "{line}");
    }
    // `result.usage` sums the turns: a cost figure, never the context in use.
    let total = |field: fn(&Usage) -> u64| usages.iter().map(field).sum::<u64>();
    assert_eq!(
        result["usage"]["input_tokens"],
        total(|usage| usage.input_tokens)
    );
    assert_eq!(
        result["usage"]["cache_read_input_tokens"],
        total(|usage| usage.cache_read_input_tokens)
    );
    assert_eq!(
        result["usage"]["output_tokens"],
        total(|usage| usage.output_tokens)
    );
    assert_eq!(result["modelUsage"][MODEL]["contextWindow"], 200_000);
    assert_eq!(result["num_turns"], 3);

    assert_eq!(harness.server.main_requests().len(), 3);
    harness.server.assert_all_scripted();
}

#[tokio::test]
#[ignore = "needs the pinned Claude Code CLI (scripts/test-tools)"]
async fn subagent_traffic_carries_its_parent_tool_use_id() {
    let main_usages = [
        Usage::new(10, 20_000, 1_000, 30),
        Usage::new(12, 22_000, 800, 20),
    ];
    let sub_usage = Usage::new(5, 150_000, 20_000, 40);
    let harness = Harness::new(Scenario::delegating_to_a_subagent(
        main_usages,
        [sub_usage, Usage::new(7, 175_000, 5_000, 50)],
    ));
    let transcript = harness
        .run("task_subagent", "Delegate counting the files.")
        .await;
    assert_success(&transcript);

    let sub_lines = transcript.subagent_assistant_lines("toolu_task_1");
    assert!(
        !sub_lines.is_empty(),
        "subagent assistant lines carry parent_tool_use_id"
    );
    assert!(sub_lines.iter().any(|line| usage_of(line) == sub_usage));
    let sub_results = transcript
        .of_type("user")
        .into_iter()
        .filter(|line| line["parent_tool_use_id"] == "toolu_task_1")
        .count();
    assert!(
        sub_results >= 1,
        "the subagent's tool results carry parent_tool_use_id"
    );
    // The main thread's usage is its own: the subagent's 175k never shows there.
    let seen: Vec<Usage> = transcript
        .main_usages()
        .into_iter()
        .map(|(_, usage)| usage)
        .collect();
    assert_eq!(seen, main_usages);

    let sub_requests = harness.server.subagent_requests();
    assert_eq!(sub_requests.len(), 2);
    assert!(
        sub_requests[0]
            .first_user_text()
            .contains("SUBTASK-ALPHA: count the files")
    );
    assert!(
        sub_requests[0]
            .system_text()
            .contains("cc_is_subagent=true")
    );
    let main = harness.server.main_requests();
    assert_eq!(main.len(), 2);
    assert!(
        main[1]
            .last_user_text()
            .contains("Report: the directory is empty.")
    );
    harness.server.assert_all_scripted();
}

#[tokio::test]
#[ignore = "needs the pinned Claude Code CLI (scripts/test-tools)"]
async fn auto_compaction_emits_a_compact_boundary() {
    let scenario = Scenario::new()
        .turn(Turn::past_the_auto_compact_threshold())
        .turn(Turn::reply("Continuing after compaction."))
        .compact_summary("SUMMARY-MARKER-42: the user asked for one step.");
    let harness = Harness::new(scenario);
    let mut command = harness.command();
    // Claude Code arms threshold auto-compaction only when it knows the window; this
    // declares it (see docs/testing.md).
    command.env("CLAUDE_CODE_AUTO_COMPACT_WINDOW", "200000");
    let transcript = harness
        .run_command("auto_compact", command, "Do one step.")
        .await;
    assert_success(&transcript);

    let lines = transcript.json();
    let position = |wanted: &dyn Fn(&Value) -> bool| lines.iter().position(wanted);
    let boundary_at =
        position(&|line| line["type"] == "system" && line["subtype"] == "compact_boundary")
            .expect("a compact_boundary line");
    let boundary = &lines[boundary_at];
    assert_eq!(boundary["compact_metadata"]["trigger"], "auto");
    assert!(
        boundary["compact_metadata"]["pre_tokens"]
            .as_u64()
            .unwrap_or_default()
            >= 190_000
    );
    let first_turn = position(&|line| line["type"] == "assistant").expect("first assistant line");
    let last_turn = lines
        .iter()
        .rposition(|line| line["type"] == "assistant")
        .expect("last assistant line");
    assert!(first_turn < boundary_at && boundary_at < last_turn);
    assert!(
        !transcript.system("status").is_empty(),
        "status lines announce the compaction"
    );

    assert_eq!(harness.server.requests_of(&RequestKind::Compact).len(), 1);
    let main = harness.server.main_requests();
    assert_eq!(main.len(), 2);
    assert!(main[1].first_user_text().contains("SUMMARY-MARKER-42"));
    harness.server.assert_all_scripted();
}

#[tokio::test]
#[ignore = "needs the pinned Claude Code CLI (scripts/test-tools)"]
async fn a_manual_compact_in_print_mode_emits_a_compact_boundary() {
    let scenario = Scenario::new()
        .turn(Turn::reply("First answer.").usage(Usage::new(10, 5_000, 0, 20)))
        .compact_summary("SUMMARY-MARKER-7");
    let harness = Harness::new(scenario);
    let first = harness.run("manual_compact_first", "Answer once.").await;
    assert_success(&first);
    let session_id = first.system("init")[0]["session_id"]
        .as_str()
        .expect("session id")
        .to_owned();

    let mut command = harness.command();
    command.args(["--resume", &session_id]);
    let second = harness
        .run_command("manual_compact_second", command, "/compact")
        .await;
    assert_success(&second);
    let boundary = second.system("compact_boundary");
    assert_eq!(boundary.len(), 1, "{:#?}", second.lines);
    assert_eq!(boundary[0]["compact_metadata"]["trigger"], "manual");

    let compact = harness.server.requests_of(&RequestKind::Compact);
    assert_eq!(compact.len(), 1);
    assert!(compact[0].first_user_text().contains("Answer once."));
    // `/compact` is handled by the CLI: no new main-thread turn.
    assert_eq!(harness.server.main_requests().len(), 1);
}

#[tokio::test]
#[ignore = "needs the pinned Claude Code CLI (scripts/test-tools)"]
async fn a_held_turn_shows_its_usage_before_the_request_completes() {
    let held = Usage::new(4, 150_000, 10_000, 30);
    let scenario = Scenario::new()
        .turn(
            Turn::new()
                .bash("echo held", "Print held")
                .usage(held)
                .hold(),
        )
        .turn(Turn::reply("Released."));
    let harness = Harness::new(scenario);
    let mut run = ClaudeRun::spawn(harness.command(), "Run one command.").expect("spawn claude");
    let line = run
        .wait_for_line("the held turn's assistant line", RUN_TIMEOUT, |line| {
            line["type"] == "assistant"
        })
        .await
        .unwrap_or_else(|error| panic!("{error}"));
    assert_eq!(usage_of(&line), held);
    // The turn's stream is still open, so no second request can have been sent.
    assert_eq!(harness.server.main_requests().len(), 1);

    harness.server.release();
    let transcript = run
        .finish(RUN_TIMEOUT)
        .await
        .unwrap_or_else(|error| panic!("{error}"));
    assert_success(&transcript);
    assert_eq!(harness.server.main_requests().len(), 2);
}

#[tokio::test]
#[ignore = "needs the pinned Claude Code CLI (scripts/test-tools)"]
async fn an_api_error_ends_the_session_with_an_error_result() {
    let scenario = Scenario::new().turn(Turn::api_error(
        400,
        "invalid_request_error",
        "scripted failure",
    ));
    let harness = Harness::new(scenario);
    let transcript = harness.run("api_error", "Try.").await;
    let result = transcript.result().expect("a result line");
    // Note for the session layer: an API failure still reports subtype `success`;
    // `is_error`, `api_error_status` and the exit code say it failed.
    assert_eq!(result["subtype"], "success", "{result}");
    assert_eq!(result["is_error"], true, "{result}");
    assert_eq!(transcript.status.code(), Some(1));
    assert_eq!(result["api_error_status"], 400, "{result}");
    assert!(
        result["result"]
            .as_str()
            .unwrap_or_default()
            .contains("scripted failure"),
        "{result}"
    );
    assert!(
        harness
            .server
            .main_requests()
            .iter()
            .all(|request| request.kind == RequestKind::Main { turn: 0 })
    );
}

#[tokio::test]
#[ignore = "needs the pinned Claude Code CLI (scripts/test-tools)"]
async fn a_stalled_model_keeps_the_cli_waiting_until_it_is_killed() {
    let harness = Harness::new(Scenario::new().turn(Turn::reply("never sent").stall()));
    let mut run = ClaudeRun::spawn(harness.command(), "Wait.").expect("spawn claude");
    harness
        .server
        .wait_for_main_requests_async(1, RUN_TIMEOUT)
        .await
        .unwrap_or_else(|error| panic!("{error}"));
    run.wait_for_line("the init line", RUN_TIMEOUT, |line| {
        line["subtype"] == "init"
    })
    .await
    .unwrap_or_else(|error| panic!("{error}"));
    run.kill();
    let transcript = run
        .finish(Duration::from_secs(10))
        .await
        .unwrap_or_else(|error| panic!("{error}"));
    assert!(!transcript.status.success());
    assert!(
        transcript.result().is_none(),
        "a killed run prints no result"
    );
}

#[tokio::test]
#[ignore = "needs the pinned Claude Code CLI (scripts/test-tools)"]
async fn a_bash_tool_call_can_crash_the_cli() {
    use std::os::unix::process::ExitStatusExt as _;

    let harness = Harness::new(Scenario::killing_the_agent());
    let transcript = harness.run("crash", "Crash.").await;
    assert_eq!(transcript.status.signal(), Some(9), "{}", transcript.status);
    assert!(
        transcript.result().is_none(),
        "a crashed run prints no result"
    );
    assert_eq!(transcript.main_assistant_lines().len(), 1);
    assert_eq!(harness.server.main_requests().len(), 1);
}
