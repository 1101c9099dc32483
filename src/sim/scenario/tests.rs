//! Tests of scenario parsing, validation errors (with their locations) and selection.

use super::*;
use crate::sim::Usage;

fn parse(text: &str) -> Result<Scenario, ScenarioError> {
    Scenario::parse(text, Path::new("demo/sim-scenario.yaml"))
}

/// The error's line, column and message.
fn error(text: &str) -> (usize, usize, String) {
    match parse(text).expect_err("invalid") {
        ScenarioError::Parse {
            line,
            column,
            message,
            ..
        } => (line, column, message),
        other @ ScenarioError::Read { .. } => panic!("unexpected {other}"),
    }
}

fn selector(phase: Option<&str>, attempt: u32, restart: u32) -> Selector {
    Selector {
        phase: phase.map(str::to_owned),
        attempt,
        restart,
    }
}

const FULL: &str = r#"
window: 100000
model: sim-model
scripts:
  - phase: 1
    restart: 0
    expect_prompt: ["Phase 1"]
    turns:
      - say: "Starting"
        think: "plan it"
        percent: 40
        tools:
          - todos:
              - content: Write the greeting
                status: in_progress
                active_form: Writing the greeting
          - write: {path: demo/greeting.txt, content: "hello\n"}
          - bash: ls demo
          - bash: {command: "sleep 5", description: slow, timeout_ms: 100}
          - read: demo/greeting.txt
          - read: {path: "${SCENARIO_DIR}/notes.md"}
      - sleep_ms: 50
      - context: 90000
        say: more
      - usage: {input_tokens: 3, cache_read_input_tokens: 100, output_tokens: 7}
        say: exact
      - compact: {pre_tokens: 150000}
      - say: delegating
        tools:
          - task:
              description: Look around
              prompt: Find the files
              turns:
                - say: looking
                  percent: 95
                  tools: [{bash: ls}]
              result: Found two files
          - done: completed
          - done: {status: blocked, reason: needs a human, phase: 2}
    result: {subtype: error_max_turns, text: stopped}
    exit_code: 3
  - attempt: 2
    turns:
      - crash: {signal: KILL, stderr: boom, partial_line: true}
  - turns:
      - say: default
"#;

#[test]
fn a_full_scenario_parses() {
    let scenario = parse(FULL).expect("valid");
    assert_eq!(scenario.window, 100_000);
    assert_eq!(scenario.model.as_deref(), Some("sim-model"));
    assert_eq!(scenario.scripts.len(), 3);
    let script = &scenario.scripts[0];
    assert_eq!(script.phase.as_deref(), Some("1"));
    assert_eq!(script.restart, Some(0));
    assert_eq!(script.exit_code, 3);
    assert_eq!(script.result.subtype, "error_max_turns");
    assert!(script.result.is_error());
    assert_eq!(script.turns.len(), 6);
    let Turn::Message(first) = &script.turns[0] else {
        panic!("not a message")
    };
    assert_eq!(first.usage, UsageSpec::Percent(40.0));
    assert_eq!(first.tools.len(), 6);
    assert!(
        matches!(&first.tools[0], Action::Todos(todos) if todos[0].status == TodoStatus::InProgress)
    );
    assert!(
        matches!(&first.tools[3], Action::Bash(bash) if bash.timeout_ms() == 100 && bash.description() == Some("slow"))
    );
    assert!(
        matches!(&first.tools[5], Action::Read(read) if read.path() == "${SCENARIO_DIR}/notes.md")
    );
    assert_eq!(script.turns[1], Turn::Sleep { sleep_ms: 50 });
    assert!(matches!(&script.turns[2], Turn::Message(m) if m.usage == UsageSpec::Context(90_000)));
    assert!(
        matches!(&script.turns[3], Turn::Message(m) if m.usage == UsageSpec::Exact(Usage {
            input_tokens: 3, cache_read_input_tokens: 100, cache_creation_input_tokens: 0, output_tokens: 7
        }))
    );
    assert_eq!(
        script.turns[4],
        Turn::Compact(CompactSpec {
            trigger: "auto".into(),
            pre_tokens: Some(150_000)
        })
    );
    let Turn::Message(last) = &script.turns[5] else {
        panic!("not a message")
    };
    let Action::Task(task) = &last.tools[0] else {
        panic!("not a task")
    };
    assert_eq!(task.subagent_type, "general-purpose");
    assert_eq!(task.turns.len(), 1);
    assert_eq!(
        last.tools[1],
        Action::Done(DoneSpec::Status(DoneStatus::Completed))
    );
    let Action::Done(blocked) = &last.tools[2] else {
        panic!("not done")
    };
    assert_eq!(blocked.status(), DoneStatus::Blocked);
    assert_eq!(blocked.reason(), Some("needs a human"));
    assert_eq!(blocked.phase(), Some("2"));
    let Turn::Crash(crash) = &scenario.scripts[1].turns[0] else {
        panic!("not a crash")
    };
    assert_eq!(crash.signal, Some(nix::sys::signal::Signal::SIGKILL));
    assert!(crash.partial_line);
    assert_eq!(crash.exit_code, 1);
}

