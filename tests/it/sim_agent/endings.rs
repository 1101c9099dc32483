//! How a played session ends: a crash, the scripted result and exit code, a compaction,
//! a misused or invalid scenario, a command past its timeout.

use std::os::unix::process::ExitStatusExt;
use std::time::{Duration, Instant};

use debussy::agent::AgentEvent;

use debussy::context::StopReason;

use super::kit::{play, play_alone, write, write_text};
use crate::support::scenario::{Action, Compact, Crash, Ending, Scenario, Script, Status, Turn};
use nix::sys::signal::Signal;

#[test]
fn a_crash_kills_the_process_mid_line_without_a_result() {
    let run = play_alone(&Scenario::playing([
        Turn::say("about to fail"),
        Turn::crash(
            Crash::signal(Signal::SIGKILL)
                .stderr("segfault here")
                .partial_line(),
        ),
        Turn::say("never"),
    ]));
    assert_eq!(run.status.signal(), Some(9), "{}", run.status);
    assert!(run.stderr.contains("segfault here"), "{}", run.stderr);
    assert!(
        matches!(run.events.last(), Some(AgentEvent::Text(_))),
        "{:?}",
        run.events.last()
    );
    assert!(
        !run.events
            .iter()
            .any(|event| matches!(event, AgentEvent::Result(_)))
    );
    assert!(!run.stdout.contains("never"));

    let run = play_alone(&Scenario::playing([Turn::crash(Crash::exit(7))]));
    assert_eq!(run.status.code(), Some(7));
}

#[test]
fn results_and_exit_codes_follow_the_script() {
    let run = play_alone(
        &Scenario::new().script(
            Script::any()
                .turn(Turn::say("tried"))
                .result(Ending::subtype("error_max_turns").text("gave up"))
                .exit_code(4),
        ),
    );
    assert_eq!(run.status.code(), Some(4));
    let result = run.result();
    assert_eq!(result.subtype, "error_max_turns");
    assert!(result.is_error && !result.is_success());
    assert_eq!(result.result.as_deref(), Some("gave up"));
}

#[test]
fn a_compact_turn_emits_a_boundary_the_meter_stops_on() {
    let run = play_alone(&Scenario::playing([
        Turn::say("full").percent(70),
        Turn::compact(Compact::default().pre_tokens(150_000)),
        Turn::say("lighter"),
    ]));
    assert!(run.status.success(), "{}", run.stderr);
    let (_, stops) = run.meter(100.0);
    assert_eq!(
        stops,
        [StopReason::Compacted {
            trigger: Some("auto".into()),
            pre_tokens: Some(150_000)
        }]
    );
}

#[test]
fn scenario_misuse_ends_the_session_with_an_error_result() {
    let dir = tempfile::tempdir().expect("tempdir");
    let scenario = write(
        dir.path(),
        "s.yaml",
        &Scenario::new()
            .script(
                Script::phase("1")
                    .expect_prompt("checkpoint")
                    .turn(Turn::say("hi")),
            )
            .script(Script::phase("2").turn(Turn::say("${NO_SUCH_VARIABLE_HERE}")))
            .script(Script::phase("3").turn(Turn::quiet().done_as(Status::Completed))),
    );
    let cases: [(&[(&str, &str)], &str); 4] = [
        (&[("DEBUSSY_PHASE_ID", "9")], "no script in"),
        (
            &[("DEBUSSY_PHASE_ID", "1")],
            "does not contain \"checkpoint\"",
        ),
        (&[("DEBUSSY_PHASE_ID", "2")], "${NO_SUCH_VARIABLE_HERE}"),
        (&[("DEBUSSY_ATTEMPT", "x")], "DEBUSSY_ATTEMPT"),
    ];
    for (env, expected) in cases {
        let run = play(dir.path(), &scenario, env, "a prompt");
        assert!(!run.status.success(), "{env:?}");
        assert!(run.stderr.contains(expected), "{env:?}: {}", run.stderr);
        if let Some(AgentEvent::Result(result)) = run.events.last() {
            assert!(result.is_error);
            assert_eq!(result.subtype, "error_during_execution");
            assert!(
                result.errors.iter().any(|e| e.contains(expected)),
                "{:?}",
                result.errors
            );
        } else {
            // Only a malformed DEBUSSY_* variable stops the player before it starts.
            assert_eq!(run.status.code(), Some(2), "{env:?}");
        }
    }
    // `done` without a phase id anywhere.
    let run = play_alone(&Scenario::playing([
        Turn::quiet().done_as(Status::Completed)
    ]));
    assert_eq!(run.status.code(), Some(1));
    assert!(run.stderr.contains("needs a phase id"), "{}", run.stderr);
}

#[test]
fn an_invalid_scenario_is_a_usage_error_with_its_location() {
    let dir = tempfile::tempdir().expect("tempdir");
    // Text, not the builder: the point is a key the format does not have, and its line.
    let scenario = write_text(
        dir.path(),
        "bad.yaml",
        "scripts:\n  - turns:\n      - say: hi\n        tolls: []\n",
    );
    let run = play(dir.path(), &scenario, &[], "p");
    assert_eq!(run.status.code(), Some(2));
    assert!(run.stdout.is_empty(), "{}", run.stdout);
    assert!(run.stderr.contains("bad.yaml:4:"), "{}", run.stderr);
    assert!(
        run.stderr.contains("unknown field `tolls`"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_slow_command_times_out_into_an_error_result() {
    let started = Instant::now();
    let run = play_alone(&Scenario::playing([
        Turn::quiet().tool(Action::bash_within("exec sleep 30", 200))
    ]));
    assert!(started.elapsed() < Duration::from_secs(20));
    assert!(run.status.success(), "{}", run.stderr);
    let results = run.tool_results();
    assert_eq!(
        (results[0].1.as_str(), results[0].2),
        ("Command timed out after 200ms", true)
    );
}
