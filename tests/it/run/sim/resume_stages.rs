//! `--resume` takes a phase up where it stood, whatever moment of its attempt a SIGKILL or
//! a pause landed in: after a context restart, in the stopped session's handoff, in the
//! delay before the next session (the restart count, the checkpoint and the handoff
//! kept), in the gates or the completion commit after the agent said it was done (the
//! gates run again; no new session starts). Each kill or pause is synchronised on an
//! event or a FIFO the process at that moment writes to.

use nix::sys::signal::Signal;
use serde_json::Value;

use super::kit::{resume_to_completion, summary, wrong_first};
use super::witness::{Beacon, LiveRun, hook};
use crate::support::project::{Project, events_named, story};
use crate::support::scenario::{Action, Scenario, Script, Status, Task, Turn};

/// What the stopped session writes when asked for its handoff.
const HANDOFF: &str = "## Goal\nfinish phase 1 (HANDOFF-MARK)";

/// What the checkpoint of a session after the first restart says.
const AFTER_RESTART_1: &str = "restart 1 of 3";

/// What a checkpoint carrying the stopped session's handoff says.
const HANDOFF_HEADING: &str = "## Handoff from the previous session";

/// Phase 1's first session: it writes `first.txt`, fills its context past the threshold
/// and waits to be stopped; resumed for its handoff, it plays `handoff`.
fn stopping(handoff: impl IntoIterator<Item = Turn>) -> Script {
    let first = Script::phase("1").restart(0).turns([
        Turn::write(30, "first.txt", "1"),
        Turn::say("filling up").percent(85),
        Turn::sleep(20_000),
    ]);
    handoff.into_iter().fold(first, Script::handoff)
}

/// Phase 1's session after its first restart: told it continues from restart 1 and each
/// of `expect`, it plays `turns`, writes its notes and reports done.
fn restarted(expect: &[&str], turns: impl IntoIterator<Item = Turn>) -> Script {
    expect
        .iter()
        .fold(
            Script::phase("1").restart(1).expect_prompt(AFTER_RESTART_1),
            |script, text| script.expect_prompt(text),
        )
        .turns(turns)
        .turns([Turn::notes("1"), Turn::done()])
}

/// A one-phase plan gated on `gate`, played by `scenario`.
fn one_phase(gate: &str, scenario: &Scenario) -> Project {
    let project = Project::new();
    project.plan(&[("1", "N/A", gate)], scenario);
    project
}

/// The resume went on with phase 1 after its first restart: its first session is
/// restart 1, and no session filled its context again or wrote another handoff.
fn assert_went_on_after_restart_1(events: &[Value]) {
    let sessions = events_named(events, "session_started");
    assert_eq!(
        sessions.first().map(|s| &s["restart"]),
        Some(&Value::from(1)),
        "the resume started the phase over:\n{}",
        story(events)
    );
    assert!(
        events_named(events, "handoff_requested").is_empty()
            && events_named(events, "restart").is_empty(),
        "the resume paid for another restart:\n{}",
        story(events)
    );
}

/// `debussy show latest 1 --format json`: phase 1's last attempt.
fn shown(project: &Project) -> Value {
    let output = project
        .command(&["show", "latest", "1", "--format", "json"])
        .output()
        .expect("show");
    serde_json::from_slice(&output.stdout).expect("show json")
}

/// The checkpoint the last resume's first session of phase 1 was given.
fn resumed_checkpoint(project: &Project) -> String {
    let shown = shown(project);
    let sessions = shown["sessions"].as_array().expect("sessions");
    sessions
        .iter()
        .rev()
        .find(|session| session["resumed"] == true)
        .and_then(|session| session["checkpoint"].as_str())
        .unwrap_or_else(|| panic!("the resumed session had no checkpoint: {shown:#}"))
        .to_owned()
}

/// No session of phase 1 started in the resume: it went on with the gates.
fn assert_no_new_session(events: &[Value]) {
    assert!(
        events_named(events, "session_started").is_empty(),
        "the resume started a new session of a phase its agent had done:\n{}",
        story(events)
    );
    assert!(
        events_named(events, "gate_finished")
            .iter()
            .any(|gate| gate["passed"] == true),
        "the gates ran again:\n{}",
        story(events)
    );
}

