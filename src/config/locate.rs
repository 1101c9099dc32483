//! Finding where a key or value sits in a YAML file's text, for diagnostics.
//!
//! `serde_norway` keeps no positions in its values, but it stamps every error raised
//! while visiting a node with that node's line and column. So to find a path we walk the
//! document with a visitor that fails on purpose when it reaches the target, and read the
//! position off the error.
//!
//! Positions are 1-based lines and columns counted in characters, as the YAML parser
//! reports them; [`Pos::offset`] turns one into a byte offset for a source span.
//! [`super::duplicate`] uses the same trick to find a repeated key.
//!
//! # Why not a YAML parser that keeps spans
//!
//! A parser with spans (`saphyr` 0.3, `marked-yaml`) would replace these visitors with a
//! tree walk, but it could only sit beside `serde_norway`, not replace it: the type
//! errors' wording and the syntax errors come from `serde_norway`'s libyaml. Two parsers
//! of one text must then agree on every position, and they do not. Compared with the
//! positions used here, `saphyr` 0.3.4 matches on plain, quoted and flow values, keys,
//! list items, anchors and repeated keys, but puts a block scalar's value
//! (`commit_message_template: |`) at its first content line instead of the `|`, an
//! empty value (`command:`) one column earlier, and an empty flow value
//! (`{command: , …}`) two columns earlier; so errors about those values would move.
//! Its repeated-key error also gives only a position, not the key's path, which the
//! message needs. So the one parser that reads the file also says where things are.

use std::fmt;

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// A segment of a key path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Seg {
    /// A mapping key.
    Key(String),
    /// A list index.
    Index(usize),
}

/// Render segments as a dotted path with list indices in brackets: `agent.args[1]`.
pub(crate) fn display_path(segs: &[Seg]) -> String {
    let mut out = String::new();
    for seg in segs {
        match seg {
            Seg::Key(key) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(key);
            }
            Seg::Index(index) => out.push_str(&format!("[{index}]")),
        }
    }
    out
}

/// A position in a file: 1-based line and column (in characters).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Pos {
    /// 1-based line.
    pub line: usize,
    /// 1-based column, in characters.
    pub column: usize,
}

impl Pos {
    /// The start of the file.
    pub(crate) const START: Pos = Pos { line: 1, column: 1 };

    /// From a YAML error's location.
    pub(crate) fn from_location(location: &serde_norway::Location) -> Pos {
        Pos {
            line: location.line().max(1),
            column: location.column().max(1),
        }
    }

    /// The byte offset of this position in `text`, clamped to the text.
    pub(crate) fn offset(self, text: &str) -> usize {
        let mut line_start = 0;
        for _ in 1..self.line {
            match text[line_start..].find('\n') {
                Some(newline) => line_start += newline + 1,
                None => return text.len(),
            }
        }
        let line = &text[line_start..];
        let within = line
            .char_indices()
            .nth(self.column - 1)
            .map_or(line.len(), |(index, _)| index);
        line_start + within
    }
}

/// Which part of an entry to point at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Target {
    /// The key (for unknown keys).
    Key,
    /// The value (for wrong types and out-of-range values).
    Value,
}

/// The message of the deliberate error that marks a found node.
pub(super) const FOUND: &str = "\u{0}debussy-locate-found";

/// Where the key or value at `path` starts in `text`; `None` when the path is not there.
/// Call it only on text that parses: a syntax error after the target goes unnoticed.
pub(crate) fn locate(text: &str, path: &[Seg], target: Target) -> Option<Pos> {
    let deserializer = serde_norway::Deserializer::from_str(text);
    match (Probe { path, target }).deserialize(deserializer) {
        Ok(()) => None,
        Err(err) if err.to_string().contains(FOUND) => {
            err.location().map(|location| Pos::from_location(&location))
        }
        Err(_) => None,
    }
}

