//! One configuration file as a layer: parse it, check every key and value, and keep only
//! the keys it sets.
//!
//! Checks run in order and stop at the first problem: YAML syntax (and repeated keys),
//! the shape (unknown keys, sections that are not mappings), types, then ranges. Each
//! problem points at the file, line and column of the key or value.

use std::path::Path;

use serde_norway::{Mapping, Value};

use super::check::{self, range_complaint, segs_of};
use super::error::{Complaint, Invalid, Problem};
use super::keys::Kind;
use super::locate::{self, Pos, Seg, Target};
use super::merge::key_name;
use super::schema;
use super::validate;

/// Parse and check a configuration file's `text`; the result is a mapping holding
/// exactly the keys the file sets, with their typed values.
pub(crate) fn parse(path: &Path, text: &str) -> Result<Value, Box<Invalid>> {
    let raw: Value = serde_norway::from_str(text).map_err(|err| syntax_error(path, text, &err))?;
    let raw = match raw {
        Value::Null => return Ok(Value::Mapping(Mapping::new())),
        Value::Mapping(map) => Value::Mapping(map),
        other => {
            let pos = locate::locate(text, &[], Target::Value).unwrap_or(Pos::START);
            let complaint = Complaint {
                problem: Problem::WrongType,
                key: None,
                message: format!(
                    "a config file must be a mapping of keys to values, found {}",
                    describe(&other)
                ),
                label: "expected `key: value` lines".to_owned(),
                help: Some(
                    "start from `debussy init`'s commented config, e.g. `model: opus`".to_owned(),
                ),
            };
            return Err(Invalid::in_file(complaint, path, text, pos, None));
        }
    };
    check_shape(&raw, "", &mut Vec::new(), path, text)?;
    let typed = check::from_text(text).map_err(|err| {
        // The path finds the value itself; the parser's position is the mapping's start
        // when the value's own type refused it (a duration).
        let pos = (!err.path.is_empty())
            .then(|| locate::locate(text, &err.path, Target::Value))
            .flatten()
            .or(err.pos)
            .unwrap_or(Pos::START);
        Invalid::in_file(err.complaint, path, text, pos, None)
    })?;
    if let Some(violation) = validate::check_fields(&typed).first() {
        return Err(at_value(
            range_complaint(violation),
            &violation.path,
            path,
            text,
        ));
    }
    let typed_value = serde_norway::to_value(&typed).map_err(|err| {
        let complaint = Complaint {
            problem: Problem::WrongType,
            key: None,
            message: format!("failed to read the configuration back: {err}"),
            label: "here".to_owned(),
            help: None,
        };
        Invalid::in_file(complaint, path, text, Pos::START, None)
    })?;
    Ok(restrict(&typed_value, &raw, ""))
}

/// An [`Invalid`] pointing at the value of the leaf at `key_path` in a file.
pub(crate) fn at_value(
    complaint: Complaint,
    key_path: &str,
    path: &Path,
    text: &str,
) -> Box<Invalid> {
    let pos = locate::locate(text, &segs_of(key_path), Target::Value).unwrap_or(Pos::START);
    Invalid::in_file(complaint, path, text, pos, None)
}

