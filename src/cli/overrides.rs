//! The configuration flags of `run` (and of `config` and `doctor`, which preview them),
//! built from the key table rather than declared field by field.
//!
//! Each key in `config`'s table that has a flag becomes one clap argument (two for a
//! switch with a negative form) whose id is the key's path. After parsing, only the
//! arguments whose value came from the command line are read back
//! (`ArgMatches::value_source`), into the plain [`Overrides`] map the configuration
//! loader takes.

use clap::builder::{PossibleValue, TypedValueParser};
use clap::parser::ValueSource;
use clap::{Arg, ArgAction, ArgMatches};

use crate::config::keys::{Flag, FlagParse, Kind, flagged};
use crate::config::{FlagValue, Overrides};

/// `run` flags that override configuration keys: only the flags typed are in
/// [`RunOverrides::values`].
#[derive(Debug, Default, Clone, PartialEq)]
pub struct RunOverrides {
    /// Key path (`agent.kind`) → the value typed for it.
    pub values: Overrides,
}

impl clap::Args for RunOverrides {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        let mut cmd = cmd.next_help_heading("Configuration overrides");
        for (key, flag) in flagged() {
            match *flag {
                Flag::Value {
                    long,
                    value_name,
                    parse,
                    help,
                } => {
                    let arg = Arg::new(key.path)
                        .long(long)
                        .value_name(value_name)
                        .help(help)
                        .action(ArgAction::Set);
                    let arg = match (parse, key.kind) {
                        (FlagParse::Text, Kind::Enum(words)) => arg.value_parser(Words(words)),
                        (FlagParse::Text, _) => arg.value_parser(clap::value_parser!(String)),
                        // A negative number is read as one, to be refused for its
                        // value, not taken for an unknown flag.
                        (FlagParse::U32, _) => arg
                            .value_parser(clap::value_parser!(u32))
                            .allow_negative_numbers(true),
                        (FlagParse::U64, _) => arg
                            .value_parser(clap::value_parser!(u64))
                            .allow_negative_numbers(true),
                        (FlagParse::F64, _) => arg
                            .value_parser(clap::value_parser!(f64))
                            .allow_negative_numbers(true),
                    };
                    cmd = cmd.arg(arg);
                }
                Flag::Switch { on, off } => {
                    let mut yes = Arg::new(key.path)
                        .long(on.long)
                        .help(on.help)
                        .action(ArgAction::SetTrue);
                    if let Some(off) = off {
                        yes = yes.overrides_with(off.long);
                        let mut no = Arg::new(off.long)
                            .long(off.long)
                            .help(off.help)
                            .action(ArgAction::SetTrue);
                        if let Some(alias) = off.alias {
                            no = no.alias(alias);
                        }
                        cmd = cmd.arg(yes).arg(no);
                    } else {
                        cmd = cmd.arg(yes);
                    }
                }
            }
        }
        cmd
    }

    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        Self::augment_args(cmd)
    }
}

impl clap::FromArgMatches for RunOverrides {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        let mut values = Overrides::new();
        for (key, flag) in flagged() {
            let typed = |id: &str| matches.value_source(id) == Some(ValueSource::CommandLine);
            match *flag {
                Flag::Value { parse, .. } => {
                    if !typed(key.path) {
                        continue;
                    }
                    let value = match parse {
                        FlagParse::Text => one::<String>(matches, key.path)?.map(FlagValue::Text),
                        FlagParse::U32 => {
                            one::<u32>(matches, key.path)?.map(|n| FlagValue::Whole(n.into()))
                        }
                        FlagParse::U64 => one::<u64>(matches, key.path)?.map(FlagValue::Whole),
                        FlagParse::F64 => one::<f64>(matches, key.path)?.map(FlagValue::Number),
                    };
                    if let Some(value) = value {
                        values.insert(key.path.to_owned(), value);
                    }
                }
                Flag::Switch { off, .. } => {
                    // clap's `overrides_with` keeps only the last of a pair; were both
                    // set, the negative one would win.
                    if typed(key.path) {
                        values.insert(key.path.to_owned(), FlagValue::Switch(true));
                    }
                    if off.is_some_and(|off| typed(off.long)) {
                        values.insert(key.path.to_owned(), FlagValue::Switch(false));
                    }
                }
            }
        }
        Ok(RunOverrides { values })
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        let typed = Self::from_arg_matches(matches)?;
        self.values.extend(typed.values);
        Ok(())
    }
}

