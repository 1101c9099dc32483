//! The player plays a scenario for real: its files, its commands, its lines as they
//! go, the demo, the backend's command line and the agent's `debussy progress` calls.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use debussy::agent::sim::SimBackend;
use debussy::agent::{AgentBackend, AgentEvent, BackendSettings};

use debussy::context::{Exactness, StopReason};

use super::kit::{BIN, TIMEOUT, play, run_with_stdin, workflow, write};
use crate::support::scenario::{Action, Progress, Scenario, Script, Turn};

#[test]
fn plays_a_scenario_end_to_end_with_real_effects() {
    let dir = tempfile::tempdir().expect("tempdir");
    let work = dir.path().join("work");
    std::fs::create_dir(&work).expect("mkdir");
    let scenario = write(dir.path(), "scenario.yaml", &workflow());
    let run = play(
        &work,
        &scenario,
        &[
            ("DEBUSSY_PHASE_ID", "3"),
            ("DEBUSSY_ATTEMPT", "2"),
            ("DEBUSSY_RESTART", "1"),
        ],
        "Do phase three, please.",
    );
    assert!(run.status.success(), "{}\n{}", run.status, run.stderr);

    // Real effects, relative to the working directory and to the scenario's directory.
    assert_eq!(
        std::fs::read_to_string(work.join("out/a.txt")).expect("a.txt"),
        "alpha 3/2/1\n"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("notes.md")).expect("notes"),
        "## Summary\n"
    );

    // The stream: init first, result last, every line parsed as a known event.
    let AgentEvent::Init(init) = &run.events[0] else {
        panic!("first event is not init: {:?}", run.events[0])
    };
    assert_eq!(init.model.as_deref(), Some("sim-test"));
    assert!(init.tools.iter().any(|tool| tool == "Task"));
    assert!(
        run.events
            .iter()
            .all(|event| !matches!(event, AgentEvent::Unknown(_) | AgentEvent::Text(_))),
        "{}",
        run.stdout
    );
    let result = run.result();
    assert!(result.is_success());
    assert_eq!(result.result.as_deref(), Some("All done."));
    assert_eq!(result.num_turns, Some(5));
    assert_eq!(result.model_usage["sim-test"].context_window, Some(100_000));
    assert_eq!(result.session_id, init.session_id);

    // Tool calls and their results, in order, with the subagent's marked by its parent.
    let uses = run.tool_uses();
    let names: Vec<&str> = uses.iter().map(|(_, name, _, _)| *name).collect();
    assert_eq!(
        names,
        [
            "TodoWrite",
            "Write",
            "Write",
            "Bash",
            "Bash",
            "Read",
            "Read",
            "Task",
            "Bash",
            "Bash"
        ]
    );
    let task_id = uses[7].0;
    assert_eq!(
        uses[8].3,
        Some(task_id),
        "the subagent's call carries its parent"
    );
    assert_eq!(
        uses[1].2["file_path"],
        work.join("out/a.txt").to_string_lossy().as_ref()
    );
    let done = uses[9].2["command"].as_str().expect("command");
    assert!(
        done.contains(" done --phase 3 --status completed"),
        "{done}"
    );
    assert!(
        done.starts_with(&format!("'{BIN}'")) || done.starts_with(BIN),
        "{done}"
    );

    let results = run.tool_results();
    assert_eq!(results.len(), 10);
    assert_eq!(results[3].1, "alpha 3/2/1\nerr");
    assert!(!results[3].2);
    assert_eq!(results[4].1, "Exit code 3\n");
    assert!(results[4].2);
    assert_eq!(results[5].1, "     1\talpha 3/2/1");
    assert_eq!(
        (results[6].1.as_str(), results[6].2),
        ("File does not exist.", true)
    );
    assert_eq!(
        results[7].3,
        Some(task_id),
        "the subagent's result carries its parent"
    );
    assert_eq!(results[7].1, "1");
    assert_eq!(
        (results[8].0, results[8].1.as_str(), results[8].3),
        (task_id, "One file.", None)
    );
    // `debussy done` ran for real; whatever it answered is reported, not fatal.
    assert_eq!(results[9].0, uses[9].0);

    // The meter sees the main thread only: 41,000 at the end; the subagent's 90 % of the
    // window never counts, so no stop fires at 80 %.
    let (meter, stops) = run.meter(80.0);
    assert!(stops.is_empty(), "{stops:?}");
    let snapshot = meter.snapshot();
    assert_eq!(snapshot.tokens, 41_000);
    assert_eq!(snapshot.exactness, Exactness::Exact);
    assert_eq!(snapshot.window.tokens, 100_000);
    assert_eq!(snapshot.turns, 5);
    assert_eq!(snapshot.tool_calls, 9);
}