#[test]
fn a_run_killed_after_a_context_restart_goes_on_from_its_checkpoint_and_handoff() {
    let scratch = tempfile::tempdir().expect("scratch");
    let beacon = Beacon::new(scratch.path(), "restarted");
    let scenario = Scenario::new()
        .script(stopping([Turn::say(HANDOFF)]))
        .script(restarted(
            &[HANDOFF_HEADING, "HANDOFF-MARK", "first.txt"],
            [Turn::write(10, "second.txt", "2").bash(&beacon.once())],
        ));
    let project = one_phase("test -f second.txt", &scenario);
    let (live, _) = beacon.wait(LiveRun::start(&project, &[]));
    let killed = live.kill();
    assert_eq!(events_named(&killed, "restart").len(), 1, "{killed:#?}");

    let events = resume_to_completion(&project);
    assert_went_on_after_restart_1(&events);
    let show = crate::support::debussy(project.root(), &["show", "latest", "1"])
        .output()
        .expect("show");
    let shown = String::from_utf8_lossy(&show.stdout);
    assert!(
        shown.contains("Session 2: interrupted") && !shown.contains("of 0 tokens"),
        "the killed session's figures: {shown}"
    );
    let checkpoint = resumed_checkpoint(&project);
    // Both halves of the work: the restart's checkpoint and the killed session's file.
    for text in [
        AFTER_RESTART_1,
        HANDOFF_HEADING,
        "HANDOFF-MARK",
        "first.txt",
        "second.txt",
    ] {
        assert!(checkpoint.contains(text), "{text}: {checkpoint}");
    }
}

#[test]
fn a_resumed_run_killed_again_still_goes_on_from_the_first_runs_checkpoint() {
    let scratch = tempfile::tempdir().expect("scratch");
    let first = Beacon::new(scratch.path(), "restarted");
    let again = Beacon::new(scratch.path(), "resumed");
    let scenario = Scenario::new()
        .script(stopping([Turn::say(HANDOFF)]))
        .script(restarted(
            &[HANDOFF_HEADING, "HANDOFF-MARK", "first.txt"],
            [Turn::write(10, "second.txt", "2").bash(&format!(
                "{}; {}",
                first.once(),
                again.once()
            ))],
        ));
    let project = one_phase("test -f second.txt", &scenario);
    let (live, _) = first.wait(LiveRun::start(&project, &[]));
    live.kill();
    // Killed again before its session got anywhere: nothing new to recover.
    let (live, _) = again.wait(LiveRun::start(&project, &["--resume"]));
    live.kill();

    let events = resume_to_completion(&project);
    assert_went_on_after_restart_1(&events);
    let checkpoint = resumed_checkpoint(&project);
    for text in [HANDOFF_HEADING, "HANDOFF-MARK", "first.txt", "second.txt"] {
        assert!(checkpoint.contains(text), "{text}: {checkpoint}");
    }
}

#[test]
fn a_run_killed_in_the_handoff_goes_on_from_the_checkpoint() {
    let scratch = tempfile::tempdir().expect("scratch");
    let beacon = Beacon::new(scratch.path(), "handoff");
    let scenario = Scenario::new()
        .script(stopping([
            Turn::say("writing the handoff").bash(&beacon.once()),
            Turn::say(HANDOFF),
        ]))
        .script(restarted(&["first.txt"], []));
    let project = one_phase("test -f first.txt", &scenario);
    let (live, _) = beacon.wait(LiveRun::start(&project, &[]));
    let killed = live.kill();
    assert_eq!(
        events_named(&killed, "handoff_requested").len(),
        1,
        "{killed:#?}"
    );

    let events = resume_to_completion(&project);
    assert_went_on_after_restart_1(&events);
}

