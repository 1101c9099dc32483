//! `debussy run` end to end with the simulated agent, in temporary git repositories:
//! context restarts with checkpoint commits, max restarts exceeded, a failing gate fixed
//! by remediation, an unmet dependency, and Ctrl-C then `--resume`.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod support;

use debussy::run_env;
use serde_json::Value;
use support::project::{self, commit_all, events_named, process_gone, run_json, wait_exit};

/// A git repository with a plan in `plan/` and a sandboxed environment.
struct Project {
    dir: tempfile::TempDir,
}

impl Project {
    fn new() -> Project {
        let dir = tempfile::tempdir().expect("tempdir");
        let repo = git2::Repository::init(dir.path()).expect("git init");
        let mut config = repo.config().expect("config");
        config.set_str("user.name", "Test").expect("name");
        config
            .set_str("user.email", "test@example.com")
            .expect("email");
        Project { dir }
    }

    fn root(&self) -> &Path {
        self.dir.path()
    }

    fn write(&self, relative: &str, text: &str) {
        let path = self.root().join(relative);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    }

    /// A plan with phases `(id, depends_on, gate command)` and a sim scenario.
    fn plan(&self, phases: &[(&str, &str, &str)], scenario: &str) {
        let mut master = String::from(
            "# Test Plan - Master Plan\n\n## Phases\n\n| Phase | Title | Status |\n|---|---|---|\n",
        );
        for (id, depends, gate) in phases {
            master.push_str(&format!(
                "| {id} | [Phase {id}](phase-{id}.md) | Pending |\n"
            ));
            self.write(
                &format!("plan/phase-{id}.md"),
                &format!(
                    "# Test Phase {id}: Step {id}\n\n**Status:** Pending\n**Depends On:** {depends}\n\n\
                     ## Process Wrapper\n- [ ] Write notes to: `notes/phase-{id}.md`\n\n\
                     ## Gates\n- check: `{gate}` passes\n\n## Tasks\n- [ ] {id}.1: Do step {id}\n"
                ),
            );
        }
        self.write("plan/MASTER_PLAN.md", &master);
        self.write("plan/sim-scenario.yaml", scenario);
        self.commit_all("plan");
    }

    fn commit_all(&self, message: &str) {
        commit_all(self.root(), message);
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_debussy"));
        cmd.args(args)
            .current_dir(self.root())
            .env("HOME", self.root().join(".home"))
            .env("XDG_CONFIG_HOME", self.root().join(".home/config"))
            .env("NO_COLOR", "1")
            .env_remove("DEBUSSY_LOG")
            .env_remove(run_env::RUN_ID)
            .env_remove(run_env::PHASE_ID)
            .env_remove(run_env::PROJECT_ROOT)
            .stdin(Stdio::null());
        cmd
    }

    /// Run `debussy run plan/MASTER_PLAN.md --agent sim --output-format json` plus `extra`,
    /// with a hard timeout; returns the exit code and the events.
    fn run(&self, extra: &[&str]) -> (i32, Vec<Value>) {
        let mut args = vec![
            "run",
            "plan/MASTER_PLAN.md",
            "--agent",
            "sim",
            "--output-format",
            "json",
            "--restart-delay",
            "0",
        ];
        args.extend_from_slice(extra);
        run_json(self.command(&args), Duration::from_secs(120))
    }

