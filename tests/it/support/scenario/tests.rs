//! The builder against debussy's own scenario parser.

use nix::sys::signal::Signal;

use super::{
    Action, Compact, Crash, Done, Ending, Format, Progress, Scenario, Script, Status, Task, Todo,
    TodoStatus, Tokens, Trigger, Turn,
};

#[test]
fn a_scenario_using_every_feature_parses_as_the_player_reads_it() {
    use debussy::sim::scenario as parsed;

    let tricky = "a \"quoted\" $HOME ${SCENARIO_DIR}\nsecond line: - [x] # not a comment\n";
    let scenario = Scenario::new()
        .window(100_000)
        .model("claude-sim")
        .format(Format::Codex)
        .script(
            Script::phase("1")
                .attempt(2)
                .restart(1)
                .expect_prompt("Phase 1")
                .turn(
                    Turn::say("yes")
                        .think("no")
                        .sleep_ms(5)
                        .percent(40)
                        .writes("out.txt", tricky)
                        .bash("printf 'a\\nb' > f; echo \"$X\"")
                        .read("out.txt")
                        .progress("wrote it")
                        .todos([
                            Todo::new("plain"),
                            Todo::with("started", TodoStatus::InProgress),
                            Todo::with("open", TodoStatus::Pending),
                            Todo::with("closed", TodoStatus::Completed),
                        ])
                        .tool(Action::bash_within("exec sleep 30", 200))
                        .tool(Action::Progress(Progress::InPhase {
                            step: "for ${PHASE}".to_owned(),
                            phase: "4".to_owned(),
                        }))
                        .tool(Action::Done(Done::Full {
                            status: Status::Blocked,
                            reason: Some("stuck".to_owned()),
                            phase: Some("2".to_owned()),
                        }))
                        .tool(Action::Task(
                            Task::new("Count", "Count the files", "One file.")
                                .subagent_type("Explore")
                                .turn(Turn::quiet().context(90).done_as(Status::Failed)),
                        )),
                )
                .turn(Turn::write(10, "a.txt", "a"))
                .turn(Turn::notes("1"))
                .turn(Turn::notes_to("plan/notes/phase-1.md"))
                .turn(Turn::done())
                .turn(Turn::sleep(100))
                .turn(Turn::say("exact").usage(Tokens {
                    input_tokens: 1,
                    cache_read_input_tokens: 2,
                    cache_creation_input_tokens: 3,
                    output_tokens: 4,
                }))
                .turn(Turn::compact(
                    Compact::default()
                        .trigger(Trigger::Manual)
                        .pre_tokens(150_000),
                ))
                .turn(Turn::compact(Compact::default().trigger(Trigger::Auto)))
                .turn(Turn::crash(
                    Crash::signal(Signal::SIGKILL)
                        .stderr("segfault")
                        .partial_line(),
                ))
                .turn(Turn::crash(Crash::exit(7)))
                .handoff(Turn::say("## Goal\nhandoff"))
                .result(Ending::subtype("error_max_turns").text("gave up"))
                .exit_code(4),
        )
        .scripts([Script::any().turns([Turn::say("fallback")])]);
    let yaml = scenario.to_yaml();
    let read = parsed::Scenario::parse(&yaml, std::path::Path::new("t.yaml"))
        .unwrap_or_else(|err| panic!("{err}\n{yaml}"));
    assert_eq!(read.window, 100_000);
    assert_eq!(read.model.as_deref(), Some("claude-sim"));
    assert_eq!(read.scripts.len(), 2, "{yaml}");
    let script = &read.scripts[0];
    assert_eq!(
        (script.phase.as_deref(), script.attempt, script.restart),
        (Some("1"), Some(2), Some(1))
    );
    assert_eq!(script.turns.len(), 11, "{yaml}");
    let parsed::Turn::Message(first) = &script.turns[0] else {
        panic!("a message: {yaml}");
    };
    assert_eq!(first.tools.len(), 9, "{yaml}");
    assert_eq!(
        first.tools[0],
        parsed::Action::Write {
            path: "out.txt".to_owned(),
            content: tricky.to_owned()
        },
        "strings survive YAML's quoting: {yaml}"
    );
    let parsed::Action::Bash(bash) = &first.tools[1] else {
        panic!("a bash call: {yaml}");
    };
    assert_eq!(bash.command(), "printf 'a\\nb' > f; echo \"$X\"");
    assert_eq!(first.usage, parsed::UsageSpec::Percent(40.0));
    assert!(matches!(
        script.turns[5],
        parsed::Turn::Sleep { sleep_ms: 100 }
    ));
    assert!(matches!(&script.turns[9], parsed::Turn::Crash(crash) if crash.partial_line));
    assert_eq!(script.exit_code, 4);
    assert!(script.result.is_error());
    assert_eq!(script.handoff.as_ref().map(Vec::len), Some(1));
}

#[test]
fn a_one_script_scenario_plays_for_every_session() {
    use debussy::sim::scenario as parsed;

    let yaml = Scenario::playing([Turn::say("hi")])
        .format(Format::Gemini)
        .to_yaml();
    let read = parsed::Scenario::parse(&yaml, std::path::Path::new("t.yaml"))
        .unwrap_or_else(|err| panic!("{err}\n{yaml}"));
    assert_eq!(read.scripts.len(), 1, "{yaml}");
    assert_eq!(read.scripts[0].phase, None, "{yaml}");
}
