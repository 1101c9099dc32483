//! Where each configuration value came from: the [`Source`] of every leaf, and the
//! [`Loaded`] result that carries them beside the merged [`Config`].
//!
//! A leaf is a scalar, a list (lists are replaced whole, never merged) or an empty map.
//! Leaves are named by dotted key paths: `agent.kind`, `gates.pytest`, `agent.env.TOKEN`.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::Config;
use super::merge;

/// Where a configuration value came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", content = "detail", rename_all = "snake_case")]
pub enum Source {
    /// The built-in default.
    Default,
    /// The user file (`$XDG_CONFIG_HOME/debussy/config.yaml`).
    UserFile(PathBuf),
    /// The project file (`.debussy/config.yaml`) or the file given with `--config`.
    ProjectFile(PathBuf),
    /// A `DEBUSSY_*` environment variable.
    Env(String),
    /// A command-line flag.
    Flag(String),
}

impl Source {
    /// Where the source sits among the layers, lowest first: the default 0, the user
    /// file 1, the project file 2, the environment 3, the flags 4. A higher layer
    /// overrides a lower one.
    #[must_use]
    pub fn layer(&self) -> u8 {
        match self {
            Source::Default => 0,
            Source::UserFile(_) => 1,
            Source::ProjectFile(_) => 2,
            Source::Env(_) => 3,
            Source::Flag(_) => 4,
        }
    }
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Default => f.write_str("default"),
            Source::UserFile(path) => write!(f, "user file {}", path.display()),
            Source::ProjectFile(path) => write!(f, "project file {}", path.display()),
            Source::Env(var) => write!(f, "env {var}"),
            Source::Flag(flag) => write!(f, "flag {flag}"),
        }
    }
}

/// A loaded configuration, with the origin of every leaf value.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// The merged configuration.
    pub config: Config,
    /// For each dotted key path (`agent.kind`), the layer that set it.
    pub sources: BTreeMap<String, Source>,
    /// The project root: the directory holding `.debussy/`, else the starting directory.
    pub project_root: PathBuf,
}

impl Loaded {
    /// The configuration with only built-in defaults, rooted at `project_root`; every
    /// leaf's source is [`Source::Default`].
    #[must_use]
    pub fn defaults(project_root: &Path) -> Self {
        Loaded {
            config: Config::default(),
            sources: default_sources(),
            project_root: project_root.to_path_buf(),
        }
    }

    /// Where the value at a dotted key path came from; `None` for a path that is not a
    /// leaf of this configuration.
    #[must_use]
    pub fn source_of(&self, path: &str) -> Option<&Source> {
        self.sources.get(path)
    }
}

/// Every leaf of [`Config::default`], each from [`Source::Default`].
fn default_sources() -> BTreeMap<String, Source> {
    match serde_norway::to_value(Config::default()) {
        Ok(value) => merge::leaves(&value)
            .into_iter()
            .map(|(path, _)| (path, Source::Default))
            .collect(),
        // Serializing plain data into a YAML value cannot fail; an empty map is still a
        // truthful (if unhelpful) answer.
        Err(_) => BTreeMap::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_name_every_leaf() {
        let loaded = Loaded::defaults(Path::new("/p"));
        assert_eq!(loaded.source_of("agent.kind"), Some(&Source::Default));
        assert_eq!(loaded.source_of("gates.pytest"), Some(&Source::Default));
        assert_eq!(loaded.source_of("agent.env"), Some(&Source::Default));
        assert_eq!(loaded.source_of("agent"), None);
    }

    #[test]
    fn sources_serialize_as_kind_and_detail() {
        let json = serde_json::to_value(Source::Flag("--agent".into())).expect("serializes");
        assert_eq!(
            json,
            serde_json::json!({"kind": "flag", "detail": "--agent"})
        );
        let json = serde_json::to_value(Source::Default).expect("serializes");
        assert_eq!(json, serde_json::json!({"kind": "default"}));
    }

    #[test]
    fn sources_read_as_words() {
        assert_eq!(
            Source::Env("DEBUSSY_MODEL".into()).to_string(),
            "env DEBUSSY_MODEL"
        );
        assert_eq!(
            Source::ProjectFile("/p/.debussy/config.yaml".into()).to_string(),
            "project file /p/.debussy/config.yaml"
        );
    }
}