#[test]
fn the_demo_scenario_restarts_phase_one_and_finishes_phase_two() {
    let dir = tempfile::tempdir().expect("tempdir");
    let plan_dir = dir.path().join("examples/demo");
    std::fs::create_dir_all(&plan_dir).expect("mkdir");
    let scenario = plan_dir.join("sim-scenario.yaml");
    // Played here without debussy, nothing stops the first session in its long pause
    // for the stop: a short one keeps the test quick.
    let demo = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/demo/sim-scenario.yaml"),
    )
    .expect("read the demo scenario");
    assert!(
        demo.contains("sleep_ms: 10000"),
        "the demo's pause for the stop"
    );
    std::fs::write(&scenario, demo.replace("sleep_ms: 10000", "sleep_ms: 100"))
        .expect("write the demo scenario");
    let root = dir.path();
    // One session of the demo, which must succeed.
    let session = |env: &[(&str, &str)], prompt: &str| {
        let run = play(root, &scenario, env, prompt);
        assert!(run.status.success(), "{prompt}: {}", run.stderr);
        run
    };

    // Phase 1, first session: 40 %, 65 %, 83 %; the 80 % threshold fires on the third turn.
    let first = session(
        &[("DEBUSSY_PHASE_ID", "1"), ("DEBUSSY_RESTART", "0")],
        "Phase 1",
    );
    let (_, stops) = first.meter(80.0);
    assert_eq!(stops.len(), 1);
    assert!(
        matches!(
            stops[0],
            StopReason::ContextThreshold {
                tokens: 166_000,
                window: 200_000,
                ..
            }
        ),
        "{stops:?}"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("demo/greeting.txt")).expect("greeting"),
        "hello\n"
    );

    // Phase 1 after the restart: notes beside the plan, then `debussy done`.
    // Nothing stopped this first session, so it went on to write the notes; remove them to
    // see the restarted session write them.
    std::fs::remove_file(plan_dir.join("notes/phase-1.md"))
        .expect("notes of the unstopped session");
    let second = session(
        &[("DEBUSSY_PHASE_ID", "1"), ("DEBUSSY_RESTART", "1")],
        "Phase 1 again",
    );
    assert!(second.meter(80.0).1.is_empty());
    let notes = std::fs::read_to_string(plan_dir.join("notes/phase-1.md")).expect("notes");
    for heading in ["## Summary", "## Key Decisions", "## Files Modified"] {
        assert!(notes.contains(heading), "{heading} missing from\n{notes}");
    }
    assert!(second.tool_uses().iter().any(|(_, name, input, _)| {
        *name == "Bash"
            && input["command"]
                .as_str()
                .is_some_and(|c| c.contains("done --phase 1 --status completed"))
    }));

    // Phase 2 in one session; its subagent reaches 92 % without stopping anything.
    let third = session(&[("DEBUSSY_PHASE_ID", "2")], "Phase 2");
    assert!(third.meter(80.0).1.is_empty());
    assert_eq!(
        std::fs::read_to_string(root.join("demo/farewell.txt")).expect("farewell"),
        "goodbye\n"
    );
    let read_notes = &third.tool_results()[0];
    assert!(
        read_notes.1.contains("## Summary"),
        "phase 2 read phase 1's notes: {}",
        read_notes.1
    );
    let notes = std::fs::read_to_string(plan_dir.join("notes/phase-2.md")).expect("notes");
    assert!(notes.contains("## Key Decisions") && notes.contains("## Files Modified"));
    assert!(
        third
            .events
            .iter()
            .any(|event| event.parent_tool_use_id().is_some())
    );

    // The gates the demo plan uses pass.
    for gate in [
        "test -s demo/greeting.txt",
        "grep -q goodbye demo/farewell.txt",
    ] {
        let status = Command::new("sh")
            .args(["-c", gate])
            .current_dir(root)
            .status()
            .expect("sh");
        assert!(status.success(), "{gate}");
    }
}

