//! Lookups derived from the key table ([`super::keys`]): the leaf or section at a path,
//! the environment variable that reaches each key, what a key expects in words, and "did
//! you mean" suggestions. Nothing here declares a key.

/// Environment variables that start with `DEBUSSY_` but are not configuration: the log
/// filter, and the variables the orchestrator sets for the agents it starts.
pub const RESERVED_ENV_VARS: &[&str] = &[
    "DEBUSSY_LOG",
    "DEBUSSY_RUN_ID",
    "DEBUSSY_PHASE_ID",
    "DEBUSSY_ATTEMPT",
    "DEBUSSY_RESTART",
    "DEBUSSY_PROJECT_ROOT",
];

/// The prefix of every configuration environment variable.
pub(crate) const ENV_PREFIX: &str = "DEBUSSY_";

use super::keys::{KEYS, Key, Kind, SECTIONS};

impl Kind {
    /// What a value of this kind looks like, in words, for error messages.
    pub(crate) fn expectation(self) -> String {
        match self {
            Kind::Str => "a string".to_owned(),
            Kind::OptStr => "a string or null".to_owned(),
            Kind::OptPath => "a path or null".to_owned(),
            Kind::Bool => "true or false".to_owned(),
            Kind::UInt => "a whole number (0 or more)".to_owned(),
            Kind::OptUInt => "a whole number or null".to_owned(),
            Kind::Float => "a number".to_owned(),
            Kind::OptFloat => "a number or null".to_owned(),
            Kind::OptDuration => "a duration such as 90m or 2h30m, or null".to_owned(),
            Kind::Enum(words) => format!("one of {}", words_list(words)),
            Kind::List => "a list of strings".to_owned(),
            Kind::Map => "a mapping of names to strings".to_owned(),
        }
    }
}

impl Key {
    /// What a value of this key looks like, in words, with its range when it has one.
    pub(crate) fn expectation(&self) -> String {
        match (self.kind, self.max) {
            (Kind::UInt, Some((max, unit))) => {
                format!("a whole number, at most {} ({unit})", format_bound(max))
            }
            (Kind::OptUInt, Some((max, unit))) => {
                format!(
                    "a whole number, at most {} ({unit}), or null",
                    format_bound(max)
                )
            }
            (Kind::OptFloat, Some((max, unit))) => {
                format!("a number, at most {} ({unit}), or null", format_bound(max))
            }
            (Kind::Float, Some((max, unit))) => {
                format!("a number, at most {} ({unit})", format_bound(max))
            }
            (kind, _) => kind.expectation(),
        }
    }
}

/// A bound as people write it: `604,800`, `0.5`.
pub(crate) fn format_bound(value: f64) -> String {
    if value.fract() == 0.0 && value.abs() < 1e15 {
        #[expect(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            reason = "a whole, positive bound far below 2^53"
        )]
        let whole = value as u64;
        crate::words::thousands(whole)
    } else {
        value.to_string()
    }
}

/// The leaf at a dotted path, if there is one.
pub(crate) fn leaf(path: &str) -> Option<&'static Key> {
    KEYS.iter().find(|k| k.path == path)
}

/// Whether a dotted path names a section.
pub(crate) fn is_section(path: &str) -> bool {
    SECTIONS.contains(&path)
}

/// The leaf that governs a value's path: the leaf itself, the list an element belongs to
/// (`agent.args[1]` → `agent.args`) or the open map an entry belongs to
/// (`gates.pytest` → `gates`).
pub(crate) fn governing(path: &str) -> Option<&'static Key> {
    let base = path.split('[').next().unwrap_or(path);
    if let Some(found) = leaf(base) {
        return Some(found);
    }
    KEYS.iter()
        .filter(|k| k.kind == Kind::Map)
        .find(|k| base.starts_with(&format!("{}.", k.path)))
}

/// Join a section path and a key.
pub(crate) fn join(section: &str, key: &str) -> String {
    if section.is_empty() {
        key.to_owned()
    } else {
        format!("{section}.{key}")
    }
}

/// The names allowed directly inside a section.
pub(crate) fn children(section: &str) -> Vec<&'static str> {
    let prefix = if section.is_empty() {
        String::new()
    } else {
        format!("{section}.")
    };
    let mut names: Vec<&'static str> = Vec::new();
    let paths = KEYS
        .iter()
        .map(|k| k.path)
        .chain(SECTIONS.iter().copied().filter(|s| !s.is_empty()));
    for path in paths {
        if let Some(rest) = path.strip_prefix(prefix.as_str())
            && !rest.is_empty()
        {
            let name = rest.split('.').next().unwrap_or(rest);
            if !names.contains(&name) {
                names.push(name);
            }
        }
    }
    names
}

/// The environment variable that sets a leaf: `DEBUSSY_` + the path in upper case with
/// `__` between sections (`agent.kind` → `DEBUSSY_AGENT__KIND`).
pub(crate) fn env_var(path: &str) -> String {
    format!("{ENV_PREFIX}{}", path.replace('.', "__").to_uppercase())
}

/// The closest of `candidates` to `word`, if it is close enough to be a likely typo.
pub(crate) fn closest<'a>(
    word: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let word = word.to_lowercase();
    candidates
        .into_iter()
        .map(|candidate| {
            (
                strsim::jaro_winkler(&word, &candidate.to_lowercase()),
                candidate,
            )
        })
        .filter(|(score, _)| *score >= 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, candidate)| candidate)
}

