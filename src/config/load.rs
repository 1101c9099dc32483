//! Finding the configuration layers and loading them into a [`Loaded`].
//!
//! [`load`] takes everything it depends on in [`LoadOptions`] (the starting directory,
//! the user's config home, the environment, the typed flags), so tests drive it without
//! touching the process's real environment; [`LoadOptions::from_process`] fills them in
//! for the binary. It reads only the two configuration files.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_norway::Value;

use super::check::range_complaint;
use super::error::{ConfigError, Invalid};
use super::legacy::{self, LayerKinds};
use super::merge::{key_name, merge};
use super::schema::{ENV_PREFIX, RESERVED_ENV_VARS};
use super::{AgentKind, Config, Loaded, Overrides, Source, env, file, flags, validate};

/// The directory under a project root that holds debussy's files.
pub(crate) const PROJECT_DIR: &str = ".debussy";
/// The configuration file's name, in the project directory and in the user's.
pub(crate) const FILE_NAME: &str = "config.yaml";

/// Everything [`load`] depends on.
#[derive(Debug, Clone, Default)]
pub struct LoadOptions<'a> {
    /// Where the search for `.debussy/config.yaml` starts (normally the current directory).
    pub cwd: PathBuf,
    /// The user's configuration home (`$XDG_CONFIG_HOME`, else `~/.config`); the user
    /// file is `debussy/config.yaml` under it. `None` skips the user file.
    pub config_home: Option<PathBuf>,
    /// The file given with `--config`, read instead of the project file; relative paths
    /// are relative to `cwd`.
    pub config_file: Option<PathBuf>,
    /// Environment variables; only `DEBUSSY_*` ones are read.
    pub env: BTreeMap<String, String>,
    /// The configuration flags typed, when the command has them.
    pub overrides: Option<&'a Overrides>,
}

impl<'a> LoadOptions<'a> {
    /// Options from the running process: `cwd`, the XDG config home, and the `DEBUSSY_*`
    /// environment variables.
    ///
    /// # Errors
    ///
    /// [`ConfigError::EnvEncoding`] when a `DEBUSSY_*` variable is not UTF-8.
    pub fn from_process(
        cwd: PathBuf,
        config_file: Option<PathBuf>,
        overrides: Option<&'a Overrides>,
    ) -> Result<Self, ConfigError> {
        use etcetera::BaseStrategy as _;
        let config_home = match etcetera::choose_base_strategy() {
            Ok(strategy) => Some(strategy.config_dir()),
            Err(err) => {
                tracing::debug!(%err, "no home directory: skipping the user config file");
                None
            }
        };
        let mut env = BTreeMap::new();
        for (name, value) in std::env::vars_os() {
            let name = name.to_string_lossy().into_owned();
            if !name.starts_with(ENV_PREFIX) || RESERVED_ENV_VARS.contains(&name.as_str()) {
                continue;
            }
            match value.into_string() {
                Ok(value) => {
                    env.insert(name, value);
                }
                Err(_) => return Err(ConfigError::EnvEncoding { var: name }),
            }
        }
        Ok(LoadOptions {
            cwd,
            config_home,
            config_file,
            env,
            overrides,
        })
    }
}

/// Which files configure this invocation, and the project root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Discovery {
    /// Where the user file is looked for, whether or not it exists; `None` without a
    /// config home.
    pub user_file: Option<PathBuf>,
    /// The project file that is read: the `--config` file, else the nearest
    /// `.debussy/config.yaml` walking up from the starting directory; `None` if neither.
    pub project_file: Option<PathBuf>,
    /// The project root: the directory holding that `.debussy/config.yaml`, else the
    /// nearest directory holding a `.debussy/` directory, else the starting directory.
    pub project_root: PathBuf,
}

