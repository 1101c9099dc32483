//! The old spelling of a profile: `model`, `agent.command`, `agent.args`, `agent.env`,
//! `agent.permissions` and `agent.model_context_window`, folded into `agents.<kind>`.
//! Pure: the merged configuration and its sources in, the same out.
//!
//! # Which profile an old key sets
//!
//! An old key belongs to the kind that `agent.kind` named in the layer that set the key,
//! or below it: a project file with `agent.command: /opt/codex/bin/codex` and
//! `agent.kind: codex` sets the Codex profile's program, and `--agent gemini` on the
//! command line then runs the Gemini CLI's own program, never Codex's. A file that sets
//! an old key and names no kind sets the profile of the kind the layers below it name
//! (Claude Code's by default).
//!
//! Between an old key and the profile's own key, the higher layer wins, as everywhere.
//! Both in the same layer with different values is an error naming the old key.
//!
//! # Afterwards
//!
//! The old keys are set back to the default kind's profile (`model` to the model that
//! kind runs), with the profile's sources, so `debussy config` and the code that reads
//! them see what the run uses.

use std::collections::BTreeMap;

use super::validate::Violation;
use super::{AgentKind, Config, Source};

/// The agent kind in effect after each layer was merged, by [`Source::layer`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LayerKinds([AgentKind; 5]);

impl LayerKinds {
    /// Every layer on `default` (the built-in kind).
    pub(crate) fn new(default: AgentKind) -> LayerKinds {
        LayerKinds([default; 5])
    }

    /// After merging `layer`, `kind` is in effect (for it and, until they say otherwise,
    /// the layers above it).
    pub(crate) fn set(&mut self, layer: u8, kind: AgentKind) {
        for slot in self.0.iter_mut().skip(usize::from(layer)) {
            *slot = kind;
        }
    }

    /// The kind in effect at `layer`.
    pub(crate) fn at(&self, layer: u8) -> AgentKind {
        self.0[usize::from(layer).min(self.0.len() - 1)]
    }
}

/// An old key with a single value, and the profile field it sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scalar {
    Model,
    Command,
    Args,
    Permissions,
    Window,
}

impl Scalar {
    const ALL: [Scalar; 5] = [
        Scalar::Model,
        Scalar::Command,
        Scalar::Args,
        Scalar::Permissions,
        Scalar::Window,
    ];

    fn old_path(self) -> &'static str {
        match self {
            Scalar::Model => "model",
            Scalar::Command => "agent.command",
            Scalar::Args => "agent.args",
            Scalar::Permissions => "agent.permissions",
            Scalar::Window => "agent.model_context_window",
        }
    }

    fn field(self) -> &'static str {
        match self {
            Scalar::Model => "model",
            Scalar::Command => "command",
            Scalar::Args => "args",
            Scalar::Permissions => "permissions",
            Scalar::Window => "model_context_window",
        }
    }

    /// Whether the old key and `kind`'s profile hold the same value.
    fn agrees(self, config: &Config, kind: AgentKind) -> bool {
        let profile = config.agents.get(kind);
        let agent = &config.agent;
        match self {
            Scalar::Model => profile.model.as_deref() == Some(config.model.as_str()),
            Scalar::Command => profile.command == agent.command,
            Scalar::Args => profile.args == agent.args,
            Scalar::Permissions => profile.permissions == agent.permissions,
            Scalar::Window => profile.model_context_window == agent.model_context_window,
        }
    }

    /// Copy the old key's value into `kind`'s profile.
    fn fold(self, config: &mut Config, kind: AgentKind) {
        let agent = &config.agent;
        let profile = config.agents.get_mut(kind);
        match self {
            Scalar::Model => profile.model = Some(config.model.clone()),
            Scalar::Command => profile.command.clone_from(&agent.command),
            Scalar::Args => profile.args.clone_from(&agent.args),
            Scalar::Permissions => profile.permissions = agent.permissions,
            Scalar::Window => profile.model_context_window = agent.model_context_window,
        }
    }

    /// Set the old key back to the default kind's profile.
    fn mirror(self, config: &mut Config) {
        let kind = config.agent.kind;
        let profile = config.agents.get(kind).clone();
        let agent = &mut config.agent;
        match self {
            Scalar::Model => {
                config.model = profile
                    .model
                    .unwrap_or_else(|| kind.default_model().to_owned());
            }
            Scalar::Command => agent.command = profile.command,
            Scalar::Args => agent.args = profile.args,
            Scalar::Permissions => agent.permissions = profile.permissions,
            Scalar::Window => agent.model_context_window = profile.model_context_window,
        }
    }
}

