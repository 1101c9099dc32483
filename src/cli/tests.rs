//! The command line's parsing: flags, defaults and what is refused.

use clap::CommandFactory;

use super::*;

#[test]
fn cli_definition_is_consistent() {
    Cli::command().debug_assert();
}

#[test]
fn untyped_flags_stay_none() {
    let cli = Cli::try_parse_from(["debussy", "run", "PLAN.md"]).expect("parses");
    let Command::Run(run) = cli.command else {
        panic!("not run")
    };
    assert!(!run.overrides.values.contains_key("model"));
    assert!(!run.overrides.values.contains_key("context_threshold"));
    assert!(!run.overrides.values.contains_key("auto_commit"));
}

#[test]
fn done_accepts_positional_and_flag_forms() {
    let cli = Cli::try_parse_from(["debussy", "done", "2", "blocked"]).expect("parses");
    let Command::Done(d) = cli.command else {
        panic!("not done")
    };
    assert_eq!(d.phase_pos.as_deref(), Some("2"));
    assert_eq!(d.status_pos, Some(DoneStatus::Blocked));
    let cli = Cli::try_parse_from(["debussy", "done", "--phase", "2", "--status", "failed"])
        .expect("parses");
    let Command::Done(d) = cli.command else {
        panic!("not done")
    };
    assert_eq!(d.phase.as_deref(), Some("2"));
}

#[test]
fn supervise_takes_the_command_after_dashes() {
    let cli = Cli::try_parse_from([
        "debussy",
        "mcp",
        "supervise",
        "--watch",
        "src",
        "--",
        "node",
        "server.js",
        "--port",
    ])
    .expect("parses");
    let Command::Mcp(McpCommand::Supervise(s)) = cli.command else {
        panic!("not supervise")
    };
    assert_eq!(s.command, ["node", "server.js", "--port"]);
    assert_eq!(s.watch, [PathBuf::from("src")]);
}