/// Find the configuration files and the project root.
///
/// # Errors
///
/// [`ConfigError::Missing`] when the `--config` file does not exist.
pub fn discover(options: &LoadOptions<'_>) -> Result<Discovery, ConfigError> {
    let cwd = options.cwd.as_path();
    let user_file = options
        .config_home
        .as_ref()
        .map(|home| home.join("debussy").join(FILE_NAME));
    let found = cwd
        .ancestors()
        .map(|dir| dir.join(PROJECT_DIR).join(FILE_NAME))
        .find(|candidate| candidate.is_file());
    let found_root = found
        .as_deref()
        .and_then(Path::parent)
        .and_then(Path::parent)
        .map(Path::to_path_buf);
    let project_root = found_root.unwrap_or_else(|| {
        cwd.ancestors()
            .find(|dir| dir.join(PROJECT_DIR).is_dir())
            .unwrap_or(cwd)
            .to_path_buf()
    });
    let project_file = match &options.config_file {
        Some(given) => {
            let path = cwd.join(given);
            // A link that leads nowhere (a loop, a dangling one) is there: reading it
            // says why it cannot be read.
            if path.symlink_metadata().is_err() {
                return Err(ConfigError::Missing {
                    path: given.clone(),
                });
            }
            Some(path)
        }
        None => found,
    };
    Ok(Discovery {
        user_file,
        project_file,
        project_root,
    })
}

/// Load the effective configuration: defaults, then the user file, the project file (or
/// `--config`), the `DEBUSSY_*` variables and the typed flags, each checked on its own
/// and merged over the ones before it.
///
/// # Errors
///
/// A [`ConfigError`] for a file that cannot be read, and [`ConfigError::Invalid`] for
/// malformed YAML, an unknown key or variable, a value of the wrong type or out of range.
pub fn load(options: &LoadOptions<'_>) -> Result<Loaded, ConfigError> {
    let discovery = discover(options)?;
    let defaults = serde_norway::to_value(Config::default()).map_err(|err| ConfigError::Merge {
        message: err.to_string(),
    })?;
    let mut merged = Value::Mapping(serde_norway::Mapping::new());
    let mut sources = BTreeMap::new();
    merge(&mut merged, &defaults, &|_| Source::Default, &mut sources);

    let mut texts: Vec<(PathBuf, String)> = Vec::new();
    let files = [
        discovery
            .user_file
            .clone()
            .map(|p| (p.clone(), Source::UserFile(p))),
        discovery
            .project_file
            .clone()
            .map(|p| (p.clone(), Source::ProjectFile(p))),
    ];
    let mut kinds = LayerKinds::new(Config::default().agent.kind);
    for (path, source) in files.into_iter().flatten() {
        let Some(text) = read_if_present(&path, matches!(source, Source::UserFile(_)))? else {
            continue;
        };
        let layer = file::parse(&path, &text)?;
        merge(&mut merged, &layer, &|_| source.clone(), &mut sources);
        kinds.set(source.layer(), merged_kind(&merged));
        texts.push((path, text));
    }

    let gate_names: Vec<String> = match merged.get("gates") {
        Some(Value::Mapping(gates)) => gates.keys().map(key_name).collect(),
        _ => Vec::new(),
    };
    env::layer(&options.env, &gate_names)?.merge_over(&mut merged, &mut sources);
    kinds.set(Source::Env(String::new()).layer(), merged_kind(&merged));
    if let Some(overrides) = options.overrides {
        flags::layer(overrides)?.merge_over(&mut merged, &mut sources);
        kinds.set(Source::Flag(String::new()).layer(), merged_kind(&merged));
    }

    let mut config: Config =
        serde_norway::from_value(merged).map_err(|err| ConfigError::Merge {
            message: err.to_string(),
        })?;
    // The old `agent.*` keys and `model` are the profile of the kind named where they
    // were set; afterwards they show the default kind's profile (its model when none is
    // set: a Claude one is no use to another agent).
    if let Err(violation) = legacy::fold(&mut config, &mut sources, &kinds) {
        return Err(attribute(&violation, &sources, &texts));
    }
    if let Some(violation) = validate::check_combined(&config).first() {
        return Err(attribute(violation, &sources, &texts));
    }
    Ok(Loaded {
        config,
        sources,
        project_root: discovery.project_root,
    })
}

/// The agent kind the merged layers name so far (the layers were checked, so the word is
/// a kind; the default otherwise).
fn merged_kind(merged: &Value) -> AgentKind {
    merged
        .get("agent")
        .and_then(|agent| agent.get("kind"))
        .and_then(Value::as_str)
        .and_then(AgentKind::from_word)
        .unwrap_or_default()
}

