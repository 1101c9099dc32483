//! `debussy audit` and `debussy run --dry-run` over the vendored plan fixtures.
//!
//! Every test copies the fixtures into its own temp directory and runs the real binary
//! there, with `HOME` and `XDG_CONFIG_HOME` pointing into the temp directory, so no
//! user or project configuration and no user agent files leak in. Output paths are
//! then relative to the temp directory; the temp directory itself is redacted.

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use serde_json::Value;

/// A temp directory holding a committed copy of `tests/fixtures/plans`.
pub(crate) struct Sandbox {
    dir: tempfile::TempDir,
}

impl Sandbox {
    pub(crate) fn new() -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/plans");
        copy_dir(&fixtures, dir.path());
        std::fs::create_dir_all(dir.path().join("home")).expect("home");
        // A committed project, as the dry run's git check wants one.
        std::fs::write(dir.path().join(".gitignore"), "home/\n").expect("gitignore");
        crate::support::project::init_repo(dir.path());
        crate::support::project::commit_all(dir.path(), "fixtures");
        Sandbox { dir }
    }

    pub(crate) fn path(&self) -> &Path {
        self.dir.path()
    }

    pub(crate) fn write(&self, relative: &str, text: &str) {
        crate::support::project::write_file(self.path(), relative, text);
    }

    pub(crate) fn debussy(&self, args: &[&str]) -> Command {
        let mut command = Command::new(crate::support::DEBUSSY);
        command
            .current_dir(self.path())
            .env("HOME", self.path().join("home"))
            .env("XDG_CONFIG_HOME", self.path().join("home/.config"))
            .env_remove("CLAUDE_CONFIG_DIR")
            .env_remove("NO_COLOR")
            .env_remove("DEBUSSY_LOG")
            // `run --dry-run` makes the pre-flight checks, which look for the agent
            // program: find the pinned Claude Code CLI (scripts/test-tools) first.
            .env("PATH", tools_path())
            .args(args)
            .timeout(std::time::Duration::from_secs(30));
        for (key, _) in std::env::vars_os() {
            if key.to_string_lossy().starts_with("DEBUSSY_") {
                command.env_remove(key);
            }
        }
        command
    }

    /// Run and return (exit code, stdout with the temp dir redacted, stderr).
    pub(crate) fn run(&self, args: &[&str]) -> (i32, String, String) {
        let output = self.debussy(args).output().expect("runs");
        let redact = |bytes: &[u8]| {
            String::from_utf8_lossy(bytes).replace(&self.path().display().to_string(), "[TMP]")
        };
        (
            output.status.code().expect("exit code"),
            redact(&output.stdout),
            redact(&output.stderr),
        )
    }

    /// `debussy audit PLAN --format json`, parsed.
    pub(crate) fn audit_json(&self, plan: &str, extra: &[&str]) -> (i32, Value) {
        let mut args = vec!["audit", plan, "--format", "json"];
        args.extend_from_slice(extra);
        let (code, stdout, stderr) = self.run(&args);
        let json = serde_json::from_str(&stdout)
            .unwrap_or_else(|err| panic!("not JSON ({err}): {stdout}\nstderr: {stderr}"));
        (code, json)
    }

    /// `debussy audit PLAN --format json` fails with exactly the issues `expected`, by
    /// code and in order; the report.
    pub(crate) fn audit_fails_with(&self, plan: &str, expected: &[&str]) -> Value {
        let (code, json) = self.audit_json(plan, &[]);
        assert_eq!(code, 1, "{plan}: {json:#}");
        assert_eq!(json["passed"], false, "{plan}: {json:#}");
        assert_eq!(codes(&json), expected, "{plan}: {json:#}");
        json
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read fixtures") {
        let entry = entry.expect("entry");
        let target: PathBuf = to.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).expect("copy");
        }
    }
}

pub(crate) fn codes(json: &Value) -> Vec<String> {
    json["issues"]
        .as_array()
        .expect("issues")
        .iter()
        .map(|issue| issue["code"].as_str().expect("code").to_owned())
        .collect()
}

