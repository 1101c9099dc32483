//! The docs held to the binary: every `debussy …` example command in `README.md` and
//! `docs/*.md` parses with the binary's own arguments ([`Cli`]), every default the
//! docs state is the default the binary has (and `config/default.yaml` holds, which
//! `config::reference` keeps equal to it), and what the docs say a value does is a value
//! the configuration accepts.

use std::path::{Path, PathBuf};

use clap::Parser;
use serde_norway::Value;

use super::Cli;
use crate::config::Config;

/// Split a shell command line into words, honouring quotes; `$NAME` is looked up in
/// `vars`, and a name not there is kept as written when `keep_unknown`, else a failure.
pub(crate) fn shell_words(line: &str, vars: &[(&str, &str)], keep_unknown: bool) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (None, ' ' | '\t') => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            (None, '"' | '\'') => {
                quote = Some(c);
                in_word = true;
            }
            (Some(q), c) if c == q => quote = None,
            (None | Some('"'), '$') => {
                let mut name = String::new();
                while let Some(&next) = chars.peek() {
                    if next.is_ascii_alphanumeric() || next == '_' {
                        name.push(next);
                        chars.next();
                    } else {
                        break;
                    }
                }
                match vars.iter().find(|(var, _)| *var == name) {
                    Some((_, value)) => word.push_str(value),
                    None if keep_unknown => {
                        word.push('$');
                        word.push_str(&name);
                    }
                    None => panic!("unexpected variable ${name} in `{line}`"),
                }
                in_word = true;
            }
            (_, c) => {
                word.push(c);
                in_word = true;
            }
        }
    }
    assert!(quote.is_none(), "unclosed quote in `{line}`");
    if in_word {
        words.push(word);
    }
    words
}

/// `README.md` and every `docs/*.md`, with their text.
fn documents() -> Vec<(PathBuf, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut paths = vec![root.join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .expect("docs/")
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
        .collect();
    docs.sort();
    paths.extend(docs);
    paths
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path).expect("a readable doc");
            (path, text)
        })
        .collect()
}

/// The text of `docs/{name}`.
fn doc(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("docs")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// What `text` says under the heading `## {heading}`, up to the next such heading.
fn section<'t>(text: &'t str, heading: &str) -> &'t str {
    text.split(&format!("## {heading}"))
        .nth(1)
        .and_then(|rest| rest.split("\n## ").next())
        .unwrap_or_else(|| panic!("no section `## {heading}`"))
}

/// A command line shown in a doc, and where.
#[derive(Debug)]
struct Example {
    doc: String,
    line: usize,
    command: String,
    shown: Shown,
}

/// How a command appears in a doc.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shown {
    /// A whole command to run, in a code block: it parses as written.
    Whole,
    /// A command named in the prose (`debussy run --dry-run`): its subcommands and
    /// flags exist, and only arguments it leaves out or writes as placeholders
    /// (`PLAN`, `PORT`) may be missing or invalid.
    Mention,
}

/// Cut a shell line at a `#` comment outside quotes.
fn without_comment(line: &str) -> &str {
    let mut quote = None;
    let mut previous = ' ';
    for (index, c) in line.char_indices() {
        match (quote, c) {
            (None, '"' | '\'') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, '#') if previous.is_whitespace() => return &line[..index],
            _ => {}
        }
        previous = c;
    }
    line
}

/// The `debussy …` commands of one shell line: each part of a pipeline or `&&` list,
/// without leading `VAR=value` assignments or redirections.
fn commands_in(line: &str) -> Vec<String> {
    let mut line = without_comment(line);
    for redirect in [" > ", " >> ", " 2>", " < "] {
        if let Some(at) = line.find(redirect) {
            line = &line[..at];
        }
    }
    line.split("&&")
        .flat_map(|part| part.split("||"))
        .flat_map(|part| part.split(['|', ';']))
        .map(|part| {
            let mut rest = part.trim();
            while let Some((first, tail)) = rest.split_once(' ')
                && first.contains('=')
                && !first.starts_with('-')
            {
                rest = tail.trim_start();
            }
            rest.to_owned()
        })
        .filter(|part| part == "debussy" || part.starts_with("debussy "))
        .collect()
}

