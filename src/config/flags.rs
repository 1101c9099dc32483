//! The `run` flags the user typed, as the top configuration layer.
//!
//! Only flags present on the command line become values: every override in
//! [`RunOverrides`] is an `Option` (or a pair of switches such as `--auto-commit` /
//! `--no-auto-commit`), so a flag's default can never mask a file or variable.

use std::collections::BTreeMap;

use serde_norway::{Mapping, Value};

use super::Source;
use super::check::{self, range_complaint};
use super::error::Invalid;
use super::locate::display_path;
use super::validate;
use crate::cli::RunOverrides;

/// The flag layer: the keys the typed flags set and the flag that set each one.
#[derive(Debug, Default)]
pub(crate) struct FlagLayer {
    /// A mapping holding the keys set by flags.
    pub value: Value,
    /// For each leaf path, the flag that set it.
    pub sources: BTreeMap<String, Source>,
}

/// Build the flag layer from the overrides the user typed.
pub(crate) fn layer(overrides: &RunOverrides) -> Result<FlagLayer, Box<Invalid>> {
    let mut set: Vec<(&str, &str, Value)> = Vec::new();
    let o = overrides;
    if let Some(model) = &o.model {
        set.push(("--model", "model", Value::String(model.clone())));
    }
    if let Some(n) = o.timeout {
        set.push(("--timeout", "timeout", Value::Number(n.into())));
    }
    if let Some(n) = o.max_retries {
        set.push(("--max-retries", "max_retries", Value::Number(n.into())));
    }
    if let Some(n) = o.context_threshold {
        set.push((
            "--context-threshold",
            "context_threshold",
            Value::Number(n.into()),
        ));
    }
    if let Some(n) = o.tool_call_threshold {
        set.push((
            "--tool-call-threshold",
            "tool_call_threshold",
            Value::Number(n.into()),
        ));
    }
    if let Some(n) = o.max_restarts {
        set.push(("--max-restarts", "max_restarts", Value::Number(n.into())));
    }
    if let Some(n) = o.restart_delay {
        set.push(("--restart-delay", "restart_delay", Value::Number(n.into())));
    }
    // clap's `overrides_with` keeps only the last of each pair; if both are somehow set,
    // the negative one wins because it is pushed last.
    if o.auto_commit {
        set.push(("--auto-commit", "auto_commit", Value::Bool(true)));
    }
    if o.no_auto_commit {
        set.push(("--no-auto-commit", "auto_commit", Value::Bool(false)));
    }
    if o.commit_on_failure {
        set.push((
            "--commit-on-failure",
            "commit_on_failure",
            Value::Bool(true),
        ));
    }
    if o.interactive {
        set.push(("--interactive", "interactive", Value::Bool(true)));
    }
    if o.no_interactive {
        set.push(("--no-interactive", "interactive", Value::Bool(false)));
    }
    if let Some(kind) = &o.agent {
        // Words are accepted in any case, as in DEBUSSY_AGENT__KIND.
        set.push((
            "--agent",
            "agent.kind",
            Value::String(kind.trim().to_lowercase()),
        ));
    }
    if let Some(command) = &o.agent_command {
        set.push((
            "--agent-command",
            "agent.command",
            Value::String(command.clone()),
        ));
    }

    let mut value = Mapping::new();
    let mut sources = BTreeMap::new();
    for (flag, path, leaf) in set {
        match path.split_once('.') {
            Some((section, key)) => {
                let entry = value
                    .entry(Value::String(section.to_owned()))
                    .or_insert_with(|| Value::Mapping(Mapping::new()));
                if let Value::Mapping(section_map) = entry {
                    section_map.insert(Value::String(key.to_owned()), leaf);
                }
            }
            None => {
                value.insert(Value::String(path.to_owned()), leaf);
            }
        }
        sources.insert(path.to_owned(), Source::Flag(flag.to_owned()));
    }
    let value = Value::Mapping(value);
    let flag_for = |path: &str| match sources.get(path) {
        Some(Source::Flag(flag)) => flag.clone(),
        _ => format!("--{}", path.replace(['.', '_'], "-")),
    };
    let typed = check::from_value(&value)
        .map_err(|err| Invalid::in_flag(err.complaint, &flag_for(&display_path(&err.path))))?;
    if let Some(violation) = validate::check_fields(&typed).first() {
        return Err(Invalid::in_flag(
            range_complaint(violation),
            &flag_for(&violation.path),
        ));
    }
    Ok(FlagLayer { value, sources })
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::cli::{Cli, Command};
    use crate::config::{Origin, Problem};

    fn overrides(args: &[&str]) -> RunOverrides {
        let mut argv = vec!["debussy", "run", "PLAN.md"];
        argv.extend_from_slice(args);
        match Cli::try_parse_from(argv).expect("parses").command {
            Command::Run(run) => run.overrides,
            _ => unreachable!("parsed `run`"),
        }
    }

    fn yaml(text: &str) -> Value {
        serde_norway::from_str(text).expect("test yaml")
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
}
