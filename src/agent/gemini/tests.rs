//! Tests of the Gemini CLI backend.

use super::*;

fn config() -> BackendSettings {
    let config = crate::config::Config::default();
    BackendSettings {
        command: Some("/bin/sh".to_owned()),
        ..crate::session::backend_settings(&config, crate::config::AgentKind::Gemini)
    }
    .with_model("gemini-2.5-pro")
}

#[test]
fn the_command_is_headless_stream_json_with_the_prompt_on_stdin_and_settings() {
    let command = GeminiBackend::new(&config())
        .command("do it", "gemini-2.5-pro")
        .expect("command");
    assert_eq!(
        command.args,
        [
            "-p",
            "",
            "--output-format",
            "stream-json",
            "--skip-trust",
            "-m",
            "gemini-2.5-pro",
            "--approval-mode",
            "auto_edit",
        ]
    );
    assert_eq!(command.stdin.as_deref(), Some("do it"));
    let home = command.home.expect("a home of its own");
    assert_eq!(home.var, HOME_ENV);
    assert_eq!(
        home.subdir.as_deref(),
        Some(std::path::Path::new(".gemini"))
    );
    let settings = home.settings.expect("settings laid over the user's");
    assert_eq!(settings.name, "settings.json");
    assert_eq!(
        settings.over,
        serde_json::json!({"model": {"compressionThreshold": 0.9}})
    );
    let policies = home.own_dir.expect("the shell's policy");
    assert_eq!(policies.name, "policies");
    assert!(
        policies
            .contents
            .contains("toolName = \"run_shell_command\"")
            && policies.contents.contains("decision = \"allow\""),
        "{}",
        policies.contents
    );
}

#[test]
fn only_accept_edits_allows_the_shell_by_policy() {
    for (permissions, allowed) in [
        (AgentPermissions::AcceptEdits, true),
        (AgentPermissions::Bypass, false),
        (AgentPermissions::Ask, false),
    ] {
        assert_eq!(
            shell_policy(permissions).is_some(),
            allowed,
            "{permissions:?}"
        );
        assert!(
            !permission_args(permissions)
                .iter()
                .any(|arg| arg == "--allowed-tools")
        );
    }
}

#[test]
fn the_users_gemini_directory_is_under_gemini_cli_home_else_home() {
    let mut settings = config();
    settings.env.insert(HOME_ENV.into(), "/custom/home".into());
    let command = GeminiBackend::new(&settings)
        .command("p", "")
        .expect("command");
    assert_eq!(
        command.home.expect("home").link_from,
        Some(std::path::PathBuf::from("/custom/home/.gemini"))
    );
    assert!(
        !command.env.contains_key(HOME_ENV),
        "the session's own is set"
    );
    settings.env.remove(HOME_ENV);
    settings.env.insert("HOME".into(), "/users/me".into());
    let command = GeminiBackend::new(&settings)
        .command("p", "")
        .expect("command");
    assert_eq!(
        command.home.expect("home").link_from,
        Some(std::path::PathBuf::from("/users/me/.gemini"))
    );
}

#[test]
fn compression_moves_above_the_threshold_and_stays_when_the_check_is_off() {
    assert_eq!(compression_threshold(ContextLimit::At(80.0)), Some(0.9));
    assert_eq!(compression_threshold(ContextLimit::At(90.0)), Some(0.95));
    assert_eq!(compression_threshold(ContextLimit::Off), None);
    let mut off = config();
    off.context_threshold = ContextLimit::Off;
    let command = GeminiBackend::new(&off).command("p", "").expect("command");
    let home = command.home.expect("a home for the shell's policy");
    assert_eq!(home.settings, None);
    off.permissions = AgentPermissions::Bypass;
    let command = GeminiBackend::new(&off).command("p", "").expect("command");
    assert!(
        command.home.is_none(),
        "nothing to change: the user's own home"
    );
    assert!(!command.args.iter().any(|arg| arg == "-m"));
}

#[test]
fn a_missing_program_names_the_install_command() {
    let mut config = config();
    config.command = Some("/nowhere/gemini".into());
    let err = GeminiBackend::new(&config)
        .command("p", "m")
        .expect_err("missing");
    let AgentError::ProgramNotFound { help, .. } = err else {
        panic!("{err:?}")
    };
    assert!(help.contains("npm install -g @google/gemini-cli"), "{help}");
}
