//! Interrupting a run and taking it up again: Ctrl-C and `--resume`, SIGKILL, a second
//! run refused, `status` on a live run, transcripts and flags kept across resumes.

use std::time::Duration;

use crate::support::processes::{group_gone, process_gone};
use crate::support::project::{
    Project, events_named, output_within, run_json, sim_run_args, wait_exit,
};
use crate::support::wait::wait_until;
use serde_json::Value;

use super::kit::{LiveRun, git_show, refusal, sleeping_project, summary};
use crate::support::scenario::{Scenario, Script, Status, Turn};

#[test]
fn ctrl_c_pauses_the_run_leaves_no_process_and_resume_completes() {
    let project = Project::new();
    let scenario = Scenario::new().script(
        Script::phase("1").turns([
            Turn::say("working")
                .percent(10)
                .bash("if [ ! -f started ]; then touch started; sleep 60; fi"),
            Turn::notes("1"),
            Turn::done(),
        ]),
    );
    project.plan(&[("1", "N/A", "test -f started")], &scenario);
    project.write(".gitignore", "started\n");
    project.commit_all("ignore the marker");

    let (mut child, mut lines) = project.start_run(&[]);
    // Lines arrive as the run goes; the session's start is among the first few.
    let agent_pid = lines
        .by_ref()
        .map_while(Result::ok)
        .map(|line| serde_json::from_str::<Value>(&line).expect("json"))
        .find(|event| event["event"] == "session_started")
        .and_then(|event| event["pid"].as_u64())
        .expect("the session started");
    wait_until(
        "the agent's sleep to start",
        Duration::from_secs(30),
        || project.root().join("started").exists(),
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
fn resume_with_no_unfinished_run_says_a_new_run_starts() {
    let project = Project::new();
    let scenario = Scenario::new().script(Script::phase("1").turns([
        Turn::write(10, "one.txt", "1"),
        Turn::notes("1"),
        Turn::done(),
    ]));
    project.plan(&[("1", "N/A", "test -f one.txt")], &scenario);

    let output = project.run_command(&["--resume"]).output().expect("resume");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("no unfinished run of this plan to resume: a new run starts"),
        "{stderr}"
    );
}

/// With every phase done there is nothing for an agent to do: `--resume` says the run
/// is complete, records no new run, and needs no agent program.
#[test]
fn resume_of_a_completed_run_says_so_without_needing_the_agent() {
    let project = Project::new();
    let scenario =
        Scenario::new().script(Script::phase("1").turns([Turn::notes("1"), Turn::done()]));
    project.plan(&[("1", "N/A", "true")], &scenario);
    let (code, events) = project.run(&[]);
    assert_eq!(code, 0, "{events:#?}");
    let run_id = events[0]["run_id"].as_str().expect("run id").to_owned();

    // No `--agent sim`: the default agent, Claude Code, is nowhere on this PATH.
    let mut command = project.command(&["run", "plan/MASTER_PLAN.md", "--resume"]);
    command.env("PATH", "/usr/bin:/bin");
    let output = output_within(command, Duration::from_secs(60));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains(&format!("run {run_id} already completed every phase")),
        "{stderr}"
    );
    assert!(!stderr.to_lowercase().contains("claude"), "{stderr}");
    assert_eq!(project.status_json()["run"]["id"], run_id.as_str());
}

