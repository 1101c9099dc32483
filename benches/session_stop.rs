//! Measures the session layer's stop latency with the sim agent (a real child process
//! printing Claude Code's stream-json):
//!
//! - **threshold line → reaped**: from the arrival of the line whose usage crosses the
//!   context threshold to the agent being reaped, as `SessionReport::stop` records it
//!   (issue 3 asks for "well under a second");
//! - **manual restart → reaped**: from a `SessionControl::restart` request to the reap;
//! - **whole session**: a three-turn session that completes, spawn to report.
//!
//! The real Claude Code CLI's figure comes from `tests/session.rs`
//! (`claude_crossing_the_threshold_on_turn_three_stops_before_a_fourth_request` prints
//! it), since that needs the scripted model server from the test support code.
//!
//! Run with `cargo bench --bench session_stop` (add `-- --quick` for fewer rounds).

#![allow(
    clippy::cast_precision_loss,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "a benchmark turns counts and durations into figures for its report"
)]
mod common;

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use debussy::agent::BackendSettings;
use debussy::agent::sim::SimBackend;
use debussy::config::{AgentKind, Config};
use debussy::session::{self, SessionControl, SessionEvent, SessionSpec};
use tokio::sync::mpsc;

const CROSSING: &str = r#"
window: 200000
scripts:
  - turns:
      - {say: "one", percent: 30}
      - {say: "two", percent: 50}
      - {say: "three", percent: 90}
      - sleep_ms: 30000
"#;

const WAITING: &str = r#"
scripts:
  - turns:
      - {say: "working", percent: 10}
      - sleep_ms: 30000
"#;

const COMPLETING: &str = r#"
scripts:
  - turns:
      - {say: "one", percent: 10}
      - {say: "two", percent: 20}
      - {say: "done", percent: 30}
"#;

fn main() {
    let quick = std::env::args().any(|arg| arg == "--quick");
    let rounds = if quick { 10 } else { 100 };
    let runtime = common::runtime();
    let dir = match tempfile::tempdir() {
        Ok(dir) => dir,
        Err(err) => {
            eprintln!("failed to create a temp dir: {err}");
            std::process::exit(1);
        }
    };
    runtime.block_on(async {
        let mut threshold = Vec::new();
        let mut manual = Vec::new();
        let mut whole = Vec::new();
        for round in 0..rounds {
            let report = session::run(
                spec(dir.path(), CROSSING, round),
                mpsc::unbounded_channel().0,
                SessionControl::new(),
            )
            .await;
            assert_eq!(report.code(), -2, "{}", report.outcome);
            threshold.push(report.stop.expect("a stop").latency);

            let (tx, mut rx) = mpsc::unbounded_channel();
            let control = SessionControl::new();
            let running = tokio::spawn(session::run(
                spec(dir.path(), WAITING, round),
                tx,
                control.clone(),
            ));
            while let Some(event) = rx.recv().await {
                if matches!(event, SessionEvent::Activity(_)) {
                    control.restart();
                }
            }
            let report = running.await.expect("session task");
            assert_eq!(report.code(), -2, "{}", report.outcome);
            manual.push(report.stop.expect("a stop").latency);

            let started = Instant::now();
            let report = session::run(
                spec(dir.path(), COMPLETING, round),
                mpsc::unbounded_channel().0,
                SessionControl::new(),
            )
            .await;
            assert_eq!(report.code(), 0, "{}", report.outcome);
            whole.push(started.elapsed());
        }
        common::report("threshold line → reaped (sim)", &threshold);
        common::report("manual restart → reaped (sim)", &manual);
        common::report("whole 3-turn session (sim)", &whole);
    });
}

fn spec(dir: &Path, scenario: &str, round: usize) -> SessionSpec {
    let scenario_path = dir.join("scenario.yaml");
    std::fs::write(&scenario_path, scenario).expect("write scenario");
    let config = Config {
        model: "sim-model".into(),
        context_threshold: debussy::context::ContextLimit::At(80.0),
        ..Config::default()
    };
    let agent = BackendSettings {
        command: Some(env!("CARGO_BIN_EXE_debussy").to_owned()),
        ..debussy::session::backend_settings(&config, AgentKind::Sim)
    }
    .with_model("sim-model");
    SessionSpec::from_config(
        &config,
        &agent,
        Arc::new(SimBackend::new(&agent, scenario_path)),
        "Bench.",
        dir,
        dir.join(format!("logs/session-{round}.jsonl")),
    )
    .expect("spec")
}
