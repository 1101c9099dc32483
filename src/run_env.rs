//! The environment a run hands to each agent process, so that the agent's own
//! `debussy done` / `debussy progress` calls (and the simulated agent) know which run,
//! phase, attempt and session they belong to. Concurrent runs never mix because each
//! agent carries its own run id.

use std::path::PathBuf;

/// The variable naming the session's compaction guard FIFO to the agent (and so to its
/// hooks).
pub const GUARD_ENV: &str = "DEBUSSY_COMPACTION_GUARD";

/// The variable naming the session's stop marker to the agent (and so to its hooks).
pub const STOP_ENV: &str = "DEBUSSY_STOP_MARKER";

/// Variable holding the run id.
pub const RUN_ID: &str = "DEBUSSY_RUN_ID";
/// Variable holding the phase id.
pub const PHASE_ID: &str = "DEBUSSY_PHASE_ID";
/// Variable holding the 1-based attempt number.
pub const ATTEMPT: &str = "DEBUSSY_ATTEMPT";
/// Variable holding the 0-based restart index within the attempt.
pub const RESTART: &str = "DEBUSSY_RESTART";
/// Variable holding the project root (where `.debussy/` lives).
pub const PROJECT_ROOT: &str = "DEBUSSY_PROJECT_ROOT";

/// What a run tells one agent session about itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunEnv {
    /// The run.
    pub run_id: String,
    /// The phase being worked on.
    pub phase_id: String,
    /// 1-based attempt number.
    pub attempt: u32,
    /// 0-based restart index within the attempt.
    pub restart: u32,
    /// The project root.
    pub project_root: PathBuf,
}

impl RunEnv {
    /// The variables to set on the agent process.
    #[must_use]
    pub fn vars(&self) -> Vec<(&'static str, String)> {
        vec![
            (RUN_ID, self.run_id.clone()),
            (PHASE_ID, self.phase_id.clone()),
            (ATTEMPT, self.attempt.to_string()),
            (RESTART, self.restart.to_string()),
            (PROJECT_ROOT, self.project_root.display().to_string()),
        ]
    }

    /// Read the variables back, from a lookup function (normally `std::env::var`).
    /// `None` when no run id is set, i.e. this process was not started by a run.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Option<RunEnv> {
        let run_id = lookup(RUN_ID).filter(|id| !id.is_empty())?;
        Some(RunEnv {
            run_id,
            phase_id: lookup(PHASE_ID).unwrap_or_default(),
            attempt: lookup(ATTEMPT).and_then(|v| v.parse().ok()).unwrap_or(1),
            restart: lookup(RESTART).and_then(|v| v.parse().ok()).unwrap_or(0),
            project_root: lookup(PROJECT_ROOT).map(PathBuf::from).unwrap_or_default(),
        })
    }

    /// Read the variables of this process.
    #[must_use]
    pub fn from_process() -> Option<RunEnv> {
        RunEnv::from_lookup(|name| std::env::var(name).ok())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    #[test]
    fn round_trips_through_variables() {
        let env = RunEnv {
            run_id: "r-1".into(),
            phase_id: "3.1".into(),
            attempt: 2,
            restart: 1,
            project_root: PathBuf::from("/work/project"),
        };
        let vars: HashMap<_, _> = env.vars().into_iter().collect();
        assert_eq!(
            RunEnv::from_lookup(|name| vars.get(name).cloned()),
            Some(env)
        );
    }

    #[test]
    fn absent_without_a_run_id() {
        assert_eq!(RunEnv::from_lookup(|_| None), None);
        assert_eq!(
            RunEnv::from_lookup(|name| (name == RUN_ID).then(String::new)),
            None
        );
    }
}
