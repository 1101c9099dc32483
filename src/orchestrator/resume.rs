//! Where `--resume` takes each phase of a stopped run up ([`ResumePoint`]); the phase
//! (`phase.rs`) and its attempt (`attempt.rs`) go on from it.
//!
//! A phase goes on from where its attempt stood when the run stopped (a pause, a SIGKILL,
//! a crash), never from the start. The attempt keeps its number and kind (a retry, a fix
//! of findings, told what it was told), the context restarts the phase had taken count
//! in its figures, and what its sessions did before the stop (the subagents they used,
//! the calls they were refused) counts in its compliance check;
//! - its agent was working ([`Stage::Working`]): the next session is the attempt's next
//!   one, after the context restarts it had taken (the restart budget and the session
//!   numbering go on), and its checkpoint names the commit that holds the work (the
//!   pause's, the recovered one, or the last restart's), carries the handoff the last
//!   stopped session wrote, and lists the files changed since the phase started;
//! - its agent had said the phase was done ([`Stage::Done`]: the gates were running, or
//!   the completion commit was being made): no session starts; the gates and checks run
//!   again, then what follows them.
//!
//! It reads the state store alone; what a killed session left uncommitted is committed
//! by `recover.rs` before.

use std::collections::{BTreeMap, BTreeSet};

use crate::agent::DeniedCall;
use crate::checkpoint;
use crate::events::AttemptKind;
use crate::state::{
    CompletionSignal, CompletionStatus, ExecutionRecord, ExecutionStatus, RestartRecord, RunRecord,
    StateError, Store,
};

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
    /// How far the attempt had got.
    pub(crate) stage: Stage,
    /// The attempt the run stopped in, which the resume goes on with.
    pub(crate) attempt: StoppedAttempt,
}

/// The attempt a stopped run was in: the resume goes on with it, under its number.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct StoppedAttempt {
    /// Its number, from 1.
    pub(crate) number: u32,
    /// A first attempt, a retry or a fix of findings.
    pub(crate) kind: AttemptKind,
    /// The context restarts the phase had taken in it and in the attempts before it.
    pub(crate) phase_restarts: u32,
    /// What its sessions were told, without a checkpoint: for a retry or a fix, the
    /// findings it was to act on. `None` for a first attempt (it is told the phase's
    /// prompt as it reads now), or when no session of it had started.
    pub(crate) prompt: Option<String>,
    /// The subagents its sessions used, before the stop.
    pub(crate) agents_used: BTreeSet<String>,
    /// The tool calls its sessions were refused, before the stop.
    pub(crate) refused_calls: Vec<DeniedCall>,
}

impl StoppedAttempt {
    /// The attempt of a phase no attempt of which had started.
    const FIRST: StoppedAttempt = StoppedAttempt {
        number: 1,
        kind: AttemptKind::First,
        phase_restarts: 0,
        prompt: None,
        agents_used: BTreeSet::new(),
        refused_calls: Vec::new(),
    };

    /// Whether starting the phase afresh is the same as going on with it: a first
    /// attempt that had taken no restart.
    fn is_first(&self) -> bool {
        *self == StoppedAttempt::FIRST
    }

    /// The attempt whose executions, newest first, are `parts`, the stopped ones of
    /// `phase`.
    fn of(
        store: &Store,
        executions: &[ExecutionRecord],
        phase: &str,
        parts: &[&ExecutionRecord],
    ) -> Result<StoppedAttempt, StateError> {
        let Some(latest) = parts.first() else {
            return Ok(StoppedAttempt::FIRST);
        };
        // A session resolving the conflicts of a completed phase's merge is not an
        // attempt at its work: the merge goes on with it (`integrate.rs`), and a phase
        // that runs again starts afresh.
        let before = executions
            .iter()
            .rev()
            .filter(|e| e.phase_id == phase)
            .nth(parts.len());
        if before.is_some_and(|e| {
            matches!(
                e.status,
                ExecutionStatus::Merging
                    | ExecutionStatus::AwaitingHuman
                    | ExecutionStatus::Completed
            )
        }) {
            return Ok(StoppedAttempt::FIRST);
        }
        let kind = kind_of(latest);
        let prompt = match kind {
            // `kind_of` never names a merge fix: it is not an attempt at the work.
            AttemptKind::First | AttemptKind::MergeFix => None,
            AttemptKind::Retry | AttemptKind::Remediation => told(store, parts)?,
        };
        let mut agents_used = BTreeSet::new();
        let mut refused_calls = Vec::new();
        for part in parts.iter().rev() {
            agents_used.extend(store.agents_used(part.id)?);
            refused_calls.extend(store.refused_calls(part.id)?);
        }
        Ok(StoppedAttempt {
            number: latest.attempt,
            kind,
            phase_restarts: restarts_taken(store, &round(executions, phase))?,
            prompt,
            agents_used,
            refused_calls,
        })
    }
}

