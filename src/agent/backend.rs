//! Which backend runs a session: the configured kind's own.

use std::path::Path;

use super::{AgentBackend, AgentError, BackendSettings, claude, codex, gemini, sim};
use crate::config::AgentKind;

/// Where a run is, for backends that need paths (the sim agent's default scenario).
#[derive(Debug, Clone, Copy)]
pub struct BackendContext<'a> {
    /// The project root (relative configured paths are resolved against it).
    pub project_root: &'a Path,
    /// The master plan being run, if any.
    pub plan_path: Option<&'a Path>,
}

/// Build the backend of `settings.kind`, running that kind's own profile: never another
/// kind's program. Nothing is checked yet: problems (a missing program, a bad scenario)
/// are reported by [`AgentBackend::command`].
///
/// # Errors
/// None today; the `Result` leaves room for backends whose setup can fail.
pub fn backend(
    settings: &BackendSettings,
    context: BackendContext<'_>,
) -> Result<Box<dyn AgentBackend>, AgentError> {
    Ok(match settings.kind {
        AgentKind::Claude => Box::new(claude::ClaudeBackend::new(settings)),
        AgentKind::Codex => Box::new(codex::CodexBackend::new(settings)),
        AgentKind::Gemini => Box::new(gemini::GeminiBackend::new(settings)),
        AgentKind::Sim => {
            let scenario = sim::scenario_path(
                settings.scenario.as_deref(),
                context.project_root,
                context.plan_path,
            );
            Box::new(sim::SimBackend::new(settings, scenario))
        }
    })
}
