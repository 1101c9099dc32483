//! What debussy leaves for people to read besides its reports: the run's log file and
//! the shell completion scripts.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::support::project::{commit_all, init_repo, sim_run_args, wait_exit};
use crate::support::scenario::{Crash, Scenario, Status, Turn};

fn debussy(root: &Path, args: &[&str]) -> Command {
    let mut command = crate::support::debussy(root, args);
    command.stdout(Stdio::null()).stderr(Stdio::null());
    command
}

const PLAN: &str = "# Log Plan - Master Plan\n\n## Phases\n\n| Phase | Title | Status |\n|---|---|---|\n| 1 | [One](phase-1.md) | Pending |\n";
const PHASE: &str = "# Log Phase 1: One\n\n**Status:** Pending\n**Depends On:** N/A\n\n## Gates\n- check: `test -s out.txt` passes\n\n## Tasks\n- [ ] 1.1: Write out.txt\n";

/// A committed git repository in `root` with a one-phase plan whose agent writes
/// `out.txt` and reports done.
fn committed_plan(root: &std::path::Path) {
    init_repo(root);
    std::fs::create_dir_all(root.join("plan")).expect("mkdir");
    std::fs::write(root.join("plan/MASTER_PLAN.md"), PLAN).expect("plan");
    std::fs::write(root.join("plan/phase-1.md"), PHASE).expect("phase");
    let scenario = Scenario::playing([Turn::say("writing")
        .percent(10)
        .writes("out.txt", "hi\n")
        .done_as(Status::Completed)]);
    std::fs::write(root.join("plan/sim-scenario.yaml"), scenario.to_yaml()).expect("scenario");
    std::fs::write(root.join(".gitignore"), ".home/\n").expect("ignore");
    commit_all(root, "plan");
}

#[test]
fn the_run_log_is_private_and_holds_debussy_lines_only() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    committed_plan(root);
    let mut child = debussy(
        root,
        &sim_run_args("plan/MASTER_PLAN.md", &["--no-interactive"]),
    )
    .spawn()
    .expect("spawn");
    assert_eq!(wait_exit(&mut child, Duration::from_secs(120)), 0);

    let log = root.join(".debussy/logs/orchestrator.log");
    let mode = std::fs::metadata(&log).expect("log").permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "the log holds prompts and paths: {mode:o}");
    let text = std::fs::read_to_string(&log).expect("read log");
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON log line"))
        .collect();
    assert!(!lines.is_empty());
    let foreign: Vec<&serde_json::Value> = lines
        .iter()
        .filter(|l| {
            !l["target"]
                .as_str()
                .is_some_and(|t| t.starts_with("debussy"))
                && l["level"] != "WARN"
                && l["level"] != "ERROR"
        })
        .collect();
    assert!(
        foreign.is_empty(),
        "{} of {} lines are other crates' debug output, e.g. {}",
        foreign.len(),
        lines.len(),
        foreign[0]
    );
    assert!(!text.contains("TypeId("), "{text}");
}

fn completions(shell: &str) -> String {
    let dir = tempfile::tempdir().expect("tempdir");
    let output = debussy(dir.path(), &["completions", shell])
        .stdout(Stdio::piped())
        .output()
        .expect("completions");
    assert!(output.status.success());
    String::from_utf8(output.stdout).expect("utf-8")
}

#[test]
fn completions_hide_the_internal_command_and_offer_agent_kinds() {
    for shell in ["bash", "zsh", "fish"] {
        let script = completions(shell);
        assert!(
            !script.contains("__sim-agent"),
            "{shell} completes the internal __sim-agent"
        );
        assert!(script.contains("audit"), "{shell}: {script}");
    }
    let fish = completions("fish");
    let start = fish
        .find("__fish_debussy_using_subcommand run\" -l agent ")
        .expect("fish completes run --agent");
    // One `complete` command, whose value list may span lines.
    let agent = fish[start..]
        .split("\ncomplete ")
        .next()
        .expect("the --agent entry");
    assert!(
        agent.contains("claude") && agent.contains("sim"),
        "--agent offers the kinds: {agent}"
    );
    assert!(
        agent.contains(" -f "),
        "--agent offers no file names: {agent}"
    );
}

/// Replaces what differs between two runs of the same plan (times, ids, paths, pids,
/// commit hashes, durations, tool call ids, the last bits of sums) with fixed words, so an event's shape can be compared.
fn normalised(event: &mut serde_json::Value, root: &str, run_id: &str) {
    match event {
        serde_json::Value::Object(map) => {
            for (key, value) in map.iter_mut() {
                match key.as_str() {
                    "ts" => *value = "TS".into(),
                    "pid" => *value = 0.into(),
                    "duration_ms" | "duration_secs" => *value = 0.into(),
                    _ => normalised(value, root, run_id),
                }
            }
        }
        serde_json::Value::Array(items) => {
            for item in items {
                normalised(item, root, run_id);
            }
        }
        // Sums of costs may differ in their last bit with the order figures arrived in.
        serde_json::Value::Number(number) if number.is_f64() => {
            let rounded = (number.as_f64().unwrap_or_default() * 1e6).round() / 1e6;
            *event = serde_json::json!(rounded);
        }
        serde_json::Value::String(text) => {
            let mut out = text.replace(root, "ROOT").replace(run_id, "RUN");
            if out.len() == 40 && out.bytes().all(|b| b.is_ascii_hexdigit()) {
                out = "COMMIT".into();
            }
            if let Some(rest) = out.strip_prefix("toolu_sim_") {
                out = format!("toolu_sim_ID{}", &rest[rest.find('_').unwrap_or(0)..]);
            }
            *text = out;
        }
        _ => {}
    }
}