/// How far a stopped attempt had got.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Stage {
    /// Its agent was working, after `restarts` context restarts.
    Working {
        /// The context restarts the attempt had taken.
        restarts: u32,
        /// What the session stopped for the last of them wrote for the next one.
        handoff: Option<String>,
    },
    /// Its agent had said the phase was done: the gates and checks run again.
    Done,
}

impl Stage {
    /// Whether there is nothing to go on from: no restart taken, the agent not done.
    fn is_fresh(&self) -> bool {
        matches!(self, Stage::Working { restarts: 0, .. })
    }
}

/// The resume point of each phase of `run` that has one: a phase its pause left work
/// of, whose killed session's work was `recovered`, or whose last attempt had restarted
/// or was done when the run stopped.
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
        let said = store.completion(&run.id, phase)?;
        let stage = match attempt.first() {
            Some(latest) => stage(latest, last_restart.as_ref(), said.as_ref()),
            None => Stage::Working {
                restarts: 0,
                handoff: None,
            },
        };
        let stopped = StoppedAttempt::of(store, &executions, phase, &attempt)?;
        let pause = run.pauses.get(phase);
        let recovered = recovered.iter().find(|r| r.phase == phase);
        if pause.is_none() && recovered.is_none() && stage.is_fresh() && stopped.is_first() {
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
                stage,
                attempt: stopped,
            },
        );
    }
    Ok(points)
}

/// What kind of attempt `execution` was part of.
fn kind_of(execution: &ExecutionRecord) -> AttemptKind {
    if execution.remediation {
        AttemptKind::Remediation
    } else if execution.attempt > 1 {
        AttemptKind::Retry
    } else {
        AttemptKind::First
    }
}

/// The executions of `phase`'s attempts up to the stop, newest first: those of its stopped
/// attempt, and before them each failed attempt that led to it, back to its first
/// attempt (an earlier run of the phase, which ended, is not part of it).
fn round<'a>(executions: &'a [ExecutionRecord], phase: &str) -> Vec<&'a ExecutionRecord> {
    let stopped = |execution: &ExecutionRecord| {
        matches!(
            execution.status,
            ExecutionStatus::Paused | ExecutionStatus::Interrupted
        )
    };
    let mut round: Vec<&ExecutionRecord> = Vec::new();
    for execution in executions.iter().rev().filter(|e| e.phase_id == phase) {
        let part = match round.last() {
            None => stopped(execution),
            Some(after) => {
                (execution.attempt == after.attempt && stopped(execution))
                    || (execution.attempt + 1 == after.attempt
                        && execution.status == ExecutionStatus::Failed)
            }
        };
        if !part {
            break;
        }
        round.push(execution);
    }
    round
}

/// What the first session of the attempt made of `parts` (newest first) was told,
/// without its checkpoint.
fn told(store: &Store, parts: &[&ExecutionRecord]) -> Result<Option<String>, StateError> {
    for execution in parts.iter().rev() {
        if let Some(first) = store.prompts(execution.id)?.into_iter().next() {
            return Ok(
                checkpoint::original_prompt(&first.prompt, first.checkpoint.as_deref())
                    .map(str::to_owned),
            );
        }
    }
    Ok(None)
}

