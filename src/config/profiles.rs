//! Agent profiles: the `agents.<kind>` sections, one per agent kind, each with the
//! program, arguments, environment, model, permissions and context window that kind runs
//! with.
//!
//! `agent.kind` (or `--agent`) picks the run's default kind and a phase's `**Agent:**`
//! picks another; either way a session runs its kind's own profile, so a program
//! configured for one agent is never run as another. The old `agent.command`,
//! `agent.args`, `agent.env`, `agent.permissions`, `agent.model_context_window` and
//! `model` keys are folded into a profile as the configuration loads
//! ([`super::legacy`]).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::section::section;

/// Which agent backend runs sessions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum AgentKind {
    /// Claude Code in headless stream-json mode.
    #[default]
    Claude,
    /// The Codex CLI (`codex exec --json`).
    Codex,
    /// The Gemini CLI (`gemini -p --output-format stream-json`).
    Gemini,
    /// The built-in simulated agent (offline demos and tests).
    Sim,
}

impl AgentKind {
    /// The model a session of this agent runs when none is configured: `opus` for Claude
    /// Code (and the sim agent, which plays any name), and empty for Codex and Gemini,
    /// which then run the model of their own configuration.
    #[must_use]
    pub fn default_model(self) -> &'static str {
        match self {
            AgentKind::Claude | AgentKind::Sim => "opus",
            AgentKind::Codex | AgentKind::Gemini => "",
        }
    }
}

/// What the agent may do without asking. A headless agent has nobody to ask, so anything
/// that needs a permission prompt is refused: the default lets it edit files and run the
/// tools in [`AgentConfig::allowed_tools`](super::AgentConfig::allowed_tools).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum AgentPermissions {
    /// Claude Code's `--permission-mode acceptEdits` plus `--allowedTools` from
    /// `agent.allowed_tools`.
    #[default]
    AcceptEdits,
    /// `--permission-mode bypassPermissions`: every tool call is allowed (opt in).
    Bypass,
    /// No permission flags: the agent's own settings decide, and anything they do not
    /// allow is refused.
    Ask,
}

/// One agent kind's profile (`agents.<kind>`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AgentProfile {
    /// Program to run; `None` runs the kind's own program (`claude`, `codex`, `gemini`,
    /// or debussy itself for `sim`) from `PATH`.
    pub command: Option<String>,
    /// Extra arguments appended to the backend's own (the sim agent takes none).
    pub args: Vec<String>,
    /// Extra environment variables for the agent process.
    #[serde(deserialize_with = "section")]
    pub env: BTreeMap<String, String>,
    /// Model name passed to the agent; `None` runs the kind's default
    /// ([`AgentKind::default_model`]).
    pub model: Option<String>,
    /// What the agent may do without asking.
    pub permissions: AgentPermissions,
    /// Context window in tokens, overriding what the agent reports and every guess.
    pub model_context_window: Option<u64>,
}

/// The `agents` section: a profile per agent kind.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AgentProfiles {
    /// Claude Code's profile.
    #[serde(deserialize_with = "section")]
    pub claude: AgentProfile,
    /// The Codex CLI's profile.
    #[serde(deserialize_with = "section")]
    pub codex: AgentProfile,
    /// The Gemini CLI's profile.
    #[serde(deserialize_with = "section")]
    pub gemini: AgentProfile,
    /// The simulated agent's profile.
    #[serde(deserialize_with = "section")]
    pub sim: AgentProfile,
}

impl AgentProfiles {
    /// The profile of `kind`.
    #[must_use]
    pub fn get(&self, kind: AgentKind) -> &AgentProfile {
        match kind {
            AgentKind::Claude => &self.claude,
            AgentKind::Codex => &self.codex,
            AgentKind::Gemini => &self.gemini,
            AgentKind::Sim => &self.sim,
        }
    }

    /// The profile of `kind`, to change.
    pub fn get_mut(&mut self, kind: AgentKind) -> &mut AgentProfile {
        match kind {
            AgentKind::Claude => &mut self.claude,
            AgentKind::Codex => &mut self.codex,
            AgentKind::Gemini => &mut self.gemini,
            AgentKind::Sim => &mut self.sim,
        }
    }
}

impl AgentKind {
    /// Every kind, in the order of the configuration.
    pub const ALL: [AgentKind; 4] = [
        AgentKind::Claude,
        AgentKind::Codex,
        AgentKind::Gemini,
        AgentKind::Sim,
    ];

    /// The kind as the configuration spells it (`claude`).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            AgentKind::Claude => "claude",
            AgentKind::Codex => "codex",
            AgentKind::Gemini => "gemini",
            AgentKind::Sim => "sim",
        }
    }

    /// The kind spelled `word`, as the configuration spells it.
    #[must_use]
    pub fn from_word(word: &str) -> Option<AgentKind> {
        AgentKind::ALL
            .into_iter()
            .find(|kind| kind.as_str() == word)
    }
}

impl std::fmt::Display for AgentKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_has_its_own_profile_and_word() {
        let mut profiles = AgentProfiles::default();
        profiles.get_mut(AgentKind::Codex).command = Some("/opt/codex".into());
        for kind in AgentKind::ALL {
            let expected = (kind == AgentKind::Codex).then_some("/opt/codex");
            assert_eq!(profiles.get(kind).command.as_deref(), expected);
            assert_eq!(AgentKind::from_word(kind.as_str()), Some(kind));
            let serde = serde_norway::to_string(&kind).expect("serializes");
            assert_eq!(serde.trim(), kind.as_str());
        }
        assert_eq!(AgentKind::from_word("claud"), None);
    }
}
