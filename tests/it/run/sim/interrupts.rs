//! Ctrl-C, SIGTERM and SIGHUP while no agent runs but debussy commits a phase's work
//! through the project's slow `pre-commit` hook: what each press says it does is what it
//! does, `status` says where the run stands, and `--resume` goes on from there.

use nix::sys::signal::Signal;

use super::kit::{resume_to_completion, work};
use super::witness::{Beacon, LiveRun, assert_died, hook};
use crate::support::project::{Project, events_named, story};
use crate::support::scenario::Scenario;

/// Phase 2 after phase 1, each writing and gated on its file; the first commit debussy
/// makes (phase 1's completion) runs the `pre-commit` hook `body`.
fn two_phases_with_a_hook(project: &Project, body: &str) {
    project.plan(
        &[
            ("1", "N/A", "test -f f1.txt"),
            ("2", "Phase 1", "test -f f2.txt"),
        ],
        &Scenario::new()
            .script(work("1", "f1.txt", "one", 0))
            .script(work("2", "f2.txt", "two", 0)),
    );
    hook(project.root(), "pre-commit", body);
}

/// The phases the events say were started.
fn started(events: &[serde_json::Value]) -> Vec<&str> {
    events_named(events, "phase_started")
        .iter()
        .filter_map(|e| e["phase_id"].as_str())
        .collect()
}

#[test]
fn sigterm_in_a_commit_hook_lets_it_finish_and_pauses_before_the_next_phase() {
    let scratch = tempfile::tempdir().expect("scratch");
    let beacon = Beacon::new(scratch.path(), "pre-commit");
    let release = scratch.path().join("release");
    let project = Project::new();
    two_phases_with_a_hook(&project, &beacon.until(&release));

    let (mut live, _) = beacon.wait(LiveRun::start(&project, &[]));
    let said = live.signal_and_hear(Signal::SIGTERM);
    assert!(
        said.contains("letting the pre-commit hook finish, then pausing the run"),
        "{said}"
    );
    assert!(!said.contains("agent"), "no agent runs: {said}");
    std::fs::write(&release, "").expect("end the hook");
    let (code, events) = live.finish();
    assert_eq!(code, 130, "{}", story(&events));
    let committed = events_named(&events, "committed");
    assert_eq!(committed.len(), 1, "{}", story(&events));
    assert_eq!(committed[0]["phase_id"], "1");
    assert_eq!(started(&events), ["1"], "{}", story(&events));

    let status = project.status_json();
    assert_eq!(status["run"]["status"], "paused", "{status:#}");
    assert_eq!(status["run"]["current_phase"], "2", "{status:#}");
    let text = project.command(&["status"]).output().expect("status");
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("Status:  paused before phase 2\n"),
        "phase 2 never started: {text}"
    );

    let events = resume_to_completion(&project);
    assert_eq!(started(&events), ["2"], "{}", story(&events));
}

#[test]
fn three_interrupts_in_a_commit_hook_say_they_wait_for_it_then_kill_it() {
    let scratch = tempfile::tempdir().expect("scratch");
    let beacon = Beacon::new(scratch.path(), "pre-commit");
    let project = Project::new();
    two_phases_with_a_hook(&project, &beacon.once());

    let (mut live, hook_pid) = beacon.wait(LiveRun::start(&project, &[]));
    let said: Vec<String> = [Signal::SIGINT, Signal::SIGINT, Signal::SIGINT]
        .into_iter()
        .map(|signal| live.signal_and_hear(signal))
        .collect();
    let (code, events) = live.finish();
    assert_eq!(code, 130, "{}", story(&events));
    assert!(
        said[1].contains("the pre-commit hook still runs")
            && said[1].contains("Ctrl-C again to kill it and exit at once"),
        "{said:#?}"
    );
    assert!(
        said[2].contains("killing the pre-commit hook and exiting at once"),
        "{said:#?}"
    );
    assert!(
        said.iter().all(|line| !line.contains("agent")),
        "no agent runs: {said:#?}"
    );
    assert_died(hook_pid, "the pre-commit hook");

    assert_eq!(project.status_json()["run"]["status"], "interrupted");
    let events = resume_to_completion(&project);
    assert_eq!(started(&events), ["1", "2"], "{}", story(&events));
}

#[test]
fn an_interrupt_in_a_gate_says_it_kills_the_gate_not_the_agent() {
    let scratch = tempfile::tempdir().expect("scratch");
    let beacon = Beacon::new(scratch.path(), "gate");
    let project = Project::new();
    project.plan(
        &[("1", "N/A", &format!("{}; test -f f1.txt", beacon.once()))],
        &Scenario::new().script(work("1", "f1.txt", "one", 0)),
    );

    let (mut live, gate_pid) = beacon.wait(LiveRun::start(&project, &[]));
    let said = live.signal_and_hear(Signal::SIGINT);
    let (code, events) = live.finish();
    assert_eq!(code, 130, "{}", story(&events));
    assert!(
        said.contains("killing the gate `check` and pausing the run"),
        "{said}"
    );
    assert!(!said.contains("agent"), "no agent runs: {said}");
    assert_died(gate_pid, "the gate");
    assert_eq!(project.status_json()["run"]["status"], "paused");
}

#[test]
fn an_interrupt_in_a_merge_hook_says_it_lets_the_merge_finish() {
    let scratch = tempfile::tempdir().expect("scratch");
    let beacon = Beacon::new(scratch.path(), "post-merge");
    let release = scratch.path().join("release");
    let project = Project::new();
    project.plan(
        &[("1", "N/A", "test -f f1.txt")],
        &Scenario::new().script(work("1", "f1.txt", "one", 0)),
    );
    hook(project.root(), "post-merge", &beacon.until(&release));

    let (mut live, _) = beacon.wait(LiveRun::start(&project, &["--jobs", "2"]));
    let said = live.signal_and_hear(Signal::SIGINT);
    assert!(
        said.contains("letting `git merge` finish, then pausing the run"),
        "{said}"
    );
    assert!(!said.contains("agent"), "no agent runs: {said}");
    std::fs::write(&release, "").expect("end the hook");
    let (_, events) = live.finish();
    assert_eq!(
        events_named(&events, "merged").len(),
        1,
        "{}",
        story(&events)
    );
}