/// The profile key an old key sets for `kind` (`agent.command` → `agents.codex.command`).
#[must_use]
pub(crate) fn profile_path(old: &str, kind: AgentKind) -> Option<String> {
    if let Some(name) = old.strip_prefix("agent.env.") {
        return Some(format!("agents.{kind}.env.{name}"));
    }
    if old == "agent.env" {
        return Some(format!("agents.{kind}.env"));
    }
    Scalar::ALL
        .into_iter()
        .find(|scalar| scalar.old_path() == old)
        .map(|scalar| format!("agents.{kind}.{}", scalar.field()))
}

/// Fold the old keys into the profiles, then set them to the default kind's profile.
///
/// # Errors
/// A [`Violation`] at the old key when one layer sets it and the profile's own key to
/// different values.
pub(crate) fn fold(
    config: &mut Config,
    sources: &mut BTreeMap<String, Source>,
    kinds: &LayerKinds,
) -> Result<(), Violation> {
    for scalar in Scalar::ALL {
        let old = scalar.old_path();
        let Some(old_source) = sources.get(old).filter(|s| **s != Source::Default).cloned() else {
            continue;
        };
        let kind = kinds.at(old_source.layer());
        let path = format!("agents.{kind}.{}", scalar.field());
        let own = sources.get(&path).map_or(0, Source::layer);
        if own > old_source.layer() {
            continue;
        }
        if own == old_source.layer() && !scalar.agrees(config, kind) {
            return Err(conflict(old, &path, kind));
        }
        scalar.fold(config, kind);
        sources.insert(path, old_source);
    }
    fold_env(config, sources, kinds)?;
    for scalar in Scalar::ALL {
        scalar.mirror(config);
        let source = sources
            .get(&format!("agents.{}.{}", config.agent.kind, scalar.field()))
            .cloned()
            .unwrap_or(Source::Default);
        sources.insert(scalar.old_path().to_owned(), source);
    }
    mirror_env(config, sources);
    Ok(())
}

/// `agent.env.NAME` entries into `agents.<kind>.env.NAME`, entry by entry.
fn fold_env(
    config: &mut Config,
    sources: &mut BTreeMap<String, Source>,
    kinds: &LayerKinds,
) -> Result<(), Violation> {
    let entries: Vec<(String, Source)> = sources
        .iter()
        .filter_map(|(path, source)| {
            let name = path.strip_prefix("agent.env.")?;
            (*source != Source::Default).then(|| (name.to_owned(), source.clone()))
        })
        .collect();
    for (name, old_source) in entries {
        let kind = kinds.at(old_source.layer());
        let path = format!("agents.{kind}.env.{name}");
        let own = sources.get(&path).map_or(0, Source::layer);
        if own > old_source.layer() {
            continue;
        }
        let value = config.agent.env.get(&name).cloned().unwrap_or_default();
        let env = &mut config.agents.get_mut(kind).env;
        if own == old_source.layer() && env.get(&name) != Some(&value) {
            return Err(conflict(&format!("agent.env.{name}"), &path, kind));
        }
        env.insert(name, value);
        sources.remove(&format!("agents.{kind}.env"));
        sources.insert(path, old_source);
    }
    Ok(())
}

/// `agent.env` and its sources as the default kind's profile has them.
fn mirror_env(config: &mut Config, sources: &mut BTreeMap<String, Source>) {
    let kind = config.agent.kind;
    config.agent.env.clone_from(&config.agents.get(kind).env);
    sources.retain(|path, _| path != "agent.env" && !path.starts_with("agent.env."));
    let prefix = format!("agents.{kind}.env");
    let copied: Vec<(String, Source)> = sources
        .iter()
        .filter_map(|(path, source)| {
            let rest = path.strip_prefix(&prefix)?;
            (rest.is_empty() || rest.starts_with('.'))
                .then(|| (format!("agent.env{rest}"), source.clone()))
        })
        .collect();
    sources.extend(copied);
}

fn conflict(old: &str, path: &str, kind: AgentKind) -> Violation {
    Violation {
        path: old.to_owned(),
        rule: format!("and `{path}` both set the {kind} profile in the same place"),
        found: "two different values".to_owned(),
        help: format!("keep one of them: `{old}` is the old spelling of `{path}`"),
    }
}

#[cfg(test)]
#[path = "legacy_tests.rs"]
mod tests;
