//! [`RunContext`]: what every phase of a run shares, made once when the run starts and
//! borrowed by the drive that schedules the phases and by each phase's runner.

use std::cell::OnceCell;
use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::config::Config;
use crate::events::EventSender;
use crate::plan::Plan;
use crate::session::SessionSpec;
use crate::state::Store;

use super::checkout::Checkout;
use super::no_space::NoSpace;
use super::pool::WorktreePool;

/// The run's shared context, read-only but for the one fact any phase may learn for
/// all of them: that the disk is full.
pub(crate) struct RunContext<'run> {
    /// The run's configuration.
    pub(crate) config: Config,
    /// The project root: state, transcripts and the agent's `debussy` calls.
    pub(crate) root: PathBuf,
    /// The project's own checkout and the branch commits there go on, when phases run
    /// there and debussy commits.
    pub(crate) checkout: Option<Checkout>,
    /// The plan being run.
    pub(crate) plan: &'run Plan,
    /// Every session's settings from the configuration; each session adds its prompt,
    /// log path and environment.
    pub(crate) session: SessionSpec,
    /// The settings of phases that name their own agent or model, by phase id.
    pub(crate) phase_sessions: BTreeMap<String, SessionSpec>,
    /// The state store; the run's one task makes every call to it.
    pub(crate) store: &'run Store,
    /// The run's id.
    pub(crate) run_id: String,
    /// Where the run's events go.
    pub(crate) events: EventSender,
    /// The run's worktrees and its changes to the repository, one at a time.
    pub(crate) pool: &'run WorktreePool,
    /// Set by the first write that found the disk full: the run pauses at its next step.
    pub(crate) no_space: OnceCell<NoSpace>,
}
