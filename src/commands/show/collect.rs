//! What `show` reads for one attempt: the run, the attempt asked for, and everything
//! recorded about it ([`Shown`]).

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::cli::ShowArgs;
use crate::exit::Failure;
use crate::state::{
    ExecutionRecord, ExecutionStatus, GateRecord, RunRecord, SessionKind, StateError, Store,
};

use super::transcript::{TranscriptSummary, summarize};
use crate::commands::report::outcome_name;

/// One attempt, as `show` reports it: all of it, when a run stopped in it and a resume
/// went on with it.
#[derive(Debug, Serialize)]
pub(super) struct Shown {
    pub(super) run_id: String,
    pub(super) plan_title: String,
    pub(super) phase_id: String,
    pub(super) attempt: u32,
    /// How many attempts the phase had in this run (an attempt a resume went on with
    /// counts once).
    pub(super) attempts: u32,
    pub(super) remediation: bool,
    pub(super) status: String,
    pub(super) outcome: Option<String>,
    pub(super) error: Option<String>,
    pub(super) started_at: String,
    pub(super) ended_at: Option<String>,
    pub(super) sessions: Vec<SessionShown>,
    pub(super) gates: Vec<GateRecord>,
    pub(super) commits: Vec<String>,
    pub(super) progress: Vec<String>,
}

/// One session of the attempt.
#[derive(Debug, Serialize)]
pub(super) struct SessionShown {
    pub(super) index: u32,
    /// The first session a `--resume` started in the attempt, after the run stopped.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub(super) resumed: bool,
    pub(super) outcome: String,
    pub(super) context_percent: f64,
    /// The window the percentage is of, in tokens.
    pub(super) context_window: u64,
    /// Where that window came from (`config`, `agent`, `remembered`, `table`,
    /// `default`); absent for runs recorded before it was kept.
    pub(super) window_source: Option<String>,
    pub(super) cost_usd: f64,
    /// Whether `cost_usd` is debussy's estimate from tokens and list prices.
    pub(super) cost_estimated: bool,
    pub(super) log_path: Option<String>,
    pub(super) prompt: Option<String>,
    pub(super) checkpoint: Option<String>,
    pub(super) transcript: Option<TranscriptSummary>,
    /// After a context stop: the session resumed to write its own handoff.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) handoff: Option<HandoffShown>,
}

/// The handoff a stopped session was asked for.
#[derive(Debug, Serialize)]
pub(super) struct HandoffShown {
    pub(super) outcome: String,
    pub(super) cost_usd: f64,
    pub(super) log_path: Option<String>,
}

/// The run asked for (by id or prefix), else the project's latest.
pub(super) fn find_run(
    store: &Store,
    wanted: Option<&str>,
    root: &Path,
) -> Result<RunRecord, Failure> {
    match wanted {
        Some(id) if id != "latest" => store.run(id).map_err(Failure::failed)?.ok_or_else(|| {
            Failure::usage(miette::miette!(
                help = "`debussy history` lists run ids; `latest` is the newest",
                "no run matches `{id}` (or the prefix is ambiguous)"
            ))
        }),
        _ => crate::commands::report::latest_run(store, root),
    }
}

/// One attempt at a phase: the execution that started it and, when a run stopped in it,
/// each one a `--resume` went on with it in, oldest first.
pub(super) struct Attempt<'a> {
    first: &'a ExecutionRecord,
    resumed: Vec<&'a ExecutionRecord>,
}

impl<'a> Attempt<'a> {
    fn last(&self) -> &'a ExecutionRecord {
        self.resumed.last().copied().unwrap_or(self.first)
    }

    /// Its executions, oldest first.
    fn parts(&self) -> impl Iterator<Item = &'a ExecutionRecord> + '_ {
        std::iter::once(self.first).chain(self.resumed.iter().copied())
    }

    /// Whether `execution` goes on with it: the run stopped (paused or was interrupted)
    /// in its last part, and a resume took the same attempt up.
    fn goes_on_with(&self, execution: &ExecutionRecord) -> bool {
        let last = self.last();
        matches!(
            last.status,
            ExecutionStatus::Paused | ExecutionStatus::Interrupted
        ) && last.attempt == execution.attempt
            && last.remediation == execution.remediation
    }
}

/// The attempts of `phase`, in order.
fn attempts_of<'a>(executions: &'a [ExecutionRecord], phase: &str) -> Vec<Attempt<'a>> {
    let mut attempts: Vec<Attempt<'a>> = Vec::new();
    for execution in executions.iter().filter(|e| e.phase_id == phase) {
        match attempts.last_mut() {
            Some(attempt) if attempt.goes_on_with(execution) => attempt.resumed.push(execution),
            _ => attempts.push(Attempt {
                first: execution,
                resumed: Vec::new(),
            }),
        }
    }
    attempts
}

