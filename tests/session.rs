//! The session layer end to end: `session::run` drives a real agent process and turns its
//! output into events, a log and an outcome.
//!
//! - With the built-in **sim** agent (the debussy binary's `__sim-agent`): fast, no
//!   external tools; always run.
//! - With the **real Claude Code CLI** against the scripted model server
//!   (`tests/support/`, see `docs/testing.md`): fail under `CI=true` when the CLI is
//!   missing, skipped with a printed reason otherwise. Each saves the session log and the
//!   requests the server saw under `target/tmp/artifacts/session/<test>/`.
//!
//! Every test is bounded by [`BOUND`] and checks that no process of its agent survives.

mod support;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use debussy::agent::AgentBackend;
use debussy::agent::claude::ClaudeBackend;
use debussy::agent::sim::SimBackend;
use debussy::checkpoint::{Todo, TodoStatus};
use debussy::config::{AgentConfig, Config};
use debussy::context::StopReason;
use debussy::process::{ExitStatus, Signal, StopAction};
use debussy::run_env::RunEnv;
use debussy::session::{
    self, ActivityKind, CONTEXT_LIMIT_MARKER, LimitReason, SessionControl, SessionEvent,
    SessionOutcome, SessionReport, SessionSpec, SessionWarning, StopCause, Thread,
};
use serde_json::{Value, json};
use support::artifacts;
use support::claude::{self, ClaudeCli, Sandbox};
use support::model_server::{ModelServer, Scenario, Turn, Usage};
use tokio::sync::mpsc;

/// The most any one session in these tests may take before the test fails.
const BOUND: Duration = Duration::from_secs(60);

/// Stop latency a well-behaved agent must beat (issue 3: "well under a second").
const STOP_LATENCY_LIMIT: Duration = Duration::from_secs(1);

// ---------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------

/// A session's report and every event it sent.
struct Finished {
    report: SessionReport,
    events: Vec<SessionEvent>,
}

impl Finished {
    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.report.log_path).expect("read the session log")
    }

    /// The log's lines as JSON, after checking the marker line is present or absent.
    fn log_json(&self, marker: bool) -> Vec<Value> {
        let text = self.log_text();
        let mut lines = text.lines();
        if marker {
            assert_eq!(lines.next(), Some(CONTEXT_LIMIT_MARKER), "{text}");
        }
        lines
            .enumerate()
            .map(|(n, line)| {
                assert_ne!(line, CONTEXT_LIMIT_MARKER, "marker on line {}", n + 1);
                serde_json::from_str(line)
                    .unwrap_or_else(|err| panic!("log line {} is not JSON ({err}): {line}", n + 1))
            })
            .collect()
    }

    fn activity(&self) -> Vec<(Thread, ActivityKind)> {
        self.events
            .iter()
            .filter_map(|event| match event {
                SessionEvent::Activity(line) => Some((line.thread.clone(), line.kind.clone())),
                _ => None,
            })
            .collect()
    }

    fn stopping(&self) -> Vec<StopCause> {
        self.events
            .iter()
            .filter_map(|event| match event {
                SessionEvent::Stopping { cause, .. } => Some(cause.clone()),
                _ => None,
            })
            .collect()
    }
}

/// Run a session to its end, collecting its events, bounded by [`BOUND`].
async fn run(spec: SessionSpec, control: SessionControl) -> Finished {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let report = tokio::time::timeout(BOUND, session::run(spec, tx, control))
        .await
        .expect("the session ended within the bound");
    let mut events = Vec::new();
    while let Ok(event) = rx.try_recv() {
        events.push(event);
    }
    assert_agent_gone(&report);
    Finished { report, events }
}

/// Run a session, calling `on_event` with each event as it arrives (to send requests
/// at the right moment).
async fn run_with(
    spec: SessionSpec,
    control: SessionControl,
    mut on_event: impl FnMut(&SessionEvent, &SessionControl),
) -> Finished {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let session = tokio::spawn(session::run(spec, tx, control.clone()));
    let mut events = Vec::new();
    let collect = async {
        while let Some(event) = rx.recv().await {
            on_event(&event, &control);
            events.push(event);
        }
    };
    tokio::time::timeout(BOUND, collect)
        .await
        .expect("the session ended within the bound");
    let report = session.await.expect("the session task");
    assert_agent_gone(&report);
    Finished { report, events }
}

/// No live (non-zombie) process is left in the agent's process group.
///
/// Leftovers the process layer found were sent SIGKILL before it reported the exit, but
/// a killed process takes a moment to die: poll briefly before calling it a survivor.
fn assert_agent_gone(report: &SessionReport) {
    if let Some(pid) = report.pid {
        let left = settled(|| group_members(pid));
        assert!(
            left.is_empty(),
            "processes of group {pid} survived: {left:?}"
        );
    }
}

/// `list()` once it is empty, or after two seconds of polling, whichever comes first.
fn settled(list: impl Fn() -> Vec<u32>) -> Vec<u32> {
    let deadline = Instant::now() + Duration::from_secs(2);
    let mut left = list();
    while !left.is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
        left = list();
    }
    left
}

/// Live processes whose process group is `pgid`, from `/proc`.
fn group_members(pgid: u32) -> Vec<u32> {
    live_processes()
        .into_iter()
        .filter(|(_, group, _)| *group == pgid)
        .map(|(pid, _, _)| pid)
        .collect()
}

/// Live processes whose working directory is inside `dir`.
fn processes_in(dir: &Path) -> Vec<u32> {
    live_processes()
        .into_iter()
        .filter(|(_, _, cwd)| cwd.as_deref().is_some_and(|cwd| cwd.starts_with(dir)))
        .map(|(pid, _, _)| pid)
        .collect()
}

