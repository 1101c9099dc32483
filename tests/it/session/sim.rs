//! The built-in sim agent (the debussy binary's `__sim-agent`) driven by `session::run`.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use debussy::checkpoint::{Todo, TodoStatus};
use debussy::context::StopReason;
use debussy::process::{ExitStatus, Signal, StopAction};
use debussy::session::{
    ActivityKind, CONTEXT_LIMIT_MARKER, LimitReason, SessionControl, SessionEvent, SessionOutcome,
    StopCause, Thread,
};
use serde_json::{Value, json};

use super::common::{STOP_LATENCY_LIMIT, SimProject, run, run_with};
use crate::support::scenario::{self as sim, Scenario, Turn};

#[tokio::test]
async fn sim_a_session_completes_and_reports_what_it_did() {
    let review = sim::Task::new(
        "Review the greeting",
        "Look at out/greeting.txt",
        "The greeting is fine.",
    )
    .subagent_type("Explore")
    .turn(Turn::say("Looks fine.").percent(95));
    let todos = |first, second| {
        [
            sim::Todo::with("Write the greeting", first),
            sim::Todo::with("Check it", second),
        ]
    };
    let project = SimProject::new(
        &Scenario::playing([
            Turn::say("Planning the work.")
                .percent(10)
                .todos(todos(sim::TodoStatus::InProgress, sim::TodoStatus::Pending)),
            Turn::say("Writing.")
                .percent(20)
                .writes("out/greeting.txt", "hello\n")
                .tool(sim::Action::Task(review)),
            Turn::say("All done.").percent(25).todos(todos(
                sim::TodoStatus::Completed,
                sim::TodoStatus::Completed,
            )),
        ])
        .window(200_000),
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

    // Events: started, snapshots as the figures changed, subagent lines attributed,
    // the subagent's type once.
    assert!(matches!(
        finished.events.first(),
        Some(SessionEvent::Started { log_path, .. }) if *log_path == report.log_path
    ));
    let used: Vec<&str> = finished
        .events
        .iter()
        .filter_map(|event| match event {
            SessionEvent::SubagentUsed { agent } => Some(agent.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(used, ["Explore"]);
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
    // Figures are paced (at most one every 50 ms, the last always sent): intermediate
    // ones may be skipped, never the first or the final one, and they only grow here.
    assert_eq!(tokens.first(), Some(&0), "{tokens:?}");
    assert_eq!(tokens.last(), Some(&50_000), "{tokens:?}");
    assert!(
        tokens.windows(2).all(|pair| pair[0] <= pair[1]),
        "{tokens:?}"
    );
    assert!(
        tokens
            .iter()
            .all(|t| [0, 20_000, 40_000, 50_000].contains(t)),
        "{tokens:?}"
    );
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
}

/// The sim agent's turns for a context-limit test: 30%, 50%, then 90% (crossing 80%),
/// then a long sleep and a turn that must never be reached.
fn crossing() -> Scenario {
    Scenario::playing([
        Turn::say("Turn one.").percent(30).bash("true"),
        Turn::say("Turn two.").percent(50).bash("true"),
        Turn::say("Turn three.")
            .percent(90)
            .writes("third.txt", "3\n"),
        Turn::sleep(30_000),
        Turn::say("NEVER-REACHED").percent(95),
    ])
    .window(200_000)
}

#[tokio::test]
async fn sim_crossing_the_threshold_stops_the_session_at_once() {
    let project = SimProject::new(&crossing());
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
    assert!(matches!(
        stop.cause,
        StopCause::ContextLimit(LimitReason::Meter(_))
    ));
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
    let project = SimProject::new(&Scenario::playing([
        Turn::say("Working.").percent(40),
        Turn::compact(
            sim::Compact::default()
                .trigger(sim::Trigger::Auto)
                .pre_tokens(150_000),
        ),
        Turn::sleep(30_000),
    ]));
    let finished = run(project.spec(), SessionControl::new()).await;
    let (trigger, pre_tokens) = finished.compaction();
    assert_eq!(trigger.as_deref(), Some("auto"));
    assert_eq!(pre_tokens, Some(150_000));
    finished.log_json(true);
}

#[tokio::test]
async fn sim_a_session_over_its_timeout_is_stopped() {
    let project = SimProject::new(&Scenario::playing([
        Turn::say("Thinking hard.").percent(5),
        Turn::sleep(30_000),
    ]));
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
    let project = SimProject::new(&Scenario::playing([
        Turn::say("About to fail."),
        Turn::crash(
            sim::Crash::exit(3)
                .stderr("fatal: out of cheese")
                .partial_line(),
        ),
    ]));
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
    let project = SimProject::new(&Scenario::playing([
        Turn::say("Going down."),
        Turn::crash(sim::Crash::signal(Signal::SIGKILL)),
    ]));
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
        &Scenario::new().script(
            sim::Script::any()
                .turn(Turn::say("Ran out of turns."))
                .result(sim::Ending::subtype("error_max_turns"))
                .exit_code(1),
        ),
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
    let project = SimProject::new(&Scenario::playing([Turn::say("hi")]));
    let missing = project.root().join("no-such-debussy");
    let mut spec = project.spec();
    spec.backend = project.backend_with(&missing.to_string_lossy());
    let finished = run(spec, SessionControl::new()).await;
    let failure = finished.spawn_failure(&missing);
    assert!(
        failure
            .help
            .as_deref()
            .is_some_and(|help| help.contains("agents.sim.command")),
        "{failure}"
    );
    let report = &finished.report;
    assert!(report.pid.is_none() && report.exit.is_none());
    assert!(finished.events.is_empty(), "{:?}", finished.events);
}

#[tokio::test]
async fn sim_an_interrupt_stops_the_session() {
    let project = SimProject::new(&Scenario::playing([
        Turn::say("Working.").percent(10),
        Turn::sleep(30_000),
    ]));
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
    let project = SimProject::new(&Scenario::playing([Turn::sleep(30_000)]));
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
    let project = SimProject::new(&Scenario::playing([
        Turn::say("Working.")
            .percent(10)
            .todos([sim::Todo::with("Keep going", sim::TodoStatus::InProgress)]),
        Turn::sleep(30_000),
    ]));
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
    assert_eq!(
        finished.stopping(),
        [StopCause::ContextLimit(LimitReason::Manual)]
    );
    finished.log_json(true);
}