#[test]
#[ignore = "needs the pinned Claude Code CLI, which the pre-flight agent check looks for (scripts/test-tools)"]
fn valid_plan_passes_with_two_phases_and_five_gates() {
    let sandbox = Sandbox::new();
    let (code, json) = sandbox.audit_json("audit/valid_plan/MASTER_PLAN.md", &[]);
    assert_eq!(code, 0, "{json:#}");
    assert_eq!(json["passed"], true);
    let summary = &json["summary"];
    assert_eq!(summary["master_plan"], "Valid Test Plan");
    assert_eq!(summary["phases_found"], 2);
    assert_eq!(summary["phases_valid"], 2);
    assert_eq!(summary["gates_total"], 5);
    assert_eq!(summary["errors"], 0);
    assert_eq!(summary["warnings"], 0);
    assert_eq!(json["issues"], Value::Array(Vec::new()));

    let (code, text, _) = sandbox.run(&["audit", "audit/valid_plan/MASTER_PLAN.md"]);
    assert_eq!(code, 0);
    insta::assert_snapshot!("audit_valid_plan", text);
}

#[test]
fn valid_plan_needs_its_agent_files() {
    // The fixture ships `.claude/agents/{doc-sync-manager,task-validator}.md` in the plan
    // directory; without them the agents the plan requires do not exist.
    let sandbox = Sandbox::new();
    std::fs::remove_dir_all(sandbox.path().join("audit/valid_plan/.claude")).expect("rm");
    let json = sandbox.audit_fails_with("audit/valid_plan", &["MISSING_AGENT", "MISSING_AGENT"]);
    let messages: Vec<&str> = json["issues"]
        .as_array()
        .expect("issues")
        .iter()
        .map(|i| i["message"].as_str().expect("message"))
        .collect();
    assert!(messages[0].contains("`doc-sync-manager`"), "{messages:?}");
    assert!(messages[1].contains("`task-validator`"), "{messages:?}");
    assert_eq!(
        json["issues"][0]["location"],
        "audit/valid_plan/phase-1.md:7"
    );

    // An agent file in the project root (the working directory here) counts too, and
    // so does one in the user's ~/.claude/agents.
    sandbox.write(".claude/agents/doc-sync-manager.md", "# agent\n");
    sandbox.write(
        "home/.claude/agents/task-validator.md",
        "---\nname: task-validator\n---\n",
    );
    let (code, json) = sandbox.audit_json("audit/valid_plan", &[]);
    assert_eq!(code, 0, "{json:#}");
}

#[test]
#[ignore = "needs the pinned Claude Code CLI, which the pre-flight agent check looks for (scripts/test-tools)"]
fn missing_gates_fails() {
    let sandbox = Sandbox::new();
    let json = sandbox.audit_fails_with("audit/missing_gates/MASTER_PLAN.md", &["MISSING_GATES"]);
    assert_eq!(
        json["issues"][0]["location"],
        "audit/missing_gates/phase-1.md:1"
    );
    let (code, text, _) = sandbox.run(&["audit", "audit/missing_gates/MASTER_PLAN.md"]);
    assert_eq!(code, 1);
    insta::assert_snapshot!("audit_missing_gates", text);
}

#[test]
fn missing_phase_fails() {
    let sandbox = Sandbox::new();
    let json = sandbox.audit_fails_with("audit/missing_phase/MASTER_PLAN.md", &["PHASE_NOT_FOUND"]);
    assert_eq!(
        json["issues"][0]["location"],
        "audit/missing_phase/MASTER_PLAN.md:10"
    );
    assert_eq!(json["summary"]["phases_found"], 2);
    assert_eq!(json["summary"]["phases_valid"], 1);
}

#[test]
#[ignore = "needs the pinned Claude Code CLI, which the pre-flight agent check looks for (scripts/test-tools)"]
fn circular_deps_fails_naming_the_cycle() {
    let sandbox = Sandbox::new();
    let json = sandbox.audit_fails_with(
        "audit/circular_deps/MASTER_PLAN.md",
        &["CIRCULAR_DEPENDENCY"],
    );
    assert_eq!(
        json["issues"][0]["message"],
        "circular dependency: 1 -> 3 -> 2 -> 1"
    );
    let (_, text, _) = sandbox.run(&["audit", "audit/circular_deps/MASTER_PLAN.md"]);
    insta::assert_snapshot!("audit_circular_deps", text);
}

