//! The Gemini CLI backend: `gemini -p "" --output-format stream-json`, the prompt on stdin.
//!
//! The Gemini CLI reports token usage only in its final `result`, summed over the
//! session's requests, so the meter estimates the context as it goes (the prompt, the
//! messages, tool inputs and results through the tokenizer) against the model's window,
//! shown as `estimated` ([`UsageReporting::Nothing`]).
//!
//! Gemini compresses its history on its own at `model.compressionThreshold` (a fraction
//! of the window, 0.5 by default). Each session runs with a private `GEMINI_CLI_HOME`
//! ([`AgentHome`]) whose `.gemini/` links the user's entries, but for `settings.json`: the
//! user's settings with the threshold moved halfway between debussy's and the full
//! window, as for Codex ([`ContextLimit::agent_compaction_point`]). The system settings
//! file (`GEMINI_CLI_SYSTEM_SETTINGS_PATH`) cannot carry it: the CLI skips one that is
//! not owned by root in a directory tree only root can write. The same home carries the
//! policy rule that lets `accept-edits` run shell commands ([`shell_policy`]). This
//! module locates the program and nothing else.

pub mod failures;
pub mod stream_json;

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::{
    AgentBackend, AgentCommand, AgentError, AgentEvent, AgentFailure, AgentHome, ApiRetry,
    BackendSettings, LastWords, LayeredSettings, OwnDir, UsageReporting,
};
use crate::config::AgentPermissions;
use crate::config::ContextLimit;

/// The program run when `agents.gemini.command` is not set.
pub const DEFAULT_PROGRAM: &str = "gemini";

/// How to install the Gemini CLI, for error messages.
pub const INSTALL_HINT: &str = "install the Gemini CLI with `npm install -g @google/gemini-cli`, or set `agents.gemini.command` to the path of the `gemini` program";

/// The variable naming the directory the Gemini CLI takes for the user's home: its
/// files are in `.gemini/` below it.
pub const HOME_ENV: &str = "GEMINI_CLI_HOME";

/// The variable that keeps the Gemini CLI in the process it was started as. Unset, the
/// CLI first starts a second Node process with a heap of half the machine's memory and
/// waits on it: 0.8 s more CPU for every start, which `--version` does not need.
pub const NO_RELAUNCH_ENV: &str = "GEMINI_CLI_NO_RELAUNCH";

/// The Gemini CLI in headless `stream-json` mode.
#[derive(Debug)]
pub struct GeminiBackend {
    program: String,
    args: Vec<String>,
    env: BTreeMap<String, String>,
    permissions: AgentPermissions,
    compression_threshold: Option<f64>,
    parser: stream_json::Parser,
}

impl GeminiBackend {
    /// A backend running the profile's program (default `gemini` on `PATH`) with its
    /// arguments, environment and permissions.
    #[must_use]
    pub fn new(settings: &BackendSettings) -> Self {
        GeminiBackend {
            program: settings.program_or(DEFAULT_PROGRAM),
            args: settings.args.clone(),
            env: settings.env.clone(),
            permissions: settings.permissions,
            compression_threshold: compression_threshold(settings.context_threshold),
            parser: stream_json::Parser::default(),
        }
    }

    /// The session's own `GEMINI_CLI_HOME`, when there is a compression threshold to
    /// move or a shell to allow; otherwise the CLI runs with the user's home as it is.
    fn session_home(&self) -> Option<AgentHome> {
        let settings = self.compression_threshold.map(|fraction| LayeredSettings {
            name: "settings.json".to_owned(),
            over: serde_json::json!({"model": {"compressionThreshold": fraction}}),
        });
        let own_dir = shell_policy(self.permissions);
        if settings.is_none() && own_dir.is_none() {
            return None;
        }
        Some(AgentHome {
            var: HOME_ENV.to_owned(),
            subdir: Some(PathBuf::from(".gemini")),
            link_from: self.user_dir(),
            skip: Vec::new(),
            settings,
            own_dir,
            follow: None,
        })
    }

    /// The user's own `.gemini` directory: under `GEMINI_CLI_HOME` (from the profile's
    /// `env`, else the environment), else under `HOME`.
    fn user_dir(&self) -> Option<PathBuf> {
        let from = |name: &str| {
            self.env
                .get(name)
                .map(PathBuf::from)
                .or_else(|| std::env::var_os(name).map(PathBuf::from))
                .filter(|dir| !dir.as_os_str().is_empty())
        };
        from(HOME_ENV)
            .or_else(|| from("HOME"))
            .map(|home| home.join(".gemini"))
    }
}

