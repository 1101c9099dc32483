//! Where `--resume` takes each phase of a stopped run up ([`ResumePoint`]); the attempt
//! (`attempt.rs`) goes on from it.
//!
//! A phase goes on from where its attempt stood when the run stopped (a pause, a SIGKILL,
//! a crash), never from the start: the next session is the attempt's next one, after
//! the context restarts it had taken (the restart budget and the session numbering go
//! on), and its checkpoint names the commit that holds the work (the pause's, the
//! recovered one, or the last restart's), carries the handoff the last stopped session
//! wrote, and lists the files changed since the phase started.
//!
//! It reads the state store alone; what a killed session left uncommitted is committed
//! by `recover.rs` before.

use std::collections::{BTreeMap, BTreeSet};

use crate::state::{ExecutionRecord, ExecutionStatus, RestartRecord, RunRecord, StateError, Store};

use super::recover::Recovered;

/// Where a stopped run left a phase, and how its resume goes on.
#[derive(Debug, Clone)]
pub(crate) struct ResumePoint {
    /// The phase.
    pub(crate) phase: String,
    /// `HEAD` when the phase started: its checkpoints list the files changed since.
    pub(crate) base: Option<git2::Oid>,
    /// The commit that holds the work so far, when one does.
    pub(crate) commit: Option<String>,
    /// Why the run stopped, when it was not the user's own pause.
    pub(crate) reason: Option<String>,
    /// The context restarts the attempt had taken.
    pub(crate) restarts: u32,
    /// What the session stopped for the last of them wrote for the next one.
    pub(crate) handoff: Option<String>,
}

/// The resume point of each phase of `run` that has one: a phase its pause left work
/// of, whose killed session's work was `recovered`, or whose last attempt had restarted
/// when the run stopped.
///
/// # Errors
/// On a state store failure.
pub(super) fn points(
    store: &Store,
    run: &RunRecord,
    recovered: &[Recovered],
) -> Result<BTreeMap<String, ResumePoint>, StateError> {
    let executions = store.executions_of(run)?;
    let phases: BTreeSet<&str> = run
        .pauses
        .keys()
        .map(String::as_str)
        .chain(recovered.iter().map(|r| r.phase.as_str()))
        .chain(executions.iter().map(|e| e.phase_id.as_str()))
        .collect();
    let mut points = BTreeMap::new();
    for phase in phases {
        let attempt = stopped_attempt(&executions, phase);
        let last_restart = last_restart(store, &attempt)?;
        let pause = run.pauses.get(phase);
        let recovered = recovered.iter().find(|r| r.phase == phase);
        if pause.is_none() && recovered.is_none() && last_restart.is_none() {
            continue;
        }
        let base = attempt
            .first()
            .and_then(|latest| latest.base.clone())
            .or_else(|| pause.and_then(|p| p.base.clone()))
            .or_else(|| recovered.and_then(|r| r.base.clone()));
        let commit = pause
            .and_then(|p| p.commit.clone())
            .or_else(|| recovered.map(|r| r.commit.clone()))
            .or_else(|| last_restart.as_ref().and_then(|(r, _)| r.commit_id.clone()));
        let (restarts, handoff) = last_restart
            .map(|(restart, handoff)| (restart.restart_number, handoff))
            .unwrap_or_default();
        let reason = match (pause, recovered) {
            (Some(_), _) => run.error.clone(),
            (None, Some(recovered)) => Some(format!(
                "interrupted (debussy was stopped while the phase ran); the files its agent had changed were committed as {}",
                short(&recovered.commit)
            )),
            (None, None) => {
                Some("interrupted (debussy was stopped while the phase ran)".to_owned())
            }
        };
        points.insert(
            phase.to_owned(),
            ResumePoint {
                phase: phase.to_owned(),
                base: base.and_then(|oid| git2::Oid::from_str(&oid).ok()),
                commit,
                reason,
                restarts,
                handoff,
            },
        );
    }
    Ok(points)
}

/// The executions making up `phase`'s stopped attempt, newest first: its last one when
/// that was paused or interrupted, and the stopped ones each resume took up in turn.
fn stopped_attempt<'a>(executions: &'a [ExecutionRecord], phase: &str) -> Vec<&'a ExecutionRecord> {
    executions
        .iter()
        .rev()
        .filter(|execution| execution.phase_id == phase)
        .take_while(|execution| {
            matches!(
                execution.status,
                ExecutionStatus::Paused | ExecutionStatus::Interrupted
            )
        })
        .collect()
}

/// The last context restart of the stopped attempt, with the handoff its stopped
/// session wrote.
fn last_restart(
    store: &Store,
    attempt: &[&ExecutionRecord],
) -> Result<Option<(RestartRecord, Option<String>)>, StateError> {
    for execution in attempt {
        if let Some(restart) = store.restarts(execution.id)?.pop() {
            let handoff = store.handoff(execution.id, restart.restart_number)?;
            return Ok(Some((restart, handoff)));
        }
    }
    Ok(None)
}

fn short(id: &str) -> &str {
    id.get(..12).unwrap_or(id)
}
