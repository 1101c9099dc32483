//! Bad configuration: exit 2, nothing on stdout, and a message naming where and why.

use super::support::Sandbox;
use crate::support::project::assert_success;

/// Run `debussy config` expecting a usage error; returns stderr.
fn usage_error(cmd: &mut assert_cmd::Command) -> String {
    let output = cmd.output().expect("runs");
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    assert!(output.stdout.is_empty(), "nothing on stdout: {output:?}");
    String::from_utf8(output.stderr).expect("utf-8")
}

/// `debussy config` with `text` as the project's configuration file is a usage error
/// whose message says each of `needles`, `{file}` in them standing for the file's path.
fn assert_project_file_refused(s: &Sandbox, text: &str, needles: &[&str]) {
    let file = s.project_file(text).display().to_string();
    let stderr = usage_error(&mut s.debussy(&["config"]));
    let needles: Vec<String> = needles.iter().map(|n| n.replace("{file}", &file)).collect();
    assert_has(
        &stderr,
        &needles.iter().map(String::as_str).collect::<Vec<_>>(),
    );
}

/// `debussy config` with the environment variable `name` set to `value` is a usage
/// error whose message says each of `needles`.
fn assert_variable_refused(s: &Sandbox, name: &str, value: &str, needles: &[&str]) {
    let stderr = usage_error(s.debussy(&["config"]).env(name, value));
    assert_has(&stderr, needles);
}

/// Asserts that `haystack` contains each of `needles`.
fn assert_has(haystack: &str, needles: &[&str]) {
    for needle in needles {
        assert!(
            haystack.contains(needle),
            "missing `{needle}` in:\n{haystack}"
        );
    }
}

#[test]
fn malformed_yaml_names_file_line_and_column() {
    let s = Sandbox::new();
    assert_project_file_refused(
        &s,
        "model: opus\nagent:\n  kind: sim\n   command: x\n",
        &[
            "{file}:4:11: invalid YAML",
            "mapping values are not allowed",
            "check the indentation",
        ],
    );
}

#[test]
fn a_repeated_key_points_at_the_repeat() {
    let s = Sandbox::new();
    assert_project_file_refused(
        &s,
        "model: a\ntimeout: 5\nmodel: b\n",
        &["{file}:3:1: key `model` appears twice"],
    );
}

#[test]
fn unknown_keys_get_a_suggestion() {
    let s = Sandbox::new();
    assert_project_file_refused(
        &s,
        "model: opus\nagent:\n  kindd: sim\n",
        &[
            "{file}:3:3: unknown key `agent.kindd`",
            "did you mean `agent.kind`?",
        ],
    );
}

#[test]
fn wrong_types_say_what_was_expected() {
    let s = Sandbox::new();
    assert_project_file_refused(
        &s,
        "timeout: soon\n",
        &[
            "{file}:1:10: `timeout` must be a whole number, at most 604,800 (seconds, a week), found string \"soon\"",
        ],
    );
    assert_project_file_refused(
        &s,
        "agent:\n  kind: claud\n",
        &[
            "{file}:2:9: `agent.kind` must be one of `claude`, `codex`, `gemini` or `sim`",
            "did you mean `claude`?",
        ],
    );
    // A value its own type refuses (a duration) is pointed at, not the mapping that
    // holds it, and the message does not name the mapping twice.
    for (text, at, key) in [
        ("model: opus\nmax_duration: -5m\n", "2:15", "max_duration"),
        ("limits: {max_wait: 5ms}\n", "1:20", "limits.max_wait"),
    ] {
        let s = Sandbox::new();
        assert_project_file_refused(
            &s,
            text,
            &[&format!(
                "{{file}}:{at}: `{key}` must be a duration such as 90m or 2h30m, or null: `"
            )],
        );
    }
}

#[test]
fn out_of_range_values_are_errors_not_warnings() {
    let s = Sandbox::new();
    assert_project_file_refused(
        &s,
        "model: opus\ncontext_threshold: 150\n",
        &["{file}:2:20: `context_threshold` must be greater than 0 and at most 100, found 150"],
    );
    let user = s.user_file("agent:\n  stop_grace: -1\n");
    assert_project_file_refused(
        &s,
        "model: opus\n",
        &[&format!(
            "{}:2:15: `agent.stop_grace` must be 0 or more",
            user.display()
        )],
    );
}

#[test]
fn numbers_past_their_upper_bound_are_refused_with_the_range() {
    let s = Sandbox::new();
    // Each of these used to panic or hang a run: a duration past what an Instant holds.
    assert_project_file_refused(
        &s,
        "timeout: 18446744073709551615\n",
        &[
            "config.yaml:1:10: `timeout` must be at most 604,800 (seconds, a week), found 18446744073709551615",
        ],
    );
    assert_project_file_refused(
        &s,
        "restart_delay: 18446744073709551615\n",
        &["config.yaml:1:16: `restart_delay` must be at most 3,600 (seconds, an hour)"],
    );
    for (text, expected) in [
        (
            "timeout: 1e300\n",
            "`timeout` must be a whole number, at most 604,800 (seconds, a week), found floating point",
        ),
        (
            "timeout: .inf\n",
            "`timeout` must be a whole number, at most 604,800 (seconds, a week), found floating point `inf`",
        ),
        (
            "mcp:\n  readiness_timeout: 1e300\n",
            "`mcp.readiness_timeout` must be at most 86,400 (seconds, a day)",
        ),
        // Past 64 bits, the YAML parser has no type for the number: still the value's
        // fault, not the file's syntax.
        (
            "jobs: 18446744073709551616\n",
            "config.yaml:1:7: `jobs` must be a whole number, at most 64 (phases at once), found integer `18446744073709551616`",
        ),
    ] {
        assert_project_file_refused(&s, text, &[expected]);
    }
    s.project_file("model: opus\n");
    assert_variable_refused(
        &s,
        "DEBUSSY_MAX_RESTARTS",
        "5000",
        &[
            "environment variable DEBUSSY_MAX_RESTARTS: `max_restarts` must be at most 1,000 (restarts)",
        ],
    );
}

