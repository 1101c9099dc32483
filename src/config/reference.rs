//! The two texts written for people that list every key: `config/default.yaml` (the
//! commented file `debussy init` writes) and `docs/config.md`. The tests here keep both
//! listing exactly the keys of the table in [`super::keys`], each with its environment
//! variable and its flag, so a key added to the table fails them until it is documented.

/// The commented default configuration file, as `debussy init` writes it.
pub const DEFAULT_FILE: &str = include_str!("../../config/default.yaml");

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::path::Path;

    use super::super::keys::{Flag, KEYS, Kind, flagged};
    use super::super::{Config, RESERVED_ENV_VARS, file, merge, schema};
    use super::*;

    const DOCS: &str = include_str!("../../docs/config.md");

    /// Every leaf path of the serialized default, with open maps (`gates`, `agent.env`)
    /// counted once, so a new key added to the types shows up here.
    fn default_key_paths() -> Vec<String> {
        let value = serde_norway::to_value(Config::default()).expect("serializes");
        let mut paths: Vec<String> = merge::leaves(&value)
            .into_iter()
            .map(|(path, _)| match schema::governing(&path) {
                Some(key) if key.kind == Kind::Map => key.path.to_owned(),
                _ => path,
            })
            .collect();
        paths.dedup();
        paths
    }

    fn table_paths() -> BTreeSet<String> {
        KEYS.iter().map(|k| k.path.to_owned()).collect()
    }

    /// The variable column of a key's row in the docs.
    fn documented_var(path: &str) -> String {
        let var = schema::env_var(path);
        if schema::leaf(path).is_some_and(|k| k.kind == Kind::Map) {
            format!("{var}__")
        } else {
            var
        }
    }

    /// The lines of the docs section that starts with the heading `title`.
    fn section(title: &str) -> Vec<&'static str> {
        DOCS.lines()
            .skip_while(|line| *line != title)
            .skip(1)
            .take_while(|line| !line.starts_with("## "))
            .collect()
    }

    /// The cells of a markdown table row, trimmed.
    fn cells(row: &str) -> Vec<&str> {
        row.trim()
            .trim_matches('|')
            .split(" | ")
            .map(str::trim)
            .collect()
    }

    #[test]
    fn default_file_is_the_default_config() {
        let layer = file::parse(Path::new("config/default.yaml"), DEFAULT_FILE)
            .expect("config/default.yaml passes every check");
        let parsed: Config = serde_norway::from_value(layer).expect("typed");
        assert_eq!(parsed, Config::default());
    }

    #[test]
    fn default_file_spells_out_every_key_with_a_comment() {
        let raw: serde_norway::Value = serde_norway::from_str(DEFAULT_FILE).expect("yaml");
        let written: Vec<String> = merge::leaves(&raw).into_iter().map(|(p, _)| p).collect();
        // `model` is left commented out: its default depends on `agent.kind`.
        for path in default_key_paths()
            .into_iter()
            .filter(|path| path != "model")
        {
            let present = written
                .iter()
                .any(|w| *w == path || w.starts_with(&format!("{path}.")));
            assert!(present, "config/default.yaml does not set `{path}`");
        }
        let lines: Vec<&str> = DEFAULT_FILE.lines().collect();
        for (index, line) in lines.iter().enumerate() {
            let trimmed = line.trim_start();
            if trimmed.is_empty() || trimmed.starts_with('#') {
                continue;
            }
            let commented = index > 0 && lines[index - 1].trim_start().starts_with('#');
            assert!(
                commented,
                "line {} has no comment above it: {line}",
                index + 1
            );
        }
    }

    #[test]
    fn default_file_sets_exactly_the_keys_of_the_table() {
        let raw: serde_norway::Value = serde_norway::from_str(DEFAULT_FILE).expect("yaml");
        let written: BTreeSet<String> = merge::leaves(&raw)
            .into_iter()
            .map(|(path, _)| schema::governing(&path).map_or(path, |key| key.path.to_owned()))
            .collect();
        let mut table = table_paths();
        // Commented out: its default depends on `agent.kind`.
        table.remove("model");
        assert_eq!(written, table);
    }

    #[test]
    fn docs_describe_every_key_and_its_variable() {
        for path in default_key_paths() {
            assert!(
                DOCS.contains(&format!("`{path}`")),
                "docs/config.md does not mention `{path}`"
            );
            let var = documented_var(&path);
            assert!(DOCS.contains(&var), "docs/config.md does not mention {var}");
        }
        for var in RESERVED_ENV_VARS {
            assert!(DOCS.contains(var), "docs/config.md does not mention {var}");
        }
    }

    #[test]
    fn docs_key_tables_list_exactly_the_keys_of_the_table_with_their_variables() {
        let mut documented = BTreeSet::new();
        for row in section("## Keys") {
            let cells = cells(row);
            // Key rows have five cells and end in the variable; the default gates'
            // table has two.
            let [key, _, _, _, var] = cells.as_slice() else {
                continue;
            };
            let Some(path) = key.strip_prefix('`').and_then(|k| k.strip_suffix('`')) else {
                continue;
            };
            let var = var.trim_matches('`');
            let expected = documented_var(path);
            assert!(
                var.starts_with(&expected),
                "docs/config.md gives `{path}` the variable {var}, not {expected}"
            );
            documented.insert(path.to_owned());
        }
        assert_eq!(documented, table_paths());
    }

    /// The flags table of `docs/config.md` as the key table spells it.
    fn flags_table() -> String {
        let mut rows = vec!["| Flag | Key |".to_owned(), "|------|-----|".to_owned()];
        for (key, flag) in flagged() {
            let path = key.path;
            rows.push(match flag {
                Flag::Value {
                    long, value_name, ..
                } => format!("| `--{long} {value_name}` | `{path}` |"),
                Flag::Switch { on, off: None } => format!("| `--{}` | `{path}` |", on.long),
                Flag::Switch { on, off: Some(off) } => {
                    let alias = off
                        .alias
                        .map_or_else(String::new, |alias| format!(" (alias `--{alias}`)"));
                    format!(
                        "| `--{}` / `--{}`{alias} | `{path}` (the last one typed wins) |",
                        on.long, off.long
                    )
                }
            });
        }
        rows.join("\n")
    }

    #[test]
    fn docs_flag_table_is_the_flags_of_the_table() {
        let documented: Vec<&str> = section("## Flags")
            .into_iter()
            .filter(|line| line.starts_with('|'))
            .collect();
        assert_eq!(documented.join("\n"), flags_table());
    }
}
