//! `debussy run` end to end with the simulated agent, in temporary git repositories:
//! context restarts with checkpoint commits, max restarts exceeded, a failing gate fixed
//! by remediation, an unmet dependency, and Ctrl-C then `--resume`.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::project::{
    self, Project, events_named, group_gone, process_gone, run_json, wait_exit,
};
use serde_json::Value;

/// What the run tests do with a project: a plan, runs, and what they recorded.
impl Project {
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
    let kinds: Vec<&str> = status["executions"][0]["sessions"]
        .as_array()
        .expect("sessions")
        .iter()
        .map(|s| s["kind"].as_str().expect("kind"))
        .collect();
    // Stopped at 85 % and 90 %, each session still had room for the handoff's prompt
    // and answer, and wrote it.
    assert_eq!(kinds, ["work", "handoff", "work", "handoff", "work"]);
    assert_eq!(status["totals"]["handoffs"], 2);
    assert!(
        events_named(&events, "handoff")
            .iter()
            .all(|h| h["written"] == true),
        "{events:#?}"
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
    let sessions = events_named(&events, "session_started");
    assert!(sessions[0].get("no_restart").is_none(), "{:#}", sessions[0]);
    assert_eq!(
        sessions[1]["no_restart"], "fix_session",
        "{:#}",
        sessions[1]
    );
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
        phases[1]["status"], "not run",
        "its dependent never ran: it is not run, not blocked (which needs a human)"
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

/// A scenario whose phase 1 first sleeps (until killed) after touching `started`, and on
/// later sessions writes its notes and reports done.
fn sleeping_scenario() -> String {
    format!(
        "scripts:\n  - phase: 1\n    turns:\n      - say: working\n        percent: 10\n        tools:\n          - write:\n              path: work.txt\n              content: \"agent edit\"\n          - bash: \"if [ ! -f started ]; then touch started; sleep 60; fi\"\n{}{}",
        notes_turn("1"),
        DONE_TURN
    )
}

/// A project whose phase 1 sleeps on its first session (see [`sleeping_scenario`]), with
/// a tracked `work.txt` the agent edits.
fn sleeping_project() -> Project {
    let project = Project::new();
    project.write("work.txt", "original\n");
    project.write(".gitignore", "started\n");
    project.plan(&[("1", "N/A", "test -f started")], &sleeping_scenario());
    project
}

/// A `debussy run` in the background printing JSON events.
struct LiveRun {
    child: std::process::Child,
    lines: std::io::Lines<BufReader<std::process::ChildStdout>>,
    run_id: String,
    agent_pid: u64,
}

impl LiveRun {
    /// Start `debussy run … --output-format json` plus `extra` and wait until the agent
    /// has touched `started`.
    fn start(project: &Project, extra: &[&str]) -> LiveRun {
        let mut args = vec![
            "run",
            "plan/MASTER_PLAN.md",
            "--agent",
            "sim",
            "--restart-delay",
            "0",
            "--output-format",
            "json",
        ];
        args.extend_from_slice(extra);
        let mut child = project
            .command(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn");
        let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let mut run_id = None;
        let mut agent_pid = None;
        for line in lines.by_ref().map_while(Result::ok) {
            let event: Value = serde_json::from_str(&line).expect("json");
            if event["event"] == "run_started" {
                run_id = event["run_id"].as_str().map(str::to_owned);
            }
            if event["event"] == "session_started" {
                agent_pid = event["pid"].as_u64();
                break;
            }
        }
        wait_for(
            || project.root().join("started").exists(),
            "the agent's sleep to start",
        );
        LiveRun {
            child,
            lines,
            run_id: run_id.expect("run_started"),
            agent_pid: agent_pid.expect("session_started"),
        }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    fn signal(&self, signal: nix::sys::signal::Signal) {
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(i32::try_from(self.pid()).expect("pid")),
            signal,
        )
        .expect("signal");
    }

    /// SIGINT, then the remaining events and the exit code.
    fn interrupt(mut self) -> (i32, Vec<Value>) {
        self.signal(nix::sys::signal::Signal::SIGINT);
        let rest: Vec<Value> = self
            .lines
            .map_while(Result::ok)
            .map(|line| serde_json::from_str(&line).expect("json"))
            .collect();
        let code = wait_exit(&mut self.child, Duration::from_secs(30));
        (code, rest)
    }
}

#[test]
fn resume_goes_on_with_a_phase_the_run_was_redoing_though_an_earlier_run_completed_it() {
    let project = sleeping_project();
    let (code, _) = LiveRun::start(&project, &[]).interrupt();
    assert_eq!(code, 130);
    let (code, events) = project.run(&["--resume"]);
    assert_eq!(code, 0, "an earlier run completes phase 1: {events:#?}");

    // A run that redoes phase 1 is paused in it; its resume must not skip it.
    std::fs::remove_file(project.root().join("started")).expect("rearm the sleep");
    let (code, _) = LiveRun::start(&project, &["--restart"]).interrupt();
    assert_eq!(code, 130);
    let (code, events) = project.run(&["--resume"]);
    assert_eq!(code, 0, "{events:#?}");
    assert!(
        events_named(&events, "phase_skipped").is_empty(),
        "{events:#?}"
    );
    assert_eq!(events_named(&events, "session_started").len(), 1);
    assert_eq!(summary(&events)["phases"][0]["status"], "completed");
}

#[test]
fn a_second_run_of_the_project_is_refused_while_the_first_lives() {
    let project = sleeping_project();
    let live = LiveRun::start(&project, &[]);

    for extra in [&[][..], &["--resume"][..]] {
        let mut args = vec!["run", "plan/MASTER_PLAN.md", "--agent", "sim"];
        args.extend_from_slice(extra);
        let output = project.command(&args).output().expect("second run");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{extra:?}: {stderr}");
        // The diagnostic is wrapped to the terminal's width anywhere, even inside the id.
        let squashed: String = stderr
            .chars()
            .filter(|c| !c.is_whitespace() && *c != '│')
            .collect();
        assert!(
            squashed.contains(&live.run_id)
                && squashed.contains(&format!("pid{}", live.pid()))
                && squashed.contains(&format!("kill-INT{}", live.pid())),
            "{extra:?}: {stderr}"
        );
    }
    let dry = project
        .command(&[
            "run",
            "plan/MASTER_PLAN.md",
            "--agent",
            "sim",
            "--dry-run",
            "--allow-dirty",
        ])
        .output()
        .expect("dry run");
    assert!(
        dry.status.success(),
        "a dry run needs no lock: {}{}",
        String::from_utf8_lossy(&dry.stdout),
        String::from_utf8_lossy(&dry.stderr)
    );
    let status = project.status_json();
    assert_eq!(status["run"]["id"], live.run_id.as_str());
    assert_eq!(status["run"]["status"], "running");

    let agent_pid = live.agent_pid;
    let (code, _) = live.interrupt();
    assert_eq!(code, 130);
    assert!(process_gone(agent_pid));
    // Once the first run ended, the lock is free again.
    let (code, events) = project.run(&["--resume"]);
    assert_eq!(code, 0, "{events:#?}");
}

#[test]
fn sigkill_takes_the_agent_along_and_leaves_an_interrupted_run_that_resume_continues() {
    let project = sleeping_project();
    let mut live = LiveRun::start(&project, &[]);
    let run_id = live.run_id.clone();
    let agent_pid = live.agent_pid;
    live.signal(nix::sys::signal::Signal::SIGKILL);
    assert_eq!(wait_exit(&mut live.child, Duration::from_secs(30)), -1);
    // The agent and the `sleep` its bash tool started die with debussy: the group's
    // watchdog saw debussy's pipe close.
    assert!(
        group_gone(agent_pid),
        "the agent's process group outlived a SIGKILLed debussy"
    );

    let status = project.status_json();
    assert_eq!(status["run"]["id"], run_id.as_str());
    assert_eq!(status["run"]["status"], "interrupted", "{status:#}");
    let history = project.command(&["history"]).output().expect("history");
    assert!(
        String::from_utf8_lossy(&history.stdout).contains("interrupted"),
        "{}",
        String::from_utf8_lossy(&history.stdout)
    );

    // The dead run's phase is not shown running: its attempt reads interrupted.
    assert_eq!(
        status["executions"][0]["status"], "interrupted",
        "{status:#}"
    );
    assert_eq!(
        status["running_phases"],
        serde_json::json!([]),
        "{status:#}"
    );
    let text = project.command(&["status"]).output().expect("status");
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        !text.contains("Running:") && text.contains("interrupted"),
        "{text}"
    );

    // The killed agent's edit is its work: one `--resume`, no flag, keeps it in a
    // recovered checkpoint that names the file, and the next session starts from it.
    let (code, events) = project.run(&["--resume"]);
    assert_eq!(code, 0, "{events:#?}");
    assert_eq!(events[0]["run_id"], run_id.as_str());
    assert_eq!(events[0]["resumed"], true);
    let recovered = events_named(&events, "committed");
    assert!(
        recovered.first().is_some_and(|c| c["message"]
            .as_str()
            .is_some_and(|m| m.contains("recovered (interrupted)"))),
        "{events:#?}"
    );
    let body = git_show(
        project.root(),
        recovered[0]["commit"].as_str().expect("commit"),
    );
    assert!(
        body.contains("phase 1 - Phase 1 recovered (interrupted)") && body.contains("work.txt"),
        "{body}"
    );
    assert_eq!(
        std::fs::read_to_string(project.root().join("work.txt")).expect("read"),
        "agent edit"
    );
    assert_eq!(project.status_json()["run"]["status"], "completed");
}

/// `git show -s --format=%B COMMIT` in `root`.
fn git_show(root: &Path, commit: &str) -> String {
    let output = Command::new("git")
        .args(["show", "-s", "--format=%B", commit])
        .current_dir(root)
        .output()
        .expect("git show");
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn status_shows_the_running_session_and_a_killed_runs_spending_is_kept() {
    let project = sleeping_project();
    let mut live = LiveRun::start(&project, &[]);
    // While the session runs: one session, its agent, and what it has spent so far.
    let mut status = project.status_json();
    wait_for(
        || {
            status = project.status_json();
            status["executions"][0]["live_session"]["billed"]["input"]
                .as_u64()
                .is_some_and(|input| input > 0)
        },
        "the running session's figures in the state store",
    );
    assert_eq!(status["executions"][0]["live_session"]["agent"], "sim");
    let text = project.command(&["status"]).output().expect("status");
    let text = String::from_utf8_lossy(&text.stdout);
    let row = text
        .lines()
        .find(|line| line.starts_with("1 "))
        .unwrap_or_else(|| panic!("no row for phase 1 in {text}"));
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(cells[4], "1", "one session, the running one: {row}");
    assert_eq!(cells[6], "sim", "its agent: {row}");
    assert_ne!(cells[8], "0", "what it has spent: {row}");

    live.signal(nix::sys::signal::Signal::SIGKILL);
    assert_eq!(wait_exit(&mut live.child, Duration::from_secs(30)), -1);
    // A run whose process was killed still says what its session spent.
    let history = project
        .command(&["history", "--format", "json"])
        .output()
        .expect("history");
    let history: Value = serde_json::from_slice(&history.stdout).expect("json");
    assert_eq!(history[0]["status"], "interrupted", "{history:#}");
    assert!(
        history[0]["totals"]["billed"]["input"]
            .as_u64()
            .is_some_and(|input| input > 0),
        "{history:#}"
    );
    // Resumed, the killed session is recorded as interrupted, and counted once.
    let before = history[0]["totals"]["billed"]["input"]
        .as_u64()
        .unwrap_or(0);
    let (code, events) = project.run(&["--resume", "--allow-dirty"]);
    assert_eq!(code, 0, "{events:#?}");
    let status = project.status_json();
    let sessions: Vec<&Value> = status["executions"]
        .as_array()
        .expect("executions")
        .iter()
        .flat_map(|e| e["sessions"].as_array().into_iter().flatten())
        .collect();
    assert_eq!(sessions[0]["outcome"], "interrupted", "{status:#}");
    assert_eq!(sessions[0]["billed"]["input"].as_u64(), Some(before));
    assert!(
        status["executions"]
            .as_array()
            .expect("executions")
            .iter()
            .all(|e| e.get("live_session").is_none()),
        "{status:#}"
    );
}

#[test]
fn transcripts_of_a_resumed_run_never_overwrite_earlier_ones() {
    let project = sleeping_project();
    let live = LiveRun::start(&project, &[]);
    let (code, _) = live.interrupt();
    assert_eq!(code, 130);
    let first = project.status_json()["executions"][0]["sessions"][0]["log_path"]
        .as_str()
        .expect("first log")
        .to_owned();
    let first_text = std::fs::read_to_string(project.root().join(&first)).expect("first log");

    let (code, events) = project.run(&["--resume"]);
    assert_eq!(code, 0, "{events:#?}");
    let status = project.status_json();
    let paths: Vec<String> = status["executions"]
        .as_array()
        .expect("executions")
        .iter()
        .flat_map(|e| e["sessions"].as_array().cloned().unwrap_or_default())
        .map(|s| s["log_path"].as_str().expect("log path").to_owned())
        .collect();
    assert_eq!(paths.len(), 2, "{status:#}");
    assert_ne!(paths[0], paths[1], "two sessions, one transcript path");
    assert_eq!(
        std::fs::read_to_string(project.root().join(&paths[0])).expect("first log"),
        first_text,
        "the first session's transcript was overwritten"
    );
    let second = std::fs::read_to_string(project.root().join(&paths[1])).expect("second log");
    assert!(
        second.contains("notes"),
        "the second path holds the second session: {second}"
    );
    let started: Vec<&str> = events_named(&events, "session_started")
        .iter()
        .filter_map(|e| e["log_path"].as_str())
        .collect();
    assert!(
        started.iter().all(|p| p.ends_with(&paths[1])),
        "{started:?} vs {paths:?}"
    );
}

#[test]
fn pause_commits_the_work_and_the_resumed_session_gets_the_checkpoint() {
    let project = sleeping_project();
    let live = LiveRun::start(&project, &[]);
    let (code, rest) = live.interrupt();
    assert_eq!(code, 130);
    let paused = &rest.last().expect("summary")["summary"];
    assert_eq!(paused["status"], "paused");
    assert_eq!(paused["plan_path"], "plan/MASTER_PLAN.md");
    let messages = project.commit_messages();
    assert!(
        messages[0].contains("phase 1") && messages[0].contains("paused"),
        "{messages:?}"
    );
    assert_eq!(
        std::fs::read_to_string(project.root().join("work.txt")).expect("work"),
        "agent edit"
    );

    // The resumed session must be told where the paused one stopped.
    let resumed = format!(
        "scripts:\n  - phase: 1\n    expect_prompt: [\"# Checkpoint: phase 1\", \"paused\", \"work.txt\"]\n    turns:\n{}{}",
        notes_turn("1"),
        DONE_TURN
    );
    project.write("plan/sim-scenario.yaml", &resumed);
    project.commit_all("resume scenario");
    let (code, events) = project.run(&["--resume"]);
    assert_eq!(code, 0, "{events:#?}");
    assert_eq!(summary(&events)["plan_path"], "plan/MASTER_PLAN.md");
    assert_eq!(
        std::fs::read_to_string(project.root().join("work.txt")).expect("work"),
        "agent edit"
    );
}

#[test]
fn resume_reuses_the_flags_the_run_was_started_with() {
    let project = Project::new();
    let failing = "scripts:\n  - phase: 1\n    turns:\n      - say: no\n        tools:\n          - done: failed\n";
    project.plan(&[("1", "N/A", "true")], failing);
    let mut first = project.command(&[
        "run",
        "plan/MASTER_PLAN.md",
        "--agent",
        "sim",
        "--output-format",
        "json",
        "--max-retries",
        "0",
        "--model",
        "sim-model-x",
    ]);
    first.env("DEBUSSY_MAX_RESTARTS", "2");
    let (code, _) = run_json(first, Duration::from_secs(120));
    assert_eq!(code, 1);

    let passing = format!(
        "scripts:\n  - phase: 1\n    turns:\n{}{}",
        notes_turn("1"),
        DONE_TURN
    );
    project.write("plan/sim-scenario.yaml", &passing);
    project.commit_all("fixed scenario");
    // No --agent: the run must go on with the simulated agent it started with.
    let mut command = project.command(&[
        "run",
        "plan/MASTER_PLAN.md",
        "--resume",
        "--output-format",
        "json",
    ]);
    command.env("PATH", "/usr/bin:/bin");
    let output = command.output().expect("resume");
    let stderr = String::from_utf8_lossy(&output.stderr);
    let events: Vec<Value> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("json"))
        .collect();
    assert_eq!(output.status.code(), Some(0), "{stderr}\n{events:#?}");
    assert_eq!(events[0]["agent"], "sim");
    assert_eq!(events[0]["model"], "sim-model-x");
    assert_eq!(events[0]["max_restarts"], 2);
    assert!(
        stderr.contains("--agent sim")
            && stderr.contains("--model sim-model-x")
            && stderr.contains("DEBUSSY_MAX_RESTARTS=2"),
        "the reused flags are named: {stderr}"
    );
}

#[test]
fn a_run_failing_in_phase_1_records_phase_1() {
    let project = Project::new();
    let failing = "scripts:\n  - phase: 1\n    turns:\n      - say: no\n        tools:\n          - done: failed\n";
    project.plan(
        &[
            ("1", "N/A", "true"),
            ("2", "Phase 1", "true"),
            ("3", "N/A", "true"),
        ],
        failing,
    );
    let (code, events) = project.run(&["--max-retries", "0"]);
    assert_eq!(code, 1, "{events:#?}");
    let status = project.status_json();
    assert_eq!(status["run"]["current_phase"], "1", "{status:#}");
    let history = project.command(&["history"]).output().expect("history");
    let text = String::from_utf8_lossy(&history.stdout);
    assert!(
        !text.contains("phase 3") && !text.contains("phase 2"),
        "{text}"
    );
}

#[test]
fn run_data_is_readable_by_its_owner_only() {
    use std::os::unix::fs::PermissionsExt;
    let project = Project::new();
    let scenario = format!(
        "scripts:\n  - phase: 1\n    turns:\n{}{}",
        notes_turn("1"),
        DONE_TURN
    );
    project.plan(&[("1", "N/A", "true")], &scenario);
    let dir = project.root().join(".debussy");
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let (code, events) = project.run(&[]);
    assert_eq!(code, 0, "{events:#?}");
    let mode = |path: &Path| {
        std::fs::metadata(path)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
            .permissions()
            .mode()
            & 0o777
    };
    assert_eq!(mode(&dir), 0o700, ".debussy");
    assert_eq!(mode(&dir.join("state.db")), 0o600, "state.db");
    for extra in ["state.db-wal", "state.db-shm"] {
        let path = dir.join(extra);
        if path.exists() {
            assert_eq!(mode(&path), 0o600, "{extra}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn skipping_a_phase_skips_the_phases_that_depend_on_it() {
    use debussy::events::{Event, RunRequest};
    let project = Project::new();
    let scenario = format!(
        "scripts:\n  - phase: 2\n    turns:\n      - sleep_ms: 60000\n  - turns:\n{}{}",
        notes_turn("${PHASE}"),
        DONE_TURN
    );
    project.plan(
        &[
            ("1", "N/A", "true"),
            ("2", "Phase 1", "true"),
            ("3", "Phase 2", "true"),
            ("4", "Phase 1", "true"),
        ],
        &scenario,
    );
    let overrides: debussy::config::Overrides = [
        (
            "agent.kind".to_owned(),
            debussy::config::FlagValue::Text("sim".into()),
        ),
        (
            "agent.command".to_owned(),
            debussy::config::FlagValue::Text(crate::support::DEBUSSY.into()),
        ),
        (
            "restart_delay".to_owned(),
            debussy::config::FlagValue::Whole(0),
        ),
    ]
    .into();
    let loaded = debussy::config::load(&debussy::config::LoadOptions {
        cwd: project.root().to_path_buf(),
        config_home: None,
        config_file: None,
        env: Default::default(),
        overrides: Some(&overrides),
    })
    .expect("config");
    let plan = debussy::plan::load(&project.root().join("plan/MASTER_PLAN.md")).expect("plan");
    let backend = debussy::agent::backend(
        &debussy::session::default_backend_settings(&loaded.config),
        debussy::agent::BackendContext {
            project_root: project.root(),
            plan_path: Some(&plan.master),
        },
    )
    .expect("backend");
    let (events, mut received) = debussy::events::channel();
    let (requests, request_receiver) = tokio::sync::mpsc::unbounded_channel();
    let run = debussy::orchestrator::run(debussy::orchestrator::RunSetup {
        loaded,
        plan,
        backend: std::sync::Arc::from(backend),
        options: debussy::orchestrator::RunOptions::default(),
        events,
        requests: request_receiver,
    });
    let watch = async {
        let mut skipped = Vec::new();
        let mut sessions = Vec::new();
        // Ends when the run drops its sender.
        while let Some(event) = received.recv().await {
            match event {
                // The HUD's `s` while phase 2's agent works.
                Event::SessionStarted { phase_id, .. } => {
                    if phase_id == "2" {
                        requests.send(RunRequest::SkipPhase).expect("request");
                    }
                    sessions.push(phase_id);
                }
                Event::PhaseSkipped { phase_id, reason } => skipped.push((phase_id, reason)),
                _ => {}
            }
        }
        (skipped, sessions)
    };
    let (summary, (skipped, sessions)) =
        tokio::time::timeout(Duration::from_secs(90), async { tokio::join!(run, watch) })
            .await
            .expect("the run ends");
    let summary = summary.expect("run");
    assert_eq!(sessions, ["1", "2", "4"], "phase 3 must not run");
    assert!(
        skipped
            .iter()
            .any(|(id, reason)| id == "3" && reason.contains("phase 2")),
        "{skipped:?}"
    );
    let statuses: Vec<(&str, &str)> = summary
        .phases
        .iter()
        .map(|p| (p.id.as_str(), p.status.as_str()))
        .collect();
    assert_eq!(
        statuses,
        [
            ("1", "completed"),
            ("2", "skipped"),
            ("3", "skipped"),
            ("4", "completed")
        ]
    );
}

#[test]
fn a_pause_without_a_commit_lets_the_resume_accept_exactly_the_paused_files() {
    let project = sleeping_project();
    let live = LiveRun::start(&project, &["--no-auto-commit"]);
    let (code, _) = live.interrupt();
    assert_eq!(code, 130);
    assert_eq!(
        std::fs::read_to_string(project.root().join("work.txt")).expect("work"),
        "agent edit",
        "the paused work stays in the tree"
    );

    // Someone else's edit is still refused, naming it.
    project.write(".gitignore", "started\nother\n");
    let (code, events) = project.run(&["--resume", "--auto-commit"]);
    assert_eq!(code, 2, "{events:#?}");
    project.write(".gitignore", "started\n");

    let (code, events) = project.run(&["--resume", "--auto-commit"]);
    assert_eq!(code, 0, "{events:#?}");
    let messages = project.commit_messages();
    assert!(
        messages[0].contains("phase 1") && messages[0].contains("completed"),
        "{messages:?}"
    );
}

#[test]
fn a_window_the_agent_reported_under_its_full_name_is_used_with_an_alias_configured() {
    let project = Project::new();
    // The agent runs `claude-opus-5-5` for the alias `opus` and reports a 1,000,000-token
    // window. Phase 2 then uses 300,000 tokens: 30 % of the real window, but past 80 %
    // of the 200,000 default, where a restart would wrongly fire.
    let scenario = format!(
        "model: claude-opus-5-5\nwindow: 1000000\nscripts:\n  - phase: 1\n    turns:\n{}{}{}  - phase: 2\n    turns:\n{}{}{}",
        write_turn(10, "a.txt", "a"),
        notes_turn("1"),
        DONE_TURN,
        write_turn(30, "b.txt", "b"),
        notes_turn("2"),
        DONE_TURN,
    );
    project.plan(&[("1", "N/A", "true"), ("2", "Phase 1", "true")], &scenario);
    let (code, events) = project.run(&["--model", "opus", "--context-threshold", "80"]);
    assert_eq!(code, 0, "{events:#?}");
    assert_eq!(summary(&events)["restarts"], 0, "{events:#?}");
    let phase_two: Vec<&Value> = events_named(&events, "context")
        .into_iter()
        .filter(|e| e["phase_id"] == "2" && e["snapshot"]["tokens"].as_u64() > Some(0))
        .collect();
    assert!(!phase_two.is_empty(), "{events:#?}");
    for event in phase_two {
        assert_eq!(event["snapshot"]["window"]["tokens"], 1_000_000, "{event}");
        assert_ne!(event["snapshot"]["window"]["source"], "default", "{event}");
    }
}

#[test]
fn a_merge_in_progress_is_refused_even_with_allow_dirty() {
    let project = Project::new();
    project.write("shared.txt", "base\n");
    project.plan(
        &[("1", "N/A", "true")],
        &format!("scripts:\n  - phase: 1\n    turns:\n{DONE_TURN}"),
    );
    let git = |args: &[&str]| {
        let output = Command::new("git")
            .args(args)
            .current_dir(project.root())
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .output()
            .expect("git");
        String::from_utf8_lossy(&output.stdout).into_owned()
    };
    let main = git(&["rev-parse", "--abbrev-ref", "HEAD"])
        .trim()
        .to_owned();
    git(&["checkout", "-q", "-b", "other"]);
    project.write("shared.txt", "theirs\n");
    git(&["commit", "-qam", "theirs"]);
    git(&["checkout", "-q", &main]);
    project.write("shared.txt", "ours\n");
    git(&["commit", "-qam", "ours"]);
    git(&["merge", "other"]);
    let merge_head = project.root().join(".git/MERGE_HEAD");
    assert!(merge_head.exists(), "the merge stopped on its conflict");

    let output = project
        .command(&[
            "run",
            "plan/MASTER_PLAN.md",
            "--agent",
            "sim",
            "--allow-dirty",
        ])
        .output()
        .expect("run");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("a merge is in progress") && stderr.contains("merge --abort"),
        "{stderr}"
    );
    assert!(merge_head.exists(), "the merge is left as it was");
    assert!(
        std::fs::read_to_string(project.root().join("shared.txt"))
            .expect("shared")
            .contains("<<<<<<<"),
        "the conflict is left for the user"
    );
    assert_eq!(git(&["log", "--format=%s", "-1"]).trim(), "ours");
}

#[test]
fn a_commit_that_fails_fails_the_phase_with_gits_words_and_keeps_the_work() {
    let project = Project::new();
    let scenario = format!(
        "scripts:\n  - phase: 1\n    turns:\n{}{}{}",
        write_turn(10, "work.txt", "the agent's work"),
        notes_turn("1"),
        DONE_TURN
    );
    project.plan(&[("1", "N/A", "true")], &scenario);
    block_object_writes(&project);
    let (code, events) = project.run(&[]);
    assert_eq!(code, 1, "{events:#?}");
    let summary = summary(&events);
    assert_eq!(summary["status"], "failed", "{summary:#}");
    assert_eq!(summary["phases"][0]["status"], "failed", "{summary:#}");
    let error = summary["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("could not be committed") && error.contains("still in the working tree"),
        "{error}"
    );
    assert!(
        events_named(&events, "warning")
            .iter()
            .any(|w| w.to_string().contains("could not commit")),
        "{events:#?}"
    );
    assert_eq!(
        std::fs::read_to_string(project.root().join("work.txt")).expect("work kept"),
        "the agent's work"
    );
}

#[test]
fn a_checkpoint_that_cannot_be_committed_stops_the_run_instead_of_restarting() {
    let project = Project::new();
    let scenario = format!(
        "scripts:\n  - phase: 1\n    restart: 0\n    turns:\n{}      - say: crossing\n        percent: 95\n      - sleep_ms: 5000\n  - phase: 1\n    restart: 1\n    turns:\n{}",
        write_turn(10, "work.txt", "half done"),
        DONE_TURN
    );
    project.plan(&[("1", "N/A", "true")], &scenario);
    block_object_writes(&project);
    let (code, events) = project.run(&[]);
    assert_eq!(code, 1, "{events:#?}");
    assert!(events_named(&events, "restart").is_empty(), "{events:#?}");
    let error = summary(&events)["error"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        error.contains("checkpoint could not be committed"),
        "{error}"
    );
    assert_eq!(
        std::fs::read_to_string(project.root().join("work.txt")).expect("work kept"),
        "half done"
    );
}

/// Let git read the repository but not write a single object: everything is packed and
/// every loose-object directory is a file (what a read-only `.git` does, even for root).
fn block_object_writes(project: &Project) {
    let git = |args: &[&str]| {
        let status = Command::new("git")
            .args(args)
            .current_dir(project.root())
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .status()
            .expect("git");
        assert!(status.success(), "git {args:?}");
    };
    git(&["repack", "-a", "-d", "-q"]);
    git(&["prune-packed"]);
    let objects = project.root().join(".git/objects");
    for byte in 0..=255u8 {
        let dir = objects.join(format!("{byte:02x}"));
        if dir.is_dir() {
            std::fs::remove_dir(&dir).expect("empty loose-object directory");
        }
        std::fs::write(&dir, "").expect("block the directory");
    }
}

#[test]
fn the_projects_pre_commit_hook_runs_and_a_refusal_fails_the_phase() {
    use std::os::unix::fs::PermissionsExt as _;
    let project = Project::new();
    let scenario = format!(
        "scripts:\n  - phase: 1\n    turns:\n{}{}{}",
        write_turn(10, "work.txt", "the agent's work"),
        notes_turn("1"),
        DONE_TURN
    );
    project.plan(&[("1", "N/A", "true")], &scenario);
    let hook = project.root().join(".git/hooks/pre-commit");
    std::fs::create_dir_all(hook.parent().expect("hooks")).expect("mkdir");
    std::fs::write(
        &hook,
        "#!/bin/sh\necho 'policy: no commits today' >&2\nexit 1\n",
    )
    .expect("hook");
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let (code, events) = project.run(&[]);
    assert_eq!(code, 1, "{events:#?}");
    let error = summary(&events)["error"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        error.contains("pre-commit hook refused the commit")
            && error.contains("policy: no commits today"),
        "{error}"
    );
    // With the hooks switched off the same run commits.
    project.write(".debussy/config.yaml", "git:\n  run_hooks: false\n");
    let (code, events) = project.run(&["--restart", "--allow-dirty"]);
    assert_eq!(code, 0, "{events:#?}");
}

#[test]
fn fix_sessions_restart_for_their_context_only_when_configured() {
    let project = Project::new();
    // The fix session crosses the threshold at once; only with restart_in_fix_sessions
    // is it stopped and continued from a checkpoint.
    let scenario = format!(
        "scripts:\n  - phase: 1\n    attempt: 1\n    turns:\n{}{}{}  - phase: 1\n    attempt: 2\n    restart: 0\n    turns:\n{}      - say: crossing\n        percent: 95\n      - sleep_ms: 2000\n  - phase: 1\n    attempt: 2\n    restart: 1\n    turns:\n{}",
        write_turn(10, "out.txt", "wrong"),
        notes_turn("1"),
        DONE_TURN,
        write_turn(10, "out.txt", "right"),
        DONE_TURN,
    );
    project.plan(&[("1", "N/A", "grep -q right out.txt")], &scenario);
    let (code, events) = project.run(&[]);
    assert_eq!(code, 0, "{events:#?}");
    assert!(events_named(&events, "restart").is_empty(), "{events:#?}");

    project.write(".debussy/config.yaml", "restart_in_fix_sessions: true\n");
    let (code, events) = project.run(&["--restart", "--allow-dirty"]);
    assert_eq!(code, 0, "{events:#?}");
    let sessions = events_named(&events, "session_started");
    assert!(
        sessions.iter().all(|s| s.get("no_restart").is_none()),
        "{sessions:#?}"
    );
    assert_eq!(events_named(&events, "restart").len(), 1, "{events:#?}");
}

#[test]
fn a_session_stopped_for_its_context_is_priced_from_its_tokens_and_marked_estimated() {
    let project = Project::new();
    let scenario = format!(
        "model: claude-sonnet-4-5\nscripts:\n  - phase: 1\n    restart: 0\n    turns:\n{}      - say: crossing\n        percent: 90\n      - sleep_ms: 2000\n  - phase: 1\n    restart: 1\n    turns:\n{}{}",
        write_turn(10, "a.txt", "a"),
        notes_turn("1"),
        DONE_TURN
    );
    project.plan(&[("1", "N/A", "true")], &scenario);
    let (code, events) = project.run(&[]);
    assert_eq!(code, 0, "{events:#?}");
    let ended = events_named(&events, "session_ended");
    let stopped = &ended[0]["snapshot"];
    assert_eq!(ended[0]["outcome"], "context_limit", "{:#}", ended[0]);
    assert_eq!(stopped["cost_estimated"], true, "{stopped:#}");
    assert!(
        stopped["cost_usd"].as_f64().is_some_and(|c| c > 0.0),
        "{stopped:#}"
    );
    assert!(
        stopped["billed"]["cache_read"].as_u64().is_some()
            || stopped["billed"]["input"].as_u64() > Some(0),
        "{stopped:#}"
    );
    let summary = summary(&events);
    assert_eq!(summary["cost_estimated"], true, "{summary:#}");
    assert!(
        summary["cost_usd"].as_f64().is_some_and(|c| c > 0.0),
        "{summary:#}"
    );
    let status = project.status_json();
    assert_eq!(
        status["executions"][0]["cost_estimated"], true,
        "{status:#}"
    );
    let text = project.command(&["status"]).output().expect("status");
    assert!(
        String::from_utf8_lossy(&text.stdout).contains("~$"),
        "{}",
        String::from_utf8_lossy(&text.stdout)
    );
}

mod formats;
mod guards;
mod handoff;
mod hostile;
mod links;
mod merges;
mod orphans;
mod parallel;
mod witness;
