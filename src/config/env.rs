//! The `DEBUSSY_*` environment variables as a configuration layer. Pure: takes the
//! environment as a map.
//!
//! # The mapping
//!
//! A key's variable is `DEBUSSY_` followed by its dotted path in upper case, with `__`
//! (two underscores) between sections: `model` → `DEBUSSY_MODEL`, `context_threshold` →
//! `DEBUSSY_CONTEXT_THRESHOLD`, `agent.kind` → `DEBUSSY_AGENT__KIND`,
//! `notifications.ntfy.topic` → `DEBUSSY_NOTIFICATIONS__NTFY__TOPIC`.
//!
//! - Entries of the open maps: `DEBUSSY_AGENT__ENV__<NAME>` sets `agent.env.<NAME>` with
//!   the name kept as written; `DEBUSSY_GATES__<NAME>` sets the gate whose name matches
//!   `<NAME>` ignoring case and treating `_` as `-` (`DEBUSSY_GATES__CARGO_TEST` →
//!   `gates.cargo-test`), or else adds the gate `<NAME>` in lower case with `-` for `_`.
//! - Values: numbers and `true`/`false` (also `1`/`0`, `yes`/`no`, `on`/`off`) as written;
//!   an empty value sets a key that may be null (`agent.command`, `agent.scenario`,
//!   `agent.model_context_window`, `notifications.ntfy.topic`) back to null;
//!   `DEBUSSY_AGENT__ARGS` is split on whitespace, or read as a YAML list when it starts
//!   with `[` (`["--flag", "two words"]`).
//! - [`RESERVED_ENV_VARS`] are not configuration and are skipped. Any other `DEBUSSY_*`
//!   variable that looks like a configuration key (it names a section, or is close to a
//!   key's variable) but names none is an error with a suggestion; one that does not
//!   look like a key at all is left alone.

use std::collections::BTreeMap;

use serde_norway::{Mapping, Value};

use super::Source;
use super::check;
use super::error::{Complaint, Invalid, Problem};
use super::keys::{self, Key, Kind};
use super::merge::BuiltLayer;
use super::schema::{self, ENV_PREFIX, RESERVED_ENV_VARS};