/// (pid, process group, working directory) of every process that is not a zombie.
fn live_processes() -> Vec<(u32, u32, Option<PathBuf>)> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
            // The command name is in parentheses and may contain anything.
            let after = &stat[stat.rfind(')')? + 1..];
            let mut fields = after.split_whitespace();
            let state = fields.next()?;
            let _ppid = fields.next()?;
            let group: u32 = fields.next()?.parse().ok()?;
            if state == "Z" || state == "X" {
                return None;
            }
            let cwd = std::fs::read_link(entry.path().join("cwd")).ok();
            Some((pid, group, cwd))
        })
        .collect()
}

fn run_env(root: &Path) -> RunEnv {
    RunEnv {
        run_id: "run-1".into(),
        phase_id: "1".into(),
        attempt: 1,
        restart: 0,
        project_root: root.to_path_buf(),
    }
}

fn log_path(root: &Path) -> PathBuf {
    root.join(".debussy/runs/run-1/1/attempt-1-session-1.jsonl")
}

// ---------------------------------------------------------------------------------
// The sim agent
// ---------------------------------------------------------------------------------

/// A project directory with a sim scenario, and a spec to play it.
struct SimProject {
    dir: tempfile::TempDir,
}

impl SimProject {
    fn new(scenario: &str) -> Self {
        let dir = tempfile::Builder::new()
            .prefix("debussy-session-")
            .tempdir()
            .expect("temp dir");
        std::fs::write(dir.path().join("sim-scenario.yaml"), scenario).expect("write scenario");
        SimProject { dir }
    }

    fn root(&self) -> &Path {
        self.dir.path()
    }

    fn backend_with(&self, command: &str) -> Arc<dyn AgentBackend> {
        let config = AgentConfig {
            command: Some(command.to_owned()),
            ..AgentConfig::default()
        };
        Arc::new(SimBackend::new(
            &config,
            self.root().join("sim-scenario.yaml"),
        ))
    }

    fn spec(&self) -> SessionSpec {
        let config = Config {
            model: "sim-model".into(),
            context_threshold: 80.0,
            timeout: 60,
            ..Config::default()
        };
        SessionSpec::from_config(
            &config,
            self.backend_with(env!("CARGO_BIN_EXE_debussy")),
            "Phase 1: greet the world.",
            self.root(),
            log_path(self.root()),
        )
        .expect("spec")
        .with_env(run_env(self.root()).vars())
    }
}

#[tokio::test]
async fn sim_a_session_completes_and_reports_what_it_did() {
    let project = SimProject::new(
        r#"
window: 200000
scripts:
  - turns:
      - say: "Planning the work."
        percent: 10
        tools:
          - todos:
              - {content: Write the greeting, status: in_progress}
              - {content: Check it, status: pending}
      - say: "Writing."
        percent: 20
        tools:
          - write: {path: out/greeting.txt, content: "hello\n"}
          - task:
              description: Review the greeting
              prompt: Look at out/greeting.txt
              subagent_type: Explore
              turns:
                - say: "Looks fine."
                  percent: 95
              result: The greeting is fine.
      - say: "All done."
        percent: 25
        tools:
          - todos:
              - {content: Write the greeting, status: completed}
              - {content: Check it, status: completed}
"#,
    );
    let finished = run(project.spec(), SessionControl::new()).await;
    let report = &finished.report;

    assert!(report.outcome.is_success(), "{}", report.outcome);
    assert_eq!(report.code(), 0);
    let SessionOutcome::Completed {
        subtype,
        is_error,
        session_id,
        ..
    } = &report.outcome
    else {
        unreachable!()
    };
    assert_eq!((subtype.as_str(), *is_error), ("success", false));
    assert_eq!(session_id.as_deref(), report.agent_session_id.as_deref());
    assert!(report.agent_session_id.is_some());
    assert_eq!(report.model.as_deref(), Some("sim-model"));
    assert_eq!(report.last_message.as_deref(), Some("All done."));
    assert_eq!(
        report.todos,
        [
            Todo {
                content: "Write the greeting".into(),
                status: TodoStatus::Completed
            },
            Todo {
                content: "Check it".into(),
                status: TodoStatus::Completed
            },
        ]
    );
    assert_eq!(
        report.invoked_agents,
        BTreeSet::from(["Explore".to_owned()])
    );
    let written: Vec<_> = report.files_written.iter().collect();
    assert_eq!(written, [&project.root().join("out/greeting.txt")]);
    assert_eq!(
        std::fs::read_to_string(project.root().join("out/greeting.txt")).expect("written"),
        "hello\n"
    );
    // The subagent's 95% is its own context: the main thread stayed at 25%.
    assert!(report.stop.is_none());
    assert!(report.snapshot.stop.is_none());
    assert_eq!(report.snapshot.reported_tokens, 50_000);
    assert_eq!(report.snapshot.turns, 3);
    let window = report.reported_window.as_ref().expect("reported window");
    assert_eq!(
        (window.model.as_str(), window.tokens),
        ("sim-model", 200_000)
    );
    assert!(report.cost_usd().is_some());
    assert_eq!(
        report.exit.as_ref().map(|exit| exit.status),
        Some(ExitStatus::Code(0))
    );
    assert!(report.ended_at >= report.started_at);

    // Events: started, snapshots as the figures changed, subagent lines attributed.
    assert!(matches!(
        finished.events.first(),
        Some(SessionEvent::Started { log_path, .. }) if *log_path == report.log_path
    ));
    let gauges: Vec<_> = finished
        .events
        .iter()
        .filter_map(|event| match event {
            SessionEvent::Context(snapshot) => Some(snapshot),
            _ => None,
        })
        .collect();
    assert!(
        gauges.windows(2).all(|pair| pair[0] != pair[1]),
        "only changes are sent"
    );
    let tokens: Vec<u64> = gauges
        .iter()
        .map(|snapshot| snapshot.reported_tokens)
        .collect();
    for expected in [0, 20_000, 40_000, 50_000] {
        assert!(tokens.contains(&expected), "{tokens:?}");
    }
    let activity = finished.activity();
    let sub_text = activity
        .iter()
        .find_map(|(thread, kind)| match (thread, kind) {
            (Thread::Subagent(sub), ActivityKind::Text { text }) => {
                Some((sub.clone(), text.clone()))
            }
            _ => None,
        });
    let (sub, text) = sub_text.expect("a subagent text line");
    assert_eq!(text, "Looks fine.");
    assert_eq!(sub.subagent_type.as_deref(), Some("Explore"));
    assert_eq!(sub.description.as_deref(), Some("Review the greeting"));
    assert!(activity.iter().any(|(thread, kind)| thread.is_main()
        && matches!(kind, ActivityKind::ToolCall { name, .. } if name == "Write")));

    // The log holds every stdout line, as NDJSON, without the marker.
    let lines = finished.log_json(false);
    assert_eq!(
        lines.first().map(|line| line["subtype"].clone()),
        Some(json!("init"))
    );
    assert_eq!(
        lines.last().map(|line| line["type"].clone()),
        Some(json!("result"))
    );
    let agent_events = finished
        .events
        .iter()
        .filter(|event| matches!(event, SessionEvent::Agent(_)))
        .count();
    assert_eq!(agent_events, lines.len());
}

