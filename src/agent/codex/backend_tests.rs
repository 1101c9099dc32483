//! Tests of the Codex backend.

use super::*;
use crate::config::ContextLimit;

fn config(threshold: f64) -> BackendSettings {
    let config = crate::config::Config {
        context_threshold: ContextLimit::At(threshold),
        ..crate::config::Config::default()
    };
    BackendSettings {
        command: Some("/bin/sh".to_owned()),
        ..crate::session::backend_settings(&config, crate::config::AgentKind::Codex)
    }
    .with_model("gpt-5-codex")
}

#[test]
fn the_command_is_exec_json_with_the_prompt_on_stdin_and_a_private_home() {
    let mut config = config(80.0);
    config.args = vec!["-c".into(), "model_reasoning_effort=\"high\"".into()];
    let command = CodexBackend::new(&config)
        .command("do it", "gpt-5-codex")
        .expect("command");
    assert_eq!(
        command.args,
        [
            "exec",
            "--json",
            "--skip-git-repo-check",
            "-m",
            "gpt-5-codex",
            "-c",
            "model_auto_compact_token_limit=244800",
            "--sandbox",
            "workspace-write",
            "-c",
            "approval_policy=\"never\"",
            "-c",
            "model_reasoning_effort=\"high\"",
            "-",
        ]
    );
    assert_eq!(command.stdin.as_deref(), Some("do it"));
    let home = command.home.expect("a private home");
    assert_eq!(home.var, "CODEX_HOME");
    assert!(home.skip.iter().any(|entry| entry == "sessions"));
    let follow = home.follow.expect("the rollout is followed");
    assert_eq!(follow.under, PathBuf::from("sessions"));
}

#[test]
fn an_empty_model_leaves_the_choice_to_codex_and_bypass_drops_the_sandbox() {
    let mut config = config(80.0);
    config.permissions = AgentPermissions::Bypass;
    let command = CodexBackend::new(&config)
        .command("p", "")
        .expect("command");
    assert!(!command.args.iter().any(|arg| arg == "-m"));
    assert!(
        command
            .args
            .iter()
            .any(|arg| arg == "--dangerously-bypass-approvals-and-sandbox")
    );
}

#[test]
fn codex_compacts_halfway_between_the_threshold_and_the_window() {
    assert_eq!(auto_compact_limit(&config(80.0)), Some(244_800));
    let mut configured = config(90.0);
    configured.model_context_window = Some(100_000);
    assert_eq!(auto_compact_limit(&configured), Some(95_000));
    let mut off = config(80.0);
    off.context_threshold = ContextLimit::Off;
    assert_eq!(auto_compact_limit(&off), None);
}

#[test]
fn the_users_codex_home_comes_from_agent_env_first() {
    let mut config = config(80.0);
    config
        .env
        .insert("CODEX_HOME".into(), "/custom/codex".into());
    let backend = CodexBackend::new(&config);
    let command = backend.command("p", "m").expect("command");
    assert_eq!(
        command.home.expect("home").link_from,
        Some(PathBuf::from("/custom/codex"))
    );
    assert!(!command.env.contains_key("CODEX_HOME"));
}

#[test]
fn a_missing_program_names_the_install_command() {
    let mut config = config(80.0);
    config.command = Some("/nowhere/codex".into());
    let err = CodexBackend::new(&config)
        .command("p", "m")
        .expect_err("missing");
    let AgentError::ProgramNotFound { help, .. } = err else {
        panic!("{err:?}")
    };
    assert!(help.contains("npm install -g @openai/codex"), "{help}");
}