#[test]
#[ignore = "needs the pinned Claude Code CLI, which the pre-flight agent check looks for (scripts/test-tools)"]
fn freeform_plans_have_no_phases() {
    let sandbox = Sandbox::new();
    for plan in [
        "sample_plans/plan1_tasktracker_basic/master_plan.md",
        "sample_plans/plan2_tasktracker_agile/plan_overview.md",
        "sample_plans/plan3_tasktracker_modular/project_plan.md",
        "sample_plans/plan3_tasktracker_modular/combined_plan.md",
    ] {
        let json = sandbox.audit_fails_with(plan, &["NO_PHASES"]);
        let message = json["issues"][0]["message"].as_str().expect("message");
        assert!(message.contains("has no phases table"), "{plan}: {message}");
        let suggestion = json["issues"][0]["suggestion"]
            .as_str()
            .expect("suggestion");
        assert!(suggestion.contains("[Setup](phase-1.md)"), "{suggestion}");
    }
    let (_, text, _) = sandbox.run(&[
        "audit",
        "sample_plans/plan1_tasktracker_basic/master_plan.md",
    ]);
    insta::assert_snapshot!("audit_freeform", text);
}

#[test]
fn converted_plans_all_parse() {
    let sandbox = Sandbox::new();
    // (plan, phases, gates, passes, the only error code when it does not pass)
    let expected = [
        ("plan1_converted", 3, 12, true),
        ("plan1_test", 3, 12, true),
        ("plan2_converted", 3, 20, false),
        ("plan3_converted", 5, 24, false),
        ("plan3_sonnet", 5, 23, false),
        ("plan3_test", 4, 18, true),
    ];
    for (plan, phases, gates, passes) in expected {
        let path = format!("sample_plans_converted/{plan}");
        let (code, json) = sandbox.audit_json(&path, &[]);
        let summary = &json["summary"];
        assert_eq!(summary["phases_found"], phases, "{plan}");
        assert_eq!(summary["gates_total"], gates, "{plan}");
        assert_eq!(json["passed"], passes, "{plan}: {json:#}");
        assert_eq!(code, if passes { 0 } else { 1 }, "{plan}");
        // Everything parses: the only complaints are gates that name no command
        // (`security`, `performance`, `deployment`… with no command in the plan or the
        // default gates map).
        for code in codes(&json) {
            assert_eq!(code, "UNKNOWN_GATE", "{plan}: {json:#}");
        }
    }
}

#[test]
fn sample_master_links_phase_files_that_are_not_there() {
    let sandbox = Sandbox::new();
    let json = sandbox.audit_fails_with("sample_master.md", &["PHASE_NOT_FOUND"; 3]);
    assert_eq!(json["summary"]["master_plan"], "Test Feature");
}

#[test]
fn hello_world_reports_its_gate_without_command_and_its_agents() {
    let sandbox = Sandbox::new();
    let json = sandbox.audit_fails_with(
        "sample_plans/hello_world_test",
        &[
            "UNKNOWN_GATE",
            "MISSING_AGENT",
            "MISSING_AGENT",
            "MISSING_AGENT",
        ],
    );
    assert_eq!(json["summary"]["gates_total"], 6);
    assert!(
        json["issues"][0]["message"]
            .as_str()
            .expect("message")
            .contains("`i18n`")
    );
}