#[test]
fn lines_are_flushed_as_the_agent_goes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let scenario = write(
        dir.path(),
        "s.yaml",
        &Scenario::playing([Turn::say("first"), Turn::say("second").sleep_ms(60_000)]),
    );
    let mut child = Command::new(BIN)
        .arg("__sim-agent")
        .arg(&scenario)
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let started = Instant::now();
    let init = rx.recv_timeout(TIMEOUT).expect("init line");
    let first = rx.recv_timeout(TIMEOUT).expect("first message");
    let elapsed = started.elapsed();
    child.kill().expect("kill");
    child.wait().expect("reap");
    assert!(init.contains(r#""subtype":"init""#), "{init}");
    assert!(first.contains("first"), "{first}");
    assert!(
        elapsed < Duration::from_secs(30),
        "lines arrived only after {elapsed:?}"
    );
}

#[test]
fn the_sim_backend_command_runs_the_player() {
    let dir = tempfile::tempdir().expect("tempdir");
    let scenario = write(
        dir.path(),
        "sim-scenario.yaml",
        &Scenario::new().script(
            Script::any()
                .expect_prompt("from the backend")
                .turn(Turn::say("hello").context(1234)),
        ),
    );
    let settings = BackendSettings {
        command: Some(BIN.to_owned()),
        env: [("DEBUSSY_PHASE_ID".to_owned(), "1".to_owned())].into(),
        ..debussy::session::backend_settings(
            &debussy::config::Config::default(),
            debussy::config::AgentKind::Sim,
        )
    };
    let backend = SimBackend::new(&settings, scenario);
    let spec = backend
        .command("a prompt from the backend", "sim-model")
        .expect("command");
    let mut command = Command::new(&spec.program);
    command
        .args(&spec.args)
        .envs(&spec.env)
        .current_dir(dir.path());
    let run = run_with_stdin(command, spec.stdin.as_deref().unwrap_or_default());
    assert!(run.status.success(), "{}", run.stderr);
    let events: Vec<AgentEvent> = run
        .stdout
        .lines()
        .flat_map(|line| backend.parse_line(line.as_bytes()))
        .collect();
    assert!(
        matches!(&events[0], AgentEvent::Init(init) if init.model.as_deref() == Some("sim-model"))
    );
    let usage = events.iter().find_map(|event| match event {
        AgentEvent::Assistant(message) => message.usage,
        _ => None,
    });
    assert_eq!(usage.map(|u| u.context_tokens()), Some(1234));
    assert!(matches!(events.last(), Some(AgentEvent::Result(r)) if r.is_success()));
}

#[test]
fn progress_runs_debussy_progress_and_the_step_is_recorded() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    std::fs::create_dir(root.join(".debussy")).expect("mkdir");
    let store = debussy::state::Store::open(root).expect("store");
    let run_id = store.create_run("/p/MASTER_PLAN.md", "Plan").expect("run");
    let scenario = write(
        root,
        "scenario.yaml",
        &Scenario::playing([Turn::say("Logging.").progress("wrote the parser").tool(
            Action::Progress(Progress::InPhase {
                step: "tests for ${PHASE}".to_owned(),
                phase: "4".to_owned(),
            }),
        )]),
    );
    let root_text = root.to_str().expect("utf-8 path");
    let run = play(
        root,
        &scenario,
        &[
            ("DEBUSSY_PHASE_ID", "2"),
            ("DEBUSSY_RUN_ID", &run_id),
            ("DEBUSSY_PROJECT_ROOT", root_text),
        ],
        "Phase 2",
    );
    assert!(run.status.success(), "{}", run.stderr);
    let uses = run.tool_uses();
    assert_eq!(uses.len(), 2, "{uses:?}");
    assert_eq!(uses[0].1, "Bash");
    assert!(
        uses[0].2["command"]
            .as_str()
            .is_some_and(|c| c.contains("progress --phase 2 'wrote the parser'")),
        "{:?}",
        uses[0].2
    );
    let results = run.tool_results();
    assert!(
        results.iter().all(|(_, _, is_error, _)| !is_error),
        "{results:?}"
    );
    let steps = |phase: &str| -> Vec<String> {
        store
            .progress(&run_id, phase)
            .expect("progress")
            .into_iter()
            .map(|entry| entry.step)
            .collect()
    };
    assert_eq!(steps("2"), ["wrote the parser"]);
    assert_eq!(steps("4"), ["tests for 2"]);
}
