//! A scripted shell agent, for behaviour the sim agent cannot show: ignoring SIGINT,
//! over-long lines, leftover processes.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use debussy::agent::{
    AgentBackend, AgentCommand, AgentError, AgentEvent, FailureKind, UsageReporting,
};
use debussy::process::{Signal, StopAction};
use debussy::session::{
    LimitReason, SessionControl, SessionEvent, SessionOutcome, SessionSpec, SessionWarning,
    StopCause,
};
use serde_json::{Value, json};

use super::common::{SimProject, run, run_with};
use crate::support::scenario::{Scenario, Turn};

/// An agent that is a shell script printing stream-json lines.
struct ScriptBackend {
    script: String,
}

impl AgentBackend for ScriptBackend {
    fn name(&self) -> &'static str {
        "script"
    }

    fn command(&self, prompt: &str, _model: &str) -> Result<AgentCommand, AgentError> {
        Ok(AgentCommand {
            program: PathBuf::from("/bin/sh"),
            args: vec!["-c".into(), self.script.clone()],
            env: std::collections::BTreeMap::new(),
            stdin: Some(prompt.to_owned()),
            home: None,
        })
    }

    fn parse_line(&self, line: &[u8]) -> Vec<AgentEvent> {
        debussy::agent::stream_json::parse_line(line)
            .into_iter()
            .collect()
    }

    fn usage_reporting(&self) -> UsageReporting {
        UsageReporting::PerMessage
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

/// A project for a script backend: its scenario is never played.
fn project() -> SimProject {
    SimProject::new(&Scenario::playing([Turn::say("unused")]))
}

fn script_spec(project: &SimProject, script: String) -> SessionSpec {
    let mut spec = project.spec();
    spec.backend = Arc::new(ScriptBackend { script });
    spec
}

/// An agent that ignores SIGINT, crosses the context threshold and sleeps; a stop
/// waits `stop_grace` for it.
fn ignoring_sigint(project: &SimProject, stop_grace: Duration) -> SessionSpec {
    let script = format!(
        "trap '' INT; {}; exec sleep 30",
        print_lines(&[init_line(), assistant_line("m1", 170_000, "Crossing.")])
    );
    let mut spec = script_spec(project, script);
    spec.stop_grace = stop_grace;
    spec
}

fn init_line() -> Value {
    json!({"type": "system", "subtype": "init", "session_id": "s-1", "model": "m"})
}

/// A successful `result` line.
fn result_line() -> Value {
    json!({"type": "result", "subtype": "success", "is_error": false,
           "result": "Done.", "session_id": "s-1"})
}

fn assistant_line(id: &str, context: u64, text: &str) -> Value {
    json!({"type": "assistant", "parent_tool_use_id": null, "message": {
        "id": id, "model": "m", "content": [{"type": "text", "text": text}],
        "usage": {"input_tokens": 0, "cache_read_input_tokens": context, "output_tokens": 1}}})
}

#[tokio::test]
async fn an_interrupt_during_a_context_stop_wins_and_a_second_one_kills() {
    let project = project();
    // The agent ignores SIGINT, so the context stop waits out its grace: the interrupts
    // arrive while it is still running, whatever the machine's speed.
    let spec = ignoring_sigint(&project, Duration::from_secs(20));
    let started = Instant::now();
    let finished = run_with(spec, SessionControl::new(), |event, control| {
        if let SessionEvent::Stopping { cause, immediate } = event {
            match cause {
                StopCause::ContextLimit(LimitReason::Meter(_)) => control.interrupt(),
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
                (StopCause::ContextLimit(LimitReason::Meter(_)), false),
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
    let project = project();
    let spec = ignoring_sigint(&project, Duration::from_millis(300));
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
async fn over_long_lines_warn_and_leftovers_killed_with_the_group_do_not() {
    let project = project();
    // A 17 MiB line (past the 16 MiB cap), then a background process left running.
    let script = format!(
        "{}; head -c 17825792 /dev/zero | tr '\\0' x; echo; \
         sleep 30 >/dev/null 2>&1 & {}",
        print_lines(&[init_line(), assistant_line("m1", 1_000, "Done.")]),
        print_lines(&[result_line()])
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
    // The background `sleep` was killed with the agent's group: expected, not a warning.
    assert!(
        !report
            .warnings
            .iter()
            .any(|warning| matches!(warning, SessionWarning::Leaked(_))),
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

#[tokio::test]
async fn a_line_with_an_invalid_byte_still_counts_and_stops_the_session() {
    let project = project();
    // A 190,000-token assistant line whose text carries one byte that is not UTF-8
    // (printf's \377), then a long sleep: only the stop ends the session in time.
    let line = assistant_line("m1", 190_000, "bad XBYTEX here").to_string();
    let (before, after) = line.split_once("XBYTEX").expect("marker");
    let script = format!(
        "{}; printf '%s\\377%s\\n' '{before}' '{after}'; exec sleep 30",
        print_lines(&[init_line()])
    );
    let finished = run(script_spec(&project, script), SessionControl::new()).await;
    let report = &finished.report;
    assert!(
        matches!(report.outcome, SessionOutcome::ContextLimit { .. }),
        "{:?}",
        report.outcome
    );
    assert_eq!(report.snapshot.tokens, 190_000);
    let invalid: Vec<_> = report
        .warnings
        .iter()
        .filter(|warning| matches!(warning, SessionWarning::InvalidUtf8 { line: 2 }))
        .collect();
    assert_eq!(invalid.len(), 1, "{:?}", report.warnings);
}

#[tokio::test]
async fn stderr_goes_to_its_log_and_only_a_tail_stays_in_memory() {
    use std::os::unix::fs::PermissionsExt as _;
    let project = project();
    let script = format!(
        "{}; i=1; while [ $i -le 30 ]; do echo \"err $i\" >&2; i=$((i+1)); done; {}",
        print_lines(&[init_line()]),
        print_lines(&[result_line()])
    );
    let mut spec = script_spec(&project, script);
    spec.stderr_tail_lines = 5;
    let finished = run(spec, SessionControl::new()).await;
    let report = &finished.report;
    assert!(report.outcome.is_success(), "{:?}", report.outcome);
    assert_eq!(
        report.stderr_tail,
        ["err 26", "err 27", "err 28", "err 29", "err 30"]
    );
    let stderr_log = debussy::session::stderr_log_path(&report.log_path);
    let saved = std::fs::read_to_string(&stderr_log).expect("stderr log");
    assert_eq!(saved.lines().count(), 30, "{saved}");
    for path in [&stderr_log, &report.log_path] {
        let mode = std::fs::metadata(path)
            .expect("metadata")
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(mode, 0o600, "{}", path.display());
    }
}

#[tokio::test]
async fn a_process_that_left_the_group_dies_with_the_agent_and_is_no_warning() {
    let project = project();
    let dir = tempfile::tempdir().expect("tempdir");
    let pid_file = dir.path().join("escaped.pid");
    // `setsid` leaves the group, as Claude Code's Bash tool commands do, and keeps the
    // agent's stdout open: killing the group cannot reach it, the agent's reaper does.
    let script = format!(
        "{}; setsid sh -c 'echo $$ > {}; exec sleep 30' & {}",
        print_lines(&[init_line(), assistant_line("m1", 1_000, "Done.")]),
        pid_file.display(),
        print_lines(&[result_line()])
    );
    let started = Instant::now();
    let finished = run(script_spec(&project, script), SessionControl::new()).await;
    let pid: i32 = std::fs::read_to_string(&pid_file)
        .expect("the escaped process wrote its pid")
        .trim()
        .parse()
        .expect("a pid");
    let alive = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_ok()
        && !std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .is_ok_and(|stat| stat.contains(") Z "));
    if alive {
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), Signal::SIGKILL);
    }
    assert!(
        !alive,
        "the process that left the agent's group outlived the session"
    );
    assert!(
        finished.report.outcome.is_success(),
        "{:?}",
        finished.report.outcome
    );
    assert!(
        !finished
            .report
            .warnings
            .iter()
            .any(|warning| matches!(warning, SessionWarning::Leaked(_))),
        "{:?}",
        finished.report.warnings
    );
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn a_figure_held_back_by_the_pacing_still_arrives_while_the_agent_is_quiet() {
    let project = project();
    // Two figures in quick succession, then silence: the second must reach the outputs
    // during the silence, not only when the session ends.
    let script = format!(
        "{}; exec sleep 30",
        print_lines(&[
            init_line(),
            assistant_line("m1", 10_000, "one"),
            assistant_line("m2", 120_000, "two"),
        ])
    );
    let started = Instant::now();
    let finished = run_with(
        script_spec(&project, script),
        SessionControl::new(),
        |event, control| {
            if let SessionEvent::Context(snapshot) = event
                && snapshot.reported_tokens == 120_000
            {
                control.interrupt();
            }
        },
    )
    .await;
    assert_eq!(finished.report.outcome, SessionOutcome::Interrupted);
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "the figure came only at the end"
    );
}

#[tokio::test]
async fn an_agent_still_running_after_its_result_is_stopped_and_still_completes() {
    let project = project();
    // A second result while it lingers does not move the deadline.
    let script = format!(
        "{}; sleep 5; {}; exec sleep 60",
        print_lines(&[
            init_line(),
            assistant_line("m1", 1_000, "Done."),
            result_line()
        ]),
        print_lines(&[result_line()])
    );
    let started = Instant::now();
    let finished = run(script_spec(&project, script), SessionControl::new()).await;
    let report = &finished.report;
    assert!(report.outcome.is_success(), "{:?}", report.outcome);
    let lingered: Vec<_> = report
        .warnings
        .iter()
        .filter(|warning| matches!(warning, SessionWarning::Lingered { .. }))
        .collect();
    assert_eq!(lingered.len(), 1, "{:?}", report.warnings);
    let took = started.elapsed();
    assert!(
        (Duration::from_secs(10)..Duration::from_secs(14)).contains(&took),
        "stopped after {took:?}, not 10 s after its first result"
    );
    assert_eq!(
        report.stop.as_ref().map(|stop| &stop.cause),
        None,
        "a lingering agent is not a session stop"
    );
    assert!(report.exit.is_some(), "its exit is reported");
}

#[tokio::test]
async fn an_agent_waiting_out_its_backoff_is_stopped_when_the_offline_grace_ends() {
    let project = project();
    // Claude Code's words for a refused connection, with its next try 60 s away.
    let refused = |attempt: u32, delay_ms: u64| {
        json!({"type": "system", "subtype": "api_retry", "attempt": attempt, "max_retries": 10,
               "retry_delay_ms": delay_ms, "error_status": null, "error": "unknown",
               "session_id": "s-1"})
    };
    let script = format!(
        "{}; exec sleep 90",
        print_lines(&[init_line(), refused(1, 500), refused(2, 60_000)])
    );
    let mut spec = script_spec(&project, script);
    spec.offline_grace = Duration::from_secs(1);
    spec.timeout = Some(Duration::from_secs(30));
    let finished = run(spec, SessionControl::new()).await;
    let SessionOutcome::AgentFailure(failure) = &finished.report.outcome else {
        panic!("not stopped as cut off: {:?}", finished.report.outcome);
    };
    assert_eq!(failure.kind, FailureKind::Unreachable);
    assert!(
        failure.said.starts_with("cannot reach the API: "),
        "{}",
        failure.said
    );
}