/// The sim agent's turns for a context-limit test: 30%, 50%, then 90% (crossing 80%),
/// then a long sleep and a turn that must never be reached.
const CROSSING: &str = r#"
window: 200000
scripts:
  - turns:
      - say: "Turn one."
        percent: 30
        tools: [{bash: "true"}]
      - say: "Turn two."
        percent: 50
        tools: [{bash: "true"}]
      - say: "Turn three."
        percent: 90
        tools: [{write: {path: third.txt, content: "3\n"}}]
      - sleep_ms: 30000
      - say: "NEVER-REACHED"
        percent: 95
"#;

#[tokio::test]
async fn sim_crossing_the_threshold_stops_the_session_at_once() {
    let project = SimProject::new(CROSSING);
    let finished = run(project.spec(), SessionControl::new()).await;
    let report = &finished.report;

    assert_eq!(report.code(), -2, "{}", report.outcome);
    let SessionOutcome::ContextLimit {
        reason: LimitReason::Meter(StopReason::ContextThreshold { tokens, limit, .. }),
        snapshot,
    } = &report.outcome
    else {
        panic!("not a threshold stop: {:?}", report.outcome)
    };
    assert_eq!((*tokens, *limit), (180_000, 160_000));
    assert_eq!(snapshot.tokens, 180_000);
    assert_eq!(snapshot.turns, 3);
    assert!(
        report
            .outcome
            .to_string()
            .starts_with("context limit: context at 180,000")
    );

    // Stopped on the third turn's line, through SIGINT alone, well under a second.
    let stop = report.stop.as_ref().expect("a stop");
    assert!(matches!(stop.cause, StopCause::Context(_)));
    assert_eq!(stop.actions, [StopAction::Signal(Signal::SIGINT)]);
    assert!(!stop.escalated);
    assert!(
        stop.latency < STOP_LATENCY_LIMIT,
        "stop took {:?}",
        stop.latency
    );
    eprintln!("sim: threshold line → agent reaped in {:?}", stop.latency);
    assert_eq!(finished.stopping().len(), 1);
    assert!(report.duration < Duration::from_secs(20));

    // The log opens with the marker and holds every line up to the stop.
    let text = finished.log_text();
    assert!(text.starts_with(&format!("{CONTEXT_LIMIT_MARKER}\n")));
    assert!(!text.contains("NEVER-REACHED"));
    let lines = finished.log_json(true);
    assert!(lines.iter().any(|line| line["type"] == "assistant"
        && line["message"]["content"][0]["text"] == "Turn three."));
}

#[tokio::test]
async fn sim_a_compact_boundary_stops_the_session() {
    let project = SimProject::new(
        r#"
scripts:
  - turns:
      - say: "Working."
        percent: 40
      - compact: {trigger: auto, pre_tokens: 150000}
      - sleep_ms: 30000
"#,
    );
    let finished = run(project.spec(), SessionControl::new()).await;
    let report = &finished.report;
    let SessionOutcome::ContextLimit {
        reason:
            LimitReason::Meter(StopReason::Compacted {
                trigger,
                pre_tokens,
            }),
        ..
    } = &report.outcome
    else {
        panic!("not a compaction stop: {:?}", report.outcome)
    };
    assert_eq!(trigger.as_deref(), Some("auto"));
    assert_eq!(*pre_tokens, Some(150_000));
    assert_eq!(report.code(), -2);
    finished.log_json(true);
}

#[tokio::test]
async fn sim_a_session_over_its_timeout_is_stopped() {
    let project = SimProject::new(
        r#"
scripts:
  - turns:
      - say: "Thinking hard."
        percent: 5
      - sleep_ms: 30000
"#,
    );
    let mut spec = project.spec();
    spec.timeout = Some(Duration::from_millis(500));
    let started = Instant::now();
    let finished = run(spec, SessionControl::new()).await;
    let report = &finished.report;
    assert_eq!(report.outcome, SessionOutcome::Timeout);
    assert_eq!(report.code(), -1);
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(matches!(
        report.stop.as_ref().map(|stop| &stop.cause),
        Some(StopCause::Timeout { after }) if *after == Duration::from_millis(500)
    ));
    // Not a context limit: no marker.
    finished.log_json(false);
}

