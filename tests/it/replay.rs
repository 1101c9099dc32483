//! `debussy replay` on the recorded transcripts, through the real binary.

use std::path::{Path, PathBuf};

use assert_cmd::Command;

use crate::support::project::json_of;
use predicates::str::contains;

/// The path of the recorded transcript `name`.
fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/transcripts")
        .join(name)
}

/// `debussy replay` run from an empty directory, so no project configuration applies.
fn replay(dir: &Path) -> Command {
    let mut command = Command::new(crate::support::DEBUSSY);
    command
        .current_dir(dir)
        .env_remove("DEBUSSY_LOG")
        .arg("replay")
        .timeout(std::time::Duration::from_secs(60));
    command
}

/// The JSON report of `debussy replay` on `file` with `args`, run in `dir`.
fn json(dir: &Path, file: &Path, args: &[&str]) -> serde_json::Value {
    let output = replay(dir)
        .arg(file)
        .args(args)
        .args(["--format", "json"])
        .output()
        .expect("run");
    json_of(&output, "debussy replay")
}

/// `debussy replay` of the transcript fixture `name` with `args`, run in a fresh empty
/// directory.
fn replay_fixture(name: &str, args: &[&str]) -> assert_cmd::assert::Assert {
    let dir = tempfile::tempdir().expect("tempdir");
    replay(dir.path()).arg(fixture(name)).args(args).assert()
}

/// The JSON report of the transcript fixture `name` with `args`, run in a fresh empty
/// directory.
fn fixture_json(name: &str, args: &[&str]) -> serde_json::Value {
    let dir = tempfile::tempdir().expect("tempdir");
    json(dir.path(), &fixture(name), args)
}

#[test]
fn task_subagent_transcript_ends_at_26_555_tokens() {
    replay_fixture("claude-task-subagent.jsonl", &[])
        .success()
        .stdout(contains("end: 26,555 / 200,000 tokens (13.3%, exact)"))
        .stdout(contains("71 subagent lines ignored"))
        .stdout(contains("no stop would have fired"));

    let report = fixture_json("claude-task-subagent.jsonl", &[]);
    assert_eq!(report["final"]["tokens"], 26_555);
    assert_eq!(report["final"]["window"]["tokens"], 200_000);
    assert_eq!(report["final"]["window"]["source"], "reported");
    assert_eq!(report["final"]["exactness"], "exact");
    assert_eq!(report["threshold_percent"], 80.0);
    assert!(report["stop"].is_null());
    let turns = report["turns"].as_array().expect("turns");
    assert_eq!(turns.len(), 2);
    assert_eq!(turns[0]["tokens"], 24_424);
    assert_eq!(turns[0]["line"], 3);
    assert_eq!(turns[1]["tokens"], 26_555);
    assert_eq!(turns[1]["line"], 77);
}

#[test]
fn custom_agent_transcript_ends_at_24_910_tokens() {
    replay_fixture("claude-custom-agent.jsonl", &[])
        .success()
        .stdout(contains("end: 24,910 / 200,000 tokens"));
    let report = fixture_json("claude-custom-agent.jsonl", &[]);
    assert_eq!(report["final"]["tokens"], 24_910);
    assert_eq!(report["final"]["turns"], 3);
    assert_eq!(report["final"]["tool_calls"], 2);
    let tokens: Vec<u64> = report["turns"]
        .as_array()
        .expect("turns")
        .iter()
        .map(|row| row["tokens"].as_u64().expect("tokens"))
        .collect();
    assert_eq!(tokens, [24_495, 24_694, 24_910]);
}

#[test]
fn a_lower_threshold_shows_where_the_stop_would_fire() {
    replay_fixture("claude-task-subagent.jsonl", &["--context-threshold", "10"])
        .success()
        .stdout(contains(
            "-> stop would fire at line 3: context at 24,424 of 200,000 tokens (window: table) reached the 10% threshold (20,000)",
        ));
    let report = fixture_json(
        "claude-task-subagent.jsonl",
        &["--context-threshold", "12.5"],
    );
    // 24,424 is 12.2 %: the first turn passes. The Task result on line 76 is estimated
    // (o200k tokens) on top of it and crosses 25,000 before the next usage (26,555 on
    // line 77) confirms it: the stop fires one line early, as it should.
    assert_eq!(report["stop"]["line"], 76);
    assert_eq!(report["stop"]["turn"], 1);
    assert_eq!(report["stop"]["reason"]["reason"], "context_threshold");
    assert_eq!(report["stop"]["reason"]["limit"], 25_000);
    let estimated = report["stop"]["reason"]["tokens"].as_u64().expect("tokens");
    assert!((25_000..=26_555 + 500).contains(&estimated), "{estimated}");
}

#[test]
fn window_flag_overrides_the_reported_window() {
    let report = fixture_json("claude-custom-agent.jsonl", &["--window", "25000"]);
    assert_eq!(report["final"]["window"]["tokens"], 25_000);
    assert_eq!(report["final"]["window"]["source"], "configured");
    // 80 % of 25,000 = 20,000: the first message (24,495) already crosses it.
    assert_eq!(report["stop"]["line"], 3);
}

#[test]
fn odd_lines_are_counted_not_fatal() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("odd.jsonl");
    let fixture_text =
        std::fs::read_to_string(fixture("claude-custom-agent.jsonl")).expect("fixture");
    std::fs::write(
        &file,
        format!("Warning: something on stdout\n{{\"type\":\"brand_new\"}}\n\n{fixture_text}"),
    )
    .expect("write");
    replay(dir.path())
        .arg(&file)
        .assert()
        .success()
        .stdout(contains("1 unknown line and 1 non-JSON line"))
        .stdout(contains("end: 24,910 / 200,000 tokens"));
}