    fn status_json(&self) -> Value {
        let output = self
            .command(&["status", "--format", "json"])
            .output()
            .expect("status");
        assert!(
            output.status.success(),
            "status failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        serde_json::from_slice(&output.stdout).expect("status json")
    }

    fn commit_messages(&self) -> Vec<String> {
        project::commit_messages(self.root())
    }
}

fn summary(events: &[Value]) -> &Value {
    &events.last().expect("events")["summary"]
}

/// A script turn that writes `path` with `content`.
fn write_turn(percent: u32, path: &str, content: &str) -> String {
    format!(
        "      - say: writing {path}\n        percent: {percent}\n        tools:\n          - write:\n              path: {path}\n              content: \"{content}\"\n"
    )
}

fn notes_turn(id: &str) -> String {
    format!(
        "      - say: notes\n        tools:\n          - write:\n              path: ${{SCENARIO_DIR}}/notes/phase-{id}.md\n              content: \"## Summary\\nok\\n## Key Decisions\\nnone\\n## Files Modified\\nsome\\n\"\n"
    )
}

const DONE_TURN: &str = "      - say: done\n        tools:\n          - done: completed\n";

#[test]
fn context_restarts_commit_checkpoints_and_the_next_session_gets_the_checkpoint() {
    let project = Project::new();
    let scenario = format!(
        "scripts:\n  - phase: 1\n    restart: 0\n    turns:\n{}{}      - sleep_ms: 5000\n  - phase: 1\n    restart: 1\n    expect_prompt: [\"# Checkpoint: phase 1\", \"a.txt\", \"---\"]\n    turns:\n{}{}      - sleep_ms: 5000\n  - phase: 1\n    restart: 2\n    expect_prompt: [\"restart 2 of 3\", \"b.txt\"]\n    turns:\n{}{}{}  - phase: 2\n    turns:\n{}{}{}",
        write_turn(50, "a.txt", "a"),
        write_turn(85, "a2.txt", "a2"),
        write_turn(40, "b.txt", "b"),
        write_turn(90, "b2.txt", "b2"),
        write_turn(30, "c.txt", "c"),
        notes_turn("1"),
        DONE_TURN,
        write_turn(10, "d.txt", "d"),
        notes_turn("2"),
        DONE_TURN,
    );
    project.plan(
        &[
            ("1", "N/A", "test -f c.txt"),
            ("2", "Phase 1", "test -f d.txt"),
        ],
        &scenario,
    );

    let (code, events) = project.run(&[]);
    assert_eq!(code, 0, "events: {events:#?}");
    let restarts = events_named(&events, "restart");
    assert_eq!(restarts.len(), 2, "two context restarts");
    assert!(
        restarts.iter().all(|r| r["commit"].is_string()),
        "each restart committed a checkpoint"
    );
    assert_eq!(summary(&events)["status"], "completed");
    assert_eq!(summary(&events)["restarts"], 2);

    let messages = project.commit_messages();
    assert_eq!(
        messages
            .iter()
            .filter(|m| m.contains("checkpoint (restart"))
            .count(),
        2,
        "{messages:?}"
    );
    assert!(
        messages
            .iter()
            .any(|m| m.contains("phase 1 - Phase 1 completed")),
        "{messages:?}"
    );
    assert!(
        messages
            .iter()
            .any(|m| m.contains("phase 2 - Phase 2 completed")),
        "{messages:?}"
    );
    for file in ["a.txt", "b.txt", "c.txt", "d.txt"] {
        assert!(project.root().join(file).exists(), "{file} was not written");
    }
    let status = project.status_json();
    assert_eq!(status["run"]["status"], "completed");
    assert_eq!(status["executions"][0]["restarts"], 2);
    assert_eq!(
        status["executions"][0]["sessions"].as_array().map(Vec::len),
        Some(3)
    );
    let log = status["executions"][0]["sessions"][0]["log_path"]
        .as_str()
        .expect("log path");
    let first_line = std::fs::read_to_string(project.root().join(log))
        .expect("log")
        .lines()
        .next()
        .map(str::to_owned);
    assert_eq!(first_line.as_deref(), Some("CONTEXT_LIMIT_RESTART"));
    let ignored = git2::Repository::open(project.root())
        .expect("open")
        .is_path_ignored(Path::new(".debussy/state.db"));
    assert!(ignored.expect("check"), "run data must never be committed");
}

#[test]
fn max_restarts_exceeded_fails_the_phase_and_says_why() {
    let project = Project::new();
    let scenario = format!(
        "scripts:\n  - phase: 1\n    turns:\n{}      - sleep_ms: 5000\n",
        write_turn(95, "x.txt", "x")
    );
    project.plan(&[("1", "N/A", "true")], &scenario);
    let (code, events) = project.run(&["--max-restarts", "1", "--max-retries", "0"]);
    assert_eq!(code, 1);
    assert_eq!(summary(&events)["status"], "failed");
    let status = project.status_json();
    let execution = &status["executions"][0];
    assert_eq!(execution["outcome_code"], -3);
    assert!(
        execution["error"]
            .as_str()
            .is_some_and(|e| e.contains("max restarts exceeded")),
        "{execution}"
    );
    assert_eq!(execution["restarts"], 1);
}

#[test]
fn a_failing_gate_is_fixed_by_a_remediation_attempt() {
    let project = Project::new();
    let scenario = format!(
        "scripts:\n  - phase: 1\n    attempt: 1\n    turns:\n{}{}{}  - phase: 1\n    attempt: 2\n    expect_prompt: [\"needs these fixes\", \"gate `check` failed\"]\n    turns:\n{}{}",
        write_turn(10, "out.txt", "wrong"),
        notes_turn("1"),
        DONE_TURN,
        write_turn(10, "out.txt", "right"),
        DONE_TURN,
    );
    project.plan(&[("1", "N/A", "grep -q right out.txt")], &scenario);
    let (code, events) = project.run(&[]);
    assert_eq!(code, 0, "events: {events:#?}");
    let gates = events_named(&events, "gate_finished");
    assert_eq!(
        gates
            .iter()
            .map(|g| g["passed"].as_bool())
            .collect::<Vec<_>>(),
        [Some(false), Some(true)]
    );
    let started = events_named(&events, "phase_started");
    assert_eq!(started[1]["kind"], "remediation");
    let status = project.status_json();
    assert_eq!(status["executions"][0]["status"], "failed");
    assert_eq!(status["executions"][0]["gates"][0]["passed"], false);
    assert_eq!(status["executions"][1]["status"], "completed");
    assert_eq!(status["executions"][1]["remediation"], true);
}

#[test]
fn an_unmet_dependency_blocks_the_phase_and_fails_the_run() {
    let project = Project::new();
    let scenario = format!("scripts:\n  - turns:\n{}{}", notes_turn("1"), DONE_TURN);
    project.plan(&[("1", "Phase 7", "true")], &scenario);
    let (code, events) = project.run(&[]);
    assert_eq!(code, 1);
    let finished = events_named(&events, "phase_finished");
    assert_eq!(finished[0]["status"], "blocked");
    assert!(
        finished[0]["error"]
            .as_str()
            .is_some_and(|e| e.contains("phase 7 is not in the plan"))
    );
    assert!(
        events_named(&events, "session_started").is_empty(),
        "a blocked phase runs no agent"
    );
}

#[test]
fn an_agent_reporting_blocked_blocks_the_phase() {
    let project = Project::new();
    let scenario =
        "scripts:\n  - turns:\n      - say: stuck\n        tools:\n          - done: blocked\n";
    project.plan(&[("1", "N/A", "true"), ("2", "Phase 1", "true")], scenario);
    let (code, events) = project.run(&[]);
    assert_eq!(code, 1);
    let phases = &summary(&events)["phases"];
    assert_eq!(phases[0]["status"], "blocked");
    assert_eq!(
        phases[1]["status"], "blocked",
        "its dependent is blocked too"
    );
}

#[test]
fn a_dirty_tree_is_refused_with_the_files_named() {
    let project = Project::new();
    project.plan(
        &[("1", "N/A", "true")],
        "scripts:\n  - turns:\n      - say: hi\n",
    );
    std::fs::write(project.root().join("plan/MASTER_PLAN.md"), "# changed\n").expect("write");
    let output = project
        .command(&[
            "run",
            "plan/MASTER_PLAN.md",
            "--agent",
            "sim",
            "--skip-audit",
        ])
        .output()
        .expect("run");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("plan/MASTER_PLAN.md") && stderr.contains("--allow-dirty"),
        "{stderr}"
    );
}