#[tokio::test]
async fn sim_a_crash_fails_with_the_exit_code() {
    let project = SimProject::new(
        r#"
scripts:
  - turns:
      - say: "About to fail."
      - crash: {exit_code: 3, stderr: "fatal: out of cheese", partial_line: true}
"#,
    );
    let finished = run(project.spec(), SessionControl::new()).await;
    let report = &finished.report;
    assert_eq!(
        report.outcome,
        SessionOutcome::Failed {
            exit: ExitStatus::Code(3)
        }
    );
    assert_eq!(report.code(), 3);
    assert!(
        report
            .stderr_tail
            .iter()
            .any(|line| line.contains("out of cheese")),
        "{:?}",
        report.stderr_tail
    );
    assert!(finished.events.iter().any(
        |event| matches!(event, SessionEvent::Stderr(line) if line.contains("out of cheese"))
    ));
    // The half line the agent printed before dying is kept in the log as it was.
    let text = finished.log_text();
    let last = text.lines().last().expect("lines");
    assert!(serde_json::from_str::<Value>(last).is_err(), "{last}");
}

#[tokio::test]
async fn sim_death_by_signal_fails_with_128_plus_the_signal() {
    let project = SimProject::new(
        r#"
scripts:
  - turns:
      - say: "Going down."
      - crash: {signal: KILL}
"#,
    );
    let finished = run(project.spec(), SessionControl::new()).await;
    assert_eq!(
        finished.report.outcome,
        SessionOutcome::Failed {
            exit: ExitStatus::Signal(9)
        }
    );
    assert_eq!(finished.report.code(), 137);
}

#[tokio::test]
async fn sim_an_error_result_completes_unsuccessfully() {
    let project = SimProject::new(
        r#"
scripts:
  - turns:
      - say: "Ran out of turns."
    result: {subtype: error_max_turns}
    exit_code: 1
"#,
    );
    let finished = run(project.spec(), SessionControl::new()).await;
    let report = &finished.report;
    assert!(matches!(&report.outcome,
        SessionOutcome::Completed { subtype, is_error: true, .. } if subtype == "error_max_turns"));
    assert!(!report.outcome.is_success());
    assert_eq!(report.code(), 1);
}

#[tokio::test]
async fn sim_a_missing_agent_program_is_a_spawn_error() {
    let project = SimProject::new("scripts: [{turns: [{say: hi}]}]\n");
    let missing = project.root().join("no-such-debussy");
    let mut spec = project.spec();
    spec.backend = project.backend_with(&missing.to_string_lossy());
    let finished = run(spec, SessionControl::new()).await;
    let report = &finished.report;
    let SessionOutcome::SpawnError(failure) = &report.outcome else {
        panic!("not a spawn error: {:?}", report.outcome)
    };
    assert_eq!(report.code(), -3);
    assert!(
        failure.message.contains(&missing.display().to_string()),
        "{failure}"
    );
    assert!(
        failure
            .help
            .as_deref()
            .is_some_and(|help| help.contains("agent.command"))
    );
    assert!(report.pid.is_none() && report.exit.is_none());
    assert!(finished.events.is_empty(), "{:?}", finished.events);
}

#[tokio::test]
async fn sim_an_interrupt_stops_the_session() {
    let project = SimProject::new(
        r#"
scripts:
  - turns:
      - say: "Working."
        percent: 10
      - sleep_ms: 30000
"#,
    );
    let finished = run_with(project.spec(), SessionControl::new(), |event, control| {
        if matches!(event, SessionEvent::Activity(_)) {
            control.interrupt();
        }
    })
    .await;
    let report = &finished.report;
    assert_eq!(report.outcome, SessionOutcome::Interrupted);
    assert_eq!(report.code(), -4);
    let stop = report.stop.as_ref().expect("a stop");
    assert_eq!(stop.cause, StopCause::Interrupt);
    assert_eq!(stop.actions, [StopAction::Signal(Signal::SIGINT)]);
    assert!(stop.latency < STOP_LATENCY_LIMIT, "{:?}", stop.latency);
    assert_eq!(finished.stopping(), [StopCause::Interrupt]);
    finished.log_json(false);
}

#[tokio::test]
async fn sim_kill_ends_the_agent_with_sigkill_at_once() {
    let project = SimProject::new(
        r#"
scripts:
  - turns:
      - sleep_ms: 30000
"#,
    );
    let control = SessionControl::new();
    // Asked before the session starts: it applies as soon as the agent runs.
    control.kill();
    let finished = run(project.spec(), control).await;
    let report = &finished.report;
    assert_eq!(report.outcome, SessionOutcome::Interrupted);
    let stop = report.stop.as_ref().expect("a stop");
    assert_eq!(
        stop.actions.last(),
        Some(&StopAction::Signal(Signal::SIGKILL))
    );
    assert!(!stop.actions.contains(&StopAction::Signal(Signal::SIGTERM)));
}