/// Where Gemini may compress on its own, as a fraction of the window:
/// [`ContextLimit::agent_compaction_point`]. `None` (Gemini's own default) when the
/// context check is off.
#[must_use]
pub fn compression_threshold(threshold: ContextLimit) -> Option<f64> {
    threshold.agent_compaction_point()
}

/// The Gemini CLI's flags for `agent.permissions`, for a headless session that has nobody
/// to approve anything: `accept-edits` approves edits (`auto_edit`, and shell commands by
/// [`shell_policy`]), `bypass` everything (`yolo`), `ask` leaves it to the user's
/// settings (a tool that would ask is refused).
#[must_use]
pub fn permission_args(permissions: AgentPermissions) -> Vec<String> {
    let args: &[&str] = match permissions {
        AgentPermissions::AcceptEdits => &["--approval-mode", "auto_edit"],
        AgentPermissions::Bypass => &["--approval-mode", "yolo"],
        AgentPermissions::Ask => &[],
    };
    args.iter().map(|arg| (*arg).to_owned()).collect()
}

/// What allows shell commands under `accept-edits`: a rule of the CLI's policy engine in
/// the session's `policies/`, beside copies of the user's own. It has the user tier and
/// the priority (4.3) of `--allowed-tools run_shell_command`, which the CLI deprecates
/// (with a warning on every start) for the policy engine; `--policy` would replace the
/// user's policies rather than add to them.
#[must_use]
pub fn shell_policy(permissions: AgentPermissions) -> Option<OwnDir> {
    (permissions == AgentPermissions::AcceptEdits).then(|| OwnDir {
        name: "policies".to_owned(),
        suffix: ".toml".to_owned(),
        file: "debussy-accept-edits.toml".to_owned(),
        contents: SHELL_POLICY.to_owned(),
    })
}

/// The policy rule of [`shell_policy`].
const SHELL_POLICY: &str = r#"# Written by debussy for one headless session (agent.permissions: accept-edits): shell
# commands run without asking, as with `--allowed-tools run_shell_command`.
[[rule]]
toolName = "run_shell_command"
decision = "allow"
priority = 300
"#;

impl AgentBackend for GeminiBackend {
    fn name(&self) -> &'static str {
        "gemini"
    }

    fn api_endpoint(&self) -> Option<crate::agent::ApiEndpoint> {
        crate::agent::ApiEndpoint::from_env(
            &self.env,
            "GOOGLE_GEMINI_BASE_URL",
            "https://generativelanguage.googleapis.com",
            &["GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_GENAI_USE_GCA"],
        )
    }

    fn command(&self, prompt: &str, model: &str) -> Result<AgentCommand, AgentError> {
        let program = super::program::find_program(&self.program, INSTALL_HINT)?;
        // `-p ""` runs headless; the prompt itself comes on stdin (no argv limit).
        let mut args: Vec<String> = ["-p", "", "--output-format", "stream-json", "--skip-trust"]
            .iter()
            .map(|arg| (*arg).to_owned())
            .collect();
        if !model.is_empty() {
            args.extend(["-m".to_owned(), model.to_owned()]);
        }
        args.extend(permission_args(self.permissions));
        args.extend(self.args.iter().cloned());
        let mut env = self.env.clone();
        env.remove(HOME_ENV);
        Ok(AgentCommand {
            home: self.session_home(),
            ..AgentCommand::new(program, args, env, prompt)
        })
    }

    fn parse_line(&self, line: &[u8]) -> Vec<AgentEvent> {
        self.parser.parse_line(line)
    }

    fn usage_reporting(&self) -> UsageReporting {
        UsageReporting::Nothing
    }

    fn diagnose(&self, words: &LastWords, now: &jiff::Zoned) -> Option<AgentFailure> {
        failures::diagnose(words, now)
    }

    fn stderr_retry(&self, line: &str) -> Option<ApiRetry> {
        failures::retry(line)
    }

    fn version_env(&self) -> &'static [(&'static str, &'static str)] {
        &[(NO_RELAUNCH_ENV, "true")]
    }
}

#[cfg(test)]
mod tests;
