//! Turning a layer into a typed [`Config`] and the deserializer's or validator's
//! complaints into words a person can act on. Shared by the file, environment and flag
//! layers, which each add where the problem came from.

use std::borrow::Cow;

use serde_norway::{Mapping, Value};

use super::Config;
use super::error::{Complaint, Problem};
use super::keys::Kind;
use super::locate::{Pos, Seg, display_path};
use super::schema;
use super::validate::Violation;

/// A value of the wrong type, found while deserializing a layer.
#[derive(Debug)]
pub(crate) struct TypeError {
    /// Where in the document.
    pub path: Vec<Seg>,
    /// The position the YAML parser reported, for file layers.
    pub pos: Option<Pos>,
    /// What to tell the user.
    pub complaint: Complaint,
}

/// Deserialize a YAML file's text into a [`Config`] (missing keys take their defaults).
pub(crate) fn from_text(text: &str) -> Result<Config, Box<TypeError>> {
    let deserializer = serde_norway::Deserializer::from_str(text);
    serde_path_to_error::deserialize(deserializer).map_err(|err| {
        let path = segments(err.path());
        let inner = err.inner();
        let pos = inner
            .location()
            .map(|location| Pos::from_location(&location));
        let mut message = inner.to_string();
        if let Some(location) = inner.location() {
            let suffix = format!(" at line {} column {}", location.line(), location.column());
            if let Some(stripped) = message.strip_suffix(&suffix) {
                message = stripped.to_owned();
            }
        }
        // The parser names where it was: the value's own path, or, for a value its own
        // type refused (a duration), the mapping that holds it.
        if let Some(stripped) = (1..=path.len())
            .rev()
            .find_map(|len| message.strip_prefix(&format!("{}: ", display_path(&path[..len]))))
        {
            message = stripped.to_owned();
        }
        Box::new(TypeError {
            complaint: type_complaint(&display_path(&path), &message),
            path,
            pos,
        })
    })
}

/// Deserialize a layer built as a YAML value (environment, flags) into a [`Config`].
pub(crate) fn from_value(value: &Value) -> Result<Config, Box<TypeError>> {
    serde_path_to_error::deserialize(value.clone()).map_err(|err| {
        let path = segments(err.path());
        Box::new(TypeError {
            complaint: type_complaint(&display_path(&path), &err.inner().to_string()),
            path,
            pos: None,
        })
    })
}

fn segments(path: &serde_path_to_error::Path) -> Vec<Seg> {
    path.iter()
        .filter_map(|segment| match segment {
            serde_path_to_error::Segment::Map { key } => Some(Seg::Key(key.clone())),
            serde_path_to_error::Segment::Enum { variant } => Some(Seg::Key(variant.clone())),
            serde_path_to_error::Segment::Seq { index } => Some(Seg::Index(*index)),
            serde_path_to_error::Segment::Unknown => None,
        })
        .collect()
}

/// What a key at `path` expects, in words: a list's elements and an open map's entries
/// are strings.
fn expectation(path: &str) -> (String, Option<Kind>) {
    match schema::governing(path) {
        Some(key) if key.path == path => (key.expectation(), Some(key.kind)),
        Some(key) if key.kind == Kind::List => ("a string (one argument)".to_owned(), None),
        Some(_) => ("a string".to_owned(), None),
        None => ("a different value".to_owned(), None),
    }
}

/// Rephrase a deserializer message about the value at `path`.
pub(crate) fn type_complaint(path: &str, message: &str) -> Complaint {
    let (expected, kind) = expectation(path);
    if let Some(rest) = message.strip_prefix("unknown variant `")
        && let Some(Kind::Enum(words)) = kind
    {
        let found = rest.split('`').next().unwrap_or(rest);
        let help = match schema::closest(found, words.iter().copied()) {
            Some(best) => format!("did you mean `{best}`?"),
            None => format!("set `{path}` to {expected}"),
        };
        return Complaint {
            problem: Problem::WrongType,
            key: Some(path.to_owned()),
            message: format!("`{path}` must be {expected}, found `{found}`"),
            label: format!("expected {expected}"),
            help: Some(help),
        };
    }
    let found = ["invalid type: ", "invalid value: "]
        .iter()
        .find_map(|prefix| message.strip_prefix(prefix))
        .and_then(|rest| rest.split(", expected").next())
        .map(shortest_float);
    let message = match found {
        Some(found) => format!("`{path}` must be {expected}, found {found}"),
        None => format!("`{path}` must be {expected}: {message}"),
    };
    Complaint {
        problem: Problem::WrongType,
        key: Some(path.to_owned()),
        message,
        label: format!("expected {expected}"),
        help: Some(format!("set `{path}` to {expected}")),
    }
}

/// A float as the deserializer names it (`` floating point `0.000…1` ``, every digit
/// written out) in its shortest form (`1e-300`); any other value as it is.
fn shortest_float(found: &str) -> Cow<'_, str> {
    found
        .strip_prefix("floating point `")
        .and_then(|rest| rest.strip_suffix('`'))
        .and_then(|number| number.parse::<f64>().ok())
        .map_or(Cow::Borrowed(found), |number| {
            Cow::Owned(format!("floating point `{number:?}`"))
        })
}

/// Words for a failed range or consistency check.
pub(crate) fn range_complaint(violation: &Violation) -> Complaint {
    Complaint {
        problem: Problem::OutOfRange,
        key: Some(violation.path.clone()),
        message: format!(
            "`{}` {}, found {}",
            violation.path, violation.rule, violation.found
        ),
        label: violation.rule.clone(),
        help: Some(violation.help.clone()),
    }
}