fn syntax_error(path: &Path, text: &str, err: &serde_norway::Error) -> Box<Invalid> {
    let message = err.to_string();
    if message.starts_with("duplicate entry")
        && let Some((key, pos)) = super::duplicate::find_duplicate(text)
    {
        let name = key.rsplit('.').next().unwrap_or(&key).to_owned();
        let complaint = Complaint {
            problem: Problem::Syntax,
            key: Some(key.clone()),
            message: format!("key `{key}` appears twice"),
            label: "repeated here".to_owned(),
            help: Some(format!("keep one `{name}` entry in this mapping")),
        };
        return Invalid::in_file(complaint, path, text, pos, Some(&name));
    }
    let pos = err
        .location()
        .map_or(Pos::START, |location| Pos::from_location(&location));
    let mut message = message;
    let at = format!(" at line {} column {}", pos.line, pos.column);
    if let Some(index) = message.find(&at) {
        message.replace_range(index..index + at.len(), "");
    }
    // A whole number past 64 bits is read by the parser as one it has no type for: it is
    // the value's fault, not the YAML's.
    if let Some((key, found)) = message.split_once(": invalid type: integer `")
        && let Some((number, _)) = found.split_once('`')
        && !key.contains(' ')
    {
        let complaint = check::type_complaint(key, &format!("invalid type: integer `{number}`"));
        return Invalid::in_file(complaint, path, text, pos, None);
    }
    let complaint = Complaint {
        problem: Problem::Syntax,
        key: None,
        message: format!("invalid YAML: {message}"),
        label: "here".to_owned(),
        help: Some(
            "check the indentation (spaces, not tabs), the quoting and the space after each `:`"
                .to_owned(),
        ),
    };
    Invalid::in_file(complaint, path, text, pos, None)
}

/// Check that every key is known and every section is a mapping (or `null`).
fn check_shape(
    value: &Value,
    section: &str,
    segs: &mut Vec<Seg>,
    path: &Path,
    text: &str,
) -> Result<(), Box<Invalid>> {
    let Value::Mapping(map) = value else {
        return Ok(());
    };
    for (key, child) in map {
        let name = key_name(key);
        let key_path = schema::join(section, &name);
        segs.push(Seg::Key(name.clone()));
        let leaf = schema::leaf(&key_path);
        if !key.is_string() {
            let complaint = Complaint {
                problem: Problem::WrongType,
                key: Some(key_path.clone()),
                message: format!("keys must be strings, found `{name}`"),
                label: "not a string".to_owned(),
                help: Some(format!("quote the key: \"{name}\"")),
            };
            return Err(at_key(complaint, segs, &name, path, text));
        }
        if schema::is_section(&key_path) || leaf.is_some_and(|k| k.kind == Kind::Map) {
            match child {
                Value::Null => {}
                Value::Mapping(_) if schema::is_section(&key_path) => {
                    check_shape(child, &key_path, segs, path, text)?;
                }
                Value::Mapping(entries) => {
                    if let Some(entry) = entries.keys().find(|k| !k.is_string()) {
                        let entry_name = key_name(entry);
                        segs.push(Seg::Key(entry_name.clone()));
                        let complaint = Complaint {
                            problem: Problem::WrongType,
                            key: Some(schema::join(&key_path, &entry_name)),
                            message: format!(
                                "names in `{key_path}` must be strings, found `{entry_name}`"
                            ),
                            label: "not a string".to_owned(),
                            help: Some(format!("quote the name: \"{entry_name}\"")),
                        };
                        return Err(at_key(complaint, segs, &entry_name, path, text));
                    }
                }
                other => {
                    let what = if schema::is_section(&key_path) {
                        "a section (a mapping of keys)".to_owned()
                    } else {
                        Kind::Map.expectation()
                    };
                    let complaint = Complaint {
                        problem: Problem::WrongType,
                        key: Some(key_path.clone()),
                        message: format!("`{key_path}` must be {what}, found {}", describe(other)),
                        label: format!("expected {what}"),
                        help: Some(format!(
                            "write the keys of `{key_path}` indented on the lines below it"
                        )),
                    };
                    let pos = locate::locate(text, segs, Target::Value).unwrap_or(Pos::START);
                    return Err(Invalid::in_file(complaint, path, text, pos, None));
                }
            }
        } else if leaf.is_none() {
            let complaint = Complaint {
                problem: Problem::UnknownKey,
                key: Some(key_path.clone()),
                message: format!("unknown key `{key_path}`"),
                label: "unknown key".to_owned(),
                help: Some(schema::unknown_key_help(section, &name)),
            };
            return Err(at_key(complaint, segs, &name, path, text));
        }
        segs.pop();
    }
    Ok(())
}

fn at_key(complaint: Complaint, segs: &[Seg], name: &str, path: &Path, text: &str) -> Box<Invalid> {
    let pos = locate::locate(text, segs, Target::Key).unwrap_or(Pos::START);
    Invalid::in_file(complaint, path, text, pos, Some(name))
}