#[test]
#[ignore = "needs the pinned Claude Code CLI, which the pre-flight agent check looks for (scripts/test-tools)"]
fn strict_fails_on_warnings() {
    let sandbox = Sandbox::new();
    sandbox.write(
        "warn/MASTER_PLAN.md",
        "# Warn\n\n| Phase | Title |\n|---|---|\n| 1 | [One](one.md) |\n",
    );
    sandbox.write(
        "warn/one.md",
        "# Phase 1: One\n\n**Depends On:** Phase 0\n\n## Gates\n- tests: `true` passes\n",
    );
    let (code, json) = sandbox.audit_json("warn/MASTER_PLAN.md", &[]);
    assert_eq!(code, 0);
    assert_eq!(json["passed"], true);
    assert_eq!(codes(&json), ["NO_NOTES_OUTPUT", "MISSING_DEPENDENCY"]);
    assert_eq!(json["issues"][1]["severity"], "warning");
    let (code, json) = sandbox.audit_json("warn/MASTER_PLAN.md", &["--strict"]);
    assert_eq!(code, 1);
    assert_eq!(json["passed"], false);
    let (code, text, _) = sandbox.run(&["audit", "warn/MASTER_PLAN.md", "--strict"]);
    assert_eq!(code, 1);
    insta::assert_snapshot!("audit_strict_warnings", text);
}

#[test]
fn missing_master_and_usage_errors() {
    let sandbox = Sandbox::new();
    let json = sandbox.audit_fails_with("nope/MASTER_PLAN.md", &["MASTER_NOT_FOUND"]);
    assert_eq!(json["issues"][0]["location"], "nope/MASTER_PLAN.md");
    let (code, _, stderr) = sandbox.run(&["audit"]);
    assert_eq!(code, 2, "{stderr}");
    let (code, _, stderr) = sandbox.run(&["audit", "x.md", "--format", "xml"]);
    assert_eq!(code, 2, "{stderr}");
}

#[test]
fn colour_follows_the_color_flag() {
    let sandbox = Sandbox::new();
    let (_, plain, _) = sandbox.run(&["audit", "audit/missing_gates"]);
    assert!(
        !plain.contains('\x1b'),
        "not a terminal: no colour by default"
    );
    let (_, colored, _) = sandbox.run(&["--color", "always", "audit", "audit/missing_gates"]);
    assert!(
        colored.contains("\x1b[1;31merror[MISSING_GATES]\x1b[0m"),
        "{colored}"
    );
    let (_, never, _) = sandbox.run(&["--color", "never", "audit", "audit/missing_gates"]);
    assert_eq!(never, plain);
}

/// The example in `docs/plan-format.md` is a plan that passes, as the document says.
#[test]
#[ignore = "needs the pinned Claude Code CLI, which the pre-flight agent check looks for (scripts/test-tools)"]
fn the_documented_example_plan_passes() {
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/plan-format.md"))
            .expect("docs/plan-format.md");
    let sandbox = Sandbox::new();
    for file in ["MASTER_PLAN.md", "phase-1.md", "phase-2.md"] {
        let marker = format!("`plans/greeting/{file}`:\n\n```markdown\n");
        let start = doc
            .find(&marker)
            .unwrap_or_else(|| panic!("no {file} example"))
            + marker.len();
        let end = start + doc[start..].find("\n```\n").expect("end of example");
        sandbox.write(&format!("plans/greeting/{file}"), &doc[start..=end]);
    }
    let (code, json) = sandbox.audit_json("plans/greeting", &["--strict"]);
    assert_eq!(code, 0, "{json:#}");
    assert_eq!(json["summary"]["phases_found"], 2);
    assert_eq!(json["summary"]["gates_total"], 4);
    let (code, text, _) = sandbox.run(&["run", "plans/greeting", "--dry-run"]);
    assert_eq!(code, 0);
    assert!(
        text.contains("clippy: cargo clippy --all-targets -- -D warnings (config)"),
        "{text}"
    );
}

#[test]
fn unreadable_files_are_parse_errors() {
    let sandbox = Sandbox::new();
    sandbox.write(
        "bad/MASTER_PLAN.md",
        "# Bad\n\n| Phase | Title |\n|---|---|\n| 1 | [One](one.md) |\n| 2 | [Two](two) |\n",
    );
    std::fs::write(sandbox.path().join("bad/one.md"), [0x23, 0x20, 0xff, 0xfe]).expect("write");
    std::fs::create_dir(sandbox.path().join("bad/two")).expect("mkdir");
    let json = sandbox.audit_fails_with("bad", &["PHASE_PARSE_ERROR", "PHASE_PARSE_ERROR"]);
    assert_eq!(json["issues"][0]["location"], "bad/one.md");
    assert!(
        json["issues"][0]["message"]
            .as_str()
            .expect("message")
            .contains("UTF-8"),
        "{json:#}"
    );

    std::fs::write(sandbox.path().join("bad/MASTER_PLAN.md"), [0xff, 0xfe]).expect("write");
    let json = sandbox.audit_fails_with("bad", &["MASTER_PARSE_ERROR"]);
    assert_eq!(json["summary"]["master_plan"], "bad/MASTER_PLAN.md");
}

