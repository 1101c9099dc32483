//! The Claude Code backend: `claude -p --output-format stream-json --verbose --model M`.
//!
//! The prompt goes on stdin (no argv length limit). The permission flags of
//! `agent.permissions` come next ([`permission_args`]): a headless agent has nobody to ask,
//! so without them every edit and command is refused. Configured `agent.args` follow ours,
//! so a project can add `--mcp-config …` or override a permission flag (the last one
//! wins). Output is parsed by [`super::stream_json`]. This module locates the program
//! (on `PATH`, as every backend does, in `agent/program.rs`) and nothing else: it never
//! spawns anything.

use super::{
    AgentBackend, AgentCommand, AgentError, BackendSettings, HANDOFF_ANSWER_TOKENS, ResumeRequest,
};
use crate::config::AgentPermissions;

/// The program run when `agents.claude.command` is not set.
pub const DEFAULT_PROGRAM: &str = "claude";

/// How to install Claude Code, for error messages.
pub const INSTALL_HINT: &str = "install Claude Code with `npm install -g @anthropic-ai/claude-code`, or set `agents.claude.command` to the path of the `claude` program";

/// Claude Code in headless `stream-json` mode.
#[derive(Debug, Clone)]
pub struct ClaudeBackend {
    program: String,
    args: Vec<String>,
    permissions: Vec<String>,
    env: std::collections::BTreeMap<String, String>,
}

impl ClaudeBackend {
    /// A backend running the profile's program (default `claude` on `PATH`) with its
    /// arguments, environment and permissions.
    #[must_use]
    pub fn new(settings: &BackendSettings) -> Self {
        ClaudeBackend {
            program: settings.program_or(DEFAULT_PROGRAM),
            args: settings.args.clone(),
            permissions: permission_args(settings.permissions, &settings.allowed_tools),
            env: settings.env.clone(),
        }
    }
}

/// Claude Code's flags for `agent.permissions`: `acceptEdits` with the allowed tools
/// comma-joined (one argument, so the list can never swallow the arguments after it),
/// `bypassPermissions`, or nothing.
#[must_use]
pub fn permission_args(permissions: AgentPermissions, allowed_tools: &[String]) -> Vec<String> {
    let mut args = Vec::new();
    match permissions {
        AgentPermissions::AcceptEdits => {
            args.extend(["--permission-mode".to_owned(), "acceptEdits".to_owned()]);
            if !allowed_tools.is_empty() {
                args.extend(["--allowedTools".to_owned(), allowed_tools.join(",")]);
            }
        }
        AgentPermissions::Bypass => {
            args.extend([
                "--permission-mode".to_owned(),
                "bypassPermissions".to_owned(),
            ]);
        }
        AgentPermissions::Ask => {}
    }
    args
}

impl AgentBackend for ClaudeBackend {
    fn name(&self) -> &'static str {
        "claude"
    }

    fn api_endpoint(&self) -> Option<super::ApiEndpoint> {
        super::ApiEndpoint::from_env(
            &self.env,
            "ANTHROPIC_BASE_URL",
            "https://api.anthropic.com",
            &[
                "CLAUDE_CODE_USE_BEDROCK",
                "CLAUDE_CODE_USE_VERTEX",
                "CLAUDE_CODE_USE_FOUNDRY",
            ],
        )
    }

    fn can_resume(&self) -> bool {
        true
    }

    /// `claude -p --resume ID` with no built-in tools (`--tools ""`), no MCP servers
    /// (`--strict-mcp-config` without a config) and one turn. `agent.args` are left out:
    /// they add tools and servers the handoff must not have; `agent.env` still applies.
    ///
    /// The answer is held to [`HANDOFF_ANSWER_TOKENS`] (`CLAUDE_CODE_MAX_OUTPUT_TOKENS`)
    /// and, when the window is known, Claude Code's own "Prompt is too long" limit moves to
    /// the window less that answer (`CLAUDE_CODE_BLOCKING_LIMIT_OVERRIDE`): it would
    /// otherwise refuse to send a context within its compaction reserve (33,000 tokens of
    /// a 200,000 window) and try to compact it, which debussy's `PreCompact` hook blocks.
    fn resume_command(&self, resume: &ResumeRequest<'_>) -> Result<AgentCommand, AgentError> {
        let ResumeRequest {
            session_id,
            prompt,
            model,
            window,
        } = *resume;
        let program = super::program::find_program(&self.program, INSTALL_HINT)?;
        let mut args: Vec<String> = [
            "-p",
            "--resume",
            session_id,
            "--output-format",
            "stream-json",
            "--verbose",
            "--model",
            model,
            "--tools",
            "",
            "--strict-mcp-config",
            "--max-turns",
            "1",
        ]
        .iter()
        .map(|arg| (*arg).to_owned())
        .collect();
        args.extend(guard_settings());
        let mut env = self.env.clone();
        env.insert(
            "CLAUDE_CODE_MAX_OUTPUT_TOKENS".to_owned(),
            HANDOFF_ANSWER_TOKENS.to_string(),
        );
        if let Some(window) = window.filter(|window| *window > HANDOFF_ANSWER_TOKENS) {
            env.insert(
                "CLAUDE_CODE_BLOCKING_LIMIT_OVERRIDE".to_owned(),
                (window - HANDOFF_ANSWER_TOKENS).to_string(),
            );
        }
        Ok(AgentCommand::new(program, args, env, prompt))
    }

    fn command(&self, prompt: &str, model: &str) -> Result<AgentCommand, AgentError> {
        let program = super::program::find_program(&self.program, INSTALL_HINT)?;
        let mut args: Vec<String> = [
            "-p",
            "--output-format",
            "stream-json",
            "--verbose",
            "--model",
            model,
        ]
        .iter()
        .map(|arg| (*arg).to_owned())
        .collect();
        args.extend(guard_settings());
        args.extend(self.permissions.iter().cloned());
        args.extend(self.args.iter().cloned());
        Ok(AgentCommand::new(program, args, self.env.clone(), prompt))
    }
}