/// The typed values of exactly the keys present in `raw`; `null` sections are dropped.
fn restrict(typed: &Value, raw: &Value, section: &str) -> Value {
    let mut out = Mapping::new();
    if let (Value::Mapping(typed), Value::Mapping(raw)) = (typed, raw) {
        for (key, raw_child) in raw {
            let name = key_name(key);
            let key_path = schema::join(section, &name);
            let is_section = schema::is_section(&key_path);
            let is_map = schema::leaf(&key_path).is_some_and(|k| k.kind == Kind::Map);
            if raw_child.is_null() && (is_section || is_map) {
                continue;
            }
            let Some(typed_child) = typed.get(name.as_str()) else {
                continue;
            };
            let value = if is_section {
                restrict(typed_child, raw_child, &key_path)
            } else {
                typed_child.clone()
            };
            out.insert(Value::String(name), value);
        }
    }
    Value::Mapping(out)
}

/// "a list", "the string \"x\"": what a value is, for messages.
pub(crate) fn describe(value: &Value) -> String {
    match value {
        Value::Null => "nothing (null)".to_owned(),
        Value::Bool(b) => format!("the boolean {b}"),
        Value::Number(n) => format!("the number {n}"),
        Value::String(s) => format!("the string {s:?}"),
        Value::Sequence(_) => "a list".to_owned(),
        Value::Mapping(_) => "a mapping".to_owned(),
        Value::Tagged(_) => "a tagged value".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Origin, yaml};

    const PATH: &str = "/p/.debussy/config.yaml";

    fn parse_ok(text: &str) -> Value {
        parse(Path::new(PATH), text).expect("valid config")
    }

    fn parse_err(text: &str) -> Box<Invalid> {
        parse(Path::new(PATH), text).expect_err("invalid config")
    }

    fn at(invalid: &Invalid) -> (usize, usize) {
        match &invalid.origin {
            Origin::File { line, column, .. } => (*line, *column),
            other => panic!("not a file origin: {other:?}"),
        }
    }

    /// The key an error is about and the line and column it points at.
    fn points_at(invalid: &Invalid) -> (Option<&str>, usize, usize) {
        let (line, column) = at(invalid);
        (invalid.key.as_deref(), line, column)
    }

    #[test]
    fn keeps_only_the_keys_the_file_sets() {
        let value = parse_ok(
            "# comment\nmodel: sonnet\nagent:\n  kind: sim\n  env: {TOKEN: x}\ngates: {mine: make check}\nnotifications:\n",
        );
        assert_eq!(
            value,
            yaml("model: sonnet\nagent: {kind: sim, env: {TOKEN: x}}\ngates: {mine: make check}\n")
        );
    }

    #[test]
    fn values_are_typed_as_the_config_reads_them() {
        let value = parse_ok("context_threshold: 75\nmodel: 4\n");
        assert_eq!(value, yaml("context_threshold: 75.0\nmodel: '4'\n"));
    }

    #[test]
    fn empty_and_comment_only_files_set_nothing() {
        assert_eq!(parse_ok(""), yaml("{}"));
        assert_eq!(parse_ok("# nothing yet\n"), yaml("{}"));
    }

    #[test]
    fn malformed_yaml_points_at_the_problem() {
        let err = parse_err("model: opus\nagent:\n  kind: sim\n   command: x\n");
        assert_eq!(err.problem, Problem::Syntax);
        assert_eq!(at(&err), (4, 11));
        assert!(
            err.message
                .starts_with("invalid YAML: mapping values are not allowed"),
            "{}",
            err.message
        );
        assert!(!err.message.contains("line 4 column 11"), "{}", err.message);
        let err = parse_err("model: \"opus\n");
        assert_eq!(err.problem, Problem::Syntax);
    }

    #[test]
    fn repeated_keys_point_at_the_repeat() {
        let err = parse_err("model: a\ntimeout: 5\nmodel: b\n");
        assert_eq!(err.problem, Problem::Syntax);
        assert_eq!(points_at(&err), (Some("model"), 3, 1));
        assert_eq!(err.message, "key `model` appears twice");
    }

    #[test]
    fn a_file_that_is_not_a_mapping_is_rejected() {
        let err = parse_err("- model\n- opus\n");
        assert_eq!(err.problem, Problem::WrongType);
        assert_eq!(at(&err), (1, 1));
        assert!(err.message.ends_with("found a list"));
        let err = parse_err("just words\n");
        assert!(err.message.ends_with("found the string \"just words\""));
    }

    #[test]
    fn unknown_keys_suggest_the_nearest_key() {
        let err = parse_err("model: opus\nmax_retires: 3\n");
        assert_eq!(err.problem, Problem::UnknownKey);
        assert_eq!(points_at(&err), (Some("max_retires"), 2, 1));
        assert_eq!(err.help.as_deref(), Some("did you mean `max_retries`?"));
        let err = parse_err("agent:\n  kind: sim\n  comand: x\n");
        assert_eq!(points_at(&err), (Some("agent.comand"), 3, 3));
        assert_eq!(err.help.as_deref(), Some("did you mean `agent.command`?"));
        let err = parse_err("notifications: {ntfy: {topics: x}}\n");
        assert_eq!(points_at(&err), (Some("notifications.ntfy.topics"), 1, 24));
    }

    #[test]
    fn misplaced_keys_name_their_section() {
        let err = parse_err("kind: sim\n");
        assert_eq!(
            err.help.as_deref(),
            Some("`kind` belongs elsewhere: did you mean `agent.kind`?")
        );
    }

    #[test]
    fn sections_must_be_mappings() {
        let err = parse_err("model: opus\nagent: sim\n");
        assert_eq!(err.problem, Problem::WrongType);
        assert_eq!(points_at(&err), (Some("agent"), 2, 8));
        let err = parse_err("gates: [pytest]\n");
        assert_eq!(err.key.as_deref(), Some("gates"));
        assert!(
            err.message.contains("a mapping of names to strings"),
            "{}",
            err.message
        );
    }

    #[test]
    fn non_string_keys_are_rejected() {
        let err = parse_err("gates:\n  1: make\n");
        assert_eq!(err.problem, Problem::WrongType);
        assert_eq!(at(&err), (2, 3));
        let err = parse_err("true: 1\n");
        assert_eq!(err.problem, Problem::WrongType);
    }

    #[test]
    fn wrong_types_point_at_the_value() {
        let err = parse_err("model: opus\nagent:\n  stop_grace: soon\n");
        assert_eq!(err.problem, Problem::WrongType);
        assert_eq!(points_at(&err), (Some("agent.stop_grace"), 3, 15));
        assert_eq!(
            err.message,
            "`agent.stop_grace` must be a number, at most 600 (seconds), found string \"soon\""
        );
    }

    #[test]
    fn out_of_range_values_point_at_the_value() {
        let err = parse_err("model: opus\ncontext_threshold: 150   # too much\n");
        assert_eq!(err.problem, Problem::OutOfRange);
        assert_eq!(points_at(&err), (Some("context_threshold"), 2, 20));
        assert_eq!(
            err.message,
            "`context_threshold` must be greater than 0 and at most 100, found 150"
        );
        let err = parse_err("gates:\n  pytest: \"\"\n");
        assert_eq!(points_at(&err), (Some("gates.pytest"), 2, 11));
        let err = parse_err("agent: {token_estimate_factor: 0}\n");
        assert_eq!(
            points_at(&err),
            (Some("agent.token_estimate_factor"), 1, 32)
        );
    }

    #[test]
    fn the_underline_covers_the_offending_token() {
        let text = "timeout: 0   # none\n";
        let err = parse_err(text);
        let labels: Vec<_> = miette::Diagnostic::labels(&*err).expect("labels").collect();
        assert_eq!(labels.len(), 1);
        assert_eq!(labels[0].offset(), 9);
        assert_eq!(labels[0].len(), 1);
    }
}
