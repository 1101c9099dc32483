//! Merging configuration layers at the YAML-value level, recording the source of every
//! leaf. Pure: values in, values out.
//!
//! Mappings merge per entry, recursively, so a project file that sets `agent.kind` keeps
//! the user file's `agent.command`, and `gates` or `agent.env` entries add to or replace
//! single entries. Anything else (scalars, lists, `null`) replaces what was below it.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;

use serde_norway::Value;

use super::Source;

/// The YAML value `text` spells, for tests.
#[cfg(test)]
pub(crate) fn yaml(text: &str) -> Value {
    serde_norway::from_str(text).expect("test yaml")
}

/// A layer built from variables or flags rather than read from a file: the keys it sets
/// and, for each leaf, the variable or flag that set it.
#[derive(Debug, Default)]
pub(crate) struct BuiltLayer {
    /// A mapping holding the keys it sets.
    pub value: Value,
    /// For each leaf path, the variable or flag that set it.
    pub sources: BTreeMap<String, Source>,
}

impl BuiltLayer {
    /// Merge it over `base` (see [`merge`]), each leaf it sets sourced to its variable or
    /// flag.
    pub(crate) fn merge_over(&self, base: &mut Value, sources: &mut BTreeMap<String, Source>) {
        let source_of = |path: &str| self.sources.get(path).cloned().unwrap_or(Source::Default);
        merge(base, &self.value, &source_of, sources);
    }
}

/// Merge `layer` over `base`. `source_of` names the source of a leaf path that the layer
/// sets; `sources` is updated so that it names exactly the leaves of the result.
pub(crate) fn merge(
    base: &mut Value,
    layer: &Value,
    source_of: &dyn Fn(&str) -> Source,
    sources: &mut BTreeMap<String, Source>,
) {
    merge_at(base, layer, "", source_of, sources);
    // A set, not a list: a file with 100 000 gates must not cost 100 000² comparisons.
    let live: BTreeSet<String> = leaves(base).into_iter().map(|(path, _)| path).collect();
    sources.retain(|path, _| live.contains(path));
    for path in live {
        sources.entry(path).or_insert(Source::Default);
    }
}

fn merge_at(
    base: &mut Value,
    layer: &Value,
    prefix: &str,
    source_of: &dyn Fn(&str) -> Source,
    sources: &mut BTreeMap<String, Source>,
) {
    if let (Value::Mapping(base_map), Value::Mapping(layer_map)) = (&mut *base, layer) {
        for (key, value) in layer_map {
            let path = join(prefix, &key_name(key));
            match base_map.get_mut(key) {
                Some(existing) => merge_at(existing, value, &path, source_of, sources),
                None => {
                    base_map.insert(key.clone(), value.clone());
                    record(value, &path, source_of, sources);
                }
            }
        }
        return;
    }
    *base = layer.clone();
    forget(prefix, sources);
    record(layer, prefix, source_of, sources);
}

/// Drop the sources of `prefix` and every leaf under it. A range over the sorted map, so
/// replacing one leaf costs a lookup, not a pass over every source.
fn forget(prefix: &str, sources: &mut BTreeMap<String, Source>) {
    sources.remove(prefix);
    let nested = format!("{prefix}.");
    let under: Vec<String> = sources
        .range::<str, _>((Bound::Included(nested.as_str()), Bound::Unbounded))
        .map(|(path, _)| path)
        .take_while(|path| path.starts_with(&nested))
        .cloned()
        .collect();
    for path in under {
        sources.remove(&path);
    }
}

fn record(
    value: &Value,
    prefix: &str,
    source_of: &dyn Fn(&str) -> Source,
    sources: &mut BTreeMap<String, Source>,
) {
    for (path, _) in leaves_at(value, prefix) {
        let source = source_of(&path);
        sources.insert(path, source);
    }
}

/// The leaves of a value with their dotted paths: scalars, lists and empty mappings.
pub(crate) fn leaves(value: &Value) -> Vec<(String, &Value)> {
    leaves_at(value, "")
}

fn leaves_at<'v>(value: &'v Value, prefix: &str) -> Vec<(String, &'v Value)> {
    match value {
        Value::Mapping(map) if !map.is_empty() => map
            .iter()
            .flat_map(|(key, value)| leaves_at(value, &join(prefix, &key_name(key))))
            .collect(),
        _ if prefix.is_empty() => Vec::new(),
        _ => vec![(prefix.to_owned(), value)],
    }
}

