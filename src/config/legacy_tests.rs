use std::collections::BTreeMap;
use std::fs;
use std::path::PathBuf;

use super::*;
use crate::config::{AgentPermissions, FlagValue, LoadOptions, Loaded, Overrides, load};

/// A project with a user file and a project file, loaded with `env` and `flags`.
struct Layers {
    _temp: tempfile::TempDir,
    root: PathBuf,
    home: PathBuf,
}

impl Layers {
    fn new(user: &str, project: &str) -> Layers {
        let temp = tempfile::tempdir().expect("temp dir");
        let root = temp.path().join("project");
        let home = temp.path().join("home");
        fs::create_dir_all(root.join(".debussy")).expect("mkdir");
        fs::create_dir_all(home.join("debussy")).expect("mkdir");
        fs::write(root.join(".debussy/config.yaml"), project).expect("write");
        fs::write(home.join("debussy/config.yaml"), user).expect("write");
        Layers {
            _temp: temp,
            root,
            home,
        }
    }

    fn load(&self, env: &[(&str, &str)], flags: &[(&str, FlagValue)]) -> Loaded {
        self.try_load(env, flags).expect("loads")
    }

    fn try_load(
        &self,
        env: &[(&str, &str)],
        flags: &[(&str, FlagValue)],
    ) -> Result<Loaded, crate::config::ConfigError> {
        let overrides: Overrides = flags
            .iter()
            .map(|(key, value)| ((*key).to_owned(), value.clone()))
            .collect();
        load(&LoadOptions {
            cwd: self.root.clone(),
            config_home: Some(self.home.clone()),
            config_file: None,
            env: env
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect::<BTreeMap<_, _>>(),
            overrides: Some(&overrides),
        })
    }

    fn project(&self) -> Source {
        Source::ProjectFile(self.root.join(".debussy/config.yaml"))
    }
}

fn text(word: &str) -> FlagValue {
    FlagValue::Text(word.to_owned())
}

#[test]
fn an_old_command_belongs_to_the_kind_named_where_it_was_set() {
    // The case: a Codex program in the file, `--agent gemini` on the command line.
    let layers = Layers::new(
        "",
        "agent:\n  kind: codex\n  command: /opt/codex/bin/codex\n",
    );
    let loaded = layers.load(&[], &[("agent.kind", text("gemini"))]);
    let config = &loaded.config;
    assert_eq!(config.agent.kind, AgentKind::Gemini);
    assert_eq!(
        config.agents.codex.command.as_deref(),
        Some("/opt/codex/bin/codex")
    );
    assert_eq!(config.agents.gemini.command, None, "gemini runs its own");
    assert_eq!(config.agent.command, None, "agent.* shows gemini's profile");
    assert_eq!(loaded.sources["agents.codex.command"], layers.project());
    assert_eq!(loaded.sources["agent.command"], Source::Default);

    // A file that names no kind sets the kind the layers below name: Claude Code's.
    let layers = Layers::new("", "agent:\n  command: /opt/codex/bin/codex\n");
    let loaded = layers.load(&[], &[("agent.kind", text("gemini"))]);
    assert_eq!(
        loaded.config.agents.claude.command.as_deref(),
        Some("/opt/codex/bin/codex")
    );
    assert_eq!(loaded.config.agents.gemini.command, None);
}

#[test]
fn old_keys_and_the_kind_in_one_layer_go_together() {
    let layers = Layers::new("agent:\n  kind: codex\n", "");
    let loaded = layers.load(
        &[],
        &[
            ("agent.kind", text("gemini")),
            ("agent.command", text("/opt/gemini")),
        ],
    );
    assert_eq!(
        loaded.config.agents.gemini.command.as_deref(),
        Some("/opt/gemini")
    );
    assert_eq!(loaded.config.agent.command.as_deref(), Some("/opt/gemini"));
    assert_eq!(
        loaded.sources["agent.command"],
        Source::Flag("--agent-command".into())
    );
    // A flag alone joins the kind the files name.
    let loaded = layers.load(&[], &[("agent.command", text("/opt/codex"))]);
    assert_eq!(
        loaded.config.agents.codex.command.as_deref(),
        Some("/opt/codex")
    );
}

#[test]
fn the_higher_layer_wins_between_an_old_key_and_the_profile_key() {
    let layers = Layers::new(
        "agents:\n  claude:\n    args: [--from-user]\n",
        "agent:\n  args: [--from-project]\n  model_context_window: 500000\n",
    );
    let loaded = layers.load(&[], &[]);
    assert_eq!(loaded.config.agents.claude.args, ["--from-project"]);
    assert_eq!(
        loaded.config.agents.claude.model_context_window,
        Some(500_000)
    );
    let loaded = layers.load(&[("DEBUSSY_AGENTS__CLAUDE__ARGS", "--from-env")], &[]);
    assert_eq!(loaded.config.agents.claude.args, ["--from-env"]);
    assert_eq!(loaded.config.agent.args, ["--from-env"]);
    assert_eq!(
        loaded.sources["agent.args"],
        Source::Env("DEBUSSY_AGENTS__CLAUDE__ARGS".into())
    );
}