/// A file's text, or `None` when an optional file (the user file) does not exist. Only a
/// regular file is read (a FIFO or a device is refused at once, never waited on), and at
/// most [`CONFIG_LIMIT`](crate::files::CONFIG_LIMIT) bytes of it.
fn read_if_present(path: &Path, optional: bool) -> Result<Option<String>, ConfigError> {
    match crate::files::read_text_limited(path, crate::files::CONFIG_LIMIT) {
        Ok(text) => Ok(Some(text)),
        Err(err) if optional && err.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(ConfigError::Read {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// Point a failed cross-key check at the layer that set the key.
fn attribute(
    violation: &validate::Violation,
    sources: &BTreeMap<String, Source>,
    texts: &[(PathBuf, String)],
) -> ConfigError {
    let complaint = range_complaint(violation);
    let invalid = match sources.get(&violation.path) {
        Some(Source::UserFile(path) | Source::ProjectFile(path)) => {
            match texts.iter().find(|(p, _)| p == path) {
                Some((path, text)) => file::at_value(complaint, &violation.path, path, text),
                None => {
                    return ConfigError::Merge {
                        message: complaint.message,
                    };
                }
            }
        }
        Some(Source::Env(var)) => Invalid::in_env(complaint, var),
        Some(Source::Flag(flag)) => Invalid::in_flag(complaint, flag),
        Some(Source::Default) | None => {
            return ConfigError::Merge {
                message: complaint.message,
            };
        }
    };
    invalid.into()
}

#[cfg(test)]
mod tests {
    use std::fs;

    use super::*;
    use crate::config::{AgentKind, Origin, Problem, Seconds};

    struct Project {
        _temp: tempfile::TempDir,
        root: PathBuf,
        home: PathBuf,
    }

    impl Project {
        fn new() -> Project {
            let temp = tempfile::tempdir().expect("temp dir");
            let root = temp.path().join("project");
            let home = temp.path().join("config-home");
            fs::create_dir_all(&root).expect("mkdir");
            fs::create_dir_all(&home).expect("mkdir");
            Project {
                _temp: temp,
                root,
                home,
            }
        }

        fn user(&self, text: &str) -> PathBuf {
            let path = self.home.join("debussy").join(FILE_NAME);
            fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
            fs::write(&path, text).expect("write");
            path
        }

        fn project(&self, text: &str) -> PathBuf {
            let path = self.root.join(PROJECT_DIR).join(FILE_NAME);
            fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
            fs::write(&path, text).expect("write");
            path
        }

        fn options(&self) -> LoadOptions<'static> {
            LoadOptions {
                cwd: self.root.clone(),
                config_home: Some(self.home.clone()),
                ..LoadOptions::default()
            }
        }
    }

    fn env(vars: &[(&str, &str)]) -> BTreeMap<String, String> {
        vars.iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn defaults_alone() {
        let p = Project::new();
        let loaded = load(&p.options()).expect("loads");
        assert_eq!(loaded.config, Config::default());
        assert_eq!(loaded.project_root, p.root);
        assert!(loaded.sources.values().all(|s| *s == Source::Default));
        assert_eq!(
            loaded.sources.len(),
            Loaded::defaults(&p.root).sources.len()
        );
    }

    #[test]
    fn layers_stack_in_order_with_per_leaf_sources() {
        let p = Project::new();
        let user =
            p.user("model: sonnet\ntimeout: 100\nmax_retries: 5\nagent: {command: /u/agent}\n");
        let project = p.project("timeout: 200\nmax_retries: 6\ngates: {mine: make check}\n");
        let overrides: Overrides =
            [("max_retries".to_owned(), crate::config::FlagValue::Whole(8))].into();
        let options = LoadOptions {
            env: env(&[("DEBUSSY_MAX_RETRIES", "7"), ("DEBUSSY_AGENT__KIND", "sim")]),
            overrides: Some(&overrides),
            ..p.options()
        };
        let loaded = load(&options).expect("loads");
        let c = &loaded.config;
        assert_eq!(
            (c.model.as_str(), c.timeout, c.max_retries),
            ("opus", Seconds(200), 8)
        );
        assert_eq!(c.agent.kind, AgentKind::Sim);
        // The user file's model and program are Claude Code's (the kind it names): the
        // sim agent runs its own.
        assert_eq!(c.agents.claude.model.as_deref(), Some("sonnet"));
        assert_eq!(c.agents.claude.command.as_deref(), Some("/u/agent"));
        assert_eq!(c.agent.command, None);
        assert_eq!(c.gates["mine"], "make check");
        assert_eq!(c.gates["pytest"], "pytest", "default gates stay");
        let s = &loaded.sources;
        assert_eq!(s["model"], Source::Default);
        assert_eq!(s["agents.claude.model"], Source::UserFile(user.clone()));
        assert_eq!(s["agents.claude.command"], Source::UserFile(user));
        assert_eq!(s["timeout"], Source::ProjectFile(project.clone()));
        assert_eq!(s["gates.mine"], Source::ProjectFile(project));
        assert_eq!(s["gates.pytest"], Source::Default);
        assert_eq!(s["agent.kind"], Source::Env("DEBUSSY_AGENT__KIND".into()));
        assert_eq!(s["max_retries"], Source::Flag("--max-retries".into()));
        assert_eq!(s["context_threshold"], Source::Default);
    }

    #[test]
    fn untyped_flags_never_mask_files() {
        let p = Project::new();
        p.project("auto_commit: false\ninteractive: false\ncontext_threshold: 50\n");
        let overrides = Overrides::default();
        let options = LoadOptions {
            overrides: Some(&overrides),
            ..p.options()
        };
        let loaded = load(&options).expect("loads");
        assert!(!loaded.config.auto_commit);
        assert!(!loaded.config.interactive);
        assert!(loaded.config.context_threshold == crate::config::ContextLimit::At(50.0));
    }

    #[test]
    fn a_file_saved_with_a_byte_order_mark_and_crlf_line_ends_loads() {
        let p = Project::new();
        p.project("\u{feff}context_threshold: 85\r\nagent:\r\n  kind: sim\r\n");
        let loaded = load(&p.options()).expect("loads");
        assert!(loaded.config.context_threshold == crate::config::ContextLimit::At(85.0));
        assert_eq!(loaded.config.agent.kind, AgentKind::Sim);
    }

    #[test]
    fn the_project_file_is_found_from_a_subdirectory() {
        let p = Project::new();
        let project = p.project("model: haiku\n");
        let deep = p.root.join("src").join("deep");
        fs::create_dir_all(&deep).expect("mkdir");
        let options = LoadOptions {
            cwd: deep,
            ..p.options()
        };
        let loaded = load(&options).expect("loads");
        assert_eq!(loaded.config.model, "haiku");
        assert_eq!(loaded.project_root, p.root);
        assert_eq!(loaded.sources["model"], Source::ProjectFile(project));
    }

    #[test]
    fn a_bare_debussy_directory_marks_the_root() {
        let p = Project::new();
        fs::create_dir_all(p.root.join(PROJECT_DIR)).expect("mkdir");
        let deep = p.root.join("a");
        fs::create_dir_all(&deep).expect("mkdir");
        let discovery = discover(&LoadOptions {
            cwd: deep.clone(),
            ..p.options()
        })
        .expect("discovers");
        assert_eq!(discovery.project_root, p.root);
        assert_eq!(discovery.project_file, None);
        let lone = tempfile::tempdir().expect("temp");
        let discovery = discover(&LoadOptions {
            cwd: lone.path().to_path_buf(),
            ..LoadOptions::default()
        })
        .expect("discovers");
        assert_eq!(discovery.project_root, lone.path());
        assert_eq!(discovery.user_file, None);
    }

    #[test]
    fn config_flag_replaces_the_project_file() {
        let p = Project::new();
        p.project("model: from-project\ntimeout: 9\n");
        let other = p.root.join("other.yaml");
        fs::write(&other, "model: from-flag\n").expect("write");
        let options = LoadOptions {
            config_file: Some(PathBuf::from("other.yaml")),
            ..p.options()
        };
        let loaded = load(&options).expect("loads");
        assert_eq!(loaded.config.model, "from-flag");
        assert_eq!(
            loaded.config.timeout,
            Seconds(1800),
            "the project file is not read"
        );
        assert_eq!(loaded.sources["model"], Source::ProjectFile(other));
        assert_eq!(loaded.project_root, p.root);
    }

    #[test]
    fn a_missing_config_flag_file_is_an_error() {
        let p = Project::new();
        let options = LoadOptions {
            config_file: Some(PathBuf::from("nope.yaml")),
            ..p.options()
        };
        let err = load(&options).expect_err("missing");
        assert!(matches!(&err, ConfigError::Missing { path } if path == Path::new("nope.yaml")));
        assert_eq!(err.to_string(), "config file nope.yaml does not exist");
        let looped = p.root.join("loop.yaml");
        std::os::unix::fs::symlink(&looped, &looped).expect("a link to itself");
        let options = LoadOptions {
            config_file: Some(looped),
            ..p.options()
        };
        let err = load(&options).expect_err("a loop");
        assert!(
            matches!(&err, ConfigError::Read { source, .. } if source.raw_os_error() == Some(nix::libc::ELOOP)),
            "{err:?}"
        );
    }

    #[test]
    fn an_unreadable_file_is_an_error() {
        let p = Project::new();
        fs::create_dir_all(p.home.join("debussy").join(FILE_NAME)).expect("a directory");
        let err = load(&p.options()).expect_err("unreadable");
        assert!(matches!(err, ConfigError::Read { .. }), "{err:?}");
    }

    #[test]
    fn errors_in_any_layer_stop_loading() {
        let p = Project::new();
        let user = p.user("timeout: 0\n");
        let err = load(&p.options()).expect_err("user file");
        let invalid = err.invalid().expect("invalid");
        assert_eq!(invalid.problem, Problem::OutOfRange);
        assert!(
            matches!(&invalid.origin, Origin::File { path, line: 1, column: 10 } if *path == user)
        );

        let p = Project::new();
        p.project("modle: x\n");
        let err = load(&p.options()).expect_err("project file");
        assert_eq!(err.invalid().map(|i| i.problem), Some(Problem::UnknownKey));

        let p = Project::new();
        let options = LoadOptions {
            env: env(&[("DEBUSSY_STOP_GRACE", "1")]),
            ..p.options()
        };
        let err = load(&options).expect_err("env");
        assert_eq!(
            err.invalid().map(|i| i.problem),
            Some(Problem::UnknownVariable)
        );
    }

    #[test]
    fn cross_key_checks_point_at_the_layer_that_set_the_key() {
        let p = Project::new();
        p.user("notifications:\n  enabled: true\n");
        let project = p.project("notifications:\n  provider: ntfy\n");
        let err = load(&p.options()).expect_err("no topic");
        let invalid = err.invalid().expect("invalid");
        assert_eq!(invalid.key.as_deref(), Some("notifications.provider"));
        assert!(
            matches!(&invalid.origin, Origin::File { path, line: 2, column: 13 } if *path == project),
            "{:?}",
            invalid.origin
        );
        let options = LoadOptions {
            env: env(&[("DEBUSSY_NOTIFICATIONS__NTFY__TOPIC", "builds")]),
            ..p.options()
        };
        assert!(load(&options).is_ok());
        let p = Project::new();
        let options = LoadOptions {
            env: env(&[
                ("DEBUSSY_NOTIFICATIONS__ENABLED", "1"),
                ("DEBUSSY_NOTIFICATIONS__PROVIDER", "ntfy"),
            ]),
            ..p.options()
        };
        let err = load(&options).expect_err("no topic");
        assert!(matches!(
            &err.invalid().expect("invalid").origin,
            Origin::Env { var } if var == "DEBUSSY_NOTIFICATIONS__PROVIDER"
        ));
    }

    #[test]
    fn env_gate_variables_reach_gates_defined_in_files() {
        let p = Project::new();
        p.project("gates:\n  my_check: make check\n");
        let options = LoadOptions {
            env: env(&[("DEBUSSY_GATES__MY_CHECK", "make check-all")]),
            ..p.options()
        };
        let loaded = load(&options).expect("loads");
        assert_eq!(loaded.config.gates["my_check"], "make check-all");
        assert!(!loaded.config.gates.contains_key("my-check"));
    }
}