#[test]
fn ctrl_c_pauses_the_run_leaves_no_process_and_resume_completes() {
    let project = Project::new();
    let scenario = format!(
        "scripts:\n  - phase: 1\n    turns:\n      - say: working\n        percent: 10\n        tools:\n          - bash: \"if [ ! -f started ]; then touch started; sleep 60; fi\"\n{}{}",
        notes_turn("1"),
        DONE_TURN
    );
    project.plan(&[("1", "N/A", "test -f started")], &scenario);
    project.write(".gitignore", "started\n");
    project.commit_all("ignore the marker");

    let mut child = project
        .command(&[
            "run",
            "plan/MASTER_PLAN.md",
            "--agent",
            "sim",
            "--output-format",
            "json",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    // Lines arrive as the run goes; the session's start is among the first few.
    let agent_pid = lines
        .by_ref()
        .map_while(Result::ok)
        .map(|line| serde_json::from_str::<Value>(&line).expect("json"))
        .find(|event| event["event"] == "session_started")
        .and_then(|event| event["pid"].as_u64())
        .expect("the session started");
    wait_for(
        || project.root().join("started").exists(),
        "the agent's sleep to start",
    );
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(child.id()).expect("pid")),
        nix::sys::signal::Signal::SIGINT,
    )
    .expect("SIGINT");
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    let code = wait_exit(&mut child, Duration::from_secs(30));
    assert_eq!(code, 130, "{rest:#?}");
    assert!(process_gone(agent_pid), "the agent process survived Ctrl-C");
    assert_eq!(project.status_json()["run"]["status"], "paused");

    let (code, events) = project.run(&["--resume"]);
    assert_eq!(code, 0, "{events:#?}");
    assert_eq!(events[0]["resumed"], true);
    assert_eq!(project.status_json()["run"]["status"], "completed");
}