#[test]
fn bad_input_is_a_usage_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    replay(dir.path())
        .arg("missing.jsonl")
        .assert()
        .code(2)
        .stderr(contains("cannot open transcript missing.jsonl"));
    replay_fixture("claude-custom-agent.jsonl", &["--context-threshold", "0"])
        .code(2)
        .stderr(contains("--context-threshold 0 is out of range"));
    replay_fixture("claude-custom-agent.jsonl", &["--window", "0"])
        .code(2)
        .stderr(contains("--window must be a positive"));
}

#[test]
fn text_report_reads_well() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::copy(
        fixture("claude-task-subagent.jsonl"),
        dir.path().join("session.jsonl"),
    )
    .expect("copy");
    let output = replay(dir.path())
        .args(["session.jsonl", "--context-threshold", "12.5"])
        .output()
        .expect("run");
    assert!(output.status.success());
    insta::assert_snapshot!(String::from_utf8(output.stdout).expect("utf-8"));
}

#[test]
fn the_context_limit_marker_of_a_saved_session_is_not_a_line_of_output() {
    let dir = tempfile::tempdir().expect("tempdir");
    let original = fixture("claude-custom-agent.jsonl");
    let marked = dir.path().join("attempt-1-session-1.jsonl");
    let text = std::fs::read_to_string(&original).expect("fixture");
    std::fs::write(&marked, format!("CONTEXT_LIMIT_RESTART\n{text}")).expect("write");
    let plain = json(dir.path(), &original, &[]);
    let with_marker = json(dir.path(), &marked, &[]);
    assert_eq!(
        with_marker["text_lines"], plain["text_lines"],
        "the marker is not agent text"
    );
    assert_eq!(with_marker["final"]["tokens"], 24_910);
    let line = |report: &serde_json::Value| report["turns"][0]["line"].as_u64().expect("line");
    assert_eq!(
        line(&with_marker),
        line(&plain) + 1,
        "line numbers match the file"
    );
}

#[test]
fn a_file_without_transcript_lines_is_a_failure_that_says_so() {
    let dir = tempfile::tempdir().expect("tempdir");
    for (name, text) in [
        ("empty.jsonl", ""),
        ("prose.txt", "# notes\nnot a transcript\n\n"),
        ("other.jsonl", "{\"type\":\"brand_new\"}\n"),
    ] {
        let file = dir.path().join(name);
        std::fs::write(&file, text).expect("write");
        for format in ["text", "json"] {
            replay(dir.path())
                .arg(&file)
                .args(["--format", format])
                .assert()
                .code(1)
                .stdout("")
                .stderr(contains(format!("{name} has no transcript lines")))
                .stderr(contains("replay reads a session log"));
        }
    }
}

#[test]
fn a_codex_rollout_replays_one_row_per_request_with_its_reported_window() {
    let report = fixture_json("codex-rollout.jsonl", &[]);
    let turns = report["turns"].as_array().expect("turns");
    assert_eq!(turns.len(), 2, "{report:#}");
    assert_eq!(report["final"]["window"]["tokens"], 258_400);
    assert_eq!(report["final"]["window"]["source"], "reported");
    assert_eq!(report["final"]["reported_tokens"], 1_020);
    assert_eq!(report["final"]["billed"]["output"], 40);
    let stopped = fixture_json("codex-rollout.jsonl", &["--window", "1200"]);
    assert_eq!(stopped["stop"]["turn"], 1, "{stopped:#}");
}

#[test]
fn a_codex_session_log_replays_the_rollout_kept_beside_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("attempt-1-session-1.jsonl");
    std::fs::copy(fixture("codex-exec.jsonl"), &log).expect("copy");
    replay(dir.path())
        .arg(&log)
        .assert()
        .code(2)
        .stderr(contains("carries no usage"));
    let day = dir
        .path()
        .join("attempt-1-session-1.home/sessions/2026/11/25");
    std::fs::create_dir_all(&day).expect("mkdir");
    std::fs::copy(fixture("codex-rollout.jsonl"), day.join("rollout-x.jsonl")).expect("copy");
    replay(dir.path())
        .arg(&log)
        .assert()
        .success()
        .stdout(contains("rollout-x.jsonl"))
        .stdout(contains("end: 1,047 / 258,400 tokens"));
}

#[test]
fn a_gemini_transcript_is_estimated_with_the_reported_totals_beside_it() {
    replay_fixture("gemini-stream.jsonl", &[])
        .success()
        .stdout(contains("gemini-2.5-pro"))
        .stdout(contains("(0.0%, estimated); window: table"))
        .stdout(contains(
            "the agent reported 2,001 input and 10 output tokens, summed over its requests",
        ));
    let report = fixture_json("gemini-stream.jsonl", &[]);
    assert_eq!(
        report["turns"].as_array().map(Vec::len),
        Some(2),
        "{report:#}"
    );
    assert_eq!(report["final"]["exactness"], "estimated");
}

/// Off a terminal (a pipe, a log file, CI), a diagnostic is not wrapped: a path longer
/// than a line stays whole, to be copied or searched for.
#[test]
fn a_diagnostic_off_a_terminal_keeps_a_long_path_on_its_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let deep = dir
        .path()
        .join("a-directory-with-a-long-name/and-another-below-it/and-a-third-past-eighty-columns");
    std::fs::create_dir_all(&deep).expect("mkdir");
    let file = deep.join("session.jsonl");
    std::fs::write(&file, "").expect("write");
    let output = replay(dir.path())
        .arg(&file)
        .assert()
        .code(1)
        .get_output()
        .clone();
    let stderr = String::from_utf8_lossy(&output.stderr);
    let said = format!("{} has no transcript lines", file.display());
    assert!(stderr.lines().any(|line| line.contains(&said)), "{stderr}");
}