#[test]
fn graphical_diagnostics_underline_the_value_and_give_help() {
    let s = Sandbox::new();
    s.project_file("timeout: 0\n");
    let stderr = usage_error(&mut s.debussy_in(&s.root, &["config"]));
    assert_has(
        &stderr,
        &[
            "debussy::config::out_of_range",
            "config.yaml:1:10]",
            "1 │ timeout: 0",
            "must be greater than 0",
            "help: set `timeout`",
        ],
    );
}

#[test]
fn environment_errors_name_the_variable() {
    let s = Sandbox::new();
    assert_variable_refused(
        &s,
        "DEBUSSY_MODLE",
        "x",
        &[
            "environment variable DEBUSSY_MODLE",
            "did you mean DEBUSSY_MODEL?",
        ],
    );
    assert_variable_refused(
        &s,
        "DEBUSSY_TIMEOUT",
        "soon",
        &["environment variable DEBUSSY_TIMEOUT: `timeout` must be a whole number"],
    );
    assert_variable_refused(
        &s,
        "DEBUSSY_AGENT__KIND",
        "robot",
        &["environment variable DEBUSSY_AGENT__KIND"],
    );
}

#[test]
fn run_time_variables_are_not_configuration() {
    let s = Sandbox::new();
    let output = s
        .debussy(&["config", "--format", "json"])
        .env("DEBUSSY_RUN_ID", "r1")
        .env("DEBUSSY_PHASE_ID", "2")
        .env("DEBUSSY_ATTEMPT", "1")
        .env("DEBUSSY_RESTART", "0")
        .env("DEBUSSY_PROJECT_ROOT", "/elsewhere")
        .env("DEBUSSY_LOG", "warn")
        .output()
        .expect("runs");
    assert_success(&output, "debussy config");
}

#[test]
fn flag_errors_name_the_flag() {
    let s = Sandbox::new();
    let stderr = usage_error(&mut s.debussy(&["config", "--context-threshold", "0"]));
    assert_has(
        &stderr,
        &["flag --context-threshold: `context_threshold` must be greater than 0 and at most 100"],
    );
    let stderr = usage_error(&mut s.debussy(&["config", "--agent", "claud"]));
    assert_has(&stderr, &["flag --agent", "did you mean `claude`?"]);
}

#[test]
fn a_missing_config_file_is_a_clear_error() {
    let s = Sandbox::new();
    let stderr = usage_error(&mut s.debussy(&["--config", "nope.yaml", "config"]));
    assert_has(
        &stderr,
        &["config file nope.yaml does not exist", "--config"],
    );
}

#[test]
fn a_variable_that_is_not_utf8_is_named() {
    use std::os::unix::ffi::OsStrExt as _;
    let s = Sandbox::new();
    let bad = std::ffi::OsStr::from_bytes(b"op\xffus");
    let stderr = usage_error(s.debussy(&["config"]).env("DEBUSSY_MODEL", bad));
    assert_has(
        &stderr,
        &["environment variable DEBUSSY_MODEL is not valid UTF-8"],
    );
}

#[test]
fn bad_profile_keys_name_the_file_line_and_key_with_a_suggestion() {
    let s = Sandbox::new();
    for (text, at, key, help) in [
        (
            "agents:\n  cladue:\n    command: x\n",
            "2:3",
            "unknown key `agents.cladue`",
            "did you mean `agents.claude`?",
        ),
        (
            "agents:\n  codex:\n    comand: x\n",
            "3:5",
            "unknown key `agents.codex.comand`",
            "did you mean `agents.codex.command`?",
        ),
        (
            "agents:\n  gemini:\n    permissions: yolo\n",
            "3:18",
            "`agents.gemini.permissions`",
            "`accept-edits`, `bypass` or `ask`",
        ),
        (
            "agent:\n  command: /a\nagents:\n  claude:\n    command: /b\n",
            "2:12",
            "`agent.command` and",
            "`agent.command` is the old spelling of",
        ),
    ] {
        let file = s.project_file(text);
        let stderr = usage_error(&mut s.debussy(&["config"]));
        let squashed = stderr.split_whitespace().collect::<Vec<_>>().join(" ");
        assert_has(
            &squashed,
            &[&format!("{}:{at}:", file.display()), key, help],
        );
    }
    s.project_file("");
    assert_variable_refused(
        &s,
        "DEBUSSY_AGENTS__CLAUDE__COMAND",
        "x",
        &[
            "DEBUSSY_AGENTS__CLAUDE__COMAND",
            "DEBUSSY_AGENTS__CLAUDE__COMMAND",
        ],
    );
}