#[tokio::test]
async fn sim_a_manual_restart_ends_as_a_context_limit() {
    let project = SimProject::new(
        r#"
scripts:
  - turns:
      - say: "Working."
        percent: 10
        tools:
          - todos: [{content: Keep going, status: in_progress}]
      - sleep_ms: 30000
"#,
    );
    let finished = run_with(project.spec(), SessionControl::new(), |event, control| {
        // Once the todo call was seen (the tracker has it before the event goes out).
        if let SessionEvent::Activity(line) = event
            && matches!(&line.kind, ActivityKind::ToolCall { name, .. } if name == "TodoWrite")
        {
            control.restart();
        }
    })
    .await;
    let report = &finished.report;
    assert!(
        matches!(
            &report.outcome,
            SessionOutcome::ContextLimit {
                reason: LimitReason::Manual,
                ..
            }
        ),
        "{:?}",
        report.outcome
    );
    assert_eq!(report.code(), -2);
    assert_eq!(report.outcome.to_string(), "context limit: manual");
    assert_eq!(
        report.todos,
        [Todo {
            content: "Keep going".into(),
            status: TodoStatus::InProgress
        }]
    );
    assert_eq!(finished.stopping(), [StopCause::Manual]);
    finished.log_json(true);
}

// ---------------------------------------------------------------------------------
// A scripted shell agent, for behaviour the sim agent cannot show (ignoring SIGINT,
// over-long lines, leftover processes)
// ---------------------------------------------------------------------------------

/// An agent that is a shell script printing stream-json lines.
struct ScriptBackend {
    script: String,
}

impl AgentBackend for ScriptBackend {
    fn name(&self) -> &'static str {
        "script"
    }

    fn command(
        &self,
        prompt: &str,
        _model: &str,
    ) -> Result<debussy::agent::AgentCommand, debussy::agent::AgentError> {
        Ok(debussy::agent::AgentCommand {
            program: PathBuf::from("/bin/sh"),
            args: vec!["-c".into(), self.script.clone()],
            env: std::collections::BTreeMap::new(),
            stdin: Some(prompt.to_owned()),
        })
    }

    fn parse_line(&self, line: &[u8]) -> Vec<debussy::agent::AgentEvent> {
        debussy::agent::stream_json::parse_line(line)
            .into_iter()
            .collect()
    }

    fn usage_reporting(&self) -> debussy::agent::UsageReporting {
        debussy::agent::UsageReporting::PerMessage
    }
}

/// `printf '%s\n' 'LINE'` for each line (none may contain a single quote).
fn print_lines(lines: &[Value]) -> String {
    lines
        .iter()
        .map(|line| format!("printf '%s\\n' '{line}'"))
        .collect::<Vec<_>>()
        .join("; ")
}

fn script_spec(project: &SimProject, script: String) -> SessionSpec {
    let mut spec = project.spec();
    spec.backend = Arc::new(ScriptBackend { script });
    spec
}

fn init_line() -> Value {
    json!({"type": "system", "subtype": "init", "session_id": "s-1", "model": "m"})
}

fn assistant_line(id: &str, context: u64, text: &str) -> Value {
    json!({"type": "assistant", "parent_tool_use_id": null, "message": {
        "id": id, "model": "m", "content": [{"type": "text", "text": text}],
        "usage": {"input_tokens": 0, "cache_read_input_tokens": context, "output_tokens": 1}}})
}

#[tokio::test]
async fn an_interrupt_during_a_context_stop_wins_and_a_second_one_kills() {
    let project = SimProject::new("scripts: [{turns: [{say: unused}]}]\n");
    // The agent ignores SIGINT, so the context stop waits out its grace: the interrupts
    // arrive while it is still running, whatever the machine's speed.
    let script = format!(
        "trap '' INT; {}; exec sleep 30",
        print_lines(&[init_line(), assistant_line("m1", 170_000, "Crossing.")])
    );
    let mut spec = script_spec(&project, script);
    spec.stop_grace = Duration::from_secs(20);
    let started = Instant::now();
    let finished = run_with(spec, SessionControl::new(), |event, control| {
        if let SessionEvent::Stopping { cause, immediate } = event {
            match cause {
                StopCause::Context(_) => control.interrupt(),
                StopCause::Interrupt if !immediate => control.interrupt(),
                _ => {}
            }
        }
    })
    .await;
    let report = &finished.report;
    assert_eq!(report.outcome, SessionOutcome::Interrupted);
    let stop = report.stop.as_ref().expect("a stop");
    assert_eq!(stop.cause, StopCause::Interrupt);
    assert_eq!(
        stop.actions,
        [
            StopAction::Signal(Signal::SIGINT),
            StopAction::Signal(Signal::SIGKILL)
        ]
    );
    assert!(stop.escalated);
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "the kill did not wait out the grace"
    );
    let stopping: Vec<_> = finished
        .events
        .iter()
        .filter_map(|event| match event {
            SessionEvent::Stopping { cause, immediate } => Some((cause.clone(), *immediate)),
            _ => None,
        })
        .collect();
    assert!(
        matches!(
            stopping.as_slice(),
            [
                (StopCause::Context(_), false),
                (StopCause::Interrupt, false),
                (StopCause::Interrupt, true),
            ]
        ),
        "{stopping:?}"
    );
    // Not a context limit after all: no marker.
    finished.log_json(false);
}

#[tokio::test]
async fn an_agent_ignoring_sigint_is_ended_by_sigterm() {
    let project = SimProject::new("scripts: [{turns: [{say: unused}]}]\n");
    let script = format!(
        "trap '' INT; {}; exec sleep 30",
        print_lines(&[init_line(), assistant_line("m1", 170_000, "Crossing.")])
    );
    let mut spec = script_spec(&project, script);
    spec.stop_grace = Duration::from_millis(300);
    let finished = run(spec, SessionControl::new()).await;
    let report = &finished.report;
    assert_eq!(report.code(), -2, "{:?}", report.outcome);
    let stop = report.stop.as_ref().expect("a stop");
    assert_eq!(
        stop.actions,
        [
            StopAction::Signal(Signal::SIGINT),
            StopAction::Signal(Signal::SIGTERM)
        ]
    );
    assert!(
        stop.latency >= Duration::from_millis(300),
        "{:?}",
        stop.latency
    );
    finished.log_json(true);
}