/// The JSON event stream is a public interface (docs/events.md): one recorded run of
/// the bundled demo plan pins every event but the paced context figures, byte for byte.
#[test]
fn the_json_stream_of_the_demo_run_is_pinned() {
    // The agent's tool calls name the project and the debussy binary by absolute path,
    // and their size counts in the context estimate: both get paths of one length
    // wherever the suite runs.
    let dir = tempfile::Builder::new()
        .prefix("debussy-pin-")
        .tempdir_in("/tmp")
        .expect("tempdir");
    let root = dir.path();
    init_repo(root);
    std::fs::create_dir_all(root.join(".home")).expect("home");
    let binary = root.join(".home/debussy");
    if std::fs::hard_link(crate::support::DEBUSSY, &binary).is_err() {
        std::fs::copy(crate::support::DEBUSSY, &binary).expect("copy debussy");
    }
    let demo = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/demo");
    for entry in std::fs::read_dir(&demo).expect("demo") {
        let path = entry.expect("entry").path();
        // The demo's inputs are files; `notes/` is what running the README's first
        // command in place wrote (ignored by git).
        if path.is_file() {
            std::fs::copy(&path, root.join(path.file_name().expect("name"))).expect("copy");
        }
    }
    std::fs::write(root.join(".gitignore"), ".home/\n").expect("ignore");
    commit_all(root, "demo");
    let command = debussy(
        root,
        &sim_run_args(
            "MASTER_PLAN.md",
            &["--no-interactive", "--output-format", "json"],
        ),
    );
    let args: Vec<std::ffi::OsString> = command.get_args().map(ToOwned::to_owned).collect();
    let envs: Vec<(std::ffi::OsString, Option<std::ffi::OsString>)> = command
        .get_envs()
        .map(|(k, v)| (k.to_owned(), v.map(ToOwned::to_owned)))
        .collect();
    let mut command = Command::new(&binary);
    command.args(args).current_dir(root).stdin(Stdio::null());
    for (key, value) in envs {
        match value {
            Some(value) => command.env(key, value),
            None => command.env_remove(key),
        };
    }
    let output = command.stdout(Stdio::piped()).output().expect("run");
    assert!(output.status.success(), "{output:?}");
    let text = String::from_utf8(output.stdout).expect("utf-8");
    let mut events: Vec<serde_json::Value> = Vec::new();
    for event in text
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).expect("a JSON event"))
    {
        // A session stopped for its context may print a line more or less before the
        // stop reaches it: its activity and its last figures (but for the stop itself)
        // are not part of the pinned shape.
        let mut event = event;
        if event["event"] == "session_ended" && event["outcome"] == "context_limit" {
            let stop = event["snapshot"]["stop"].take();
            event["snapshot"] = serde_json::json!({ "stop": stop });
            let started = events
                .iter()
                .rposition(|e| e["event"] == "session_started")
                .expect("the session started");
            let mut index = 0;
            events.retain(|e| {
                index += 1;
                index <= started + 1 || e["event"] != "activity"
            });
        }
        if event["event"] != "context" {
            events.push(event);
        }
    }
    let run_id = events[0]["run_id"].as_str().expect("run id").to_owned();
    let root = root.to_str().expect("utf-8 path").to_owned();
    let lines: Vec<String> = events
        .iter_mut()
        .map(|event| {
            normalised(event, &root, &run_id);
            event.to_string()
        })
        .collect();
    insta::assert_snapshot!(lines.join("\n"));
}

#[test]
fn with_output_file_the_terminal_still_gets_the_summary() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    committed_plan(root);
    let output = crate::support::debussy(
        root,
        &sim_run_args("plan/MASTER_PLAN.md", &["--no-interactive"]),
    )
    .env("DEBUSSY_OUTPUT", "file")
    .output()
    .expect("runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains("PHASE  TITLE"),
        "the summary table: {stdout}"
    );
    assert!(stdout.contains("\nRun "), "{stdout}");
    assert!(
        !stdout.contains("session started"),
        "the run's lines go to the log only: {stdout}"
    );
    let logs: Vec<_> = std::fs::read_dir(root.join(".debussy/logs"))
        .expect("logs")
        .flatten()
        .filter(|entry| entry.file_name().to_string_lossy().starts_with("run-"))
        .collect();
    assert_eq!(logs.len(), 1, "one run log");
}

