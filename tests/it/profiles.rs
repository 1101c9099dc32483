//! Agent profiles (`agents.<kind>`) through the real binary: each kind runs its own
//! program, arguments and environment, a program configured for one agent is never run
//! as another, and the old `agent.*` keys keep working as the profile of the kind named
//! beside them.

use std::path::PathBuf;
use std::process::Output;
use std::time::Duration;

use crate::support::project::{Project, commit_all, output_within, quiet_run_args};
use crate::support::scenario::{Scenario, Script, Status, Turn};

const LIMIT: Duration = Duration::from_secs(120);

const PLAN: &str = "# Profiles Plan - Master Plan\n\n## Phases\n\n| Phase | Title | Status |\n|---|---|---|\n| 1 | [One](phase-1.md) | Pending |\n| 2 | [Two](phase-2.md) | Pending |\n";
const PHASE_1: &str = "# Profiles Phase 1: One\n\n**Status:** Pending\n**Depends On:** N/A\n\n## Gates\n- one: `test -s one.txt` passes\n\n## Tasks\n- [ ] 1.1: Write one.txt\n";
const PHASE_2_SIM: &str = "# Profiles Phase 2: Two\n\n**Status:** Pending\n**Depends On:** Phase 1\n**Agent:** sim\n\n## Gates\n- two: `test -s two.txt` passes\n\n## Tasks\n- [ ] 2.1: Write two.txt\n";