#[tokio::test]
async fn over_long_lines_and_leftover_processes_are_warnings() {
    let project = SimProject::new("scripts: [{turns: [{say: unused}]}]\n");
    let result = json!({"type": "result", "subtype": "success", "is_error": false,
                        "result": "Done.", "session_id": "s-1"});
    // A 17 MiB line (past the 16 MiB cap), then a background process left running.
    let script = format!(
        "{}; head -c 17825792 /dev/zero | tr '\\0' x; echo; \
         sleep 30 >/dev/null 2>&1 & {}",
        print_lines(&[init_line(), assistant_line("m1", 1_000, "Done.")]),
        print_lines(&[result])
    );
    let finished = run(script_spec(&project, script), SessionControl::new()).await;
    let report = &finished.report;
    assert!(report.outcome.is_success(), "{:?}", report.outcome);
    assert!(
        report
            .warnings
            .iter()
            .any(|warning| matches!(warning, SessionWarning::LineTooLong { .. })),
        "{:?}",
        report.warnings
    );
    assert!(
        report.warnings.iter().any(|warning| matches!(warning,
            SessionWarning::Leaked(leak) if !leak.group_pids.is_empty())),
        "{:?}",
        report.warnings
    );
    assert!(
        finished
            .events
            .iter()
            .any(|event| matches!(event, SessionEvent::Warning(_)))
    );
    // The skipped line is not in the log; the others are.
    let lines = finished.log_json(false);
    assert_eq!(lines.len(), 3);
}

// ---------------------------------------------------------------------------------
// The real Claude Code CLI
// ---------------------------------------------------------------------------------

const MODEL: &str = claude::DEFAULT_MODEL;

/// The pinned CLI, a sandbox and a server playing one scenario.
struct Harness {
    cli: ClaudeCli,
    sandbox: Sandbox,
    server: ModelServer,
}

impl Harness {
    /// `None` (after printing why) when the CLI is missing outside CI.
    fn new(scenario: Scenario) -> Option<Self> {
        Self::with_sandbox(Sandbox::new().expect("sandbox"), scenario)
    }

    fn with_sandbox(sandbox: Sandbox, scenario: Scenario) -> Option<Self> {
        let cli = claude::require()?;
        Some(Harness {
            cli,
            sandbox,
            server: ModelServer::start(scenario).expect("model server"),
        })
    }

    /// A session running the pinned CLI the way the harness does (`acceptEdits`, the
    /// allowed tools, the sandbox's complete environment), threshold 80%.
    fn spec(&self) -> SessionSpec {
        let agent = AgentConfig {
            command: Some(self.cli.path().to_string_lossy().into_owned()),
            args: vec![
                "--permission-mode".into(),
                "acceptEdits".into(),
                "--allowedTools".into(),
                claude::DEFAULT_ALLOWED_TOOLS.join(","),
            ],
            ..AgentConfig::default()
        };
        let config = Config {
            model: MODEL.into(),
            context_threshold: 80.0,
            timeout: 60,
            agent: agent.clone(),
            ..Config::default()
        };
        let mut spec = SessionSpec::from_config(
            &config,
            Arc::new(ClaudeBackend::new(&agent)),
            "Do the scripted work.",
            self.sandbox.cwd(),
            log_path(self.sandbox.cwd()),
        )
        .expect("spec")
        .with_env(self.sandbox.envs(&self.server))
        .with_env(run_env(self.sandbox.cwd()).vars());
        spec.inherit_env = false;
        spec
    }

    /// Save the session log and the server's requests as artifacts.
    fn save(&self, name: &str, finished: &Finished) {
        let dir = artifacts::dir(name).expect("artifact dir");
        self.server
            .save_requests(&dir.join("requests.jsonl"))
            .expect("save requests");
        let _ = std::fs::copy(&finished.report.log_path, dir.join("session.jsonl"));
        eprintln!(
            "{name}: {} in {:.2?}; artifacts in {}",
            finished.report.outcome,
            finished.report.duration,
            dir.display()
        );
    }

    /// Nothing of this sandbox's Claude Code (or its tools) is still running.
    fn assert_nothing_left(&self) {
        let left = settled(|| processes_in(self.sandbox.cwd()));
        assert!(
            left.is_empty(),
            "processes survived in the sandbox: {left:?}"
        );
    }
}