/// `text`, printed by `what`, holds no control character and shows `escaped`.
fn assert_shown_as_text(what: &str, text: &str, escaped: &str) {
    assert!(
        !text.contains(['\x1b', '\x07', '\r', '\u{9b}']),
        "{what} sent control characters: {text:?}"
    );
    assert!(text.contains(escaped), "{what} shows {escaped}: {text}");
}

/// What an agent says goes to the terminal as text: an escape sequence in it (one that
/// sets the window title, clears the screen or writes the clipboard) is shown, never
/// sent, in the run's lines, its log file and `show`.
#[test]
fn the_agents_escape_sequences_reach_the_terminal_as_text() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    committed_plan(root);
    let evil = "Done.\x1b]0;PWNED\x07\x1b[2J\x1b]52;c;ZWNobyBoaQ==\x07\r\u{9b}31m";
    let scenario = Scenario::playing([
        Turn::say(evil).percent(10).writes("out.txt", "hi\n"),
        Turn::say("Colour\x1b[8mhidden").percent(11),
        Turn::say(evil).done_as(Status::Completed),
    ]);
    std::fs::write(root.join("plan/sim-scenario.yaml"), scenario.to_yaml()).expect("scenario");
    std::fs::create_dir_all(root.join(".debussy")).expect("mkdir");
    std::fs::write(root.join(".debussy/config.yaml"), "output: both\n").expect("config");
    commit_all(root, "an agent that says escapes");
    let run = crate::support::debussy(
        root,
        &sim_run_args("plan/MASTER_PLAN.md", &["--no-interactive", "-v"]),
    )
    .output()
    .expect("run");
    let shown = String::from_utf8_lossy(&run.stdout).into_owned();
    assert!(run.status.success(), "{shown}");
    let log_dir = root.join(".debussy/logs");
    let log = std::fs::read_dir(&log_dir)
        .expect("logs")
        .filter_map(Result::ok)
        .find(|entry| entry.file_name().to_string_lossy().starts_with("run-"))
        .expect("the run's log");
    let logged = std::fs::read_to_string(log.path()).expect("read log");
    let show = crate::support::debussy(root, &["show"])
        .output()
        .expect("show");
    let showed = String::from_utf8_lossy(&show.stdout).into_owned();
    for (what, text) in [("the run", &shown), ("its log", &logged), ("show", &showed)] {
        assert_shown_as_text(what, text, r"Done.\u{1b}]0;PWNED\u{7}\u{1b}[2J");
    }
    // debussy's run lines are never coloured, so an agent's colour cannot hide text there.
    for (what, text) in [("the run", &shown), ("its log", &logged)] {
        assert_shown_as_text(what, text, r"Colour\u{1b}[8mhidden");
    }
}

/// An agent that fails quoting escape sequences: its last words reach the run's lines
/// and `status` as text.
#[test]
fn an_agents_last_words_reach_the_terminal_as_text() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    committed_plan(root);
    let scenario = Scenario::playing([Turn::crash(
        Crash::exit(3).stderr("fatal\x1b]0;PWNED\x07\x1b[2J"),
    )]);
    std::fs::write(root.join("plan/sim-scenario.yaml"), scenario.to_yaml()).expect("scenario");
    commit_all(root, "an agent that fails");
    let run = crate::support::debussy(
        root,
        &sim_run_args(
            "plan/MASTER_PLAN.md",
            &["--no-interactive", "--max-retries", "0"],
        ),
    )
    .output()
    .expect("run");
    assert_eq!(run.status.code(), Some(1));
    let status = crate::support::debussy(root, &["status"])
        .output()
        .expect("status");
    for (what, bytes) in [("the run", &run.stdout), ("status", &status.stdout)] {
        let text = String::from_utf8_lossy(bytes);
        assert_shown_as_text(what, &text, r"fatal\u{1b}]0;PWNED\u{7}\u{1b}[2J");
    }
}

/// A plan's own text quoted in an error (a row the audit refuses) reaches stderr and
/// `audit` as text.
#[test]
fn a_plans_escape_sequences_reach_the_terminal_as_text() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    committed_plan(root);
    let master = root.join("plan/MASTER_PLAN.md");
    let mut text = std::fs::read_to_string(&master).expect("plan");
    text.push_str("| 2 | Two\x1b]0;PWNED\x07 | Pending |\n");
    std::fs::write(&master, text).expect("plan");
    commit_all(root, "a row that links nothing");
    let run = crate::support::debussy(
        root,
        &sim_run_args("plan/MASTER_PLAN.md", &["--no-interactive"]),
    )
    .output()
    .expect("run");
    let audit = crate::support::debussy(root, &["audit", "plan/MASTER_PLAN.md"])
        .output()
        .expect("audit");
    for (what, bytes) in [("the run's error", &run.stderr), ("audit", &audit.stdout)] {
        let text = String::from_utf8_lossy(bytes);
        assert_shown_as_text(what, &text, r"Two\u{1b}]0;PWNED\u{7}");
    }
}