/// Every example command of `text`: in shell and console blocks (`$ ` prompts, `\`
/// continuations), in `.mcp.json`-style JSON (`"command": "debussy"` with `args`), and
/// in inline code spans that are a whole command (no `[optional]`, `a|b` or `…`).
fn examples(doc: &str, text: &str) -> Vec<Example> {
    let mut out = Vec::new();
    let mut block: Option<(String, usize, String)> = None;
    let mut pending = String::new();
    for (index, line) in text.lines().enumerate() {
        let number = index + 1;
        if let Some(fence) = line.trim_start().strip_prefix("```") {
            match block.take() {
                Some((lang, start, body)) => {
                    if lang == "json" {
                        out.extend(json_examples(doc, start, &body));
                    }
                }
                None => block = Some((fence.trim().to_owned(), number, String::new())),
            }
            continue;
        }
        if let Some((lang, _, body)) = &mut block {
            body.push_str(line);
            body.push('\n');
            let shell = match lang.as_str() {
                "sh" | "bash" | "shell" => Some(line),
                "console" => line.strip_prefix("$ "),
                _ => None,
            };
            if let Some(shell) = shell {
                pending.push_str(shell.trim_end_matches('\\'));
                pending.push(' ');
                if shell.ends_with('\\') {
                    continue;
                }
                for command in commands_in(&pending) {
                    out.push(Example {
                        doc: doc.to_owned(),
                        line: number,
                        command,
                        shown: Shown::Whole,
                    });
                }
                pending.clear();
            }
            continue;
        }
        for span in line.split('`').skip(1).step_by(2) {
            let whole = !(span.contains('[')
                || span.contains('|')
                || span.contains('…')
                || span.contains("..."));
            if whole && span.starts_with("debussy ") {
                out.extend(commands_in(span).into_iter().map(|command| Example {
                    doc: doc.to_owned(),
                    line: number,
                    command,
                    shown: Shown::Mention,
                }));
            }
        }
    }
    out
}

/// `"command": "debussy"` objects with their `args`, anywhere in a JSON block.
fn json_examples(doc: &str, start: usize, body: &str) -> Vec<Example> {
    fn walk(value: &serde_json::Value, out: &mut Vec<String>) {
        match value {
            serde_json::Value::Object(map) => {
                if map.get("command").and_then(|c| c.as_str()) == Some("debussy")
                    && let Some(args) = map.get("args").and_then(|a| a.as_array())
                {
                    let words: Vec<String> = args
                        .iter()
                        .filter_map(|a| a.as_str().map(shell_quote))
                        .collect();
                    out.push(format!("debussy {}", words.join(" ")));
                }
                map.values().for_each(|v| walk(v, out));
            }
            serde_json::Value::Array(items) => items.iter().for_each(|v| walk(v, out)),
            _ => {}
        }
    }
    let mut commands = Vec::new();
    if let Ok(value) = serde_json::from_str::<serde_json::Value>(body) {
        walk(&value, &mut commands);
    }
    commands
        .into_iter()
        .map(|command| Example {
            doc: doc.to_owned(),
            line: start,
            command,
            shown: Shown::Whole,
        })
        .collect()
}

fn shell_quote(word: &str) -> String {
    crate::process::shell_quote(word)
}