#[tokio::test]
async fn claude_a_session_completes_and_reports_what_it_did() {
    let sandbox = Sandbox::new().expect("sandbox");
    let target = sandbox.cwd().join("notes.md");
    let scenario = Scenario::new()
        .turn(
            Turn::new()
                .text("Planning.")
                .tool_use(
                    "TaskCreate",
                    json!({"subject": "Write the notes", "description": "notes.md"}),
                )
                .tool_use(
                    "TaskCreate",
                    json!({"subject": "Review them", "description": "read back"}),
                )
                .usage(Usage::new(10, 12_000, 1_000, 30)),
        )
        .turn(
            Turn::new()
                .tool_use(
                    "TaskUpdate",
                    json!({"taskId": "1", "status": "in_progress"}),
                )
                .tool_use(
                    "Write",
                    json!({"file_path": target, "content": "# Notes\n"}),
                )
                .usage(Usage::new(12, 14_000, 800, 30)),
        )
        .turn(
            Turn::new()
                .tool_use("TaskUpdate", json!({"taskId": "1", "status": "completed"}))
                .usage(Usage::new(8, 15_500, 400, 20)),
        )
        .turn(Turn::reply("All done.").usage(Usage::new(5, 16_000, 200, 7)));
    let Some(harness) = Harness::with_sandbox(sandbox, scenario) else {
        return;
    };
    let finished = run(harness.spec(), SessionControl::new()).await;
    harness.save("claude_completes", &finished);
    let report = &finished.report;

    assert!(report.outcome.is_success(), "{:?}", report.outcome);
    assert_eq!(report.code(), 0);
    assert_eq!(report.last_message.as_deref(), Some("All done."));
    assert_eq!(report.model.as_deref(), Some(MODEL));
    let session_ids = harness.server.session_ids();
    assert_eq!(
        report.agent_session_id.as_deref(),
        session_ids.first().map(String::as_str)
    );
    let window = report.reported_window.as_ref().expect("reported window");
    assert_eq!((window.model.as_str(), window.tokens), (MODEL, 200_000));
    assert_eq!(report.snapshot.tokens, 16_205);
    assert_eq!(report.snapshot.turns, 4);
    assert_eq!(report.snapshot.tool_calls, 5);
    assert!(
        report.files_written.contains(&target),
        "{:?}",
        report.files_written
    );
    assert_eq!(
        report.todos,
        [
            Todo {
                content: "Write the notes".into(),
                status: TodoStatus::Completed
            },
            Todo {
                content: "Review them".into(),
                status: TodoStatus::Pending
            },
        ]
    );
    let lines = finished.log_json(false);
    assert_eq!(
        lines.last().map(|line| line["type"].clone()),
        Some(json!("result"))
    );
    assert_eq!(harness.server.main_requests().len(), 4);
    harness.assert_nothing_left();
}

#[tokio::test]
async fn claude_crossing_the_threshold_on_turn_three_stops_before_a_fourth_request() {
    let bash =
        |n: u32| json!({"command": format!("echo step {n}"), "description": format!("Step {n}")});
    let scenario = Scenario::new()
        .turn(
            Turn::new()
                .tool_use("Bash", bash(1))
                .usage(Usage::new(10, 50_000, 2_000, 30)),
        )
        .turn(
            Turn::new()
                .tool_use("Bash", bash(2))
                .usage(Usage::new(10, 100_000, 2_000, 30)),
        )
        // 170,010 of 200,000 = 85%: past 80%. Held open, so Claude Code cannot send a
        // fourth request unless the session fails to stop it.
        .turn(
            Turn::new()
                .text("Third step.")
                .tool_use("Bash", bash(3))
                .usage(Usage::new(10, 168_000, 2_000, 30))
                .hold(),
        )
        .turn(Turn::reply("FOURTH-TURN"));
    let Some(harness) = Harness::new(scenario) else {
        return;
    };
    let finished = run(harness.spec(), SessionControl::new()).await;
    harness.save("claude_threshold_turn_three", &finished);
    let report = &finished.report;

    assert_eq!(report.code(), -2, "{:?}", report.outcome);
    let SessionOutcome::ContextLimit {
        reason: LimitReason::Meter(StopReason::ContextThreshold { tokens, .. }),
        snapshot,
    } = &report.outcome
    else {
        panic!("not a threshold stop: {:?}", report.outcome)
    };
    assert_eq!(*tokens, 170_010);
    assert_eq!(snapshot.turns, 3);
    assert_eq!(harness.server.main_requests().len(), 3);
    let stop = report.stop.as_ref().expect("a stop");
    eprintln!(
        "claude: threshold line → agent reaped in {:?} ({:?})",
        stop.latency, stop.actions
    );
    assert!(
        stop.latency < STOP_LATENCY_LIMIT,
        "stop took {:?} ({:?})",
        stop.latency,
        stop.actions
    );
    let text = finished.log_text();
    assert!(text.starts_with(&format!("{CONTEXT_LIMIT_MARKER}\n")));
    assert!(!text.contains("FOURTH-TURN"));
    finished.log_json(true);
    harness.assert_nothing_left();
}

#[tokio::test]
async fn claude_subagent_traffic_past_the_threshold_does_not_stop_the_session() {
    let scenario = Scenario::new()
        .turn(
            Turn::new()
                .tool_use_id(
                    "toolu_task_1",
                    "Agent",
                    json!({
                        "description": "Count the files",
                        "prompt": "SUBTASK-ALPHA: count the files in the working directory",
                        "subagent_type": "general-purpose",
                        "run_in_background": false,
                    }),
                )
                .usage(Usage::new(10, 20_000, 1_000, 30)),
        )
        .subagent(
            "SUBTASK-ALPHA",
            [
                Turn::new()
                    .tool_use("Bash", json!({"command": "ls -a", "description": "List"}))
                    .usage(Usage::new(5, 170_000, 10_000, 40)),
                Turn::reply("Report: the directory is empty.")
                    .usage(Usage::new(7, 185_000, 5_000, 50)),
            ],
        )
        .turn(Turn::reply("The subagent finished.").usage(Usage::new(12, 22_000, 800, 20)));
    let Some(harness) = Harness::new(scenario) else {
        return;
    };
    let finished = run(harness.spec(), SessionControl::new()).await;
    harness.save("claude_subagent_no_stop", &finished);
    let report = &finished.report;

    assert!(report.outcome.is_success(), "{:?}", report.outcome);
    assert!(report.stop.is_none() && report.snapshot.stop.is_none());
    assert_eq!(report.snapshot.tokens, 22_812);
    assert_eq!(
        report.invoked_agents,
        BTreeSet::from(["general-purpose".to_owned()])
    );
    assert_eq!(
        report.last_message.as_deref(),
        Some("The subagent finished.")
    );
    let sub_lines: Vec<_> = finished
        .activity()
        .into_iter()
        .filter_map(|(thread, kind)| match thread {
            Thread::Subagent(sub) => Some((sub, kind)),
            Thread::Main => None,
        })
        .collect();
    assert!(!sub_lines.is_empty());
    assert!(
        sub_lines
            .iter()
            .all(|(sub, _)| sub.parent_tool_use_id == "toolu_task_1"
                && sub.subagent_type.as_deref() == Some("general-purpose"))
    );
    assert_eq!(harness.server.subagent_requests().len(), 2);
    harness.assert_nothing_left();
}

