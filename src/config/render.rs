//! Showing a [`Loaded`] configuration with the source of each value: YAML with a
//! `# from: …` comment on every leaf, or JSON `{config, sources}`. The old spelling of
//! the default kind's profile (`model`, `agent.command`, …) says which profile key it
//! stands for.
//!
//! The YAML is valid and reads back to the same [`Config`](super::Config).

use std::collections::BTreeMap;

use serde_norway::Value;

use super::legacy::profile_path;
use super::merge::key_name;
use super::{AgentKind, Loaded, Source};

/// The effective configuration as YAML, each leaf followed by `# from: <source>`.
#[must_use]
pub fn to_annotated_yaml(loaded: &Loaded) -> String {
    let value = match serde_norway::to_value(&loaded.config) {
        Ok(value) => value,
        Err(err) => return format!("# failed to show the configuration: {err}\n"),
    };
    let mut lines: Vec<(String, Option<String>)> = Vec::new();
    let kind = loaded.config.agent.kind;
    write_mapping(&value, "", 0, &loaded.sources, kind, &mut lines);
    let width = lines
        .iter()
        .filter(|(_, comment)| comment.is_some())
        .map(|(text, _)| text.chars().count())
        .max()
        .unwrap_or(0)
        .min(56);
    let mut out = String::new();
    for (text, comment) in lines {
        out.push_str(&text);
        if let Some(comment) = comment {
            let pad = width.saturating_sub(text.chars().count()) + 2;
            out.push_str(&" ".repeat(pad));
            out.push_str("# from: ");
            out.push_str(&comment);
        }
        out.push('\n');
    }
    out
}

fn write_mapping(
    value: &Value,
    prefix: &str,
    depth: usize,
    sources: &BTreeMap<String, Source>,
    kind: AgentKind,
    lines: &mut Vec<(String, Option<String>)>,
) {
    let Value::Mapping(map) = value else {
        return;
    };
    let indent = "  ".repeat(depth);
    for (key, child) in map {
        let name = key_name(key);
        let path = if prefix.is_empty() {
            name.clone()
        } else {
            format!("{prefix}.{name}")
        };
        let shown_key = inline(&Value::String(name));
        match child {
            Value::Mapping(entries) if !entries.is_empty() => {
                lines.push((format!("{indent}{shown_key}:"), None));
                write_mapping(child, &path, depth + 1, sources, kind, lines);
            }
            leaf => {
                let mut source = sources
                    .get(&path)
                    .map_or_else(|| "default".to_owned(), ToString::to_string);
                if let Some(own) = profile_path(&path, kind) {
                    source.push_str(&format!("; the {kind} profile's `{own}`"));
                }
                lines.push((
                    format!("{indent}{shown_key}: {}", inline(leaf)),
                    Some(source),
                ));
            }
        }
    }
}

/// A value on one line: plain or quoted scalars, JSON-style flow lists and `{}`.
fn inline(value: &Value) -> String {
    match value {
        Value::Sequence(_) | Value::Mapping(_) => {
            serde_json::to_string(value).unwrap_or_else(|_| "null".to_owned())
        }
        scalar => match serde_norway::to_string(scalar) {
            Ok(text) if !text.trim_end().contains('\n') => text.trim_end().to_owned(),
            _ => serde_json::to_string(scalar).unwrap_or_else(|_| "null".to_owned()),
        },
    }
}

/// The effective configuration as JSON: `{"project_root", "config", "sources"}`, where
/// `sources` maps each dotted leaf path to `{"kind": …, "detail": …}`.
#[must_use]
pub fn to_json(loaded: &Loaded) -> serde_json::Value {
    serde_json::json!({
        "project_root": loaded.project_root,
        "config": loaded.config,
        "sources": loaded.sources,
    })
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::config::Config;

    fn sample() -> Loaded {
        let mut loaded = Loaded::defaults(Path::new("/p"));
        loaded.config.model = "sonnet: fast".into();
        loaded.config.commit_message_template = "line one\nline two {status}".into();
        loaded.config.agent.args = vec!["--a".into(), "two words".into()];
        loaded.config.agent.env.insert("TOKEN".into(), "123".into());
        loaded
            .config
            .gates
            .insert("hash".into(), "echo a #b".into());
        loaded.sources.remove("agent.env");
        loaded.sources.insert(
            "agent.env.TOKEN".into(),
            Source::Env("DEBUSSY_AGENT__ENV__TOKEN".into()),
        );
        loaded.sources.insert(
            "model".into(),
            Source::ProjectFile("/p/.debussy/config.yaml".into()),
        );
        loaded
            .sources
            .insert("agent.args".into(), Source::Flag("--agent-command".into()));
        loaded
    }

    #[test]
    fn yaml_reads_back_to_the_same_config() {
        let loaded = sample();
        let yaml = to_annotated_yaml(&loaded);
        let back: Config = serde_norway::from_str(&yaml).expect("valid yaml");
        assert_eq!(back, loaded.config);
    }

    #[test]
    fn every_leaf_line_names_its_source() {
        let yaml = to_annotated_yaml(&sample());
        let model = yaml
            .lines()
            .find(|l| l.starts_with("model:"))
            .expect("model line");
        assert!(
            model.ends_with(
                "# from: project file /p/.debussy/config.yaml; the claude profile's `agents.claude.model`"
            ),
            "{model}"
        );
        let token = yaml
            .lines()
            .find(|l| l.contains("TOKEN"))
            .expect("token line");
        assert!(token.starts_with("    TOKEN: '123'"), "{token}");
        assert!(
            token.ends_with(
                "# from: env DEBUSSY_AGENT__ENV__TOKEN; the claude profile's `agents.claude.env.TOKEN`"
            ),
            "{token}"
        );
        let kind = yaml
            .lines()
            .find(|l| l.trim_start().starts_with("kind:"))
            .expect("kind");
        assert!(kind.ends_with("# from: default"), "{kind}");
        assert!(yaml.contains("agent:\n"));
        let section = yaml
            .lines()
            .find(|l| l.starts_with("agent:"))
            .expect("agent");
        assert!(!section.contains('#'));
    }

    #[test]
    fn json_has_config_and_sources() {
        let json = to_json(&sample());
        assert_eq!(json["config"]["model"], "sonnet: fast");
        assert_eq!(json["sources"]["agent.args"]["kind"], "flag");
        assert_eq!(
            json["sources"]["agent.kind"],
            serde_json::json!({"kind": "default"})
        );
        assert_eq!(json["project_root"], "/p");
    }
}