#[test]
fn one_layer_setting_both_spellings_differently_is_an_error_at_the_old_key() {
    let layers = Layers::new(
        "",
        "agent:\n  permissions: bypass\nagents:\n  claude:\n    permissions: ask\n",
    );
    let err = layers.try_load(&[], &[]).expect_err("conflict");
    let invalid = err.invalid().expect("invalid");
    assert_eq!(invalid.key.as_deref(), Some("agent.permissions"));
    assert!(
        matches!(&invalid.origin, crate::config::Origin::File { line: 2, .. }),
        "{:?}",
        invalid.origin
    );
    assert!(
        err.to_string().contains("agents.claude.permissions"),
        "{err}"
    );
    // The same value twice is no conflict.
    let layers = Layers::new(
        "",
        "agent:\n  permissions: bypass\nagents:\n  claude:\n    permissions: bypass\n",
    );
    let loaded = layers.load(&[], &[]);
    assert_eq!(
        loaded.config.agents.claude.permissions,
        AgentPermissions::Bypass
    );
}

#[test]
fn env_entries_fold_one_by_one_and_show_the_default_kinds() {
    let layers = Layers::new(
        "agent:\n  env:\n    A: user\n    B: user\n",
        "agents:\n  claude:\n    env:\n      B: project\n  codex:\n    env:\n      C: codex\n",
    );
    let loaded = layers.load(&[], &[]);
    let claude = &loaded.config.agents.claude.env;
    assert_eq!(claude.get("A").map(String::as_str), Some("user"));
    assert_eq!(claude.get("B").map(String::as_str), Some("project"));
    assert_eq!(loaded.config.agent.env, *claude);
    assert_eq!(loaded.sources["agent.env.B"], layers.project());
    assert!(!loaded.sources.contains_key("agents.claude.env"));

    let loaded = layers.load(&[], &[("agent.kind", text("codex"))]);
    assert_eq!(
        loaded.config.agent.env.keys().collect::<Vec<_>>(),
        ["C"],
        "agent.env shows codex's profile"
    );
    assert_eq!(loaded.sources["agent.env.C"], layers.project());
    assert!(!loaded.sources.contains_key("agent.env"));
}

#[test]
fn model_is_the_default_kinds_and_an_old_model_stays_with_its_kind() {
    let layers = Layers::new("model: sonnet\n", "agent:\n  kind: codex\n");
    let loaded = layers.load(&[], &[]);
    assert_eq!(loaded.config.agents.claude.model.as_deref(), Some("sonnet"));
    assert_eq!(loaded.config.model, "", "Codex runs its own default model");
    assert_eq!(loaded.sources["model"], Source::Default);

    let loaded = layers.load(&[], &[("model", text("gpt-5.5"))]);
    assert_eq!(loaded.config.agents.codex.model.as_deref(), Some("gpt-5.5"));
    assert_eq!(loaded.config.model, "gpt-5.5");

    let layers = Layers::new("", "agents:\n  sim:\n    model: sim-model\n");
    let loaded = layers.load(&[("DEBUSSY_AGENT__KIND", "sim")], &[]);
    assert_eq!(loaded.config.model, "sim-model");
    assert_eq!(loaded.sources["model"], layers.project());
}

#[test]
fn defaults_alone_leave_every_profile_empty() {
    let layers = Layers::new("", "");
    let loaded = layers.load(&[], &[]);
    assert_eq!(loaded.config, Config::default());
    assert!(loaded.sources.values().all(|s| *s == Source::Default));
}

#[test]
fn profile_paths_name_the_key_an_old_one_stands_for() {
    assert_eq!(
        profile_path("agent.command", AgentKind::Codex).as_deref(),
        Some("agents.codex.command")
    );
    assert_eq!(
        profile_path("agent.env.TOKEN", AgentKind::Sim).as_deref(),
        Some("agents.sim.env.TOKEN")
    );
    assert_eq!(
        profile_path("model", AgentKind::Claude).as_deref(),
        Some("agents.claude.model")
    );
    assert_eq!(profile_path("agent.kind", AgentKind::Claude), None);
    assert_eq!(profile_path("agent.stop_grace", AgentKind::Claude), None);
}

#[test]
fn layer_kinds_carry_a_kind_up_until_a_layer_names_another() {
    let mut kinds = LayerKinds::new(AgentKind::Claude);
    kinds.set(2, AgentKind::Codex);
    assert_eq!(kinds.at(1), AgentKind::Claude);
    assert_eq!(kinds.at(4), AgentKind::Codex);
    kinds.set(4, AgentKind::Sim);
    assert_eq!(kinds.at(3), AgentKind::Codex);
    assert_eq!(kinds.at(4), AgentKind::Sim);
}
