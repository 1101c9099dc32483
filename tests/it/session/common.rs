//! Shared by the session tests: running a session with a bound, collecting its events,
//! checking that no agent process survives, and a project playing a sim scenario.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use debussy::agent::AgentBackend;
use debussy::agent::BackendSettings;
use debussy::agent::sim::SimBackend;
use debussy::config::{AgentKind, Config};
use debussy::context::StopReason;
use debussy::run_env::RunEnv;
use debussy::session::{
    self, ActivityKind, CONTEXT_LIMIT_MARKER, LimitReason, SessionControl, SessionEvent,
    SessionOutcome, SessionReport, SessionSpec, SpawnFailure, StopCause, Thread,
};
use serde_json::Value;
use tokio::sync::mpsc;

use crate::support::processes::{group_members, left_after};
use crate::support::scenario::Scenario;

/// The most any one session in these tests may take before the test fails.
pub(crate) const BOUND: Duration = Duration::from_secs(60);

/// Stop latency a well-behaved agent must beat (issue 3: "well under a second").
pub(crate) const STOP_LATENCY_LIMIT: Duration = Duration::from_secs(1);

/// How long a killed process may take to die before it counts as a survivor.
pub(crate) const SETTLE: Duration = Duration::from_secs(2);

// ---------------------------------------------------------------------------------
/// A session's report and every event it sent.
pub(crate) struct Finished {
    pub(crate) report: SessionReport,
    pub(crate) events: Vec<SessionEvent>,
}

impl Finished {
    pub(crate) fn log_text(&self) -> String {
        std::fs::read_to_string(&self.report.log_path).expect("read the session log")
    }

    /// The log's lines as JSON, after checking the marker line is present or absent.
    pub(crate) fn log_json(&self, marker: bool) -> Vec<Value> {
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

    pub(crate) fn activity(&self) -> Vec<(Thread, ActivityKind)> {
        self.events
            .iter()
            .filter_map(|event| match event {
                SessionEvent::Activity(line) => Some((line.thread.clone(), line.kind.clone())),
                _ => None,
            })
            .collect()
    }

    /// The trigger and the tokens before it of the compaction that stopped the
    /// session (exit code -2); any other ending fails the test.
    pub(crate) fn compaction(&self) -> (Option<String>, Option<u64>) {
        let report = &self.report;
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
        assert_eq!(report.code(), -2, "{:?}", report.outcome);
        (trigger.clone(), *pre_tokens)
    }

    /// The failure of a session whose agent program, `missing`, could not be started
    /// (exit code -5, the message naming the program); any other ending fails the test.
    pub(crate) fn spawn_failure(&self, missing: &Path) -> &SpawnFailure {
        let report = &self.report;
        let SessionOutcome::SpawnError(failure) = &report.outcome else {
            panic!("not a spawn error: {:?}", report.outcome)
        };
        assert_eq!(report.code(), -5);
        assert!(
            failure.message.contains(&missing.display().to_string()),
            "{failure}"
        );
        failure
    }

    pub(crate) fn stopping(&self) -> Vec<StopCause> {
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
pub(crate) async fn run(spec: SessionSpec, control: SessionControl) -> Finished {
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
pub(crate) async fn run_with(
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
pub(crate) fn assert_agent_gone(report: &SessionReport) {
    if let Some(pid) = report.pid {
        let left = left_after(SETTLE, || group_members(pid));
        assert!(
            left.is_empty(),
            "processes of group {pid} survived: {left:?}"
        );
    }
}

pub(crate) fn run_env(root: &Path) -> RunEnv {
    RunEnv {
        run_id: "run-1".into(),
        phase_id: "1".into(),
        attempt: 1,
        restart: 0,
        project_root: root.to_path_buf(),
    }
}

pub(crate) fn log_path(root: &Path) -> PathBuf {
    root.join(".debussy/runs/run-1/1/attempt-1-session-1.jsonl")
}

/// A project directory with a sim scenario, and a spec to play it.
pub(crate) struct SimProject {
    dir: tempfile::TempDir,
}

impl SimProject {
    pub(crate) fn new(scenario: &Scenario) -> Self {
        let dir = tempfile::Builder::new()
            .prefix("debussy-session-")
            .tempdir()
            .expect("temp dir");
        std::fs::write(dir.path().join("sim-scenario.yaml"), scenario.to_yaml())
            .expect("write scenario");
        SimProject { dir }
    }

    pub(crate) fn root(&self) -> &Path {
        self.dir.path()
    }

    pub(crate) fn backend_with(&self, command: &str) -> Arc<dyn AgentBackend> {
        Arc::new(SimBackend::new(
            &sim_settings(command),
            self.root().join("sim-scenario.yaml"),
        ))
    }

    pub(crate) fn spec(&self) -> SessionSpec {
        let config = Config {
            model: "sim-model".into(),
            context_threshold: debussy::context::ContextLimit::At(80.0),
            timeout: debussy::config::Seconds(60),
            ..Config::default()
        };
        SessionSpec::from_config(
            &config,
            &sim_settings(crate::support::DEBUSSY),
            self.backend_with(crate::support::DEBUSSY),
            "Phase 1: greet the world.",
            self.root(),
            log_path(self.root()),
        )
        .expect("spec")
        .with_env(run_env(self.root()).vars())
    }
}

/// The sim agent's settings, run by `command`, playing the model `sim-model`.
fn sim_settings(command: &str) -> BackendSettings {
    BackendSettings {
        command: Some(command.to_owned()),
        ..debussy::session::backend_settings(&Config::default(), AgentKind::Sim)
    }
    .with_model("sim-model")
}
