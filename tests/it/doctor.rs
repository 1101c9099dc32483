//! Pre-flight checks through the real binary, in temporary git repositories: `run`
//! refuses a missing agent or a broken scenario before recording anything, warns once
//! about untracked files, `--dry-run` runs the same checks, and `debussy doctor` prints
//! each one.

use std::os::unix::fs::PermissionsExt;
use std::process::Output;
use std::time::Duration;

use debussy::agent::gemini::NO_RELAUNCH_ENV;

use crate::support::project::{
    Project, commit_all, output_within, quiet_run_args, sim_run_args, write_file,
};
use crate::support::scenario::{Scenario, Status, Turn};

const LIMIT: Duration = Duration::from_secs(120);

const PLAN: &str = "# Check Plan - Master Plan\n\n## Phases\n\n| Phase | Title | Status |\n|---|---|---|\n| 1 | [One](phase-1.md) | Pending |\n";
const PHASE: &str = "# Check Phase 1: One\n\n**Status:** Pending\n**Depends On:** N/A\n\n## Gates\n- check: `test -s out.txt` passes\n\n## Tasks\n- [ ] 1.1: Write out.txt\n";

/// A scenario that writes `out.txt` and reports done.
fn scenario() -> String {
    Scenario::playing([Turn::say("writing")
        .percent(10)
        .writes("out.txt", "hi\n")
        .done_as(Status::Completed)])
    .to_yaml()
}

/// What the doctor tests do with a project.
impl Project {
    /// A committed plan with a sim scenario in a fresh repository.
    fn with_scenario(scenario: &str) -> Project {
        let project = Project::new();
        project.write("plan/MASTER_PLAN.md", PLAN);
        project.write("plan/phase-1.md", PHASE);
        project.write("plan/sim-scenario.yaml", scenario);
        project.write(".gitignore", ".home/\n");
        project.commit_all("plan");
        project
    }

    /// `debussy ARGS`, bounded, with its output.
    fn debussy(&self, args: &[&str]) -> Output {
        let mut command = crate::support::debussy(self.root(), args);
        command.env("COLUMNS", "200");
        output_within(command, LIMIT)
    }

    /// `debussy ARGS` exits with `code`: its stdout.
    fn stdout_of(&self, args: &[&str], code: i32) -> String {
        let output = self.debussy(args);
        let stdout = text(&output.stdout);
        assert_eq!(
            output.status.code(),
            Some(code),
            "{args:?}: {stdout}{}",
            text(&output.stderr)
        );
        stdout
    }

    /// `debussy run` of the plan with `extra` is refused before anything is recorded:
    /// its stderr.
    fn refused(&self, extra: &[&str]) -> String {
        let output = self.run_plan(extra);
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{stderr}");
        assert_eq!(self.recorded_runs(), 0, "no run recorded: {stderr}");
        stderr
    }

    fn run_plan(&self, extra: &[&str]) -> Output {
        let args = quiet_run_args(extra);
        self.debussy(&args)
    }