/// How many bytes of the token at `offset` to underline: a quoted scalar up to its
/// closing quote, `hint` when the text starts with it, else the rest of the line without
/// a trailing comment.
pub(crate) fn token_len(text: &str, offset: usize, hint: Option<&str>) -> usize {
    let rest = text.get(offset..).unwrap_or("");
    if let Some(quote @ ('"' | '\'')) = rest.chars().next()
        && let Some(end) = closing_quote(rest, quote)
    {
        return end;
    }
    if let Some(hint) = hint
        && !hint.is_empty()
        && rest.starts_with(hint)
    {
        return hint.len();
    }
    let line = rest.split('\n').next().unwrap_or("");
    let line = line.split(" #").next().unwrap_or(line);
    line.trim_end().len().max(1).min(rest.len())
}

/// The byte length of the quoted scalar that opens `rest`, closing quote included.
fn closing_quote(rest: &str, quote: char) -> Option<usize> {
    let mut chars = rest.char_indices().skip(1).peekable();
    while let Some((index, c)) = chars.next() {
        match c {
            '\\' if quote == '"' => {
                chars.next();
            }
            '\'' if quote == '\'' && chars.peek().is_some_and(|(_, next)| *next == '\'') => {
                chars.next();
            }
            c if c == quote => return Some(index + c.len_utf8()),
            _ => {}
        }
    }
    None
}

struct Probe<'p> {
    path: &'p [Seg],
    target: Target,
}

impl<'de> DeserializeSeed<'de> for Probe<'_> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        if self.path.is_empty() {
            // Any visit fails: the error carries the position of the node we are on.
            return deserializer.deserialize_any(Fail);
        }
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Probe<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any YAML node")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let Some((Seg::Key(wanted), rest)) = self.path.split_first() else {
            while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
            return Ok(());
        };
        let fail_on_key = rest.is_empty() && self.target == Target::Key;
        while let Some(matched) = map.next_key_seed(KeyMatch {
            wanted,
            fail: fail_on_key,
        })? {
            if matched {
                return map.next_value_seed(Probe {
                    path: rest,
                    target: self.target,
                });
            }
            map.next_value::<IgnoredAny>()?;
        }
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let Some((Seg::Index(wanted), rest)) = self.path.split_first() else {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            return Ok(());
        };
        let mut index = 0;
        while index < *wanted {
            if seq.next_element::<IgnoredAny>()?.is_none() {
                return Ok(());
            }
            index += 1;
        }
        seq.next_element_seed(Probe {
            path: rest,
            target: self.target,
        })?;
        Ok(())
    }

    pass_over_scalars!();
}

/// A visitor that fails on whatever it is given.
struct Fail;

impl<'de> Visitor<'de> for Fail {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(FOUND)
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        Err(E::custom(FOUND))
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        Err(E::custom(FOUND))
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        Err(E::custom(FOUND))
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        Err(E::custom(FOUND))
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        Err(E::custom(FOUND))
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Err(E::custom(FOUND))
    }
    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        Err(E::custom(FOUND))
    }
    fn visit_map<A: MapAccess<'de>>(self, _: A) -> Result<(), A::Error> {
        Err(de::Error::custom(FOUND))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, _: A) -> Result<(), A::Error> {
        Err(de::Error::custom(FOUND))
    }
}

/// Deserializes a mapping key and says whether it is the wanted one; with `fail`, fails
/// on the wanted key so the error carries its position.
struct KeyMatch<'w> {
    wanted: &'w str,
    fail: bool,
}

impl<'de> DeserializeSeed<'de> for KeyMatch<'_> {
    type Value = bool;

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<bool, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for KeyMatch<'_> {
    type Value = bool;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a mapping key")
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<bool, E> {
        self.check(key)
    }
    fn visit_bool<E: de::Error>(self, key: bool) -> Result<bool, E> {
        self.check(&key.to_string())
    }
    fn visit_i64<E: de::Error>(self, key: i64) -> Result<bool, E> {
        self.check(&key.to_string())
    }
    fn visit_u64<E: de::Error>(self, key: u64) -> Result<bool, E> {
        self.check(&key.to_string())
    }
    fn visit_f64<E: de::Error>(self, key: f64) -> Result<bool, E> {
        self.check(&key.to_string())
    }
    fn visit_unit<E: de::Error>(self) -> Result<bool, E> {
        self.check("null")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(false)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<bool, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(false)
    }
}