#[test]
fn every_example_command_in_the_docs_parses_with_the_binary() {
    let mut seen = 0;
    let mut wrong = Vec::new();
    for (path, text) in documents() {
        let doc = path
            .strip_prefix(env!("CARGO_MANIFEST_DIR"))
            .unwrap_or(&path)
            .display()
            .to_string();
        for example in examples(&doc, &text) {
            seen += 1;
            // The reaper's entry point is read before the command line is parsed.
            if example.command.starts_with("debussy __reaper") {
                continue;
            }
            let words = shell_words(&example.command, &[], true);
            let placeholder = words.iter().any(|word| {
                word.chars().any(|c| c.is_ascii_uppercase())
                    && word
                        .chars()
                        .all(|c| c.is_ascii_uppercase() || c == '_' || c == '-')
            });
            let result = Cli::try_parse_from(&words);
            let forgiven = |err: &clap::Error| {
                example.shown == Shown::Mention
                    && (err.kind() == clap::error::ErrorKind::MissingRequiredArgument
                        || (placeholder
                            && matches!(
                                err.kind(),
                                clap::error::ErrorKind::InvalidValue
                                    | clap::error::ErrorKind::ValueValidation
                            )))
            };
            if let Err(err) = &result
                && !forgiven(err)
            {
                let first = err.to_string();
                let first = first.lines().next().unwrap_or_default().to_owned();
                wrong.push(format!(
                    "{}:{}: `{}`: {first}",
                    example.doc, example.line, example.command
                ));
            }
        }
    }
    assert!(
        seen > 50,
        "only {seen} example commands found: the scan is broken"
    );
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn the_scan_finds_commands_and_the_parse_has_teeth() {
    let text = "```sh\nDEBUSSY_LOG=trace debussy run p.md --dry-run | jq . # comment\ncd x && debussy \\\n  status\n```\n\
                See `debussy audit PLAN --strict`, not `debussy done [--status S]`.\n\
                ```json\n{\"a\": {\"command\": \"debussy\", \"args\": [\"mcp\", \"supervise\", \"--\", \"cat\"]}}\n```\n";
    let found: Vec<String> = examples("t.md", text)
        .into_iter()
        .map(|e| e.command)
        .collect();
    assert_eq!(
        found,
        [
            "debussy run p.md --dry-run",
            "debussy    status",
            "debussy audit PLAN --strict",
            "debussy mcp supervise -- cat",
        ]
    );
    let wrong = shell_words("debussy run p.md --no-such-flag", &[], true);
    assert!(Cli::try_parse_from(wrong).is_err());
}

/// The default column of `docs/config.md`'s key tables: (key, the cell's text).
fn documented_defaults(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut in_keys = false;
    for line in text.lines() {
        if line.starts_with("## ") {
            in_keys = line == "## Keys";
        }
        if !in_keys || !line.starts_with("| `") {
            continue;
        }
        let cells: Vec<&str> = line
            .trim()
            .trim_matches('|')
            .split(" | ")
            .map(str::trim)
            .collect();
        let [key, _, default, _, _] = cells.as_slice() else {
            continue;
        };
        let key = key.trim_matches('`');
        out.push((key.to_owned(), (*default).to_owned()));
    }
    out
}

/// The value at a dotted key path of the serialized default configuration.
fn default_at(path: &str) -> Option<Value> {
    let mut value = serde_norway::to_value(Config::default()).ok()?;
    for part in path.split('.') {
        value = value.get(part)?.clone();
    }
    Some(value)
}

/// Whether a cell of the docs (`80.0`, `null`, `` `[Bash, Read]` ``) states `value`.
fn states(cell: &str, value: &Value) -> bool {
    let cell = cell.trim().trim_matches('`').trim();
    match value {
        Value::Null => cell == "null",
        Value::String(text) => cell == text,
        Value::Bool(on) => cell == on.to_string(),
        Value::Number(number) => cell
            .replace(',', "")
            .parse::<f64>()
            .is_ok_and(|n| number.as_f64().is_some_and(|v| (v - n).abs() < 1e-9)),
        Value::Sequence(_) | Value::Mapping(_) => {
            serde_norway::from_str::<Value>(cell).is_ok_and(|parsed| parsed == *value)
        }
        Value::Tagged(tagged) => states(cell, &tagged.value),
    }
}

#[test]
fn every_default_in_the_docs_is_the_binarys() {
    let config = doc("config.md");
    let mut wrong = Vec::new();
    let defaults = documented_defaults(&config);
    assert!(defaults.len() > 40, "the key tables were not found");
    for (key, cell) in defaults {
        if key == "gates" {
            continue;
        }
        let Some(value) = default_at(&key) else {
            wrong.push(format!(
                "docs/config.md: `{key}` is no key of the configuration"
            ));
            continue;
        };
        if !states(&cell, &value) {
            wrong.push(format!(
                "docs/config.md: `{key}` defaults to {cell} in the docs, {value:?} in the binary"
            ));
        }
    }
    // In prose: "`key` … (default V" and "(`key`, default V)".
    for (path, text) in documents() {
        let doc = path
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        for (line_index, line) in text.lines().enumerate() {
            for (at, _) in line.match_indices("default ") {
                let before = &line[..at];
                let Some(close) = before.rfind('`') else {
                    continue;
                };
                let Some(open) = before[..close].rfind('`') else {
                    continue;
                };
                let key = &before[open + 1..close];
                let Some(value) = default_at(key)
                    .filter(|_| crate::config::keys::KEYS.iter().any(|k| k.path == key))
                else {
                    continue;
                };
                // Only when the key is what the parenthesis is about: nothing but
                // words between them, and "default" right after `(` or `, `.
                let gap = &before[close + 1..];
                if gap.contains('`')
                    || gap.len() > 60
                    || !(gap.ends_with('(') || gap.ends_with(", "))
                {
                    continue;
                }
                let stated: String = line[at + "default ".len()..]
                    .chars()
                    .take_while(|c| !matches!(c, ')' | ';' | ' ' | ','))
                    .collect();
                if !states(&stated, &value) {
                    wrong.push(format!(
                        "{doc}:{}: `{key}` defaults to {stated} in the docs, {value:?} in the binary",
                        line_index + 1
                    ));
                }
                // "(default V; N disables)": N must be a value the key accepts.
                let rest = &line[at..];
                let disables = rest
                    .split(')')
                    .next()
                    .and_then(|inside| inside.split("; ").nth(1))
                    .and_then(|clause| clause.split_once(" disables"))
                    .map(|(value, _)| value);
                if let Some(disables) = disables
                    && !accepts(key, disables)
                {
                    wrong.push(format!(
                        "{doc}:{}: `{key}: {disables}` is said to disable it, but the configuration refuses it",
                        line_index + 1
                    ));
                }
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// Whether a config file setting `key` (dotted) to `value` is accepted.
fn accepts(key: &str, value: &str) -> bool {
    let yaml = crate::config::nested_yaml(key, value);
    crate::config::parse_file(Path::new("t.yaml"), &yaml).is_ok()
}

#[test]
fn the_event_examples_are_json_worded_as_the_binary_words_them() {
    let text = doc("events.md");
    let example = section(&text, "Example")
        .split("```json\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("the example block");
    let events: Vec<serde_json::Value> = example
        .lines()
        .map(|line| serde_json::from_str(line).expect("a JSON event line"))
        .collect();
    let restart = events
        .iter()
        .find(|event| event["event"] == "restart")
        .expect("a restart event");
    let reason = crate::context::StopReason::ContextThreshold {
        tokens: 176_000,
        limit: 160_000,
        window: 200_000,
        window_source: crate::context::WindowSource::Remembered,
        threshold_percent: 80.0,
    };
    assert_eq!(restart["reason"], reason.to_string());
    assert_eq!(restart["context_percent"], 88.0);
}

#[test]
fn defaults_are_read_as_the_docs_write_them() {
    assert!(states("`80.0`", &Value::from(80.0)));
    assert!(states("80", &Value::from(80.0)));
    assert!(states("`1,000`", &Value::from(1000)));
    assert!(states("null", &Value::Null));
    assert!(!states("`opus`", &Value::Null));
    assert!(states(
        "`[a, b]`",
        &serde_norway::from_str("[a, b]").expect("yaml")
    ));
    assert!(!states(
        "`[a]`",
        &serde_norway::from_str("[a, b]").expect("yaml")
    ));
    assert!(states(
        "`debussy: phase {phase_id}`",
        &Value::from("debussy: phase {phase_id}")
    ));
    assert!(accepts("context_threshold", "100"));
    assert!(!accepts("tool_call_threshold", "0"));
}

#[test]
fn the_upper_bounds_in_the_docs_are_the_key_tables() {
    let text = doc("config.md");
    let bounds = section(&text, "Upper bounds");
    let mut checked = 0;
    let mut wrong = Vec::new();
    for row in bounds.lines().filter(|line| line.starts_with("| `")) {
        let cells: Vec<&str> = row.trim_matches('|').split(" | ").map(str::trim).collect();
        let [keys, bound] = cells.as_slice() else {
            continue;
        };
        let mut words = bound.split_whitespace();
        let Some(number) = words
            .next()
            .and_then(|word| word.replace(',', "").parse::<f64>().ok())
        else {
            continue;
        };
        let number = match words.next() {
            Some("GiB") => number * 1_073_741_824.0,
            _ => number,
        };
        for key in keys.split(", ").map(|key| key.trim_matches('`')) {
            let Some(max) = crate::config::keys::KEYS
                .iter()
                .find(|k| k.path == key)
                .and_then(|k| k.max)
            else {
                continue;
            };
            checked += 1;
            if (max.0 - number).abs() > f64::EPSILON {
                wrong.push(format!(
                    "`{key}`: {bound} in the docs, {} in the key table",
                    max.0
                ));
            }
        }
    }
    assert!(checked > 10, "only {checked} bounds read");
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