/// The context restarts `executions` took.
fn restarts_taken(store: &Store, executions: &[&ExecutionRecord]) -> Result<u32, StateError> {
    let mut taken = 0;
    for execution in executions {
        taken += u32::try_from(store.restarts(execution.id)?.len()).unwrap_or(u32::MAX);
    }
    Ok(taken)
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

/// How far the attempt whose last execution is `latest` had got: done when the agent
/// said `completed` during it, after its last restart (a restart after the word means a
/// session went on working); else working after its last restart.
fn stage(
    latest: &ExecutionRecord,
    last_restart: Option<&(RestartRecord, Option<String>)>,
    said: Option<&CompletionSignal>,
) -> Stage {
    let done = said.is_some_and(|signal| {
        signal.status == CompletionStatus::Completed
            && later(&signal.at, &latest.started_at)
            && last_restart.is_none_or(|(restart, _)| later(&signal.at, &restart.at))
    });
    if done {
        return Stage::Done;
    }
    match last_restart {
        Some((restart, handoff)) => Stage::Working {
            restarts: restart.restart_number,
            handoff: handoff.clone(),
        },
        None => Stage::Working {
            restarts: 0,
            handoff: None,
        },
    }
}

/// Whether the stored time `a` is after `b` (false when either cannot be read).
fn later(a: &str, b: &str) -> bool {
    match (a.parse::<jiff::Timestamp>(), b.parse::<jiff::Timestamp>()) {
        (Ok(a), Ok(b)) => a > b,
        _ => false,
    }
}

fn short(id: &str) -> &str {
    id.get(..12).unwrap_or(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn execution(started_at: &str) -> ExecutionRecord {
        ExecutionRecord {
            id: 1,
            run_id: "r".into(),
            phase_id: "1".into(),
            attempt: 1,
            remediation: false,
            status: ExecutionStatus::Interrupted,
            restarts: 0,
            outcome_code: None,
            billed: Default::default(),
            cost_usd: 0.0,
            cost_estimated: false,
            commit_id: None,
            error: None,
            started_at: started_at.into(),
            ended_at: None,
            workdir: None,
            branch_tip: None,
            base: None,
        }
    }

    fn restart(number: u32, at: &str) -> (RestartRecord, Option<String>) {
        let record = RestartRecord {
            restart_number: number,
            reason: "context".into(),
            context_percent: Some(85.0),
            commit_id: Some("c0ffee".into()),
            at: at.into(),
        };
        (record, Some("## Goal\ngo on".into()))
    }

    fn said(status: CompletionStatus, at: &str) -> CompletionSignal {
        CompletionSignal {
            id: 1,
            phase_id: "1".into(),
            status,
            reason: None,
            at: at.into(),
        }
    }

    const STARTED: &str = "2026-11-28T10:00:00Z";

    fn part(id: i64, phase: &str, attempt: u32, status: ExecutionStatus) -> ExecutionRecord {
        ExecutionRecord {
            id,
            phase_id: phase.into(),
            attempt,
            status,
            ..execution(STARTED)
        }
    }

    #[test]
    fn a_stopped_fix_goes_on_with_what_it_was_told_and_a_merges_fix_starts_afresh() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("store");
        let run = store.create_run("/p.md", "Plan").expect("run");
        let start = |attempt, remediation| {
            store
                .start_execution(&run, "1", attempt, remediation, None)
                .expect("execution")
        };
        let failed = start(1, false);
        let fix = start(2, true);
        let resumed = start(2, true);
        store
            .record_prompt(fix, 0, "Fix these: 1. gate `check` failed", None)
            .expect("prompt");
        let checkpoint = "# Checkpoint\n\nresumed\n";
        let told =
            checkpoint::prompt_with_checkpoint(checkpoint, "Fix these: 1. gate `check` failed");
        store
            .record_prompt(resumed, 0, &told, Some(checkpoint))
            .expect("prompt");
        let mut executions = store.executions(&run).expect("executions");
        executions[0].status = ExecutionStatus::Failed;
        executions[1].status = ExecutionStatus::Interrupted;
        executions[2].status = ExecutionStatus::Paused;
        let parts = stopped_attempt(&executions, "1");
        assert_eq!(
            parts.iter().map(|e| e.id).collect::<Vec<_>>(),
            [resumed, fix]
        );
        assert_eq!(
            StoppedAttempt::of(&store, &executions, "1", &parts).expect("read"),
            StoppedAttempt {
                number: 2,
                kind: AttemptKind::Remediation,
                phase_restarts: 0,
                prompt: Some("Fix these: 1. gate `check` failed".into()),
                agents_used: BTreeSet::new(),
                refused_calls: Vec::new(),
            }
        );
        assert_eq!(executions[0].id, failed);

        // The same fix after the phase's completed attempt: a merge's conflicts.
        executions[0].status = ExecutionStatus::Merging;
        let parts = stopped_attempt(&executions, "1");
        assert!(
            StoppedAttempt::of(&store, &executions, "1", &parts)
                .expect("read")
                .is_first()
        );
    }

    #[test]
    fn a_stopped_attempts_round_goes_back_through_the_failed_attempts_before_it() {
        use ExecutionStatus::{Completed, Failed, Interrupted, Paused};
        let executions = [
            // An earlier round of phase 1, which failed; a resume ran it again.
            part(1, "1", 1, Failed),
            part(2, "1", 2, Failed),
            part(3, "1", 1, Paused),
            part(4, "1", 1, Failed),
            part(5, "2", 1, Completed),
            part(6, "1", 2, Interrupted),
            part(7, "1", 2, Paused),
        ];
        let ids = |phase| -> Vec<i64> { round(&executions, phase).iter().map(|e| e.id).collect() };
        assert_eq!(ids("1"), [7, 6, 4, 3]);
        assert!(ids("2").is_empty(), "phase 2 did not stop");
        assert_eq!(kind_of(&executions[6]), AttemptKind::Retry);
        assert_eq!(kind_of(&executions[0]), AttemptKind::First);
        let fix = ExecutionRecord {
            remediation: true,
            ..part(8, "1", 2, Paused)
        };
        assert_eq!(kind_of(&fix), AttemptKind::Remediation);
    }

    #[test]
    fn an_attempt_stopped_after_a_restart_goes_on_after_it_with_its_handoff() {
        let restarted = restart(2, "2026-11-28T10:05:00Z");
        assert_eq!(
            stage(&execution(STARTED), Some(&restarted), None),
            Stage::Working {
                restarts: 2,
                handoff: Some("## Goal\ngo on".into())
            }
        );
        assert!(stage(&execution(STARTED), None, None).is_fresh());
    }

    #[test]
    fn an_attempt_whose_agent_said_done_since_its_last_restart_is_done() {
        let restarted = restart(1, "2026-11-28T10:05:00Z");
        let done = said(CompletionStatus::Completed, "2026-11-28T10:06:00Z");
        assert_eq!(
            stage(&execution(STARTED), Some(&restarted), Some(&done)),
            Stage::Done
        );
        assert_eq!(stage(&execution(STARTED), None, Some(&done)), Stage::Done);
    }

    #[test]
    fn a_word_from_before_the_attempt_or_its_last_restart_or_not_completed_is_not_done() {
        let restarted = restart(1, "2026-11-28T10:05:00Z");
        for signal in [
            // An earlier attempt's, whose gates failed.
            said(CompletionStatus::Completed, "2026-11-28T09:59:00Z"),
            // Followed by a restart: a session went on working.
            said(CompletionStatus::Completed, "2026-11-28T10:04:00Z"),
            said(CompletionStatus::Blocked, "2026-11-28T10:06:00Z"),
            said(CompletionStatus::Completed, "not a time"),
        ] {
            assert_eq!(
                stage(&execution(STARTED), Some(&restarted), Some(&signal)),
                Stage::Working {
                    restarts: 1,
                    handoff: Some("## Goal\ngo on".into())
                },
                "{signal:?}"
            );
        }
    }
}