/// A project whose phase 1 restarts once with a handoff the next session must be given,
/// its run live in a 60 s restart delay.
fn in_the_restart_delay() -> (Project, LiveRun) {
    let scenario = Scenario::new()
        .script(stopping([Turn::say(HANDOFF)]))
        .script(restarted(
            &[HANDOFF_HEADING, "HANDOFF-MARK", "first.txt"],
            [],
        ));
    let project = one_phase("test -f first.txt", &scenario);
    let mut live = LiveRun::start_with(&project, &["--restart-delay", "60"]);
    live.wait_for("restart");
    (project, live)
}

#[test]
fn a_run_killed_in_the_restart_delay_goes_on_from_the_checkpoint_and_handoff() {
    let (project, live) = in_the_restart_delay();
    live.kill();

    let events = resume_to_completion(&project);
    assert_went_on_after_restart_1(&events);
}

#[test]
fn a_pause_in_the_restart_delay_keeps_the_handoff_for_the_resume() {
    let (project, mut live) = in_the_restart_delay();
    let said = live.signal_and_hear(Signal::SIGINT);
    let (code, paused) = live.finish();
    assert_eq!(code, 130, "{}", story(&paused));
    assert!(
        said.contains("pausing the run") && !said.contains("agent"),
        "no agent runs in the restart delay: {said}"
    );

    let events = resume_to_completion(&project);
    assert_went_on_after_restart_1(&events);
}

#[test]
fn a_run_killed_in_its_completion_commits_hook_goes_on_with_what_follows() {
    let scratch = tempfile::tempdir().expect("scratch");
    let beacon = Beacon::new(scratch.path(), "post-commit");
    let scenario = Scenario::new().script(Script::writing("1", 10, "done.txt", "done"));
    let project = one_phase("test -f done.txt", &scenario);
    // After the phase's completion commit is made, before debussy hears of it.
    hook(
        project.root(),
        "post-commit",
        &format!(
            "git log -1 --format=%s | grep -q ' completed$' || exit 0\n{}",
            beacon.once()
        ),
    );
    let (live, _) = beacon.wait(LiveRun::start(&project, &[]));
    live.kill();

    let events = resume_to_completion(&project);
    assert_no_new_session(&events);
    let completions = project
        .commit_messages()
        .into_iter()
        .filter(|message| message.contains("phase 1") && message.contains("completed"))
        .count();
    assert_eq!(completions, 1, "{:?}", project.commit_messages());
}

#[test]
fn a_pause_in_the_gates_runs_the_gates_again_on_resume() {
    let scratch = tempfile::tempdir().expect("scratch");
    let beacon = Beacon::new(scratch.path(), "gate");
    let scenario = Scenario::new().script(Script::writing("1", 10, "done.txt", "done"));
    let project = one_phase(&format!("{}; test -f done.txt", beacon.once()), &scenario);
    let (live, _) = beacon.wait(LiveRun::start(&project, &[]));
    let (code, paused) = live.stop_with(Signal::SIGINT);
    assert_eq!(code, 130, "{}", story(&paused));

    let events = resume_to_completion(&project);
    assert_no_new_session(&events);
}

/// What the retry of a phase whose first attempt failed is told.
const RETRY: &str = "Attempt 1 of this phase failed its checks";