#[test]
fn defaults() {
    let scenario = parse("scripts:\n  - turns:\n      - say: hi\n").expect("valid");
    assert_eq!(scenario.window, DEFAULT_WINDOW);
    assert_eq!(scenario.model, None);
    let script = &scenario.scripts[0];
    assert_eq!(script.result, ResultSpec::default());
    assert!(!script.result.is_error());
    assert_eq!(script.exit_code, 0);
    assert!(
        matches!(&script.turns[0], Turn::Message(m) if m.usage == UsageSpec::Auto && m.sleep_ms == 0)
    );
}

#[test]
fn selection_takes_the_first_matching_script() {
    let scenario = parse(FULL).expect("valid");
    let pick = |phase, attempt, restart| {
        let script = scenario
            .select(&selector(phase, attempt, restart))
            .expect("a script");
        scenario
            .scripts
            .iter()
            .position(|s| s == script)
            .expect("listed")
    };
    assert_eq!(pick(Some("1"), 1, 0), 0);
    assert_eq!(
        pick(Some("1"), 1, 1),
        2,
        "restart 1 falls through to the default"
    );
    assert_eq!(
        pick(Some("1"), 2, 0),
        0,
        "phase 1 restart 0 wins over attempt 2"
    );
    assert_eq!(pick(Some("7"), 2, 0), 1);
    assert_eq!(pick(None, 1, 0), 2);
    let strict = parse("scripts:\n  - phase: a\n    turns: [{say: x}]\n").expect("valid");
    assert_eq!(strict.select(&selector(Some("b"), 1, 0)), None);
    assert_eq!(strict.select(&selector(None, 1, 0)), None);
}

#[test]
fn yaml_syntax_errors_have_a_location() {
    let (line, column, message) = error("scripts:\n  - turns: [\n");
    assert!(line >= 2, "{line}:{column} {message}");
}

#[test]
fn unknown_keys_are_rejected_where_they_are() {
    let (line, _, message) = error("scripts:\n  - turns:\n      - say: hi\n        sya: typo\n");
    assert_eq!(line, 4);
    assert!(message.contains("unknown field `sya`"), "{message}");
    let (line, _, message) = error("windw: 5\nscripts: []\n");
    assert_eq!(line, 1);
    assert!(message.contains("unknown field `windw`"), "{message}");
}

#[test]
fn unknown_actions_name_the_valid_ones() {
    let (line, _, message) =
        error("scripts:\n  - turns:\n      - say: hi\n        tools:\n          - delete: x\n");
    assert_eq!(line, 5);
    assert!(message.contains("unknown variant `delete`"), "{message}");
    assert!(message.contains("write"), "{message}");
}