impl KeyMatch<'_> {
    fn check<E: de::Error>(&self, key: &str) -> Result<bool, E> {
        let matched = key == self.wanted;
        if matched && self.fail {
            return Err(E::custom(FOUND));
        }
        Ok(matched)
    }
}

/// The `Visitor` methods of a walk that looks only at mappings and sequences: every
/// scalar is passed over.
macro_rules! pass_over_scalars {
    () => {
        fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<(), E> {
            Ok(())
        }
        fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<(), E> {
            Ok(())
        }
        fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<(), E> {
            Ok(())
        }
        fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<(), E> {
            Ok(())
        }
        fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<(), E> {
            Ok(())
        }
        fn visit_unit<E: serde::de::Error>(self) -> Result<(), E> {
            Ok(())
        }
        fn visit_none<E: serde::de::Error>(self) -> Result<(), E> {
            Ok(())
        }
    };
}
pub(super) use pass_over_scalars;

#[cfg(test)]
mod tests {
    use super::*;

    fn key(path: &str) -> Vec<Seg> {
        path.split('.').map(|s| Seg::Key(s.to_owned())).collect()
    }

    const DOC: &str = "\
model: opus
agent:
  kind: sim   # the simulated agent
  args: [--a, \"--b c\"]
gates: {pytest: pytest -x, ruff: ruff check .}
";

    #[test]
    fn finds_keys_and_values_in_block_and_flow_style() {
        let mut second_arg = key("agent.args");
        second_arg.push(Seg::Index(1));
        let cases = [
            ("model", key("model"), Target::Key, (1, 1)),
            ("model", key("model"), Target::Value, (1, 8)),
            ("agent.kind", key("agent.kind"), Target::Key, (3, 3)),
            ("agent.kind", key("agent.kind"), Target::Value, (3, 9)),
            ("gates.ruff", key("gates.ruff"), Target::Value, (5, 34)),
            ("agent.args[1]", second_arg, Target::Value, (4, 15)),
        ];
        for (name, path, target, (line, column)) in cases {
            assert_eq!(
                locate(DOC, &path, target),
                Some(Pos { line, column }),
                "{name} ({target:?})"
            );
        }
    }

    #[test]
    fn missing_paths_are_none() {
        assert_eq!(locate(DOC, &key("agent.command"), Target::Key), None);
        assert_eq!(locate(DOC, &key("model.deeper"), Target::Key), None);
        let mut args = key("agent.args");
        args.push(Seg::Index(9));
        assert_eq!(locate(DOC, &args, Target::Value), None);
    }

    #[test]
    fn offsets_count_characters_within_a_line() {
        let text = "a: é\nbé: x\n";
        assert_eq!(Pos { line: 1, column: 1 }.offset(text), 0);
        assert_eq!(Pos { line: 2, column: 3 }.offset(text), 9);
        assert_eq!(Pos { line: 9, column: 1 }.offset(text), text.len());
    }

    #[test]
    fn token_len_covers_quotes_hints_and_lines() {
        let text = "a: \"x \\\" y\" # c\nb: plain words # comment\nc: 80\n";
        assert_eq!(token_len(text, 3, None), "\"x \\\" y\"".len());
        let b = text.find("plain").expect("present");
        assert_eq!(token_len(text, b, None), "plain words".len());
        assert_eq!(token_len(text, b, Some("plain")), "plain".len());
    }

    #[test]
    fn paths_display_with_dots_and_brackets() {
        let segs = vec![
            Seg::Key("agent".into()),
            Seg::Key("args".into()),
            Seg::Index(2),
        ];
        assert_eq!(display_path(&segs), "agent.args[2]");
    }
}