/// A mapping key as a path segment.
pub(crate) fn key_name(key: &Value) -> String {
    match key {
        Value::String(s) => s.clone(),
        other => serde_norway::to_string(other)
            .map(|s| s.trim_end().to_owned())
            .unwrap_or_default(),
    }
}

fn join(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        name.to_owned()
    } else {
        format!("{prefix}.{name}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn merged(layers: &[(&str, Source)]) -> (Value, BTreeMap<String, Source>) {
        let mut base = Value::Mapping(serde_norway::Mapping::new());
        let mut sources = BTreeMap::new();
        for (text, source) in layers {
            let source = source.clone();
            merge(
                &mut base,
                &yaml(text),
                &move |_| source.clone(),
                &mut sources,
            );
        }
        (base, sources)
    }

    fn user() -> Source {
        Source::UserFile("/u.yaml".into())
    }

    fn project() -> Source {
        Source::ProjectFile("/p.yaml".into())
    }

    #[test]
    fn sections_merge_per_key_with_per_leaf_sources() {
        let (value, sources) = merged(&[
            (
                "model: opus\nagent: {kind: claude, command: claude}\n",
                Source::Default,
            ),
            ("agent: {command: /bin/c}\n", user()),
            ("agent: {kind: sim}\n", project()),
        ]);
        assert_eq!(
            value,
            yaml("model: opus\nagent: {kind: sim, command: /bin/c}\n")
        );
        assert_eq!(sources["model"], Source::Default);
        assert_eq!(sources["agent.command"], user());
        assert_eq!(sources["agent.kind"], project());
        assert_eq!(sources.len(), 3);
    }

    #[test]
    fn open_maps_merge_per_entry() {
        let (value, sources) = merged(&[
            (
                "gates: {pytest: pytest, ruff: ruff check .}\n",
                Source::Default,
            ),
            ("gates: {pytest: pytest -x, mine: make check}\n", project()),
        ]);
        assert_eq!(
            value,
            yaml("gates: {pytest: pytest -x, ruff: ruff check ., mine: make check}\n")
        );
        assert_eq!(sources["gates.ruff"], Source::Default);
        assert_eq!(sources["gates.pytest"], project());
        assert_eq!(sources["gates.mine"], project());
    }

    #[test]
    fn lists_are_replaced_whole() {
        let (value, sources) = merged(&[
            ("agent: {args: [-a, -b]}\n", user()),
            ("agent: {args: [-c]}\n", project()),
        ]);
        assert_eq!(value, yaml("agent: {args: [-c]}\n"));
        assert_eq!(sources["agent.args"], project());
    }

    #[test]
    fn empty_maps_are_leaves_until_filled() {
        let (_, sources) = merged(&[("agent: {env: {}}\n", Source::Default)]);
        assert_eq!(sources["agent.env"], Source::Default);
        let (value, sources) = merged(&[
            ("agent: {env: {}}\n", Source::Default),
            ("agent: {env: {TOKEN: x}}\n", user()),
            ("agent: {env: {}}\n", project()),
        ]);
        assert_eq!(value, yaml("agent: {env: {TOKEN: x}}\n"));
        assert!(!sources.contains_key("agent.env"));
        assert_eq!(sources["agent.env.TOKEN"], user());
    }

    #[test]
    fn null_replaces_a_value() {
        let (value, sources) = merged(&[
            ("agent: {command: claude}\n", user()),
            ("agent: {command: null}\n", project()),
        ]);
        assert_eq!(value, yaml("agent: {command: null}\n"));
        assert_eq!(sources["agent.command"], project());
    }

    #[test]
    fn per_leaf_source_function_is_used() {
        let mut base = Value::Mapping(serde_norway::Mapping::new());
        let mut sources = BTreeMap::new();
        let defaults = yaml("model: opus\ntimeout: 5\n");
        merge(&mut base, &defaults, &|_| Source::Default, &mut sources);
        merge(
            &mut base,
            &yaml("model: sonnet\n"),
            &|path| Source::Env(format!("VAR_FOR_{path}")),
            &mut sources,
        );
        assert_eq!(sources["model"], Source::Env("VAR_FOR_model".into()));
        assert_eq!(sources["timeout"], Source::Default);
    }
}