#[test]
fn semantic_errors_point_at_the_turn() {
    let cases = [
        (
            "      - say: hi\n        compact: {}\n",
            "takes no other keys",
        ),
        (
            "      - say: hi\n        context: 5\n        percent: 5\n",
            "at most one of",
        ),
        ("      - percent: 5\n", "needs `say`, `think` or `tools`"),
        ("      - {}\n", "needs `say`"),
        ("      - say: hi\n        percent: -3\n", "out of range"),
        (
            "      - crash: {signal: SIGNOPE}\n",
            "unknown signal `SIGNOPE`",
        ),
    ];
    for (turn, expected) in cases {
        let text = format!("scripts:\n  - turns:\n{turn}");
        let (line, _, message) = error(&text);
        assert!(message.contains(expected), "{turn:?}: {message}");
        assert!(line >= 3, "{turn:?}: line {line}");
    }
}

#[test]
fn scenario_level_errors() {
    let (line, _, message) = error("scripts: []\n");
    assert!(message.contains("`scripts` is empty"), "{message}");
    assert_eq!(line, 1);
    let (line, column, message) = error("model: m\nwindow: 0\nscripts:\n  - turns: [{say: x}]\n");
    assert!(message.contains("`window` must be a positive"), "{message}");
    assert_eq!((line, column), (2, 1), "the key the rule is about");
    let (_, _, message) = error("window: 10\n");
    assert!(message.contains("missing field `scripts`"), "{message}");
}

#[test]
fn a_scenario_level_error_is_reported_by_the_full_check_too() {
    // The check of every problem looked for the turn at line 0 and panicked.
    let text = "window: 0\nscripts:\n  - phase: 1\n    turns:\n      - {say: hi, percent: 10}\n";
    let errors = Scenario::check(text, Path::new("s.yaml")).expect_err("invalid");
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0]
            .to_string()
            .starts_with("invalid sim scenario s.yaml:1:1: `window` must be a positive"),
        "{}",
        errors[0]
    );
}

#[test]
fn a_pause_longer_than_a_day_is_refused() {
    let (_, _, message) = error("scripts:\n  - turns: [{sleep_ms: 18446744073709551615}]\n");
    assert!(
        message.contains("`sleep_ms: 18446744073709551615` is out of range (0 to 86400000, a day)"),
        "{message}"
    );
    assert!(parse("scripts:\n  - turns: [{sleep_ms: 86400000}]\n").is_ok());
}

#[test]
fn subagents_cannot_compact_or_nest_tasks() {
    let nested = "scripts:\n  - turns:\n      - tools:\n          - task:\n              description: d\n              prompt: p\n              result: r\n              turns:\n                - tools:\n                    - task: {description: d, prompt: p, result: r}\n";
    let (line, _, message) = error(nested);
    assert!(message.contains("cannot start another `task`"), "{message}");
    assert!(line >= 4, "{line}");
    let compact = "scripts:\n  - turns:\n      - tools:\n          - task:\n              description: d\n              prompt: p\n              result: r\n              turns:\n                - compact: {}\n";
    let (_, _, message) = error(compact);
    assert!(message.contains("cannot `compact`"), "{message}");
}

#[test]
fn errors_render_with_file_line_and_column() {
    let err = parse("scripts:\n  - turns: 3\n").expect_err("invalid");
    let text = err.to_string();
    assert!(
        text.starts_with("invalid sim scenario demo/sim-scenario.yaml:2:"),
        "{text}"
    );
    assert!(!text.contains(" at line "), "location printed once: {text}");
    let help = miette::Diagnostic::help(&err).expect("help").to_string();
    assert!(help.contains("docs/sim-agent.md"), "{help}");
    assert!(miette::Diagnostic::labels(&err).is_some_and(|mut labels| labels.next().is_some()));
}

#[test]
fn unreadable_files_name_the_path() {
    let err = Scenario::load(Path::new("/nonexistent/sim.yaml")).expect_err("missing");
    assert!(err.to_string().contains("/nonexistent/sim.yaml"), "{err}");
}

#[test]
fn selectors_display_for_messages() {
    assert_eq!(
        selector(Some("2"), 1, 3).to_string(),
        "phase 2, attempt 1, restart 3"
    );
    assert_eq!(
        selector(None, 1, 0).to_string(),
        "no phase, attempt 1, restart 0"
    );
}