    fn recorded_runs(&self) -> usize {
        match debussy::state::Store::open_existing(self.root()).expect("state") {
            Some(store) => store.runs(None, 100).expect("runs").len(),
            None => 0,
        }
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

const BROKEN_SCENARIO: &str = "scripts:\n  - phase: 1\n    turns:\n      - sya: typo\n  - turns:\n      - say: ok\n    exit_kode: 3\n";

/// Started from inside the plan's directory with the plan named from there, in a project
/// whose root `.debussy/` marks, `doctor` and `run` find the scenario beside the plan, as
/// they find the plan itself.
#[test]
fn a_plan_named_from_its_own_directory_finds_its_scenario() {
    let project = Project::with_scenario(&scenario());
    std::fs::create_dir(project.root().join(".debussy")).expect("mkdir");
    let from_plan_dir = |args: &[&str]| {
        let mut command = crate::support::debussy(&project.root().join("plan"), args);
        command
            .env("HOME", project.root().join(".home"))
            .env("XDG_CONFIG_HOME", project.root().join(".home/config"));
        output_within(command, LIMIT)
    };
    let doctor = from_plan_dir(&["doctor", "MASTER_PLAN.md", "--agent", "sim"]);
    let said = text(&doctor.stdout);
    assert!(
        said.contains("✓ scenario"),
        "{said}{}",
        text(&doctor.stderr)
    );
    let run = from_plan_dir(&[
        "run",
        "MASTER_PLAN.md",
        "--agent",
        "sim",
        "--no-interactive",
    ]);
    assert_eq!(run.status.code(), Some(0), "{}", text(&run.stderr));
    assert!(project.root().join("out.txt").is_file());
}

#[test]
fn a_missing_agent_is_refused_before_anything_is_recorded() {
    let project = Project::with_scenario(&scenario());
    let stderr = project.refused(&[
        "--agent",
        "claude",
        "--agent-command",
        "/nonexistent/claude",
    ]);
    assert_eq!(
        stderr
            .matches("agent program `/nonexistent/claude` not found")
            .count(),
        1,
        "said once: {stderr}"
    );
    assert!(stderr.contains("✗ agent"), "{stderr}");
    assert!(stderr.contains("fix:"), "{stderr}");
}

#[test]
fn a_broken_scenario_is_refused_with_every_problem_at_once() {
    let project = Project::with_scenario(BROKEN_SCENARIO);
    let stderr = project.refused(&["--agent", "sim"]);
    assert!(stderr.contains("2 problems"), "{stderr}");
    assert!(stderr.contains("sim-scenario.yaml:4:"), "{stderr}");
    assert!(stderr.contains("sim-scenario.yaml:7:"), "{stderr}");
}

#[test]
fn untracked_files_are_named_once_before_the_run() {
    let project = Project::with_scenario(&scenario());
    std::fs::create_dir_all(project.root().join(".claude")).expect("mkdir");
    std::fs::write(project.root().join(".claude/settings.json"), "{}").expect("write");
    std::fs::write(project.root().join("scratch.txt"), "mine").expect("write");
    std::fs::create_dir_all(project.root().join(".debussy")).expect("mkdir");
    std::fs::write(project.root().join(".debussy/config.yaml"), "model: sim\n").expect("write");
    let output = project.run_plan(&["--agent", "sim"]);
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert_eq!(
        stderr
            .matches("would go into the first phase commit")
            .count(),
        1,
        "{stderr}"
    );
    assert!(stderr.contains("  .claude/"), "{stderr}");
    assert!(stderr.contains("  scratch.txt"), "{stderr}");
    assert!(stderr.contains("  .debussy/config.yaml"), "{stderr}");
    assert!(
        !stderr.contains("state.db"),
        "run data is not listed: {stderr}"
    );
    assert_eq!(project.recorded_runs(), 1);
}

#[test]
fn dry_run_runs_the_same_checks() {
    let project = Project::with_scenario(BROKEN_SCENARIO);
    let stdout = project.stdout_of(
        &["run", "plan/MASTER_PLAN.md", "--dry-run", "--agent", "sim"],
        1,
    );
    assert!(stdout.contains("Pre-flight"), "{stdout}");
    assert!(stdout.contains("✗ scenario: 2 problems"), "{stdout}");
    assert!(stdout.contains("✓ writable"), "{stdout}");
    assert_eq!(project.recorded_runs(), 0);
}

#[test]
fn doctor_prints_every_check_and_fails_when_one_does() {
    let project = Project::with_scenario(&scenario());
    let stdout = project.stdout_of(&["doctor", "plan/MASTER_PLAN.md", "--agent", "sim"], 0);
    for line in [
        "✓ config:",
        "✓ agent: sim",
        "✓ scenario:",
        "✓ writable:",
        "✓ plan:",
    ] {
        assert!(stdout.contains(line), "{line} missing from\n{stdout}");
    }

    let sick = project.debussy(&[
        "doctor",
        "--agent",
        "claude",
        "--agent-command",
        "/nonexistent/claude",
        "--format",
        "json",
    ]);
    assert_eq!(sick.status.code(), Some(1), "{}", text(&sick.stderr));
    let report: serde_json::Value = serde_json::from_slice(&sick.stdout).expect("json");
    let agent = report["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .find(|c| c["name"] == "agent")
        .expect("an agent check");
    assert_eq!(agent["verdict"], "fail");
    assert!(
        agent["fix"]
            .as_str()
            .is_some_and(|f| f.contains("agents.claude.command"))
    );
    assert_eq!(project.recorded_runs(), 0, "doctor records nothing");
}

#[test]
#[ignore = "needs the pinned Claude Code CLI (scripts/test-tools)"]
fn doctor_reports_the_real_claude_version() {
    let claude = crate::support::claude::require();
    let project = Project::with_scenario(&scenario());
    let claude = claude.path().to_str().expect("utf-8 path");
    let output = project.debussy(&["doctor", "--agent", "claude", "--agent-command", claude]);
    let stdout = text(&output.stdout);
    assert!(
        stdout.contains("✓ agent: "),
        "{stdout}{}",
        text(&output.stderr)
    );
    assert!(
        stdout.contains("Claude Code"),
        "the version is shown: {stdout}"
    );
}

/// A shell script standing in for an agent's program, in the project's ignored `.home/`:
/// its path.
fn fake_agent(project: &Project, name: &str, script: &str) -> String {
    let relative = format!(".home/{name}");
    write_file(project.root(), &relative, script);
    let path = project.root().join(relative);
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    path.to_str().expect("utf-8 path").to_owned()
}

/// The Gemini CLI starts itself a second time with a larger heap unless told not to:
/// asking its version needs no such heap, so the check tells it not to.
#[test]
fn the_gemini_cli_is_asked_its_version_without_starting_twice() {
    let project = Project::with_scenario(&scenario());
    let gemini = fake_agent(
        &project,
        "gemini",
        &format!("#!/bin/sh\necho \"0.61.0 relaunch=${{{NO_RELAUNCH_ENV}:-default}}\"\n"),
    );
    let stdout = project.stdout_of(
        &["doctor", "--agent", "gemini", "--agent-command", &gemini],
        0,
    );
    assert!(
        stdout.contains("✓ agent: gemini (") && stdout.contains("0.61.0 relaunch=true)"),
        "{stdout}"
    );
}

/// An API key in Claude Code's environment is a login: Claude Code is not started to
/// say so. Without one, `claude auth status` is asked.
#[test]
fn a_key_in_the_environment_is_a_login_without_asking_claude_code() {
    let project = Project::with_scenario(&scenario());
    let asked = project.root().join(".home/asked");
    let claude = fake_agent(
        &project,
        "claude",
        &format!(
            "#!/bin/sh\nif [ \"$1\" = auth ]; then\n  touch '{}'\n  echo '{{\"loggedIn\": false, \"authMethod\": \"none\", \"apiProvider\": \"firstParty\"}}'\nelse\n  echo '2.1.330 (Claude Code)'\nfi\n",
            asked.display()
        ),
    );
    let doctor = |key: Option<&str>| {
        let mut command = crate::support::debussy(
            project.root(),
            &["doctor", "--agent", "claude", "--agent-command", &claude],
        );
        match key {
            Some(key) => command.env("ANTHROPIC_API_KEY", key),
            None => command.env_remove("ANTHROPIC_API_KEY"),
        };
        text(&output_within(command, LIMIT).stdout)
    };
    let with_key = doctor(Some("sk-ant-test-offline"));
    assert!(
        with_key.contains("✓ login: Claude Code is logged in (ANTHROPIC_API_KEY is set)"),
        "{with_key}"
    );
    assert!(!asked.exists(), "claude auth status was asked");
    let without = doctor(None);
    assert!(
        without.contains("Claude Code is not logged in"),
        "{without}"
    );
    assert!(asked.exists(), "claude auth status was not asked");
}

/// Claude Code's own settings turning hooks off take debussy's compaction guard with
/// them: the checks say so, naming the file.
#[test]
fn hooks_claude_codes_settings_turn_off_are_named() {
    let project = Project::with_scenario(&scenario());
    let claude = fake_agent(
        &project,
        "claude",
        "#!/bin/sh\necho '2.1.332 (Claude Code)'\n",
    );
    let config_dir = project.root().join(".home/claude-config");
    let doctor = || {
        let command = crate::support::debussy(
            project.root(),
            &["doctor", "--agent", "claude", "--agent-command", &claude],
        );
        let mut command = command;
        command
            .env("ANTHROPIC_API_KEY", "sk-ant-test-offline")
            .env("CLAUDE_CONFIG_DIR", &config_dir);
        text(&output_within(command, LIMIT).stdout)
    };
    assert!(!doctor().contains("hooks:"), "{}", doctor());
    write_file(
        project.root(),
        ".home/claude-config/settings.json",
        "\u{feff}{\"disableAllHooks\": true}",
    );
    let stdout = doctor();
    assert!(
        stdout.contains(&format!(
            "! hooks: Claude Code will not run debussy's PreCompact hook: `disableAllHooks: true` in {}",
            config_dir.join("settings.json").display()
        )),
        "{stdout}"
    );
    // The project's local file, read later, turns them back on.
    write_file(
        project.root(),
        ".claude/settings.local.json",
        "{\"disableAllHooks\": false}",
    );
    assert!(!doctor().contains("hooks:"), "{}", doctor());
}

#[test]
fn a_state_directory_that_cannot_be_written_is_refused() {
    let project = Project::with_scenario(&scenario());
    // A file where `.debussy/` belongs: nothing can be recorded (permissions would not
    // stop the root user these tests may run as).
    std::fs::write(project.root().join(".debussy"), "").expect("write");
    let output = project.run_plan(&["--agent", "sim"]);
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("✗ writable: cannot write:"), "{stderr}");
    assert!(stderr.contains(".debussy"), "{stderr}");
    assert!(stderr.contains("a file in the way"), "{stderr}");
    let stdout = project.stdout_of(&["doctor", "plan/MASTER_PLAN.md", "--agent", "sim"], 1);
    assert!(stdout.contains("✗ writable"), "{stdout}");
}

#[test]
fn an_uncommitted_plan_is_pointed_out() {
    let project = Project::with_scenario(&scenario());
    let extra = project.root().join("plans/next");
    std::fs::create_dir_all(&extra).expect("mkdir");
    for (name, text) in [
        ("MASTER_PLAN.md", PLAN),
        ("phase-1.md", PHASE),
        ("sim-scenario.yaml", scenario().as_str()),
    ] {
        std::fs::write(extra.join(name), text).expect("write");
    }
    // A warning is not a failure.
    let stdout = project.stdout_of(
        &["doctor", "plans/next/MASTER_PLAN.md", "--agent", "sim"],
        0,
    );
    assert!(stdout.contains("! untracked:"), "{stdout}");
    assert!(stdout.contains("  plans/  (the plan)"), "{stdout}");
}

#[test]
fn doctor_reports_a_broken_config_as_a_failed_check() {
    let project = Project::with_scenario(&scenario());
    std::fs::create_dir_all(project.root().join(".debussy")).expect("mkdir");
    std::fs::write(project.root().join(".debussy/config.yaml"), "modle: opus\n").expect("write");
    let stdout = project.stdout_of(&["doctor"], 1);
    assert!(
        stdout.contains("✗ config: ") && stdout.contains("config.yaml:1:1: unknown key `modle`"),
        "{stdout}"
    );
    assert!(stdout.contains("fix: did you mean `model`?"), "{stdout}");
    assert!(
        !stdout.contains("╭"),
        "one line, not a rendered snippet: {stdout}"
    );
}

#[test]
fn doctor_names_uncommitted_changes_as_run_would() {
    let project = Project::with_scenario(&scenario());
    std::fs::write(
        project.root().join("plan/phase-1.md"),
        PHASE.replace("One", "Uno"),
    )
    .expect("edit a tracked file");
    let stdout = project.stdout_of(&["doctor", "plan/MASTER_PLAN.md", "--agent", "sim"], 1);
    assert!(stdout.contains("✗ git: "), "{stdout}");
    assert!(stdout.contains("plan/phase-1.md"), "{stdout}");
    // The run refuses it too.
    project.refused(&["--agent", "sim"]);
}

#[test]
fn side_by_side_phases_need_a_committed_plan_and_doctor_says_so() {
    let project = Project::with_scenario(&scenario());
    let extra = project.root().join("plan/phase-2.md");
    std::fs::write(&extra, PHASE.replace("Phase 1: One", "Phase 2: Two")).expect("write");
    let master = project.root().join("plan/MASTER_PLAN.md");
    let mut text_of_plan = std::fs::read_to_string(&master).expect("read");
    text_of_plan.push_str("| 2 | [Two](phase-2.md) | Pending |\n");
    std::fs::write(&master, text_of_plan).expect("write");
    // The master plan's change is committed; the new phase file is not.
    let added = std::process::Command::new("git")
        .args(["commit", "-qam", "phase 2 listed"])
        .current_dir(project.root())
        .status()
        .expect("git");
    assert!(added.success());

    let stderr = project.refused(&["--agent", "sim", "--jobs", "2"]);
    assert!(
        stderr.contains("the plan is not committed") && stderr.contains("plan/phase-2.md"),
        "{stderr}"
    );

    let doctor = || {
        let output = crate::support::debussy(project.root(), &["doctor", "plan/MASTER_PLAN.md"])
            .env("DEBUSSY_JOBS", "2")
            .env("DEBUSSY_AGENT__KIND", "sim")
            .output()
            .expect("doctor");
        text(&output.stdout)
    };
    let said = doctor();
    assert!(said.contains("✗ jobs"), "{said}");
    assert!(said.contains("plan/phase-2.md"), "{said}");

    commit_all(project.root(), "phase 2");
    let said = doctor();
    assert!(said.contains("✓ jobs"), "{said}");
    assert!(said.contains("up to 2 phases at once"), "{said}");
}

#[test]
fn outside_a_repository_the_dry_run_and_doctor_name_git_with_its_fix() {
    // A plan in a directory that is not a git repository: the run refuses it, so the
    // dry run must not call it runnable.
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path();
    for (path, text) in [
        ("plan/MASTER_PLAN.md", PLAN),
        ("plan/phase-1.md", PHASE),
        ("plan/sim-scenario.yaml", scenario().as_str()),
    ] {
        write_file(root, path, text);
    }
    let output = |args: &[&str]| {
        crate::support::debussy(root, args)
            .env("COLUMNS", "200")
            .output()
            .expect("runs")
    };
    let dry = output(&["run", "plan/MASTER_PLAN.md", "--dry-run", "--agent", "sim"]);
    let stdout = text(&dry.stdout);
    assert_eq!(dry.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("✗ git: ") && stdout.contains("is not inside a git repository"),
        "{stdout}"
    );
    assert!(stdout.contains("Not runnable:"), "{stdout}");
    let run = output(&sim_run_args("plan/MASTER_PLAN.md", &["--no-interactive"]));
    assert_ne!(run.status.code(), Some(0), "the run refuses it too");

    let doctor = output(&["doctor", "--agent", "sim"]);
    let stdout = text(&doctor.stdout);
    assert_eq!(doctor.status.code(), Some(1), "{stdout}");
    assert!(
        !stdout.contains("untracked"),
        "no untracked check without a repository: {stdout}"
    );
    assert!(
        stdout.contains("fix: run `git init` there"),
        "the fix is the one that helps: {stdout}"
    );
    assert!(!stdout.contains("see `git status`"), "{stdout}");
    // Without auto-commit there is nothing to check.
    let dry = output(&[
        "run",
        "plan/MASTER_PLAN.md",
        "--dry-run",
        "--agent",
        "sim",
        "--no-auto-commit",
    ]);
    assert_eq!(dry.status.code(), Some(0), "{}", text(&dry.stdout));
}

#[test]
fn untracked_notes_beside_a_committed_plan_are_not_called_the_plan() {
    let project = Project::with_scenario(&scenario());
    std::fs::create_dir_all(project.root().join("plan/notes")).expect("mkdir");
    std::fs::write(project.root().join("plan/notes/phase-1.md"), "notes\n").expect("write");
    let output = project.debussy(&["doctor", "plan/MASTER_PLAN.md", "--agent", "sim"]);
    let stdout = text(&output.stdout);
    assert!(stdout.contains("! untracked: 1 untracked path"), "{stdout}");
    assert!(stdout.contains("  plan/notes/\n"), "{stdout}");
    assert!(!stdout.contains("(the plan)"), "{stdout}");
}