/// `--settings` with debussy's own hooks for a session (see [`crate::session::guard`]):
/// a `PreCompact` hook running `debussy __hook pre-compact`, which blocks the agent's
/// compaction when the session listens and lets it happen otherwise; and a `PostToolUse`
/// hook running `debussy __hook post-tool-use`, which ends the session after a tool call
/// once debussy has decided to stop it, so a stop never cuts a tool short. Claude Code
/// merges these settings with the user's and project's own, hooks included; a
/// `--settings` in `agent.args` comes later and replaces them.
fn guard_settings() -> Vec<String> {
    let Ok(exe) = crate::process::own_executable() else {
        tracing::warn!("cannot locate the debussy executable for the session's hooks");
        return Vec::new();
    };
    let exe = crate::process::shell_quote(&exe.to_string_lossy());
    let hook = |event: &str| serde_json::json!([{"hooks": [{"type": "command", "command": format!("{exe} __hook {event}")}]}]);
    let settings = serde_json::json!({
        "hooks": {"PreCompact": hook("pre-compact"), "PostToolUse": hook("post-tool-use")}
    });
    vec!["--settings".to_owned(), settings.to_string()]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::program::executable;
    use crate::config::{AgentKind, Config};

    fn claude_settings() -> BackendSettings {
        crate::session::backend_settings(&Config::default(), AgentKind::Claude)
    }

    #[test]
    fn command_puts_the_prompt_on_stdin_and_appends_configured_args() {
        let dir = tempfile::tempdir().expect("tempdir");
        let program = executable(dir.path(), "claude");
        let settings = BackendSettings {
            command: Some(program.to_string_lossy().into_owned()),
            args: vec!["--mcp-config".into(), "mcp.json".into()],
            allowed_tools: vec!["Read".into(), "Bash(npm test:*)".into()],
            env: [("DISABLE_AUTOUPDATER".to_owned(), "1".to_owned())].into(),
            ..claude_settings()
        };
        let command = ClaudeBackend::new(&settings)
            .command("do the thing", "sonnet")
            .expect("command");
        assert_eq!(command.program, program);
        let settings = command
            .args
            .iter()
            .position(|arg| arg == "--settings")
            .expect("debussy's settings");
        let hooks: serde_json::Value =
            serde_json::from_str(&command.args[settings + 1]).expect("settings json");
        let hook = hooks["hooks"]["PreCompact"][0]["hooks"][0]["command"]
            .as_str()
            .expect("hook command");
        assert!(hook.ends_with(" __hook pre-compact"), "{hook}");
        let after_tool = hooks["hooks"]["PostToolUse"][0]["hooks"][0]["command"]
            .as_str()
            .expect("post-tool-use hook");
        assert!(
            after_tool.ends_with(" __hook post-tool-use"),
            "{after_tool}"
        );
        let mut args = command.args.clone();
        args.drain(settings..settings + 2);
        assert_eq!(
            args,
            [
                "-p",
                "--output-format",
                "stream-json",
                "--verbose",
                "--model",
                "sonnet",
                "--permission-mode",
                "acceptEdits",
                "--allowedTools",
                "Read,Bash(npm test:*)",
                "--mcp-config",
                "mcp.json"
            ]
        );
        assert_eq!(command.stdin.as_deref(), Some("do the thing"));
        assert_eq!(
            command.env.get("DISABLE_AUTOUPDATER").map(String::as_str),
            Some("1")
        );
    }

    #[test]
    fn each_permission_setting_gives_its_flags() {
        let tools = vec!["Bash".to_owned(), "Edit".to_owned()];
        assert_eq!(
            permission_args(AgentPermissions::AcceptEdits, &tools),
            [
                "--permission-mode",
                "acceptEdits",
                "--allowedTools",
                "Bash,Edit"
            ]
        );
        assert_eq!(
            permission_args(AgentPermissions::AcceptEdits, &[]),
            ["--permission-mode", "acceptEdits"]
        );
        assert_eq!(
            permission_args(AgentPermissions::Bypass, &tools),
            ["--permission-mode", "bypassPermissions"]
        );
        assert!(permission_args(AgentPermissions::Ask, &tools).is_empty());
    }

    #[test]
    fn the_default_lets_the_agent_edit_and_run_commands() {
        let args = ClaudeBackend::new(&claude_settings()).permissions;
        assert_eq!(args[..2], ["--permission-mode", "acceptEdits"]);
        let tools: Vec<&str> = args[3].split(',').collect();
        for tool in ["Bash", "Edit", "Write", "Read"] {
            assert!(tools.contains(&tool), "{tool} missing from {args:?}");
        }
    }

    #[test]
    fn missing_configured_command_is_a_clear_error() {
        let settings = BackendSettings {
            command: Some("/nonexistent/claude".into()),
            ..claude_settings()
        };
        let err = ClaudeBackend::new(&settings)
            .command("p", "opus")
            .expect_err("missing");
        assert!(err.to_string().contains("/nonexistent/claude"), "{err}");
    }
}
