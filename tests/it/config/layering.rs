//! Layer order and provenance as `debussy config` shows them.

use serde_json::json;

use super::support::{Sandbox, named, source};
use crate::support::project::json_of;

#[test]
fn each_layer_overrides_the_one_below_and_is_named_as_the_source() {
    let s = Sandbox::new();
    let user = s.user_file(
        "model: sonnet\ntimeout: 100\nmax_retries: 5\nrestart_delay: 9\nagent:\n  command: /u/agent\n",
    );
    let project = s.project_file(
        "timeout: 200\nmax_retries: 6\nrestart_delay: 10\ngates:\n  mine: make check\n",
    );
    let json = s.config_json(
        &["--restart-delay", "12", "--agent", "sim"],
        &[
            ("DEBUSSY_MAX_RETRIES", "7"),
            ("DEBUSSY_RESTART_DELAY", "11"),
        ],
    );
    let config = &json["config"];
    // The user file's model and program belong to Claude Code's profile (the kind it
    // names, by default); `--agent sim` runs the sim agent's own.
    assert_eq!(config["model"], "opus");
    assert_eq!(config["agents"]["claude"]["model"], "sonnet");
    assert_eq!(config["agents"]["claude"]["command"], "/u/agent");
    assert_eq!(config["timeout"], 200);
    assert_eq!(config["max_retries"], 7);
    assert_eq!(config["restart_delay"], 12);
    assert_eq!(config["agent"]["kind"], "sim");
    assert_eq!(config["agent"]["command"], json!(null));
    assert_eq!(config["gates"]["mine"], "make check");
    assert_eq!(config["gates"]["pytest"], "pytest");
    assert_eq!(config["context_threshold"], 80.0);

    let sources = &json["sources"];
    assert_eq!(
        sources["agents.claude.model"],
        source("user_file", Some(&user))
    );
    assert_eq!(
        sources["agents.claude.command"],
        source("user_file", Some(&user))
    );
    assert_eq!(sources["model"], source("default", None));
    assert_eq!(sources["timeout"], source("project_file", Some(&project)));
    assert_eq!(
        sources["gates.mine"],
        source("project_file", Some(&project))
    );
    assert_eq!(sources["max_retries"], named("env", "DEBUSSY_MAX_RETRIES"));
    assert_eq!(sources["restart_delay"], named("flag", "--restart-delay"));
    assert_eq!(sources["agent.kind"], named("flag", "--agent"));
    assert_eq!(sources["gates.pytest"], source("default", None));
    assert_eq!(sources["context_threshold"], source("default", None));
    assert_eq!(json["project_root"], json!(s.root));
}

#[test]
fn every_leaf_has_a_source() {
    let s = Sandbox::new();
    let json = s.config_json(&[], &[]);
    let sources = json["sources"].as_object().expect("sources object");
    for path in [
        "model",
        "timeout",
        "output",
        "agent.kind",
        "agent.args",
        "agent.env",
        "agent.scenario",
        "gates.cargo-test",
        "notifications.ntfy.topic",
    ] {
        assert_eq!(sources[path], source("default", None), "{path}");
    }
}

#[test]
fn untyped_flags_never_mask_the_files() {
    let s = Sandbox::new();
    let project = s.project_file(
        "auto_commit: false\ninteractive: false\ncommit_on_failure: true\nmodel: haiku\nagent: {kind: sim}\n",
    );
    let json = s.config_json(&[], &[]);
    assert_eq!(json["config"]["auto_commit"], false);
    assert_eq!(json["config"]["interactive"], false);
    assert_eq!(json["config"]["commit_on_failure"], true);
    assert_eq!(json["config"]["model"], "haiku");
    assert_eq!(json["config"]["agent"]["kind"], "sim");
    for key in [
        "auto_commit",
        "interactive",
        "commit_on_failure",
        "model",
        "agent.kind",
    ] {
        assert_eq!(
            json["sources"][key],
            source("project_file", Some(&project)),
            "{key}"
        );
    }
    // Typed flags still win, in both directions.
    let json = s.config_json(&["--auto-commit", "--interactive"], &[]);
    assert_eq!(json["config"]["auto_commit"], true);
    assert_eq!(
        json["sources"]["auto_commit"],
        named("flag", "--auto-commit")
    );
    assert_eq!(json["config"]["interactive"], true);
    let json = s.config_json(&["--no-auto-commit"], &[]);
    assert_eq!(json["config"]["auto_commit"], false);
    assert_eq!(
        json["sources"]["auto_commit"],
        named("flag", "--no-auto-commit")
    );
}

#[test]
fn the_project_file_is_found_from_a_subdirectory() {
    let s = Sandbox::new();
    let project = s.project_file("model: haiku\n");
    let deep = s.root.join("src/deeper");
    std::fs::create_dir_all(&deep).expect("mkdir");
    let output = s
        .debussy_in(&deep, &["config", "--format", "json"])
        .output()
        .expect("runs");
    assert!(output.status.success());
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).expect("json");
    assert_eq!(json["config"]["model"], "haiku");
    assert_eq!(
        json["sources"]["model"],
        source("project_file", Some(&project))
    );
    assert_eq!(json["project_root"], json!(s.root));
}

#[test]
fn config_flag_reads_that_file_instead_of_the_project_file() {
    let s = Sandbox::new();
    s.project_file("model: from-project\ntimeout: 5\n");
    let other = s.write("alt/other.yaml", "model: from-flag\n");
    let json = s.config_json(&["--config", "alt/other.yaml"], &[]);
    assert_eq!(json["config"]["model"], "from-flag");
    assert_eq!(json["config"]["timeout"], 1800);
    assert_eq!(
        json["sources"]["model"],
        source("project_file", Some(&other))
    );
}

#[test]
fn the_user_file_falls_back_to_home_dot_config() {
    let s = Sandbox::new();
    let user = s.home.join(".config/debussy/config.yaml");
    std::fs::create_dir_all(user.parent().expect("parent")).expect("mkdir");
    std::fs::write(&user, "model: from-home\n").expect("write");
    let output = s
        .debussy(&["config", "--format", "json"])
        .env_remove("XDG_CONFIG_HOME")
        .output()
        .expect("runs");
    let json = json_of(&output, "debussy config");
    assert_eq!(json["config"]["model"], "from-home");
    assert_eq!(json["sources"]["model"], source("user_file", Some(&user)));
}

#[test]
fn yaml_output_comments_each_value_with_its_source() {
    let s = Sandbox::new();
    let project = s.project_file("model: haiku\n");
    let output = s
        .debussy(&["config", "--agent", "sim"])
        .env("DEBUSSY_TIMEOUT", "60")
        .output()
        .expect("runs");
    assert!(output.status.success());
    let text = String::from_utf8(output.stdout).expect("utf-8");
    let line = |start: &str| {
        text.lines()
            .find(|l| l.trim_start().starts_with(start))
            .unwrap_or_else(|| panic!("no `{start}` line in:\n{text}"))
            .to_owned()
    };
    assert!(
        line("model: haiku").ends_with(&format!("# from: project file {}", project.display())),
        "{text}"
    );
    assert!(line("timeout: 60").ends_with("# from: env DEBUSSY_TIMEOUT"));
    assert!(line("kind: sim").ends_with("# from: flag --agent"));
    assert!(line("max_retries: 2").ends_with("# from: default"));
    assert!(text.starts_with(&format!("# project root: {}\n", s.root.display())));
    assert!(text.contains("# user file: "));
    assert!(text.contains("(not found)"));
}