/// Help for a key that is not allowed in `section`: the likely typo, the section the key
/// belongs in, or the keys allowed there.
pub(crate) fn unknown_key_help(section: &str, key: &str) -> String {
    let allowed = children(section);
    if let Some(best) = closest(key, allowed.iter().copied()) {
        return format!("did you mean `{}`?", join(section, best));
    }
    let elsewhere: Vec<&str> = KEYS
        .iter()
        .map(|k| k.path)
        .chain(SECTIONS.iter().copied())
        .filter(|path| path.rsplit('.').next() == Some(key) && *path != join(section, key))
        .collect();
    if let Some(path) = elsewhere.first() {
        return format!("`{key}` belongs elsewhere: did you mean `{path}`?");
    }
    let place = if section.is_empty() {
        "at the top level".to_owned()
    } else {
        format!("in `{section}`")
    };
    let allowed: Vec<String> = allowed.iter().map(|k| format!("`{k}`")).collect();
    format!("the keys allowed {place} are: {}", allowed.join(", "))
}

/// `a`, `b` or `c`.
pub(crate) fn words_list(words: &[&str]) -> String {
    let quoted: Vec<String> = words.iter().map(|w| format!("`{w}`")).collect();
    match quoted.as_slice() {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
    }
}

/// A config file that sets the dotted `path` to `value` (YAML text), each section on a
/// line of its own.
#[cfg(test)]
pub(crate) fn nested_yaml(path: &str, value: &str) -> String {
    let mut out = String::new();
    let parts: Vec<&str> = path.split('.').collect();
    for (depth, part) in parts.iter().enumerate() {
        out.push_str(&"  ".repeat(depth));
        out.push_str(part);
        out.push(':');
        if depth + 1 == parts.len() {
            out.push(' ');
            out.push_str(value);
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Config, merge};

    /// The table and the types agree: every leaf of the serialized default is a key in
    /// the table (open maps count as one leaf), and every key is such a leaf.
    #[test]
    fn table_matches_the_default_config() {
        let value = serde_norway::to_value(Config::default()).expect("serializes");
        let mut from_types: Vec<String> = merge::leaves(&value)
            .into_iter()
            .map(|(path, _)| match governing(&path) {
                Some(k) if k.kind == Kind::Map => k.path.to_owned(),
                _ => path,
            })
            .collect();
        from_types.dedup();
        from_types.sort();
        let mut from_table: Vec<String> = KEYS.iter().map(|k| k.path.to_owned()).collect();
        from_table.sort();
        assert_eq!(from_types, from_table);
    }

    #[test]
    fn enum_words_are_the_serde_variants() {
        for k in KEYS {
            let Kind::Enum(words) = k.kind else { continue };
            for word in words {
                let yaml = nested_yaml(k.path, word);
                let parsed: Result<Config, _> = serde_norway::from_str(&yaml);
                assert!(parsed.is_ok(), "{} should accept {word}: {yaml}", k.path);
            }
            let parsed: Result<Config, _> = serde_norway::from_str(&nested_yaml(k.path, "bogus"));
            assert!(parsed.is_err(), "{} should reject bogus", k.path);
        }
    }

    #[test]
    fn children_lists_keys_and_subsections() {
        let top = children("");
        assert!(top.contains(&"model") && top.contains(&"agent") && top.contains(&"gates"));
        assert!(!top.contains(&"kind"));
        assert_eq!(children("notifications"), ["enabled", "provider", "ntfy"]);
    }

    #[test]
    fn env_var_names_nest_with_double_underscores() {
        assert_eq!(env_var("model"), "DEBUSSY_MODEL");
        assert_eq!(env_var("context_threshold"), "DEBUSSY_CONTEXT_THRESHOLD");
        assert_eq!(env_var("agent.kind"), "DEBUSSY_AGENT__KIND");
        assert_eq!(
            env_var("notifications.ntfy.topic"),
            "DEBUSSY_NOTIFICATIONS__NTFY__TOPIC"
        );
    }

    #[test]
    fn governing_finds_lists_and_open_maps() {
        assert_eq!(
            governing("agent.args[2]").map(|k| k.path),
            Some("agent.args")
        );
        assert_eq!(governing("gates.pytest").map(|k| k.path), Some("gates"));
        assert_eq!(
            governing("agent.env.TOKEN").map(|k| k.path),
            Some("agent.env")
        );
        assert_eq!(governing("timeout").map(|k| k.path), Some("timeout"));
        assert!(governing("agent").is_none());
    }

    #[test]
    fn unknown_key_help_suggests_typos_and_misplaced_keys() {
        assert_eq!(unknown_key_help("", "modle"), "did you mean `model`?");
        assert_eq!(
            unknown_key_help("agent", "knd"),
            "did you mean `agent.kind`?"
        );
        assert_eq!(
            unknown_key_help("", "topic"),
            "`topic` belongs elsewhere: did you mean `notifications.ntfy.topic`?"
        );
        let help = unknown_key_help("notifications.ntfy", "zzz");
        assert_eq!(
            help,
            "the keys allowed in `notifications.ntfy` are: `server`, `topic`"
        );
    }

    #[test]
    fn words_list_reads_naturally() {
        assert_eq!(words_list(&["a"]), "`a`");
        assert_eq!(words_list(&["a", "b", "c"]), "`a`, `b` or `c`");
    }
}
