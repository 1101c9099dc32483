use super::*;

fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|arg| (*arg).to_owned()).collect()
}

/// The URL `config` (TOML) and `args` choose, with `vars` as the whole environment and a
/// login that is ChatGPT's when `chatgpt`.
fn url(config: &str, list: &[&str], vars: &[(&str, &str)], chatgpt: bool) -> Option<String> {
    let config: Table = config.parse().expect("toml");
    let vars: BTreeMap<String, String> = vars
        .iter()
        .map(|(key, value)| ((*key).to_owned(), (*value).to_owned()))
        .collect();
    provider_url(
        &config,
        &overrides(&args(list)),
        &|name| vars.get(name).cloned(),
        &|| chatgpt,
    )
}

const SCRIPTED: &str = r#"
model_provider = "scripted"

[model_providers.scripted]
name = "scripted"
base_url = "http://127.0.0.1:4000/v1"

[model_providers.keyless]
name = "keyless"

[profiles.local]
model_provider = "ollama"
"#;

#[test]
fn the_built_in_provider_is_openais_api_or_chatgpts_by_the_login() {
    assert_eq!(url("", &[], &[], false).as_deref(), Some(OPENAI_API));
    assert_eq!(url("", &[], &[], true).as_deref(), Some(CHATGPT_API));
    let own = url("", &[], &[("OPENAI_BASE_URL", "https://gw.corp/v1")], true);
    assert_eq!(own.as_deref(), Some("https://gw.corp/v1"));
}

#[test]
fn a_configured_provider_is_reached_at_its_base_url() {
    assert_eq!(
        url(SCRIPTED, &[], &[], false).as_deref(),
        Some("http://127.0.0.1:4000/v1")
    );
    let keyless = url(SCRIPTED, &["-c", "model_provider=keyless"], &[], true);
    assert_eq!(keyless.as_deref(), Some(CHATGPT_API));
    assert_eq!(url("model_provider = \"nowhere\"", &[], &[], false), None);
}

#[test]
fn a_profile_chooses_its_own_provider_from_the_config_or_the_command_line() {
    let chosen = "profile = \"local\"\n".to_owned() + SCRIPTED;
    assert_eq!(
        url(&chosen, &[], &[], false).as_deref(),
        Some("http://localhost:11434/v1")
    );
    for flags in [
        &["--profile", "local"][..],
        &["--profile=local"],
        &["-p", "local"],
    ] {
        assert_eq!(
            url(SCRIPTED, flags, &[], false).as_deref(),
            Some("http://localhost:11434/v1"),
            "{flags:?}"
        );
    }
    let port = url(
        SCRIPTED,
        &["-p", "local"],
        &[("CODEX_OSS_PORT", "9999")],
        false,
    );
    assert_eq!(port.as_deref(), Some("http://localhost:9999/v1"));
}

#[test]
fn a_provider_set_on_the_command_line_wins_quoted_or_not() {
    for setting in ["model_provider=\"openai\"", "model_provider=openai"] {
        assert_eq!(
            url(SCRIPTED, &["-c", setting], &[], false).as_deref(),
            Some(OPENAI_API),
            "{setting}"
        );
    }
}

#[test]
fn providers_chosen_where_debussy_does_not_look_are_unknown() {
    for flags in [
        &["--oss"][..],
        &["--local-provider", "ollama"],
        &[
            "-c",
            "model_providers.scripted.base_url=\"http://elsewhere\"",
        ],
        &["--config=profiles.local.model_provider=\"scripted\""],
    ] {
        assert!(overrides(&args(flags)).unknowable, "{flags:?}");
    }
    assert!(!overrides(&args(&["-c", "model_reasoning_effort=high", "--json"])).unknowable);
}

#[test]
fn a_chatgpt_login_is_read_from_auth_json() {
    assert!(signed_in_with_chatgpt(
        r#"{"auth_mode":"chatgpt","tokens":{}}"#
    ));
    assert!(signed_in_with_chatgpt(
        r#"{"OPENAI_API_KEY":null,"tokens":{"access_token":"t"}}"#
    ));
    assert!(!signed_in_with_chatgpt(
        r#"{"auth_mode":"apikey","OPENAI_API_KEY":"sk"}"#
    ));
    assert!(!signed_in_with_chatgpt(
        r#"{"OPENAI_API_KEY":"sk","tokens":null}"#
    ));
    assert!(!signed_in_with_chatgpt("not json"));
}

#[test]
fn the_users_codex_home_gives_the_endpoint_and_its_proxy() {
    let home = tempfile::tempdir().expect("tempdir");
    let env: BTreeMap<String, String> = [("HTTPS_PROXY", "http://proxy.corp:3128")]
        .into_iter()
        .map(|(key, value)| (key.to_owned(), value.to_owned()))
        .collect();
    let none = api_endpoint(&[], &env, Some(home.path())).expect("the built-in provider");
    assert_eq!(none.proxy.as_deref(), Some("http://proxy.corp:3128"));

    std::fs::write(home.path().join("config.toml"), SCRIPTED).expect("config");
    let scripted = api_endpoint(&[], &env, Some(home.path())).expect("endpoint");
    assert_eq!(scripted.url, "http://127.0.0.1:4000/v1");

    std::fs::write(home.path().join("config.toml"), "model_provider = [").expect("config");
    assert_eq!(
        api_endpoint(&[], &env, Some(home.path())),
        None,
        "Codex says what is wrong with its own configuration"
    );
    std::fs::remove_file(home.path().join("config.toml")).expect("remove");
    std::fs::create_dir(home.path().join("config.toml")).expect("a directory");
    assert_eq!(api_endpoint(&[], &env, Some(home.path())), None);
    assert_eq!(api_endpoint(&args(&["--oss"]), &env, None), None);
}
