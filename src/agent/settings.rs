//! [`BackendSettings`]: what one agent kind runs with, taken from its profile once, so a
//! backend, a session and the checks before a run never look at the whole configuration.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::config::{AgentKind, AgentPermissions, Config};
use crate::context::ContextLimit;

/// One agent kind's settings, resolved from its profile (`agents.<kind>`).
#[derive(Debug, Clone, PartialEq)]
pub struct BackendSettings {
    /// Which agent.
    pub kind: AgentKind,
    /// The program; `None` runs the kind's own (found on `PATH`, or debussy for `sim`).
    pub command: Option<String>,
    /// Extra arguments after the backend's own.
    pub args: Vec<String>,
    /// Extra environment for the agent process.
    pub env: BTreeMap<String, String>,
    /// The model passed to the agent; empty runs the agent's own default.
    pub model: String,
    /// What the agent may do without asking.
    pub permissions: AgentPermissions,
    /// Claude Code's tools allowed without asking under `accept-edits`.
    pub allowed_tools: Vec<String>,
    /// The configured context window, over what the agent reports and every guess.
    pub model_context_window: Option<u64>,
    /// debussy's context threshold: where the agent's own compaction is moved past.
    pub context_threshold: ContextLimit,
    /// The sim agent's configured scenario (`agent.scenario`).
    pub scenario: Option<PathBuf>,
}

impl BackendSettings {
    /// The settings of `kind` from its profile. The run's default kind
    /// (`agent.kind`) runs `model` (its profile's, or the old `model` key); another kind
    /// runs its profile's model, else the kind's default.
    #[must_use]
    pub fn new(config: &Config, kind: AgentKind) -> BackendSettings {
        let profile = config.agents.get(kind);
        let model = if kind == config.agent.kind {
            config.model.clone()
        } else {
            profile
                .model
                .clone()
                .unwrap_or_else(|| kind.default_model().to_owned())
        };
        BackendSettings {
            kind,
            command: profile.command.clone(),
            args: profile.args.clone(),
            env: profile.env.clone(),
            model,
            permissions: profile.permissions,
            allowed_tools: config.agent.allowed_tools.clone(),
            model_context_window: profile.model_context_window,
            context_threshold: config.context_threshold,
            scenario: config.agent.scenario.clone(),
        }
    }

    /// The settings of the run's default kind (`agent.kind`).
    #[must_use]
    pub fn default_kind(config: &Config) -> BackendSettings {
        BackendSettings::new(config, config.agent.kind)
    }

    /// The same settings running `model`.
    #[must_use]
    pub fn with_model(mut self, model: impl Into<String>) -> BackendSettings {
        self.model = model.into();
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_reads_its_own_profile() {
        let mut config = Config {
            model: "sonnet".into(),
            ..Config::default()
        };
        config.agents.claude.command = Some("/opt/claude".into());
        config.agents.codex.command = Some("/opt/codex".into());
        config.agents.codex.args = vec!["-c".into(), "x=1".into()];
        config.agents.codex.model_context_window = Some(400_000);
        config.agents.gemini.model = Some("gemini-2.5-pro".into());
        config.agents.gemini.permissions = AgentPermissions::Bypass;

        let claude = BackendSettings::default_kind(&config);
        assert_eq!(claude.kind, AgentKind::Claude);
        assert_eq!(claude.command.as_deref(), Some("/opt/claude"));
        assert_eq!(claude.model, "sonnet");

        let codex = BackendSettings::new(&config, AgentKind::Codex);
        assert_eq!(codex.command.as_deref(), Some("/opt/codex"));
        assert_eq!(codex.args, ["-c", "x=1"]);
        assert_eq!(codex.model, "", "Codex runs its own default model");
        assert_eq!(codex.model_context_window, Some(400_000));
        assert_eq!(codex.permissions, AgentPermissions::AcceptEdits);

        let gemini = BackendSettings::new(&config, AgentKind::Gemini);
        assert_eq!(gemini.command, None, "never another kind's program");
        assert_eq!(gemini.model, "gemini-2.5-pro");
        assert_eq!(gemini.permissions, AgentPermissions::Bypass);
        assert_eq!(gemini.with_model("gemini-3").model, "gemini-3");

        assert_eq!(BackendSettings::new(&config, AgentKind::Sim).model, "opus");
    }
}
