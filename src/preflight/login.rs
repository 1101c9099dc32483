//! Whether the agent is logged in, where that can be known without spending tokens:
//! Claude Code answers `claude auth status` from its own files and environment, and an
//! API key in the environment it runs with is a login without asking. Codex's
//! `login status` does not see a key its model provider takes from the environment, and
//! the Gemini CLI has no such command, so theirs are left to the first session, which
//! reports a missing login at once.

use std::collections::BTreeMap;
use std::ffi::OsString;

use serde::Deserialize;

use super::probe::{Answer, probe};
use super::{Check, Target};
use crate::agent::{self, AgentCommand, BackendContext};
use crate::config::AgentKind;

/// What `claude auth status` prints (JSON by default).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct AuthStatus {
    logged_in: bool,
    #[serde(default)]
    api_provider: Option<String>,
    #[serde(default)]
    auth_method: Option<String>,
}

/// How a session runs the configured agent, when it is Claude Code.
pub(super) fn claude_command(target: Target<'_>) -> Option<AgentCommand> {
    let settings = crate::session::default_backend_settings(&target.loaded.config);
    if settings.kind != AgentKind::Claude {
        return None;
    }
    let backend = agent::backend(
        &settings,
        BackendContext {
            project_root: &target.loaded.project_root,
            plan_path: target.plan,
        },
    )
    .ok()?;
    backend.command("", &settings.model).ok()
}

/// The variable whose value Claude Code uses as its key in print mode, whatever else it
/// is logged in with.
const API_KEY_ENV: &str = "ANTHROPIC_API_KEY";

/// Whether Claude Code, run as `command` runs it (its program and `agents.claude.env`), is
/// logged in. A key in its environment is a login: asking `claude auth status` would
/// cost a start of Claude Code (0.3 s of CPU) for the same verdict.
pub(super) fn claude_login_check(command: &AgentCommand) -> Check {
    if key_is_set(&command.env, std::env::var_os(API_KEY_ENV)) {
        return Check::pass(
            "login",
            format!("Claude Code is logged in ({API_KEY_ENV} is set)"),
        );
    }
    let answer = probe(&command.program, &["auth", "status"], &command.env);
    judge(answer)
}

/// Whether the agent gets a non-empty [`API_KEY_ENV`]: from its profile's variables
/// (`env`), which replace debussy's own (`inherited`).
fn key_is_set(env: &BTreeMap<String, String>, inherited: Option<OsString>) -> bool {
    match env.get(API_KEY_ENV) {
        Some(value) => !value.is_empty(),
        None => inherited.is_some_and(|value| !value.is_empty()),
    }
}

/// The verdict on `claude auth status`'s answer. A login it cannot see (another API
/// provider, an answer it does not understand) is not held against the run.
fn judge(answer: Result<Answer, String>) -> Check {
    let answer = match answer {
        Ok(answer) => answer,
        Err(why) => {
            return Check::warn(
                "login",
                format!("not checked: `claude auth status` failed ({why})"),
                "run `claude auth status` to see whether Claude Code is logged in",
            );
        }
    };
    let Ok(status) = serde_json::from_str::<AuthStatus>(answer.stdout.trim()) else {
        let said = answer
            .stderr
            .lines()
            .next()
            .unwrap_or_default()
            .trim()
            .to_owned();
        return Check::warn(
            "login",
            format!(
                "not checked: `claude auth status` exited with {} without its JSON answer{}",
                answer.status,
                if said.is_empty() {
                    String::new()
                } else {
                    format!(" ({said})")
                }
            ),
            "run `claude auth status` to see whether Claude Code is logged in",
        );
    };
    let provider = status.api_provider.as_deref().unwrap_or("firstParty");
    if status.logged_in || provider != "firstParty" {
        let how = status.auth_method.as_deref().unwrap_or(provider);
        return Check::pass("login", format!("Claude Code is logged in ({how})"));
    }
    // A warning, not a failure: a login this cannot see (a key helper, a proxy that adds
    // the key) must not keep the run from starting; if it is really missing, the first
    // session says so at once.
    Check::warn(
        "login",
        "Claude Code is not logged in: no API key and no login (`claude auth status`)",
        crate::agent::FailureKind::NotLoggedIn.fix("claude"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::preflight::Verdict;

    fn answer(stdout: &str) -> Result<Answer, String> {
        Ok(Answer {
            success: true,
            status: "exit status: 0".into(),
            stdout: stdout.into(),
            stderr: String::new(),
        })
    }

    #[test]
    fn a_login_or_a_key_passes() {
        let check = judge(answer(
            r#"{"loggedIn": true, "authMethod": "api_key", "apiProvider": "firstParty"}"#,
        ));
        assert_eq!(check.verdict, Verdict::Pass);
        assert!(check.detail.contains("api_key"), "{}", check.detail);
    }

    #[test]
    fn no_login_warns_with_the_fix() {
        let check = judge(answer(
            r#"{"loggedIn": false, "authMethod": "none", "apiProvider": "firstParty"}"#,
        ));
        assert_eq!(check.verdict, Verdict::Warn);
        assert_eq!(
            check.fix.as_deref(),
            Some("run `claude` once to log in, or set ANTHROPIC_API_KEY")
        );
    }

    #[test]
    fn a_key_in_the_agents_environment_is_a_login() {
        let profile = |value: &str| BTreeMap::from([(API_KEY_ENV.to_owned(), value.to_owned())]);
        let none = BTreeMap::new();
        assert!(key_is_set(&none, Some("sk-ant-1".into())));
        assert!(key_is_set(&profile("sk-ant-1"), None));
        assert!(!key_is_set(&none, None));
        assert!(!key_is_set(&none, Some("".into())));
        // The profile's value replaces debussy's own, an empty one included.
        assert!(!key_is_set(&profile(""), Some("sk-ant-1".into())));
    }

    #[test]
    fn what_it_cannot_see_is_not_held_against_the_run() {
        let bedrock = judge(answer(
            r#"{"loggedIn": false, "authMethod": "none", "apiProvider": "bedrock"}"#,
        ));
        assert_eq!(bedrock.verdict, Verdict::Pass);
        assert_eq!(judge(answer("Usage: claude …")).verdict, Verdict::Warn);
        assert_eq!(judge(Err("no such file".into())).verdict, Verdict::Warn);
    }
}
