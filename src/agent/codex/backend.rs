//! [`CodexBackend`]: the command line, environment and private home of a Codex session,
//! and which of its output carries what.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::agent::{
    AgentBackend, AgentCommand, AgentError, AgentEvent, AgentFailure, AgentHome, BackendSettings,
    Follow, LastWords, UsageReporting,
};
use crate::config::AgentPermissions;

/// The program run when `agents.codex.command` is not set.
pub const DEFAULT_PROGRAM: &str = "codex";

/// How to install the Codex CLI, for error messages.
pub const INSTALL_HINT: &str = "install the Codex CLI with `npm install -g @openai/codex`, or set `agents.codex.command` to the path of the `codex` program";

/// The window assumed for Codex before it reports one: the GPT-5 family's 272,000 tokens.
pub const DEFAULT_WINDOW: u64 = 272_000;

/// Entries of the user's Codex home that are Codex's per-session data, never linked into
/// a session's private home (a prefix match).
const PER_SESSION: &[&str] = &[
    "sessions",
    "archived_sessions",
    "log",
    "history.jsonl",
    "tmp",
    ".tmp",
    "thread-writer-locks",
    "shell_snapshots",
];

/// The Codex CLI in `exec --json` mode.
#[derive(Debug, Clone)]
pub struct CodexBackend {
    program: String,
    args: Vec<String>,
    env: BTreeMap<String, String>,
    permissions: AgentPermissions,
    auto_compact_limit: Option<u64>,
}

/// The `CODEX_HOME` of one session, linked from `link_from` but for the entries `skip`,
/// with the session's rollout file followed.
#[must_use]
pub fn session_home(link_from: Option<PathBuf>, skip: Vec<String>) -> AgentHome {
    AgentHome {
        var: "CODEX_HOME".to_owned(),
        subdir: None,
        link_from,
        skip,
        settings: None,
        own_dir: None,
        follow: Some(Follow {
            under: PathBuf::from("sessions"),
            prefix: "rollout-".to_owned(),
            suffix: ".jsonl".to_owned(),
        }),
    }
}

impl CodexBackend {
    /// A backend running the profile's program (default `codex` on `PATH`) with its
    /// arguments, environment and permissions.
    #[must_use]
    pub fn new(settings: &BackendSettings) -> Self {
        CodexBackend {
            program: settings.program_or(DEFAULT_PROGRAM),
            args: settings.args.clone(),
            env: settings.env.clone(),
            permissions: settings.permissions,
            auto_compact_limit: auto_compact_limit(settings),
        }
    }

    /// The user's own Codex home: `CODEX_HOME` (from the profile's `env`, else the environment),
    /// else `~/.codex`.
    fn user_home(&self) -> Option<PathBuf> {
        if let Some(home) = self.env.get("CODEX_HOME") {
            return Some(PathBuf::from(home));
        }
        if let Some(home) = std::env::var_os("CODEX_HOME").filter(|home| !home.is_empty()) {
            return Some(PathBuf::from(home));
        }
        std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".codex"))
    }
}

/// Where Codex may compact on its own, in tokens:
/// [`ContextLimit::agent_compaction_point`](crate::config::ContextLimit::agent_compaction_point)
/// of the configured window, else the model's
/// known window, else [`DEFAULT_WINDOW`]. `None` (Codex's own default) when the context
/// check is off.
#[must_use]
pub fn auto_compact_limit(settings: &BackendSettings) -> Option<u64> {
    let at = settings.context_threshold.agent_compaction_point()?;
    let window = settings
        .model_context_window
        .filter(|tokens| *tokens > 0)
        .or_else(|| crate::agent::known_windows::lookup(&settings.model).map(|entry| entry.tokens))
        .unwrap_or(DEFAULT_WINDOW);
    #[expect(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss,
        reason = "windows are far below 2^52 tokens and the point is at most 1"
    )]
    let limit = (window as f64 * at).floor() as u64;
    Some(limit)
}

/// Codex's flags for `agent.permissions`: a headless agent has nobody to approve
/// anything, so approvals are off; `accept-edits` keeps Codex's `workspace-write`
/// sandbox (edits in the project, no network), `bypass` drops the sandbox.
#[must_use]
pub fn permission_args(permissions: AgentPermissions) -> Vec<String> {
    match permissions {
        AgentPermissions::AcceptEdits => vec![
            "--sandbox".to_owned(),
            "workspace-write".to_owned(),
            "-c".to_owned(),
            "approval_policy=\"never\"".to_owned(),
        ],
        AgentPermissions::Bypass => vec!["--dangerously-bypass-approvals-and-sandbox".to_owned()],
        AgentPermissions::Ask => Vec::new(),
    }
}

impl AgentBackend for CodexBackend {
    fn name(&self) -> &'static str {
        "codex"
    }

    /// The provider Codex's configuration chooses, at its `base_url` (`endpoint.rs`).
    fn api_endpoint(&self) -> Option<crate::agent::ApiEndpoint> {
        super::endpoint::api_endpoint(&self.args, &self.env, self.user_home().as_deref())
    }

    fn command(&self, prompt: &str, model: &str) -> Result<AgentCommand, AgentError> {
        let program = crate::agent::program::find_program(&self.program, INSTALL_HINT)?;
        let mut args: Vec<String> = vec![
            "exec".into(),
            "--json".into(),
            "--skip-git-repo-check".into(),
        ];
        if !model.is_empty() {
            args.extend(["-m".to_owned(), model.to_owned()]);
        }
        if let Some(limit) = self.auto_compact_limit {
            args.extend([
                "-c".to_owned(),
                format!("model_auto_compact_token_limit={limit}"),
            ]);
        }
        args.extend(permission_args(self.permissions));
        args.extend(self.args.iter().cloned());
        args.push("-".to_owned());
        let mut env = self.env.clone();
        env.remove("CODEX_HOME");
        Ok(AgentCommand {
            home: Some(session_home(
                self.user_home(),
                PER_SESSION.iter().map(|s| (*s).to_owned()).collect(),
            )),
            ..AgentCommand::new(program, args, env, prompt)
        })
    }

    fn parse_line(&self, line: &[u8]) -> Vec<AgentEvent> {
        super::exec_json::parse_line(line)
    }

    fn parse_followed_line(&self, line: &[u8]) -> Vec<AgentEvent> {
        super::rollout::parse_line(line, super::rollout::Mode::Usage)
    }

    fn usage_reporting(&self) -> UsageReporting {
        UsageReporting::PerRequest
    }

    fn diagnose(&self, words: &LastWords, now: &jiff::Zoned) -> Option<AgentFailure> {
        super::failures::diagnose(words, now)
    }
}

#[cfg(test)]
#[path = "backend_tests.rs"]
mod tests;