#[tokio::test]
async fn claude_a_compact_boundary_stops_the_session() {
    let scenario = Scenario::new()
        .turn(
            Turn::new()
                .tool_use(
                    "Bash",
                    json!({"command": "echo step", "description": "Step"}),
                )
                // Past Claude Code's auto-compact threshold (167k of 200k).
                .usage(Usage::new(10, 190_000, 0, 20)),
        )
        .turn(Turn::reply("Continuing after compaction.").stall())
        .compact_summary("SUMMARY-MARKER-42: one step was asked for.");
    let Some(harness) = Harness::new(scenario) else {
        return;
    };
    let mut spec = harness.spec();
    // Only the compaction may stop this session: the percent check is off.
    spec.meter.threshold_percent = 100.0;
    spec.env
        .push(("CLAUDE_CODE_AUTO_COMPACT_WINDOW".into(), "200000".into()));
    let finished = run(spec, SessionControl::new()).await;
    harness.save("claude_compact_boundary", &finished);
    let report = &finished.report;

    assert_eq!(report.code(), -2, "{:?}", report.outcome);
    let SessionOutcome::ContextLimit {
        reason:
            LimitReason::Meter(StopReason::Compacted {
                trigger,
                pre_tokens,
            }),
        ..
    } = &report.outcome
    else {
        panic!("not a compaction stop: {:?}", report.outcome)
    };
    assert_eq!(trigger.as_deref(), Some("auto"));
    assert!(pre_tokens.unwrap_or_default() >= 190_000, "{pre_tokens:?}");
    let lines = finished.log_json(true);
    assert!(
        lines
            .iter()
            .any(|line| line["type"] == "system" && line["subtype"] == "compact_boundary")
    );
    harness.assert_nothing_left();
}

#[tokio::test]
async fn claude_a_session_over_its_timeout_is_stopped() {
    let Some(harness) = Harness::new(Scenario::new().turn(Turn::reply("never sent").stall()))
    else {
        return;
    };
    let mut spec = harness.spec();
    spec.timeout = Some(Duration::from_secs(3));
    let finished = run(spec, SessionControl::new()).await;
    harness.save("claude_timeout", &finished);
    let report = &finished.report;
    assert_eq!(report.outcome, SessionOutcome::Timeout);
    assert_eq!(report.code(), -1);
    let stop = report.stop.as_ref().expect("a stop");
    eprintln!(
        "claude: timeout → agent reaped in {:?} ({:?})",
        stop.latency, stop.actions
    );
    assert!(report.duration < Duration::from_secs(3) + Duration::from_secs(10));
    finished.log_json(false);
    harness.assert_nothing_left();
}

#[tokio::test]
async fn claude_an_agent_that_crashes_fails_with_its_signal() {
    let scenario = Scenario::new()
        .turn(Turn::new().tool_use(
            "Bash",
            json!({"command": "kill -KILL $PPID", "description": "Stop the agent"}),
        ))
        .turn(Turn::reply("never reached"));
    let Some(harness) = Harness::new(scenario) else {
        return;
    };
    let finished = run(harness.spec(), SessionControl::new()).await;
    harness.save("claude_crash", &finished);
    let report = &finished.report;
    assert_eq!(
        report.outcome,
        SessionOutcome::Failed {
            exit: ExitStatus::Signal(9)
        }
    );
    assert_eq!(report.code(), 137);
    assert!(report.result.is_none());
    assert_eq!(harness.server.main_requests().len(), 1);
    harness.assert_nothing_left();
}

#[tokio::test]
async fn claude_a_missing_binary_is_a_spawn_error_saying_how_to_install_it() {
    // Needs no CLI: the point is that there is none.
    let sandbox = Sandbox::new().expect("sandbox");
    let missing = sandbox.cwd().join("bin/claude");
    let agent = AgentConfig {
        command: Some(missing.to_string_lossy().into_owned()),
        ..AgentConfig::default()
    };
    let spec = SessionSpec::from_config(
        &Config::default(),
        Arc::new(ClaudeBackend::new(&agent)),
        "Hello.",
        sandbox.cwd(),
        log_path(sandbox.cwd()),
    )
    .expect("spec");
    let finished = run(spec, SessionControl::new()).await;
    let report = &finished.report;
    let SessionOutcome::SpawnError(failure) = &report.outcome else {
        panic!("not a spawn error: {:?}", report.outcome)
    };
    assert_eq!(report.code(), -3);
    assert!(
        failure.message.contains(&missing.display().to_string()),
        "{failure}"
    );
    let help = failure.help.as_deref().unwrap_or_default();
    assert!(
        help.contains("npm install -g @anthropic-ai/claude-code"),
        "{help}"
    );
    assert!(help.contains("agent.command"), "{help}");
    // The session still has its (empty) log.
    assert_eq!(finished.log_text(), "");
}