/// The value of argument `id`, parsed as `T` by the parser [`RunOverrides`] gave it.
fn one<T: Clone + Send + Sync + 'static>(
    matches: &ArgMatches,
    id: &str,
) -> Result<Option<T>, clap::Error> {
    matches
        .try_get_one::<T>(id)
        .map(Option::<&T>::cloned)
        .map_err(|err| clap::Error::raw(clap::error::ErrorKind::InvalidValue, err))
}

/// A text flag for a key that takes one of a few words (`--agent`): any text, checked by
/// the configuration loader (whose error names the flag and the nearest word), with the
/// words as the values help and shell completion offer.
#[derive(Debug, Clone, Copy)]
struct Words(&'static [&'static str]);

impl TypedValueParser for Words {
    type Value = String;

    fn parse_ref(
        &self,
        command: &clap::Command,
        arg: Option<&Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<String, clap::Error> {
        clap::builder::StringValueParser::new().parse_ref(command, arg, value)
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(self.0.iter().map(PossibleValue::new)))
    }
}

#[cfg(test)]
mod tests {
    use clap::{CommandFactory, Parser};

    use super::*;
    use crate::cli::{Cli, Command};
    use crate::config::{Invalid, Origin, Problem, Source, flag_layer as layer, yaml};

    fn overrides(args: &[&str]) -> Overrides {
        let mut argv = vec!["debussy", "run", "PLAN.md"];
        argv.extend_from_slice(args);
        match Cli::try_parse_from(argv).expect("parses").command {
            Command::Run(run) => run.overrides.values,
            _ => unreachable!("parsed `run`"),
        }
    }

    fn flag_of(invalid: &Invalid) -> &str {
        match &invalid.origin {
            Origin::Flag { flag } => flag,
            other => panic!("not a flag origin: {other:?}"),
        }
    }

    #[test]
    fn untyped_flags_set_nothing() {
        let built = layer(&overrides(&[])).expect("valid");
        assert_eq!(built.value, yaml("{}"));
        assert!(built.sources.is_empty());
    }

    #[test]
    fn typed_flags_set_their_keys() {
        let built = layer(&overrides(&[
            "--model",
            "sonnet",
            "--context-threshold",
            "60",
            "--no-auto-commit",
            "--yolo",
            "--agent",
            "SIM",
            "--agent-command",
            "/bin/agent",
            "--max-restarts",
            "0",
        ]))
        .expect("valid");
        assert_eq!(
            built.value,
            yaml(
                "model: sonnet\ncontext_threshold: 60.0\nmax_restarts: 0\nauto_commit: false\n\
                 interactive: false\nagent: {kind: sim, command: /bin/agent}\n"
            )
        );
        assert_eq!(built.sources["agent.kind"], Source::Flag("--agent".into()));
        assert_eq!(
            built.sources["interactive"],
            Source::Flag("--no-interactive".into())
        );
    }

    #[test]
    fn the_last_of_a_switch_pair_wins() {
        let built = layer(&overrides(&["--no-auto-commit", "--auto-commit"])).expect("valid");
        assert_eq!(built.value, yaml("auto_commit: true\n"));
        assert_eq!(
            built.sources["auto_commit"],
            Source::Flag("--auto-commit".into())
        );
        let built = layer(&overrides(&["--interactive", "--no-interactive"])).expect("valid");
        assert_eq!(built.value, yaml("interactive: false\n"));
    }