/// The attempt the arguments name, and how many attempts its phase had: the phase's
/// given or last attempt; without a phase, that of the last execution of the run.
pub(super) fn pick<'a>(
    executions: &'a [ExecutionRecord],
    run: &RunRecord,
    args: &ShowArgs,
) -> Result<(Attempt<'a>, usize), Failure> {
    let short = &run.id[..run.id.len().min(8)];
    let phase = match &args.phase {
        Some(phase) => phase.clone(),
        None => match executions.last() {
            Some(last) => last.phase_id.clone(),
            None => {
                return Err(Failure::failed(miette::miette!(
                    "run {short} has not started a phase yet"
                )));
            }
        },
    };
    let mut attempts = attempts_of(executions, &phase);
    let count = attempts.len();
    if attempts.is_empty() {
        let mut ran: Vec<&str> = executions.iter().map(|e| e.phase_id.as_str()).collect();
        ran.dedup();
        return Err(Failure::usage(miette::miette!(
            help = if ran.is_empty() {
                "no phase has run yet".to_owned()
            } else {
                format!("phases run: {}", ran.join(", "))
            },
            "phase {phase} did not run in run {short}"
        )));
    }
    let found = match args.attempt {
        None => attempts.pop(),
        Some(n) => attempts
            .into_iter()
            .find(|attempt| attempt.first.attempt == n),
    };
    let Some(attempt) = found else {
        return Err(Failure::usage(miette::miette!(
            help = format!("phase {phase} had {count} attempt(s)"),
            "phase {phase} has no attempt {} in run {short}",
            args.attempt.unwrap_or_default()
        )));
    };
    Ok((attempt, count))
}

/// Everything recorded about `attempt`, the attempt `show` reports, out of the
/// `attempts` its phase had.
pub(super) fn collect(
    store: &Store,
    run: &RunRecord,
    attempt: &Attempt<'_>,
    attempts: usize,
    root: &Path,
) -> Result<Shown, StateError> {
    let (first, last) = (attempt.first, attempt.last());
    let mut sessions = Vec::new();
    let mut commits = Vec::new();
    let mut gates = Vec::new();
    for (part, execution) in attempt.parts().enumerate() {
        let mut shown = sessions_of(store, execution, root)?;
        // The first session a resume started in the attempt.
        if part > 0
            && let Some(first) = shown.first_mut()
        {
            first.resumed = true;
        }
        sessions.extend(shown);
        commits.extend(
            store
                .restarts(execution.id)?
                .into_iter()
                .filter_map(|r| r.commit_id),
        );
        commits.extend(execution.commit_id.clone());
        // The gates that judged the attempt: its last run of them.
        let recorded = store.gates(execution.id)?;
        if !recorded.is_empty() {
            gates = recorded;
        }
    }
    let progress = store
        .progress(&run.id, &first.phase_id)?
        .into_iter()
        .map(|p| p.step)
        .collect();
    Ok(Shown {
        run_id: run.id.clone(),
        plan_title: run.plan_title.clone(),
        phase_id: first.phase_id.clone(),
        attempt: first.attempt,
        attempts: u32::try_from(attempts).unwrap_or(u32::MAX),
        remediation: first.remediation,
        status: last.status.to_string(),
        outcome: last.outcome_code.map(outcome_name),
        error: last.error.clone(),
        started_at: first.started_at.clone(),
        ended_at: last.ended_at.clone(),
        sessions,
        gates,
        commits,
        progress,
    })
}

/// The sessions of one execution, in order, each with what it was told.
fn sessions_of(
    store: &Store,
    execution: &ExecutionRecord,
    root: &Path,
) -> Result<Vec<SessionShown>, StateError> {
    let prompts = store.prompts(execution.id)?;
    let (handoffs, worked): (Vec<_>, Vec<_>) = store
        .sessions(execution.id)?
        .into_iter()
        .partition(|session| session.kind == SessionKind::Handoff);
    let mut sessions: Vec<SessionShown> = worked
        .into_iter()
        .map(|session| {
            let handoff = handoffs
                .iter()
                .find(|h| h.session_index == session.session_index)
                .map(|h| HandoffShown {
                    outcome: h.outcome.clone(),
                    cost_usd: h.cost_usd,
                    log_path: h.log_path.clone(),
                });
            let told = prompts
                .iter()
                .find(|p| p.session_index == session.session_index);
            let transcript = session
                .log_path
                .as_deref()
                .map(|path| resolve(root, path))
                .and_then(|path| summarize(&path));
            SessionShown {
                index: session.session_index,
                resumed: false,
                outcome: session.outcome,
                context_percent: session.context_percent,
                context_window: session.context_window,
                window_source: session.window_source,
                cost_usd: session.cost_usd,
                cost_estimated: session.cost_estimated,
                log_path: session.log_path,
                prompt: told.map(|p| p.prompt.clone()),
                checkpoint: told.and_then(|p| p.checkpoint.clone()),
                transcript,
                handoff,
            }
        })
        .collect();
    // A session is recorded when it ends, its prompt when it starts: a prompt without
    // a session is one still running, or one the run stopped hard while it ran.
    let unended = if execution.ended_at.is_none() {
        "running"
    } else {
        "unrecorded"
    };
    for told in &prompts {
        if !sessions.iter().any(|s| s.index == told.session_index) {
            sessions.push(SessionShown {
                index: told.session_index,
                resumed: false,
                outcome: unended.to_owned(),
                context_percent: 0.0,
                context_window: 0,
                window_source: None,
                cost_usd: 0.0,
                cost_estimated: false,
                log_path: None,
                prompt: Some(told.prompt.clone()),
                checkpoint: told.checkpoint.clone(),
                transcript: None,
                handoff: None,
            });
        }
    }
    sessions.sort_by_key(|s| s.index);
    Ok(sessions)
}

fn resolve(root: &Path, path: &str) -> PathBuf {
    let path = Path::new(path);
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        root.join(path)
    }
}
