//! [`RunError`]: why a run could not start, with the fix for each reason.

use super::lock;
use crate::git::vcs;

use crate::state::StateError;

/// Why a run could not start (once started, failures end up in the summary instead).
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum RunError {
    /// The git pre-flight refused.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Preflight(#[from] vcs::PreflightError),
    /// Another run of this project is live.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Locked(#[from] lock::LockError),
    /// The state store failed.
    #[error(transparent)]
    #[diagnostic(transparent)]
    State(#[from] StateError),
    /// The work a killed session left could not be committed as its recovered
    /// checkpoint (a hook refused it); it is still in the tree.
    #[error("failed to commit what the interrupted run's agent left in {tree} ({why}):\n{files}")]
    #[diagnostic(help(
        "the files are still there: commit them yourself (or pass --allow-dirty to keep them in the resumed run), then resume"
    ))]
    Recovery {
        /// The working tree (the project's, or a phase's worktree).
        tree: String,
        /// The files, one per line.
        files: String,
        /// Why, in git's words.
        why: String,
    },
    /// The run being resumed started on another branch than the one checked out now.
    #[error("the run being resumed started on branch {started}, and {now} is checked out now")]
    #[diagnostic(help(
        "switch back (`git switch {started}`) and resume; its commits belong on {started}"
    ))]
    BranchChanged {
        /// The branch it started on.
        started: String,
        /// The branch checked out now.
        now: String,
    },
    /// The plan's dependencies form a cycle.
    #[error("the plan's dependencies form a cycle: {0}")]
    #[diagnostic(help("run `debussy audit` on the plan for details"))]
    Cycle(String),
    /// The configuration cannot make an agent session.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Session(#[from] crate::session::SessionError),
    /// `--phase` names no phase.
    #[error("{0}")]
    UnknownPhase(String),
    /// The agent a phase names cannot be prepared.
    #[error("phase {phase}: {source}")]
    #[diagnostic(help("{}", agent_help(source)))]
    Agent {
        /// The phase.
        phase: String,
        /// Why.
        source: crate::agent::AgentError,
    },
    /// Phases cannot run side by side in this project.
    #[error("{problem}")]
    #[diagnostic(help("{help}"))]
    Parallel {
        /// What is wrong.
        problem: String,
        /// How to fix it.
        help: String,
    },
    /// `.debussy/` could not be prepared.
    #[error("failed to prepare {path}")]
    Prepare {
        /// The path.
        path: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

impl RunError {
    /// Whether the error is the user's input (exit 2) rather than the work failing.
    #[must_use]
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            RunError::UnknownPhase(_)
                | RunError::Session(_)
                | RunError::Agent { .. }
                | RunError::Preflight(_)
                | RunError::Recovery { .. }
                | RunError::BranchChanged { .. }
                | RunError::Parallel { .. }
                | RunError::Locked(lock::LockError::Held { .. })
        )
    }
}

/// How to fix an agent that cannot be prepared: its own help, else a pointer to the
/// phase's `**Agent:**`.
fn agent_help(err: &crate::agent::AgentError) -> String {
    miette::Diagnostic::help(err).map_or_else(
        || "check the phase's `**Agent:**` line".to_owned(),
        |help| help.to_string(),
    )
}