#[test]
fn a_resumed_attempt_keeps_its_number_and_its_restarts_count_in_the_phase() {
    let scratch = tempfile::tempdir().expect("scratch");
    let beacon = Beacon::new(scratch.path(), "restarted");
    // Attempt 1 gives up; attempt 2 restarts once, and its session after restart 1 is
    // killed, then resumed.
    let scenario = Scenario::new()
        .script(
            Script::phase("1")
                .attempt(1)
                .turn(Turn::say("giving up").done_as(Status::Failed)),
        )
        .script(stopping([Turn::say(HANDOFF)]).attempt(2))
        .script(
            Script::phase("1")
                .attempt(2)
                .restart(1)
                .expect_prompt(AFTER_RESTART_1)
                .expect_prompt(RETRY)
                .turns([
                    Turn::write(10, "second.txt", "2").bash(&beacon.once()),
                    Turn::notes("1"),
                    Turn::done(),
                ]),
        );
    let project = one_phase("test -f second.txt", &scenario);
    let (live, _) = beacon.wait(LiveRun::start(&project, &[]));
    let killed = live.kill();
    assert_eq!(events_named(&killed, "restart").len(), 1, "{killed:#?}");

    let events = resume_to_completion(&project);
    let started = events_named(&events, "phase_started");
    assert_eq!(
        (&started[0]["attempt"], &started[0]["kind"]),
        (&Value::from(2), &Value::from("retry")),
        "the resume numbered the attempt it went on with anew:\n{}",
        story(&events)
    );
    assert_went_on_after_restart_1(&events);
    let finished = events_named(&events, "phase_finished");
    assert_eq!(
        (&finished[0]["attempts"], &finished[0]["restarts"]),
        (&Value::from(2), &Value::from(1)),
        "the phase's line forgot what came before the stop:\n{}",
        story(&events)
    );
    let phase = &summary(&events)["phases"][0];
    assert_eq!(
        (&phase["attempts"], &phase["restarts"]),
        (&Value::from(2), &Value::from(1))
    );

    // `status`: one row per part of an attempt; the restarts add up to the phase's.
    let status = project.status_json();
    let rows: Vec<(u64, u64)> = status["executions"]
        .as_array()
        .expect("executions")
        .iter()
        .map(|e| {
            (
                e["attempt"].as_u64().expect("attempt"),
                e["restarts"].as_u64().expect("restarts"),
            )
        })
        .collect();
    assert_eq!(rows, [(1, 0), (2, 1), (2, 0)], "{status:#}");

    // `show`: attempt 2 of 2, whole: the restart before the stop and the resumed session.
    let shown = shown(&project);
    assert_eq!(
        (&shown["attempt"], &shown["attempts"]),
        (&Value::from(2), &Value::from(2)),
        "{shown:#}"
    );
    let restart_commit = events_named(&killed, "restart")[0]["commit"].clone();
    assert!(
        shown["commits"]
            .as_array()
            .expect("commits")
            .contains(&restart_commit),
        "{shown:#}"
    );
    let sessions = shown["sessions"].as_array().expect("sessions");
    assert_eq!(sessions[0]["index"], 0, "{shown:#}");
    assert!(sessions.iter().any(|s| s["resumed"] == true), "{shown:#}");
}

/// What a fix session is told: the findings, with the failed gate.
const FINDINGS: [&str; 2] = [
    "was checked after the previous attempt and needs these fixes",
    "gate `check` failed: `grep -q right out.txt`",
];

#[test]
fn a_fix_session_paused_goes_on_with_its_findings() {
    let scratch = tempfile::tempdir().expect("scratch");
    let beacon = Beacon::new(scratch.path(), "fixing");
    // Attempt 1 writes `out.txt` wrong: its gate fails, and a fix session is paused
    // while it works.
    let fix = FINDINGS
        .iter()
        .fold(Script::phase("1").attempt(2), |script, text| {
            script.expect_prompt(text)
        })
        .turns([
            Turn::say("fixing").bash(&beacon.once()),
            Turn::write(10, "out.txt", "right"),
            Turn::notes("1"),
            Turn::done(),
        ]);
    let scenario = Scenario::new().script(wrong_first()).script(fix);
    let project = one_phase("grep -q right out.txt", &scenario);
    let (live, _) = beacon.wait(LiveRun::start(&project, &[]));
    let (code, paused) = live.stop_with(Signal::SIGINT);
    assert_eq!(code, 130, "{}", story(&paused));
    assert_eq!(
        events_named(&paused, "phase_started")[1]["kind"],
        "remediation",
        "{}",
        story(&paused)
    );

    let events = resume_to_completion(&project);
    let started = events_named(&events, "phase_started");
    assert_eq!(
        (&started[0]["attempt"], &started[0]["kind"]),
        (&Value::from(2), &Value::from("remediation")),
        "{}",
        story(&events)
    );
    let shown = shown(&project);
    let resumed = shown["sessions"]
        .as_array()
        .expect("sessions")
        .iter()
        .find(|session| session["resumed"] == true)
        .unwrap_or_else(|| panic!("no resumed session: {shown:#}"));
    let prompt = resumed["prompt"].as_str().expect("prompt");
    for text in FINDINGS {
        assert!(prompt.contains(text), "{text}: {prompt}");
    }
}

