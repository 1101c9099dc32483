//! Finding the second occurrence of a key repeated within one mapping.
//!
//! The YAML parser rejects such a file but reports the start of the enclosing mapping.
//! Like [`super::locate`], this walks the document with a visitor that fails on purpose,
//! here on the repeated key, and reads its position off the error.

use std::collections::BTreeSet;
use std::fmt;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};

use super::locate::{FOUND, Pos};

/// The first key that repeats a key earlier in the same mapping: its path and position.
pub(crate) fn find_duplicate(text: &str) -> Option<(String, Pos)> {
    let deserializer = serde_norway::Deserializer::from_str(text);
    let mut found = None;
    let walker = DuplicateWalker {
        path: Vec::new(),
        found: &mut found,
    };
    match walker.deserialize(deserializer) {
        Err(err) if err.to_string().contains(FOUND) => {
            let pos = err
                .location()
                .map(|location| Pos::from_location(&location))?;
            found.map(|path| (path, pos))
        }
        _ => None,
    }
}

/// Walks a whole document and fails on the first key repeated within one mapping.
struct DuplicateWalker<'f> {
    path: Vec<String>,
    found: &'f mut Option<String>,
}

impl<'de> DeserializeSeed<'de> for DuplicateWalker<'_> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for DuplicateWalker<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any YAML node")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen = BTreeSet::new();
        loop {
            let key = map.next_key_seed(KeyRecord {
                seen: &seen,
                path: &self.path,
                found: &mut *self.found,
            })?;
            let Some(key) = key else { return Ok(()) };
            let mut path = self.path.clone();
            path.push(key.clone());
            seen.insert(key);
            map.next_value_seed(DuplicateWalker {
                path,
                found: &mut *self.found,
            })?;
        }
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut index = 0usize;
        loop {
            let mut path = self.path.clone();
            match path.last_mut() {
                Some(last) => last.push_str(&format!("[{index}]")),
                None => path.push(format!("[{index}]")),
            }
            let walker = DuplicateWalker {
                path,
                found: &mut *self.found,
            };
            if seq.next_element_seed(walker)?.is_none() {
                return Ok(());
            }
            index += 1;
        }
    }

    super::locate::pass_over_scalars!();
}

/// Reads a mapping key; fails (recording its path) if the mapping already had it.
struct KeyRecord<'s> {
    seen: &'s BTreeSet<String>,
    path: &'s [String],
    found: &'s mut Option<String>,
}

impl<'de> DeserializeSeed<'de> for KeyRecord<'_> {
    type Value = String;

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<String, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for KeyRecord<'_> {
    type Value = String;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a mapping key")
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<String, E> {
        self.check(key.to_owned())
    }
    fn visit_bool<E: de::Error>(self, key: bool) -> Result<String, E> {
        self.check(key.to_string())
    }
    fn visit_i64<E: de::Error>(self, key: i64) -> Result<String, E> {
        self.check(key.to_string())
    }
    fn visit_u64<E: de::Error>(self, key: u64) -> Result<String, E> {
        self.check(key.to_string())
    }
    fn visit_f64<E: de::Error>(self, key: f64) -> Result<String, E> {
        self.check(key.to_string())
    }
    fn visit_unit<E: de::Error>(self) -> Result<String, E> {
        self.check("null".to_owned())
    }
}

impl KeyRecord<'_> {
    fn check<E: de::Error>(self, key: String) -> Result<String, E> {
        if self.seen.contains(&key) {
            let mut path = self.path.join(".");
            if !path.is_empty() {
                path.push('.');
            }
            path.push_str(&key);
            *self.found = Some(path);
            return Err(E::custom(FOUND));
        }
        Ok(key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_second_of_duplicate_keys() {
        let text = "model: a\nagent:\n  kind: sim\n  command: x\n  kind: claude\n";
        assert_eq!(
            find_duplicate(text),
            Some(("agent.kind".to_owned(), Pos { line: 5, column: 3 }))
        );
        assert_eq!(
            find_duplicate("model: a\nagent: {kind: sim, command: x}\n"),
            None
        );
        let in_list = "a:\n  - {x: 1, x: 2}\n";
        assert_eq!(
            find_duplicate(in_list),
            Some((
                "a[0].x".to_owned(),
                Pos {
                    line: 2,
                    column: 12
                }
            ))
        );
    }
}