    #[test]
    fn bad_values_name_the_flag() {
        let err = layer(&overrides(&["--context-threshold", "150"])).expect_err("range");
        assert_eq!(err.problem, Problem::OutOfRange);
        assert_eq!(flag_of(&err), "--context-threshold");
        assert_eq!(
            err.to_string(),
            "flag --context-threshold: `context_threshold` must be greater than 0 and at most 100, found 150"
        );
        let err = layer(&overrides(&["--agent", "claud"])).expect_err("variant");
        assert_eq!(err.problem, Problem::WrongType);
        assert_eq!(flag_of(&err), "--agent");
        assert_eq!(err.help.as_deref(), Some("did you mean `claude`?"));
        let err = layer(&overrides(&["--timeout", "0"])).expect_err("zero");
        assert_eq!(flag_of(&err), "--timeout");
        let err = layer(&overrides(&["--agent-command", ""])).expect_err("empty");
        assert_eq!(flag_of(&err), "--agent-command");
        let err = layer(&overrides(&["--tool-call-threshold", "0"])).expect_err("zero");
        assert_eq!(flag_of(&err), "--tool-call-threshold");
        let err = layer(&overrides(&["--model", ""])).expect_err("empty");
        assert_eq!(flag_of(&err), "--model");
    }

    #[test]
    fn every_flag_reads_back_as_the_value_typed() {
        let typed = overrides(&[
            "--model",
            "m",
            "--timeout",
            "60",
            "--max-retries",
            "4",
            "--context-threshold",
            "72.5",
            "--tool-call-threshold",
            "9",
            "--max-restarts",
            "2",
            "--restart-delay",
            "1",
            "--no-auto-commit",
            "--commit-on-failure",
            "--interactive",
            "--agent",
            "SIM",
            "--agent-command",
            "/bin/a",
            "--max-cost",
            "12.5",
            "--max-phase-cost",
            "3",
            "--max-duration",
            "2h",
            "--no-progress-restarts",
            "4",
            "--handoff",
            "mechanical",
            "--handoff-timeout",
            "30",
            "--jobs",
            "3",
            "--max-wait",
            "3h",
        ]);
        let mut with_flags: Vec<&str> = flagged().map(|(key, _)| key.path).collect();
        with_flags.sort_unstable();
        assert_eq!(
            typed.keys().map(String::as_str).collect::<Vec<_>>(),
            with_flags
        );
        assert_eq!(typed["max_retries"], FlagValue::Whole(4));
        assert_eq!(typed["jobs"], FlagValue::Whole(3));
        assert_eq!(typed["max_cost_usd"], FlagValue::Number(12.5));
        assert_eq!(typed["max_duration"], FlagValue::Text("2h".into()));
        assert_eq!(typed["limits.max_wait"], FlagValue::Text("3h".into()));
        assert_eq!(typed["context_threshold"], FlagValue::Number(72.5));
        assert_eq!(typed["auto_commit"], FlagValue::Switch(false));
        assert_eq!(typed["agent.kind"], FlagValue::Text("SIM".into()));
        let err = Cli::try_parse_from(["debussy", "run", "P", "--max-retries", "99999999999"])
            .expect_err("too big for the flag");
        assert_eq!(err.kind(), clap::error::ErrorKind::ValueValidation);
        // A negative number is the flag's value, refused for what it is.
        let typed = overrides(&["--max-cost", "-1", "--context-threshold", "-3"]);
        assert_eq!(typed["max_cost_usd"], FlagValue::Number(-1.0));
        assert_eq!(typed["context_threshold"], FlagValue::Number(-3.0));
        let err = Cli::try_parse_from(["debussy", "run", "P", "--max-restarts", "-1"])
            .expect_err("no negative count");
        assert_eq!(err.kind(), clap::error::ErrorKind::ValueValidation);
    }

    #[test]
    fn every_offered_agent_kind_is_one_the_configuration_takes() {
        let command = Cli::command();
        let run = command.find_subcommand("run").expect("run");
        let agent = run
            .get_arguments()
            .find(|arg| arg.get_long() == Some("agent"))
            .expect("--agent");
        let offered: Vec<String> = agent
            .get_possible_values()
            .iter()
            .map(|value| value.get_name().to_owned())
            .collect();
        assert_eq!(offered, ["claude", "codex", "gemini", "sim"]);
        for name in offered {
            let parsed: Result<crate::config::AgentKind, _> = serde_norway::from_str(&name);
            assert!(parsed.is_ok(), "{name}");
        }
    }
}