/// A one-phase plan gated on `gate` whose phase requires the `Explore` agent, played by
/// `scenario`.
fn needing_explore(gate: &str, scenario: &Scenario) -> Project {
    let project = one_phase(gate, scenario);
    let file = project.root().join("plan/phase-1.md");
    let text = std::fs::read_to_string(&file).expect("phase file");
    project.write(
        "plan/phase-1.md",
        &format!("{text}- [ ] **AGENT:Explore** - review the work\n"),
    );
    project.commit_all("phase 1 requires Explore");
    project
}

/// A turn that has the `Explore` agent review the work.
fn explore() -> Turn {
    let review = Task::new("Review", "Review done.txt", "It is fine.").subagent_type("Explore");
    Turn::say("asking for a review").tool(Action::Task(review))
}

/// The resume of `project`'s run, which must find the required agent used before the
/// stop and complete; its events.
fn resume_counting_the_agent(project: &Project) -> Vec<Value> {
    let (code, events) = project.run(&["--resume"]);
    let verdicts: Vec<(&Value, &Value)> = events_named(&events, "compliance")
        .iter()
        .map(|c| (&c["verdict"], &c["findings"]))
        .collect();
    assert_eq!(
        verdicts.first().map(|(verdict, _)| *verdict),
        Some(&Value::from("pass")),
        "the agent used before the stop was not counted: {verdicts:?}\n{}",
        story(&events)
    );
    assert_eq!(code, 0, "{}", story(&events));
    events
}

#[test]
fn gates_run_again_on_resume_count_the_agents_the_attempt_used() {
    let scratch = tempfile::tempdir().expect("scratch");
    let beacon = Beacon::new(scratch.path(), "gate");
    let scenario = Scenario::new().script(Script::phase("1").turns([
        Turn::write(10, "done.txt", "done"),
        explore(),
        Turn::notes("1"),
        Turn::done(),
    ]));
    let project = needing_explore(&format!("{}; test -f done.txt", beacon.once()), &scenario);
    let (live, _) = beacon.wait(LiveRun::start(&project, &[]));
    let (code, paused) = live.stop_with(Signal::SIGINT);
    assert_eq!(code, 130, "{}", story(&paused));
    // A session now would not use it again.
    project.rescript(
        &Scenario::new().script(Script::writing("1", 10, "done.txt", "done")),
        "no review",
    );

    let events = resume_counting_the_agent(&project);
    assert_no_new_session(&events);
}

#[test]
fn an_agent_used_by_a_killed_session_counts_for_its_attempt_on_resume() {
    let scratch = tempfile::tempdir().expect("scratch");
    let beacon = Beacon::new(scratch.path(), "reviewed");
    let scenario = Scenario::new().script(Script::phase("1").turns([
        Turn::write(10, "done.txt", "done"),
        explore(),
        Turn::say("reviewed").bash(&beacon.once()),
        Turn::notes("1"),
        Turn::done(),
    ]));
    let project = needing_explore("test -f done.txt", &scenario);
    let (mut live, _) = beacon.wait(LiveRun::start(&project, &[]));
    // The beacon's call is seen after the review: the run has taken the review in.
    loop {
        let activity = live.wait_for("activity");
        if activity["activity"]["kind"]["name"] == "Bash" {
            break;
        }
    }
    live.kill();
    project.rescript(
        &Scenario::new().script(Script::writing("1", 10, "done.txt", "done")),
        "no review",
    );

    let events = resume_counting_the_agent(&project);
    assert_eq!(
        events_named(&events, "phase_started").len(),
        1,
        "{}",
        story(&events)
    );
}