/// The segments of a dotted leaf path; an open map's entry name stays whole even when it
/// contains dots (`gates.py.test` is the gate `py.test`).
pub(crate) fn segs_of(path: &str) -> Vec<Seg> {
    if let Some(map) = schema::governing(path).filter(|k| k.kind == Kind::Map)
        && let Some(entry) = path.strip_prefix(&format!("{}.", map.path))
    {
        let mut segs = segs_of(map.path);
        segs.push(Seg::Key(entry.to_owned()));
        return segs;
    }
    path.split('.').map(|s| Seg::Key(s.to_owned())).collect()
}

/// A problem found by [`check_layer`].
#[derive(Debug)]
pub(crate) struct LayerProblem {
    /// What to tell the user.
    pub complaint: Complaint,
    /// The dotted path of the value it is about, for the layer to name the variable or
    /// flag that set it.
    pub path: String,
}

/// Check a layer built as a YAML value (environment, flags) on its own: the types, then
/// each key's range.
pub(crate) fn check_layer(value: &Value) -> Result<(), Box<LayerProblem>> {
    let typed = from_value(value).map_err(|err| {
        Box::new(LayerProblem {
            path: display_path(&err.path),
            complaint: err.complaint,
        })
    })?;
    match super::validate::check_fields(&typed).first() {
        Some(violation) => Err(Box::new(LayerProblem {
            complaint: range_complaint(violation),
            path: violation.path.clone(),
        })),
        None => Ok(()),
    }
}

/// Set the leaf at `segs` in `root`, making the mappings on the way.
pub(crate) fn insert(root: &mut Value, segs: &[Seg], leaf: Value) {
    let Some((first, rest)) = segs.split_first() else {
        *root = leaf;
        return;
    };
    let Seg::Key(name) = first else {
        return;
    };
    if !root.is_mapping() {
        *root = Value::Mapping(Mapping::new());
    }
    if let Value::Mapping(map) = root {
        let child = map
            .entry(Value::String(name.clone()))
            .or_insert(Value::Null);
        insert(child, rest, leaf);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrong_scalar_types_say_what_was_expected_and_found() {
        let err = from_text("model: opus\ntimeout: soon\n").expect_err("wrong type");
        assert_eq!(err.path, [Seg::Key("timeout".into())]);
        assert_eq!(
            err.pos,
            Some(Pos {
                line: 2,
                column: 10
            })
        );
        assert_eq!(
            err.complaint.message,
            "`timeout` must be a whole number, at most 604,800 (seconds, a week), found string \"soon\""
        );
        assert_eq!(err.complaint.problem, Problem::WrongType);
    }

    #[test]
    fn nested_and_list_paths_are_tracked() {
        let err = from_text("agent:\n  args: [--a, {x: 1}]\n").expect_err("wrong type");
        assert_eq!(display_path(&err.path), "agent.args[1]");
        assert_eq!(
            err.pos,
            Some(Pos {
                line: 2,
                column: 15
            })
        );
        assert!(
            err.complaint
                .message
                .starts_with("`agent.args[1]` must be a string (one argument), found")
        );
        let err = from_text("notifications:\n  ntfy:\n    topic: [a]\n").expect_err("wrong type");
        assert_eq!(display_path(&err.path), "notifications.ntfy.topic");
        let err = from_text("gates:\n  pytest: [a]\n").expect_err("wrong type");
        assert_eq!(display_path(&err.path), "gates.pytest");
        assert!(
            err.complaint
                .message
                .starts_with("`gates.pytest` must be a string, found")
        );
    }

    #[test]
    fn unknown_enum_words_get_a_suggestion() {
        let err = from_text("agent:\n  kind: claud\n").expect_err("bad variant");
        assert_eq!(
            err.complaint.message,
            "`agent.kind` must be one of `claude`, `codex`, `gemini` or `sim`, found `claud`"
        );
        assert_eq!(
            err.complaint.help.as_deref(),
            Some("did you mean `claude`?")
        );
        let err = from_text("output: nowhere\n").expect_err("bad variant");
        assert_eq!(
            err.complaint.help.as_deref(),
            Some("set `output` to one of `terminal`, `file` or `both`")
        );
    }

    #[test]
    fn plain_scalars_stay_strings_where_strings_belong() {
        let config =
            from_text("model: 4\nnotifications: {ntfy: {topic: 0123}}\n").expect("strings");
        assert_eq!(config.model, "4");
        assert_eq!(config.notifications.ntfy.topic.as_deref(), Some("0123"));
    }

    #[test]
    fn null_sections_are_their_defaults() {
        let config = from_text("agent:\nnotifications:\ngates:\n").expect("null sections");
        assert_eq!(config, Config::default());
    }

    #[test]
    fn negative_and_oversized_numbers_are_type_errors() {
        let err = from_text("max_retries: -1\n").expect_err("negative");
        assert_eq!(
            err.complaint.message,
            "`max_retries` must be a whole number, at most 100 (attempts), found integer `-1`"
        );
        let err = from_text("max_retries: 99999999999\n").expect_err("too big");
        assert_eq!(display_path(&err.path), "max_retries");
    }

    #[test]
    fn value_layers_report_paths_without_positions() {
        let value: Value = serde_norway::from_str("agent: {kind: robot}\n").expect("yaml");
        let err = from_value(&value).expect_err("bad variant");
        assert_eq!(display_path(&err.path), "agent.kind");
        assert_eq!(err.pos, None);
    }

    #[test]
    fn segs_keep_dotted_entry_names_whole() {
        assert_eq!(
            segs_of("gates.py.test"),
            [Seg::Key("gates".into()), Seg::Key("py.test".into())]
        );
        assert_eq!(
            segs_of("notifications.ntfy.topic"),
            [
                Seg::Key("notifications".into()),
                Seg::Key("ntfy".into()),
                Seg::Key("topic".into())
            ]
        );
    }
}
