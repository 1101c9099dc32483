//! The `run` flags the user typed, as the top configuration layer.
//!
//! The command line hands this module a plain [`Overrides`] map, key path → the
//! [`FlagValue`] typed, built from the flags declared in [`super::keys`]. Only flags
//! present on the command line are in it, so a flag's default can never mask a file or
//! variable. This module knows nothing of how the command line is parsed.

use std::collections::BTreeMap;

use serde_norway::Value;

use super::Source;
use super::check::{self, segs_of};
use super::error::Invalid;
use super::keys::{self, Kind};
use super::merge::BuiltLayer;

/// A value typed on the command line for a configuration key.
#[derive(Debug, Clone, PartialEq)]
pub enum FlagValue {
    /// The argument of a text flag, as typed.
    Text(String),
    /// The argument of a whole-number flag.
    Whole(u64),
    /// The argument of a number flag.
    Number(f64),
    /// A switch: `true` for `--auto-commit`, `false` for `--no-auto-commit`.
    Switch(bool),
}

impl FlagValue {
    /// The value as a YAML scalar for a key of `kind`; words are accepted in any case,
    /// as in `DEBUSSY_AGENT__KIND`.
    fn to_yaml(&self, kind: Kind) -> Value {
        match self {
            FlagValue::Text(text) if matches!(kind, Kind::Enum(_)) => {
                Value::String(text.trim().to_lowercase())
            }
            FlagValue::Text(text) => Value::String(text.clone()),
            FlagValue::Whole(n) => Value::Number((*n).into()),
            FlagValue::Number(n) => Value::Number((*n).into()),
            FlagValue::Switch(on) => Value::Bool(*on),
        }
    }
}

/// The configuration flags typed for one command: key path (`agent.kind`) → value.
pub type Overrides = BTreeMap<String, FlagValue>;

/// The words of every flag in `overrides`, as the user would type them
/// (`["--agent", "sim", "--max-retries", "0"]`): value flags first, then switches, each
/// in the order of the key table. Keys no flag sets are left out.
#[must_use]
pub fn flag_words(overrides: &Overrides) -> Vec<String> {
    let mut values = Vec::new();
    let mut switches = Vec::new();
    for (key, flag) in keys::flagged() {
        let Some(value) = overrides.get(key.path) else {
            continue;
        };
        match value {
            FlagValue::Switch(on) => switches.push(flag.spelling(*on)),
            FlagValue::Text(text) => values.extend([flag.spelling(true), text.clone()]),
            FlagValue::Whole(n) => values.extend([flag.spelling(true), n.to_string()]),
            FlagValue::Number(n) => values.extend([flag.spelling(true), n.to_string()]),
        }
    }
    values.extend(switches);
    values
}

/// Build the flag layer from the overrides the user typed.
pub(crate) fn layer(overrides: &Overrides) -> Result<BuiltLayer, Box<Invalid>> {
    let mut value = Value::Mapping(serde_norway::Mapping::new());
    let mut sources = BTreeMap::new();
    for (key, flag) in keys::flagged() {
        let Some(typed) = overrides.get(key.path) else {
            continue;
        };
        let on = !matches!(typed, FlagValue::Switch(false));
        check::insert(&mut value, &segs_of(key.path), typed.to_yaml(key.kind));
        sources.insert(key.path.to_owned(), Source::Flag(flag.spelling(on)));
    }
    let flag_for = |path: &str| match sources.get(path) {
        Some(Source::Flag(flag)) => flag.clone(),
        _ => format!("--{}", path.replace(['.', '_'], "-")),
    };
    check::check_layer(&value)
        .map_err(|problem| Invalid::in_flag(problem.complaint, &flag_for(&problem.path)))?;
    Ok(BuiltLayer { value, sources })
}
