//! [`BackendSettings`]: what one agent kind runs with, resolved from its profile once
//! (`session::backend_settings`), so a backend never looks at the whole configuration.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::config::{AgentKind, AgentPermissions, ContextLimit};

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
    /// The same settings running `model`.
    #[must_use]
    pub fn with_model(mut self, model: impl Into<String>) -> BackendSettings {
        self.model = model.into();
        self
    }

    /// The configured program, else the kind's own `default`.
    #[must_use]
    pub fn program_or(&self, default: &str) -> String {
        self.command.clone().unwrap_or_else(|| default.to_owned())
    }
}