/// Each phase writes the variable `GREETING` of its agent's environment to a file.
fn scenario() -> Scenario {
    let greeting = |id: &str, word: &str| {
        Script::phase(id).turn(
            Turn::say(word)
                .bash(&format!(r#"printf '%s' "$GREETING" > {word}.txt"#))
                .done_as(Status::Completed),
        )
    };
    Scenario::new()
        .script(greeting("1", "one"))
        .script(greeting("2", "two"))
}

/// A committed two-phase plan with a sim scenario; phase 2 names `phase_2`'s agent.
fn project(phase_2: &str) -> Project {
    let project = Project::new();
    project.write("plan/MASTER_PLAN.md", PLAN);
    project.write("plan/phase-1.md", PHASE_1);
    project.write("plan/phase-2.md", phase_2);
    project.write("plan/sim-scenario.yaml", &scenario().to_yaml());
    project.write(".gitignore", ".home/\n");
    commit_all(project.root(), "plan");
    project
}

/// `debussy ARGS` in the project with `PATH` set to `path`, bounded, with its output.
fn debussy(project: &Project, path: &str, args: &[&str]) -> Output {
    let mut command = crate::support::debussy(project.root(), args);
    command.env("PATH", path).env("COLUMNS", "200");
    output_within(command, LIMIT)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// This process's `PATH` without the directories that hold `program`.
fn path_without(program: &str) -> String {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let kept: Vec<PathBuf> = std::env::split_paths(&path)
        .filter(|dir| !dir.join(program).exists())
        .collect();
    std::env::join_paths(kept)
        .expect("a PATH")
        .to_string_lossy()
        .into_owned()
}

fn current_path() -> String {
    std::env::var("PATH").unwrap_or_default()
}

#[test]
#[ignore = "needs the pinned Codex CLI (scripts/test-tools)"]
fn a_codex_program_in_the_config_is_never_run_as_gemini() {
    let codex = crate::support::codex::require();
    let codex = codex.path().to_string_lossy().into_owned();
    let project = project(PHASE_2_SIM);
    let path = path_without("gemini");
    // With the kind beside it, and alone (then it is Claude Code's program).
    for config in [
        format!("agent:\n  kind: codex\n  command: {codex}\n"),
        format!("agent:\n  command: {codex}\n"),
    ] {
        project.write(".debussy/config.yaml", &config);
        // The command exits with `code`, its stderr (else its stdout) saying Gemini's
        // program is missing: what it said.
        let gemini_missing = |args: &[&str], code: i32, on_stderr: bool| {
            let output = debussy(&project, &path, args);
            let said = text(if on_stderr {
                &output.stderr
            } else {
                &output.stdout
            });
            assert_eq!(output.status.code(), Some(code), "{config}{said}");
            assert!(
                said.contains("✗ agent: agent program `gemini` not found"),
                "{config}{said}"
            );
            said
        };
        let stderr = gemini_missing(
            &[
                "run",
                "plan/MASTER_PLAN.md",
                "--agent",
                "gemini",
                "--no-interactive",
            ],
            2,
            true,
        );
        assert!(
            stderr.contains("npm install -g @google/gemini-cli"),
            "{stderr}"
        );
        let stdout = gemini_missing(&["doctor", "--agent", "gemini"], 1, false);
        assert!(!stdout.contains(&codex), "codex is not gemini: {stdout}");
        gemini_missing(
            &[
                "run",
                "plan/MASTER_PLAN.md",
                "--dry-run",
                "--agent",
                "gemini",
            ],
            1,
            false,
        );
    }
}

#[test]
#[ignore = "needs the pinned Codex CLI (scripts/test-tools)"]
fn doctor_and_the_dry_run_check_the_profile_of_each_agent_a_phase_names() {
    let codex = crate::support::codex::require();
    let codex = codex.path().to_string_lossy().into_owned();
    let phase_2 = PHASE_2_SIM.replace("**Agent:** sim", "**Agent:** codex");
    let project = project(&phase_2);
    project.write(
        ".debussy/config.yaml",
        &format!("agent:\n  kind: sim\nagents:\n  codex:\n    command: {codex}\n"),
    );
    let path = path_without("codex");
    let doctor = debussy(&project, &path, &["doctor", "plan/MASTER_PLAN.md"]);
    let stdout = text(&doctor.stdout);
    assert!(stdout.contains("✓ agent: sim ("), "{stdout}");
    assert!(
        stdout.contains(&format!("✓ agent: phase 2: codex ({codex}, codex-cli ")),
        "the codex profile's program runs and says its version: {stdout}"
    );
    let dry = debussy(
        &project,
        &path,
        &["run", "plan/MASTER_PLAN.md", "--dry-run"],
    );
    let stdout = text(&dry.stdout);
    assert!(
        stdout.contains(&format!("✓ agent: phase 2: codex ({codex}, codex-cli ")),
        "{stdout}"
    );
    assert!(
        stdout.contains("runs on codex (its default model)"),
        "{stdout}"
    );

    // Without the profile's program, the phase's agent is missing, named with its fix.
    project.write(".debussy/config.yaml", "agent:\n  kind: sim\n");
    let doctor = debussy(&project, &path, &["doctor", "plan/MASTER_PLAN.md"]);
    let stdout = text(&doctor.stdout);
    assert_eq!(doctor.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("✗ agent: phase 2: agent program `codex` not found"),
        "{stdout}"
    );
    assert!(stdout.contains("agents.codex.command"), "{stdout}");
}

#[test]
fn the_old_keys_are_the_profile_of_the_kind_named_beside_them() {
    let project = project(PHASE_2_SIM);
    let run = |config: &str, extra: &[&str]| {
        project.write(".debussy/config.yaml", config);
        commit_all(project.root(), "config");
        let args = quiet_run_args(extra);
        let run = debussy(&project, &current_path(), &args);
        assert_eq!(
            run.status.code(),
            Some(0),
            "{}{}",
            text(&run.stdout),
            text(&run.stderr)
        );
        let read = |name: &str| std::fs::read_to_string(project.root().join(name)).expect(name);
        (read("one.txt"), read("two.txt"))
    };
    // Beside `kind: sim`, the old keys are the sim agent's profile: phase 1 (the
    // default kind) and phase 2 (`**Agent:** sim`) run with them.
    let (one, two) = run("agent:\n  kind: sim\n  env:\n    GREETING: old-keys\n", &[]);
    assert_eq!((one.as_str(), two.as_str()), ("old-keys", "old-keys"));
    // Named nowhere, they are Claude Code's: `--agent sim` runs the sim profile's own.
    let (one, two) = run(
        "agent:\n  env:\n    GREETING: for-claude\nagents:\n  sim:\n    env:\n      GREETING: sim-profile\n",
        &["--agent", "sim"],
    );
    assert_eq!((one.as_str(), two.as_str()), ("sim-profile", "sim-profile"));
}

#[test]
fn debussy_config_says_which_profile_an_old_key_stands_for() {
    let project = project(PHASE_2_SIM);
    project.write(
        ".debussy/config.yaml",
        "agent:\n  kind: codex\n  command: /opt/codex/bin/codex\n",
    );
    let shown = debussy(&project, &current_path(), &["config", "--agent", "gemini"]);
    let stdout = text(&shown.stdout);
    assert_eq!(shown.status.code(), Some(0), "{}", text(&shown.stderr));
    let line = |key: &str| {
        stdout
            .lines()
            .find(|line| line.trim_start().starts_with(key))
            .unwrap_or_else(|| panic!("no {key} in\n{stdout}"))
            .to_owned()
    };
    let command = line("command: null");
    assert!(
        command.contains("the gemini profile's `agents.gemini.command`"),
        "{command}"
    );
    assert!(
        stdout.contains("command: /opt/codex/bin/codex"),
        "the codex profile keeps its program: {stdout}"
    );
}