/// What a `DEBUSSY_*` variable names.
enum Target {
    Leaf(&'static Key),
    Entry(&'static Key, String),
    Section(String, String),
    Unknown(Option<String>),
    NotConfig,
}

/// Build the environment layer from `env` (the whole environment is fine: variables
/// without the `DEBUSSY_` prefix are ignored). `gate_names` are the gates defined by the
/// layers below, so `DEBUSSY_GATES__CARGO_TEST` can reach `cargo-test`.
pub(crate) fn layer(
    env: &BTreeMap<String, String>,
    gate_names: &[String],
) -> Result<BuiltLayer, Box<Invalid>> {
    let mut value = Value::Mapping(Mapping::new());
    let mut sources = BTreeMap::new();
    for (var, raw) in env {
        if !var.starts_with(ENV_PREFIX) || RESERVED_ENV_VARS.contains(&var.as_str()) {
            continue;
        }
        let (path, kind) = match resolve(var, gate_names) {
            Target::Leaf(key) => (key.path.to_owned(), key.kind),
            Target::Entry(map, name) => (format!("{}.{name}", map.path), Kind::Str),
            Target::Section(section, example) => {
                let complaint = Complaint {
                    problem: Problem::UnknownVariable,
                    key: Some(section.clone()),
                    message: format!("names the section `{section}`, not a key"),
                    label: String::new(),
                    help: Some(format!("set one key of it instead, e.g. {example}")),
                };
                return Err(Invalid::in_env(complaint, var));
            }
            Target::Unknown(suggestion) => {
                let help = match suggestion {
                    Some(best) => format!("did you mean {best}?"),
                    None => "a key's variable is DEBUSSY_ + its path in upper case with __ between sections, e.g. DEBUSSY_AGENT__KIND (see docs/config.md)".to_owned(),
                };
                let complaint = Complaint {
                    problem: Problem::UnknownVariable,
                    key: None,
                    message: "is not a configuration key".to_owned(),
                    label: String::new(),
                    help: Some(help),
                };
                return Err(Invalid::in_env(complaint, var));
            }
            Target::NotConfig => {
                tracing::debug!(
                    var,
                    "ignoring a DEBUSSY_ variable that is not configuration"
                );
                continue;
            }
        };
        let parsed = convert(raw, kind).map_err(|expected| {
            let complaint = Complaint {
                problem: Problem::WrongType,
                key: Some(path.clone()),
                message: format!("`{path}` must be {expected}, found {raw:?}"),
                label: String::new(),
                help: Some(format!("set {var} to {expected}")),
            };
            Invalid::in_env(complaint, var)
        })?;
        check::insert(&mut value, &check::segs_of(&path), parsed);
        sources.insert(path, Source::Env(var.clone()));
    }
    let var_for = |path: &str| -> String {
        let base = path.split('[').next().unwrap_or(path);
        sources
            .iter()
            .find(|(leaf, _)| *leaf == base || leaf.starts_with(&format!("{base}.")))
            .and_then(|(_, source)| match source {
                Source::Env(var) => Some(var.clone()),
                _ => None,
            })
            .unwrap_or_else(|| schema::env_var(base))
    };
    check::check_layer(&value)
        .map_err(|problem| Invalid::in_env(problem.complaint, &var_for(&problem.path)))?;
    Ok(BuiltLayer { value, sources })
}

fn resolve(var: &str, gate_names: &[String]) -> Target {
    if let Some(key) = keys::KEYS
        .iter()
        .find(|k| k.kind != Kind::Map && schema::env_var(k.path) == var)
    {
        return Target::Leaf(key);
    }
    for map in keys::KEYS.iter().filter(|k| k.kind == Kind::Map) {
        let map_var = schema::env_var(map.path);
        if var == map_var {
            return Target::Section(map.path.to_owned(), format!("{map_var}__NAME"));
        }
        if let Some(name) = var.strip_prefix(&format!("{map_var}__"))
            && !name.is_empty()
        {
            let name = if map.path == "gates" {
                gate_name(name, gate_names)
            } else {
                name.to_owned()
            };
            return Target::Entry(map, name);
        }
    }
    for section in keys::SECTIONS.iter().filter(|s| !s.is_empty()) {
        if var == schema::env_var(section) {
            let example = keys::KEYS
                .iter()
                .find(|k| k.path.starts_with(&format!("{section}.")))
                .map_or_else(String::new, |k| schema::env_var(k.path));
            return Target::Section((*section).to_owned(), example);
        }
    }
    let suffix = &var[ENV_PREFIX.len()..];
    let candidates: Vec<String> = keys::KEYS
        .iter()
        .filter(|k| k.kind != Kind::Map)
        .map(|k| schema::env_var(k.path)[ENV_PREFIX.len()..].to_owned())
        .collect();
    let misplaced = candidates
        .iter()
        .find(|candidate| candidate.ends_with(&format!("__{}", suffix.to_uppercase())));
    let best = misplaced
        .map(String::as_str)
        .or_else(|| schema::closest(suffix, candidates.iter().map(String::as_str)))
        .map(|best| format!("{ENV_PREFIX}{best}"));
    let first = suffix.split("__").next().unwrap_or(suffix).to_lowercase();
    let names_a_section = suffix.contains("__") && schema::is_section(&first);
    if best.is_some() || names_a_section {
        Target::Unknown(best)
    } else {
        Target::NotConfig
    }
}

/// The gate a variable's name suffix means: an existing gate matching it ignoring case
/// and `_`/`-`, else the suffix in lower case with `-` for `_`.
fn gate_name(suffix: &str, gate_names: &[String]) -> String {
    let normal = |s: &str| s.to_lowercase().replace('_', "-");
    let wanted = normal(suffix);
    gate_names
        .iter()
        .find(|name| normal(name) == wanted)
        .cloned()
        .unwrap_or(wanted)
}

/// An environment string as the YAML value of a key of `kind`; the error is what was
/// expected.
fn convert(raw: &str, kind: Kind) -> Result<Value, String> {
    let trimmed = raw.trim();
    let expected = || kind.expectation();
    match kind {
        Kind::Str => Ok(Value::String(raw.to_owned())),
        Kind::OptStr | Kind::OptPath | Kind::OptDuration if raw.is_empty() => Ok(Value::Null),
        Kind::OptStr | Kind::OptPath => Ok(Value::String(raw.to_owned())),
        Kind::OptDuration => Ok(Value::String(trimmed.to_owned())),
        Kind::Bool => match trimmed.to_lowercase().as_str() {
            "true" | "1" | "yes" | "on" => Ok(Value::Bool(true)),
            "false" | "0" | "no" | "off" => Ok(Value::Bool(false)),
            _ => Err(expected()),
        },
        Kind::OptUInt if raw.is_empty() => Ok(Value::Null),
        Kind::UInt | Kind::OptUInt => trimmed
            .parse::<u64>()
            .map(|n| Value::Number(n.into()))
            .map_err(|_| expected()),
        Kind::OptFloat if raw.is_empty() => Ok(Value::Null),
        Kind::Float | Kind::OptFloat => trimmed
            .parse::<f64>()
            .map(|n| Value::Number(n.into()))
            .map_err(|_| expected()),
        Kind::Enum(_) => Ok(Value::String(trimmed.to_lowercase())),
        Kind::List if trimmed.starts_with('[') => serde_norway::from_str::<Vec<String>>(trimmed)
            .map(|items| Value::Sequence(items.into_iter().map(Value::String).collect()))
            .map_err(|_| "a YAML list of strings such as [\"--flag\", \"two words\"]".to_owned()),
        Kind::List => Ok(Value::Sequence(
            trimmed
                .split_whitespace()
                .map(|word| Value::String(word.to_owned()))
                .collect(),
        )),
        Kind::Map => Err(expected()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Origin, yaml};

    fn env(vars: &[(&str, &str)]) -> BTreeMap<String, String> {
        vars.iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    fn build(vars: &[(&str, &str)]) -> Result<BuiltLayer, Box<Invalid>> {
        layer(&env(vars), &["cargo-test".to_owned(), "pytest".to_owned()])
    }

    fn var_of(invalid: &Invalid) -> &str {
        match &invalid.origin {
            Origin::Env { var } => var,
            other => panic!("not an env origin: {other:?}"),
        }
    }

    #[test]
    fn every_scalar_key_is_reachable() {
        for key in keys::KEYS.iter().filter(|k| k.kind != Kind::Map) {
            let var = schema::env_var(key.path);
            let sample = match key.kind {
                Kind::Bool => "true",
                Kind::UInt | Kind::OptUInt | Kind::Float | Kind::OptFloat => "7",
                Kind::Enum(words) => words[0],
                Kind::List => "--a --b",
                Kind::OptDuration => "90m",
                Kind::OptStr | Kind::OptPath | Kind::Str => "https://example.test",
                Kind::Map => unreachable!(),
            };
            let built = build(&[(var.as_str(), sample)]).expect("reachable");
            assert_eq!(
                built.sources[key.path],
                Source::Env(var.clone()),
                "{}",
                key.path
            );
        }
    }

    #[test]
    fn values_are_typed_by_key() {
        let built = build(&[
            ("DEBUSSY_MODEL", "1.0"),
            ("DEBUSSY_CONTEXT_THRESHOLD", "65.5"),
            ("DEBUSSY_TIMEOUT", " 60 "),
            ("DEBUSSY_AUTO_COMMIT", "no"),
            ("DEBUSSY_AGENT__KIND", "SIM"),
            ("DEBUSSY_AGENT__ARGS", "[\"--x\", \"two words\"]"),
            ("DEBUSSY_AGENT__COMMAND", ""),
            ("DEBUSSY_NOTIFICATIONS__NTFY__TOPIC", "0123"),
        ])
        .expect("valid");
        assert_eq!(
            built.value,
            yaml(
                "model: '1.0'\ncontext_threshold: 65.5\ntimeout: 60\nauto_commit: false\n\
                 agent: {kind: sim, args: [--x, two words], command: null}\n\
                 notifications: {ntfy: {topic: '0123'}}\n"
            )
        );
        let built = build(&[("DEBUSSY_AGENT__ARGS", " --a  --b ")]).expect("valid");
        assert_eq!(built.value, yaml("agent: {args: [--a, --b]}\n"));
    }

    #[test]
    fn open_map_entries_have_their_own_variables() {
        let built = build(&[
            ("DEBUSSY_GATES__CARGO_TEST", "cargo nextest run"),
            ("DEBUSSY_GATES__MY_CHECK", "make check"),
            (
                "DEBUSSY_AGENT__ENV__ANTHROPIC_BASE_URL",
                "http://127.0.0.1:9",
            ),
        ])
        .expect("valid");
        assert_eq!(
            built.value,
            yaml(
                "gates: {cargo-test: cargo nextest run, my-check: make check}\n\
                 agent: {env: {ANTHROPIC_BASE_URL: 'http://127.0.0.1:9'}}\n"
            )
        );
        assert_eq!(
            built.sources["gates.cargo-test"],
            Source::Env("DEBUSSY_GATES__CARGO_TEST".into())
        );
        assert_eq!(
            built.sources["agent.env.ANTHROPIC_BASE_URL"],
            Source::Env("DEBUSSY_AGENT__ENV__ANTHROPIC_BASE_URL".into())
        );
    }

    #[test]
    fn reserved_and_foreign_variables_are_skipped() {
        let built = build(&[
            ("DEBUSSY_LOG", "trace"),
            ("DEBUSSY_RUN_ID", "r1"),
            ("DEBUSSY_PHASE_ID", "2"),
            ("DEBUSSY_ATTEMPT", "1"),
            ("DEBUSSY_RESTART", "0"),
            ("DEBUSSY_PROJECT_ROOT", "/p"),
            ("DEBUSSY_SOMETHING_ELSE_ENTIRELY", "x"),
            ("HOME", "/root"),
        ])
        .expect("nothing to complain about");
        assert_eq!(built.value, yaml("{}"));
        assert!(built.sources.is_empty());
    }

    #[test]
    fn near_misses_are_errors_with_suggestions() {
        let cases = [
            ("DEBUSSY_MODLE", "x", "did you mean DEBUSSY_MODEL?"),
            (
                "DEBUSSY_AGENT_KIND",
                "sim",
                "did you mean DEBUSSY_AGENT__KIND?",
            ),
            (
                "DEBUSSY_STOP_GRACE",
                "1",
                "did you mean DEBUSSY_AGENT__STOP_GRACE?",
            ),
        ];
        for (var, value, help) in cases {
            let err = build(&[(var, value)]).expect_err(var);
            assert_eq!(err.problem, Problem::UnknownVariable, "{var}");
            assert_eq!(var_of(&err), var);
            assert_eq!(err.help.as_deref(), Some(help), "{var}");
        }
        let err = build(&[("DEBUSSY_AGENT__FLAVOUR", "x")]).expect_err("unknown in a section");
        assert_eq!(err.problem, Problem::UnknownVariable);
        assert_eq!(var_of(&err), "DEBUSSY_AGENT__FLAVOUR");
    }

    #[test]
    fn sections_alone_are_errors() {
        let err = build(&[("DEBUSSY_AGENT", "sim")]).expect_err("section");
        assert_eq!(err.message, "names the section `agent`, not a key");
        for (var, example) in [
            ("DEBUSSY_AGENT", "DEBUSSY_AGENT__KIND"),
            ("DEBUSSY_GATES", "DEBUSSY_GATES__NAME"),
        ] {
            let err = build(&[(var, "x")]).expect_err(var);
            let help = format!("set one key of it instead, e.g. {example}");
            assert_eq!(err.help.as_deref(), Some(help.as_str()), "{var}");
        }
    }

    #[test]
    fn unparsable_values_name_the_variable() {
        let err = build(&[("DEBUSSY_TIMEOUT", "soon")]).expect_err("not a number");
        assert_eq!(err.problem, Problem::WrongType);
        assert_eq!(var_of(&err), "DEBUSSY_TIMEOUT");
        assert_eq!(
            err.to_string(),
            "environment variable DEBUSSY_TIMEOUT: `timeout` must be a whole number (0 or more), found \"soon\""
        );
        let err = build(&[("DEBUSSY_INTERACTIVE", "maybe")]).expect_err("not a bool");
        assert_eq!(var_of(&err), "DEBUSSY_INTERACTIVE");
        let err = build(&[("DEBUSSY_AGENT__ARGS", "[unclosed")]).expect_err("bad list");
        assert_eq!(var_of(&err), "DEBUSSY_AGENT__ARGS");
    }

    #[test]
    fn bad_words_and_ranges_name_the_variable() {
        let err = build(&[("DEBUSSY_AGENT__KIND", "claud")]).expect_err("bad variant");
        assert_eq!(var_of(&err), "DEBUSSY_AGENT__KIND");
        assert_eq!(err.help.as_deref(), Some("did you mean `claude`?"));
        let err = build(&[("DEBUSSY_MAX_RETRIES", "99999999999")]).expect_err("overflow");
        assert_eq!(var_of(&err), "DEBUSSY_MAX_RETRIES");
        let err = build(&[("DEBUSSY_CONTEXT_THRESHOLD", "0")]).expect_err("range");
        assert_eq!(err.problem, Problem::OutOfRange);
        assert_eq!(var_of(&err), "DEBUSSY_CONTEXT_THRESHOLD");
        let err = build(&[("DEBUSSY_GATES__PYTEST", " ")]).expect_err("empty gate");
        assert_eq!(var_of(&err), "DEBUSSY_GATES__PYTEST");
    }
}
