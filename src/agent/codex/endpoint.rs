//! Where a Codex session sends its model requests: the model provider its configuration
//! chooses (`model_provider`, a profile's, or a `-c` override in the profile's arguments)
//! and that provider's `base_url`, as Codex works it out. Read from the user's Codex home
//! (`config.toml`, and `auth.json` for the built-in OpenAI provider, whose address depends
//! on the login), only when a wait for an unreachable API asks.

use std::collections::BTreeMap;
use std::path::Path;

use toml::{Table, Value};

use crate::agent::ApiEndpoint;

/// The built-in OpenAI provider's address with an API key, and with a ChatGPT login.
const OPENAI_API: &str = "https://api.openai.com/v1";
const CHATGPT_API: &str = "https://chatgpt.com/backend-api/codex";

/// The built-in local providers and their default ports.
const LOCAL_PROVIDERS: [(&str, u16); 2] = [("ollama", 11434), ("lmstudio", 1234)];

/// The largest `config.toml` or `auth.json` read.
const FILE_LIMIT: u64 = 1024 * 1024;

/// What the session's command line says about the provider: a profile, a provider, or
/// that it is chosen some way read nowhere here (`--oss`, a provider defined with `-c`).
#[derive(Debug, Default, PartialEq, Eq)]
struct Overrides {
    profile: Option<String>,
    provider: Option<String>,
    unknowable: bool,
}

/// The endpoint of a Codex session run with `args` and `env` (over the process's) whose
/// Codex home is `home`; `None` when debussy cannot tell where Codex will connect.
pub(super) fn api_endpoint(
    args: &[String],
    env: &BTreeMap<String, String>,
    home: Option<&Path>,
) -> Option<ApiEndpoint> {
    let var = |name: &str| {
        env.get(name)
            .cloned()
            .or_else(|| std::env::var(name).ok())
            .filter(|value| !value.trim().is_empty())
    };
    let overrides = overrides(args);
    if overrides.unknowable {
        return None;
    }
    let config = match home.map(|home| read(&home.join("config.toml"))) {
        Some(Read::Text(text)) => text.parse::<Table>().ok()?,
        Some(Read::Missing) => Table::new(),
        Some(Read::Unreadable) | None => return None,
    };
    let chatgpt = || match home.map(|home| read(&home.join("auth.json"))) {
        Some(Read::Text(text)) => var("CODEX_API_KEY").is_none() && signed_in_with_chatgpt(&text),
        _ => false,
    };
    let url = provider_url(&config, &overrides, &var, &chatgpt)?;
    ApiEndpoint::at(env, url)
}

/// The base URL of the provider `config` and `overrides` choose, with `var` reading the
/// environment and `chatgpt` saying whether the login is ChatGPT's.
fn provider_url(
    config: &Table,
    overrides: &Overrides,
    var: &dyn Fn(&str) -> Option<String>,
    chatgpt: &dyn Fn() -> bool,
) -> Option<String> {
    let text = |table: &Table, key: &str| table.get(key).and_then(Value::as_str).map(str::to_owned);
    let profile = overrides
        .profile
        .clone()
        .or_else(|| text(config, "profile"));
    let provider = overrides
        .provider
        .clone()
        .or_else(|| {
            let profiles = config.get("profiles")?.as_table()?;
            text(
                profiles.get(profile.as_deref()?)?.as_table()?,
                "model_provider",
            )
        })
        .or_else(|| text(config, "model_provider"))
        .unwrap_or_else(|| "openai".to_owned());
    let default = || {
        if chatgpt() {
            CHATGPT_API.to_owned()
        } else {
            OPENAI_API.to_owned()
        }
    };
    if provider == "openai" {
        return Some(var("OPENAI_BASE_URL").unwrap_or_else(default));
    }
    if let Some((_, port)) = LOCAL_PROVIDERS.iter().find(|(name, _)| *name == provider) {
        let port = var("CODEX_OSS_PORT")
            .and_then(|port| port.parse::<u16>().ok())
            .unwrap_or(*port);
        return Some(
            var("CODEX_OSS_BASE_URL").unwrap_or_else(|| format!("http://localhost:{port}/v1")),
        );
    }
    let defined = config
        .get("model_providers")?
        .as_table()?
        .get(&provider)?
        .as_table()?;
    Some(text(defined, "base_url").unwrap_or_else(default))
}

/// The provider and profile that `args` (Codex's own flags, as a profile's `args` pass
/// them) choose.
fn overrides(args: &[String]) -> Overrides {
    let mut found = Overrides::default();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((flag, value)) if flag.starts_with("--") => (flag, Some(value.to_owned())),
            _ => (arg.as_str(), None),
        };
        let mut value = || inline.clone().or_else(|| args.next().cloned());
        match flag {
            "--oss" | "--local-provider" => found.unknowable = true,
            "-p" | "--profile" => found.profile = value(),
            "-c" | "--config" => {
                let Some(setting) = value() else { continue };
                let Some((key, value)) = setting.split_once('=') else {
                    continue;
                };
                match key.trim() {
                    "model_provider" => found.provider = Some(config_text(value)),
                    "profile" => found.profile = Some(config_text(value)),
                    key if key.starts_with("model_providers") || key.starts_with("profiles") => {
                        found.unknowable = true;
                    }
                    _ => {}
                }
            }
            _ => {}
        }
    }
    found
}

/// A `-c` value as Codex reads it: TOML when it parses as a string, else the text itself.
fn config_text(value: &str) -> String {
    let value = value.trim();
    format!("v = {value}")
        .parse::<Table>()
        .ok()
        .and_then(|table| table.get("v")?.as_str().map(str::to_owned))
        .unwrap_or_else(|| value.to_owned())
}

/// Whether `auth.json`'s text records a ChatGPT login: its `auth_mode` says so, or it
/// holds tokens and no API key.
fn signed_in_with_chatgpt(auth: &str) -> bool {
    let Ok(auth) = serde_json::from_str::<serde_json::Value>(auth) else {
        return false;
    };
    match auth.get("auth_mode").and_then(serde_json::Value::as_str) {
        Some(mode) => mode.to_ascii_lowercase().starts_with("chatgpt"),
        None => {
            auth.get("tokens").is_some_and(|tokens| !tokens.is_null())
                && auth
                    .get("OPENAI_API_KEY")
                    .is_none_or(serde_json::Value::is_null)
        }
    }
}

/// One of the Codex home's files, read as every input is.
enum Read {
    Text(String),
    Missing,
    Unreadable,
}

fn read(path: &Path) -> Read {
    match crate::files::read_text_limited(path, FILE_LIMIT) {
        Ok(text) => Read::Text(text),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Read::Missing,
        Err(_) => Read::Unreadable,
    }
}

#[cfg(test)]
#[path = "endpoint_tests.rs"]
mod tests;
