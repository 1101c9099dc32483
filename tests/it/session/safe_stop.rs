//! Stops at a safe point with the sim agent: a context stop decided while a tool call
//! runs waits for its result; one that outlasts `agent.tool_grace` is cut short and the
//! report names it; a timeout does not wait.

use std::time::Duration;

use debussy::session::{LimitReason, SessionControl, SessionOutcome, StopCause};

use super::common::{SimProject, run};
use crate::support::scenario::{Scenario, Turn};

/// A scenario whose first message crosses 80 % and runs `command`, then says more. The
/// call is the message's one block, so the threshold is crossed as the call starts (a
/// crossing on a text block before it stops the agent before the call can start).
fn crossing_while(command: &str) -> Scenario {
    Scenario::playing([
        Turn::quiet().percent(85).bash(command),
        Turn::say("More work after the call.").percent(86),
    ])
    .window(200_000)
}

#[tokio::test]
async fn sim_a_context_stop_waits_for_the_running_tool() {
    let project = SimProject::new(&crossing_while("sleep 1; touch done"));
    let finished = run(project.spec(), SessionControl::new()).await;
    let report = &finished.report;
    assert!(report.outcome.is_context_limit(), "{}", report.outcome);
    assert!(project.root().join("done").exists(), "the call finished");
    assert_eq!(report.cut_short, None);
    assert!(
        !finished.log_text().contains("More work after the call."),
        "the agent's hook ended it before its next message"
    );
}

#[tokio::test]
async fn sim_a_tool_past_the_grace_is_cut_short_and_named() {
    let project = SimProject::new(&crossing_while("sleep 20; touch late"));
    let mut spec = project.spec();
    spec.tool_grace = Duration::from_millis(300);
    let finished = run(spec, SessionControl::new()).await;
    let report = &finished.report;
    assert!(report.outcome.is_context_limit(), "{}", report.outcome);
    assert_eq!(
        report.cut_short.as_deref(),
        Some("Bash: sleep 20; touch late")
    );
    assert!(!project.root().join("late").exists());
    assert!(
        report.duration < Duration::from_secs(15),
        "{:?}",
        report.duration
    );
}

#[tokio::test]
async fn sim_a_zero_grace_stops_at_once() {
    let project = SimProject::new(&crossing_while("sleep 20; touch late"));
    let mut spec = project.spec();
    spec.tool_grace = Duration::ZERO;
    let finished = run(spec, SessionControl::new()).await;
    assert!(finished.report.outcome.is_context_limit());
    assert_eq!(finished.report.cut_short, None);
    assert!(finished.report.duration < Duration::from_secs(15));
}

#[tokio::test]
async fn sim_a_timeout_does_not_wait_for_the_tool() {
    let project = SimProject::new(&crossing_while("sleep 20; touch late"));
    let mut spec = project.spec();
    spec.timeout = Some(Duration::from_secs(1));
    let finished = run(spec, SessionControl::new()).await;
    let report = &finished.report;
    // The context stop came first and stays the cause; the timeout made it go ahead.
    assert!(
        matches!(
            &report.outcome,
            SessionOutcome::ContextLimit {
                reason: LimitReason::Meter(_),
                ..
            }
        ),
        "{}",
        report.outcome
    );
    assert!(
        report.duration < Duration::from_secs(15),
        "{:?}",
        report.duration
    );
    assert!(
        finished
            .stopping()
            .iter()
            .all(|cause| matches!(cause, StopCause::ContextLimit(_)))
    );
}