fn wait_for(mut condition: impl FnMut() -> bool, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn the_plan_init_writes_runs_with_the_simulated_agent() {
    let project = Project::new();
    let init = project.command(&["init"]).output().expect("init");
    assert!(
        init.status.success(),
        "{}",
        String::from_utf8_lossy(&init.stderr)
    );
    for file in [
        "plans/example/sim-scenario.yaml",
        ".debussy/.gitignore",
        ".debussy/config.yaml",
    ] {
        assert!(
            project.root().join(file).exists(),
            "init did not write {file}"
        );
    }
    project.commit_all("debussy init");
    let output = project
        .command(&[
            "run",
            "plans/example",
            "--agent",
            "sim",
            "--restart-delay",
            "0",
            "--output-format",
            "json",
        ])
        .output()
        .expect("run");
    let events: Vec<Value> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).expect("json"))
        .collect();
    assert_eq!(output.status.code(), Some(0), "{events:#?}");
    assert_eq!(
        events_named(&events, "restart").len(),
        1,
        "the example shows a context restart"
    );
    assert_eq!(summary(&events)["status"], "completed");
    assert!(
        project.root().join("demo/greeting.txt").exists()
            && project.root().join("demo/farewell.txt").exists()
    );
}

#[test]
fn without_a_git_identity_commits_are_made_as_debussy() {
    let project = Project::new();
    let repo = git2::Repository::open(project.root()).expect("open");
    let mut config = repo.config().expect("config");
    config.remove("user.name").expect("unset name");
    config.remove("user.email").expect("unset email");
    drop(config);
    let scenario = format!(
        "scripts:\n  - turns:\n{}{}{}",
        write_turn(10, "x.txt", "x"),
        notes_turn("1"),
        DONE_TURN
    );
    project.plan(&[("1", "N/A", "test -f x.txt")], &scenario);
    // The plan commit above came from the test's own signature; the run's come from debussy.
    let (code, events) = project.run(&[]);
    assert_eq!(code, 0, "{events:#?}");
    let repo = git2::Repository::open(project.root()).expect("open");
    let head = repo.head().expect("head").peel_to_commit().expect("commit");
    assert_eq!(head.author().name().ok(), Some("debussy"));
    assert_eq!(head.author().email().ok(), Some("debussy@localhost"));
}