/// `PATH` with the pinned tools of `scripts/test-tools` first.
fn tools_path() -> std::ffi::OsString {
    let tools = Path::new(env!("CARGO_MANIFEST_DIR")).join(".tools/npm/node_modules/.bin");
    let mut dirs = vec![tools];
    if let Some(path) = std::env::var_os("PATH") {
        dirs.extend(std::env::split_paths(&path));
    }
    std::env::join_paths(dirs).expect("PATH")
}

#[test]
fn the_audit_shows_each_phases_own_agent_and_flags_an_unknown_one() {
    let sandbox = Sandbox::new();
    sandbox.write(
        "agents/MASTER_PLAN.md",
        "# Agents\n\n| Phase | Title | Status |\n|---|---|---|\n\
         | 1 | [One](phase-1.md) | Pending |\n| 2 | [Two](phase-2.md) | Pending |\n",
    );
    sandbox.write(
        "agents/phase-1.md",
        "# Phase 1: One\n\n**Agent:** gemini\n**Model:** gemini-2.5-pro\n\n## Gates\n- check: `true` passes\n",
    );
    sandbox.write(
        "agents/phase-2.md",
        "# Phase 2: Two\n\n**Agent:** codx\n\n## Gates\n- check: `true` passes\n",
    );
    let (code, text, _) = sandbox.run(&["audit", "agents/MASTER_PLAN.md"]);
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains("phase 1 runs on gemini (gemini-2.5-pro)"),
        "{text}"
    );
    assert!(text.contains("unknown agent `codx`"), "{text}");
    assert!(
        text.contains("use one of: claude, codex, gemini, sim"),
        "{text}"
    );
    let (_, json) = sandbox.audit_json("agents/MASTER_PLAN.md", &[]);
    assert_eq!(
        json["phase_agents"],
        serde_json::json!([{"phase": "1", "agent": "gemini", "model": "gemini-2.5-pro"}])
    );
    // Where the phase's program is missing, the audit says so and how to install it.
    let output = sandbox
        .debussy(&["audit", "agents/MASTER_PLAN.md"])
        .env("PATH", "/usr/bin:/bin")
        .output()
        .expect("audit");
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        text.contains("not installed: phase 1: agent program `gemini` not found"),
        "{text}"
    );
    assert!(text.contains("npm install -g @google/gemini-cli"), "{text}");
}

#[test]
fn a_mistyped_plan_path_gets_a_did_you_mean() {
    let sandbox = Sandbox::new();
    for (typed, meant) in [
        ("audit/valid_paln", "audit/valid_plan"),
        (
            "audit/valid_plan/MASTER_PLN.md",
            "audit/valid_plan/MASTER_PLAN.md",
        ),
    ] {
        let json = sandbox.audit_fails_with(typed, &["MASTER_NOT_FOUND"]);
        assert_eq!(
            json["issues"][0]["suggestion"],
            format!("did you mean {meant}?")
        );
        let (code, _, stderr) = sandbox.run(&["run", typed, "--no-interactive"]);
        assert_ne!(code, 0);
        assert!(
            stderr.contains(&format!("did you mean {meant}?")),
            "{stderr}"
        );
    }
}

#[test]
fn a_phase_file_given_as_the_plan_is_named_as_one() {
    let sandbox = Sandbox::new();
    let json = sandbox.audit_fails_with("audit/valid_plan/phase-1.md", &["NO_PHASES"]);
    let issue = &json["issues"][0];
    assert!(
        issue["message"]
            .as_str()
            .is_some_and(|m| m.contains("looks like a phase file, not a master plan")),
        "{issue:#}"
    );
    assert_eq!(
        issue["suggestion"],
        "did you mean audit/valid_plan/MASTER_PLAN.md?"
    );
}
