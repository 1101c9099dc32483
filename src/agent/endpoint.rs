//! Where an agent sends its model requests, as its environment says: the API's base URL
//! and the proxy the agent goes through. Used to notice that an API the agent could not
//! reach can be reached again; nothing here connects anywhere.

use std::collections::BTreeMap;

/// An agent's API address and the proxy in its way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiEndpoint {
    /// The API's base URL (`https://api.anthropic.com`).
    pub url: String,
    /// The proxy requests to `url` go through (`HTTPS_PROXY` and its kin, unless
    /// `NO_PROXY` names the host), if any.
    pub proxy: Option<String>,
}

/// The variables that name a proxy, in the order agents' HTTP clients read them.
const PROXY_VARS: [&str; 4] = ["HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"];

/// The variables that name hosts reached without the proxy.
const NO_PROXY_VARS: [&str; 2] = ["NO_PROXY", "no_proxy"];

impl ApiEndpoint {
    /// The endpoint of an agent whose profile environment is `env` (over the process's):
    /// `base_var`'s URL, else `default`; `None` when one of `elsewhere` is set (the agent
    /// then talks to another provider, whose address it works out itself).
    #[must_use]
    pub fn from_env(
        env: &BTreeMap<String, String>,
        base_var: &str,
        default: &str,
        elsewhere: &[&str],
    ) -> Option<ApiEndpoint> {
        let process = |name: &str| std::env::var(name).ok();
        Self::resolve(
            &|name| env.get(name).cloned().or_else(|| process(name)),
            base_var,
            default,
            elsewhere,
        )
    }

    /// [`ApiEndpoint::from_env`] over the variables `var` reads.
    fn resolve(
        var: &dyn Fn(&str) -> Option<String>,
        base_var: &str,
        default: &str,
        elsewhere: &[&str],
    ) -> Option<ApiEndpoint> {
        let set = |name: &str| var(name).filter(|value| !value.trim().is_empty());
        if elsewhere
            .iter()
            .any(|name| set(name).is_some_and(|v| v != "0" && v != "false"))
        {
            return None;
        }
        let url = set(base_var).unwrap_or_else(|| default.to_owned());
        Self::proxied(var, url)
    }

    /// The endpoint at `url` for an agent whose environment is `env` (over the
    /// process's): the proxy in its way is worked out from the environment, the URL from
    /// wherever the agent keeps it (Codex: its configuration). `None` when `url` names
    /// no host.
    #[must_use]
    pub fn at(env: &BTreeMap<String, String>, url: String) -> Option<ApiEndpoint> {
        let process = |name: &str| std::env::var(name).ok();
        Self::proxied(
            &|name| env.get(name).cloned().or_else(|| process(name)),
            url,
        )
    }

    /// `url` with the proxy the variables `var` reads put in its way.
    fn proxied(var: &dyn Fn(&str) -> Option<String>, url: String) -> Option<ApiEndpoint> {
        let set = |name: &str| var(name).filter(|value| !value.trim().is_empty());
        let host = host_of(&url)?;
        let bypassed = NO_PROXY_VARS
            .iter()
            .find_map(|name| set(name))
            .is_some_and(|list| no_proxy_names(&list, &host));
        let proxy = (!bypassed)
            .then(|| PROXY_VARS.iter().find_map(|name| set(name)))
            .flatten();
        Some(ApiEndpoint { url, proxy })
    }
}

/// The host of `url`, lower case.
fn host_of(url: &str) -> Option<String> {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority = rest.split(['/', '?', '#']).next()?;
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, hp)| hp);
    let host = match host_port.strip_prefix('[') {
        Some(v6) => v6.split(']').next()?,
        None => host_port.split(':').next()?,
    };
    (!host.is_empty()).then(|| host.to_ascii_lowercase())
}

/// Whether a `NO_PROXY` list names `host`: `*`, the host itself, or a domain it is in
/// (`example.com` and `.example.com` both cover `api.example.com`).
fn no_proxy_names(list: &str, host: &str) -> bool {
    list.split(',').map(str::trim).any(|entry| {
        let entry = entry.trim_start_matches('.').to_ascii_lowercase();
        entry == "*"
            || (!entry.is_empty() && (host == entry || host.ends_with(&format!(".{entry}"))))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: BTreeMap<String, String> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        move |name| map.get(name).cloned()
    }

    const ANTHROPIC: &str = "https://api.anthropic.com";

    fn resolve(pairs: &[(&str, &str)]) -> Option<ApiEndpoint> {
        ApiEndpoint::resolve(
            &vars(pairs),
            "ANTHROPIC_BASE_URL",
            ANTHROPIC,
            &["CLAUDE_CODE_USE_BEDROCK"],
        )
    }

    #[test]
    fn the_default_url_unless_the_variable_names_another() {
        assert_eq!(
            resolve(&[]),
            Some(ApiEndpoint {
                url: ANTHROPIC.to_owned(),
                proxy: None
            })
        );
        let own = resolve(&[("ANTHROPIC_BASE_URL", "http://127.0.0.1:4000/v1")]).expect("endpoint");
        assert_eq!(own.url, "http://127.0.0.1:4000/v1");
    }

    #[test]
    fn another_provider_has_no_endpoint_here() {
        assert_eq!(resolve(&[("CLAUDE_CODE_USE_BEDROCK", "1")]), None);
        assert!(resolve(&[("CLAUDE_CODE_USE_BEDROCK", "0")]).is_some());
    }

    #[test]
    fn a_proxy_is_in_the_way_unless_no_proxy_names_the_host() {
        let proxied = resolve(&[("https_proxy", "http://proxy.corp:3128")]).expect("endpoint");
        assert_eq!(proxied.proxy.as_deref(), Some("http://proxy.corp:3128"));
        for list in [
            "anthropic.com",
            ".anthropic.com",
            "localhost, api.anthropic.com",
            "*",
        ] {
            let direct =
                resolve(&[("HTTPS_PROXY", "http://p:1"), ("NO_PROXY", list)]).expect("endpoint");
            assert_eq!(direct.proxy, None, "{list}");
        }
        let other = resolve(&[
            ("HTTPS_PROXY", "http://p:1"),
            ("no_proxy", "notanthropic.com"),
        ])
        .expect("endpoint");
        assert!(other.proxy.is_some());
    }

    #[test]
    fn hosts_are_read_from_every_shape_of_url() {
        assert_eq!(
            host_of("https://API.anthropic.com/v1").as_deref(),
            Some("api.anthropic.com")
        );
        assert_eq!(
            host_of("http://user:pw@proxy:3128").as_deref(),
            Some("proxy")
        );
        assert_eq!(host_of("http://[::1]:8080/").as_deref(), Some("::1"));
        assert_eq!(host_of("proxy.corp:3128").as_deref(), Some("proxy.corp"));
        assert_eq!(host_of("http://").as_deref(), None);
    }
}