#[test]
fn a_second_run_of_the_project_is_refused_while_the_first_lives() {
    let project = sleeping_project();
    let live = LiveRun::start(&project, &[]);
    // A file the live run's agent made: the refused run names the live run, not it.
    project.write("agent-made.txt", "new\n");

    for extra in [&[][..], &["--resume"][..]] {
        let mut args = vec!["run", "plan/MASTER_PLAN.md", "--agent", "sim"];
        args.extend_from_slice(extra);
        let output = project.command(&args).output().expect("second run");
        let said = String::from_utf8_lossy(&output.stderr);
        assert!(
            said.trim_start()
                .starts_with("× failed to start: another run"),
            "{extra:?}: only why it is refused: {said}"
        );
        let squashed = refusal(&output);
        assert!(
            squashed.contains(&live.run_id)
                && squashed.contains(&format!("pid{}", live.pid()))
                && squashed.contains(&format!("kill-INT{}", live.pid())),
            "{extra:?}: {squashed}"
        );
    }
    let dry = project
        .command(&sim_run_args(
            "plan/MASTER_PLAN.md",
            &["--dry-run", "--allow-dirty"],
        ))
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

#[test]
fn status_shows_the_running_session_and_a_killed_runs_spending_is_kept() {
    let project = sleeping_project();
    let mut live = LiveRun::start(&project, &[]);
    // While the session runs: one session, its agent, and what it has spent so far.
    let mut status = project.status_json();
    wait_until(
        "the running session's figures in the state store",
        Duration::from_secs(30),
        || {
            status = project.status_json();
            status["executions"][0]["live_session"]["billed"]["input"]
                .as_u64()
                .is_some_and(|input| input > 0)
        },
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
    // Its attempt's row keeps what the session spent: the rows add up to the run's total.
    let killed = &status["executions"][0];
    assert_eq!(killed["status"], "interrupted", "{status:#}");
    assert_eq!(killed["billed"], sessions[0]["billed"], "{status:#}");
    assert_eq!(killed["cost_usd"], sessions[0]["cost_usd"], "{status:#}");
    let rows: u64 = status["executions"]
        .as_array()
        .expect("executions")
        .iter()
        .filter_map(|e| e["billed"]["input"].as_u64())
        .sum();
    assert_eq!(
        Some(rows),
        status["totals"]["billed"]["input"].as_u64(),
        "{status:#}"
    );
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
    let resumed = Scenario::new().script(
        Script::phase("1")
            .expect_prompt("# Checkpoint: phase 1")
            .expect_prompt("paused")
            .expect_prompt("work.txt")
            .turns([Turn::notes("1"), Turn::done()]),
    );
    project.rescript(&resumed, "resume scenario");
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
    let failing =
        Scenario::new().script(Script::phase("1").turn(Turn::say("no").done_as(Status::Failed)));
    project.plan(&[("1", "N/A", "true")], &failing);
    let mut first = project.command(&sim_run_args(
        "plan/MASTER_PLAN.md",
        &[
            "--output-format",
            "json",
            "--max-retries",
            "0",
            "--model",
            "sim-model-x",
        ],
    ));
    first.env("DEBUSSY_MAX_RESTARTS", "2");
    let (code, _) = run_json(first, Duration::from_secs(120));
    assert_eq!(code, 1);

    let passing =
        Scenario::new().script(Script::phase("1").turns([Turn::notes("1"), Turn::done()]));
    project.rescript(&passing, "fixed scenario");
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

/// The terminal or the SSH connection goes away (SIGHUP), or a service manager stops the
/// run (SIGTERM): each pauses it as Ctrl-C does, with the agent's work kept, and one
/// `--resume` completes it.
#[test]
fn a_hangup_or_sigterm_pauses_the_run_as_ctrl_c_does() {
    use nix::sys::signal::Signal;
    for signal in [Signal::SIGHUP, Signal::SIGTERM] {
        let project = sleeping_project();
        let live = LiveRun::start(&project, &[]);
        let agent_pid = live.agent_pid;
        let (code, rest) = live.stop_with(signal);
        assert_eq!(code, 130, "{signal}: {rest:#?}");
        assert!(process_gone(agent_pid), "{signal}: the agent survived");
        assert_eq!(project.status_json()["run"]["status"], "paused", "{signal}");
        let (code, events) = project.run(&["--resume"]);
        assert_eq!(code, 0, "{signal}: {events:#?}");
        let kept = std::fs::read_to_string(project.root().join("work.txt")).expect("work.txt");
        assert_eq!(kept, "agent edit", "{signal}");
    }
}
