//! What `show` reads for one attempt: the run, the attempt asked for, and everything
//! recorded about it ([`Shown`]).

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::cli::ShowArgs;
use crate::exit::Failure;
use crate::state::{ExecutionRecord, GateRecord, RunRecord, SessionKind, StateError, Store};

use super::transcript::{TranscriptSummary, summarize};
use crate::commands::report::outcome_name;

/// One attempt, as `show` reports it.
#[derive(Debug, Serialize)]
pub(super) struct Shown {
    pub(super) run_id: String,
    pub(super) plan_title: String,
    pub(super) phase_id: String,
    pub(super) attempt: u32,
    /// How many attempts the phase had in this run.
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

/// The execution the arguments name: the phase's given or last attempt; without a
/// phase, the last execution of the run.
pub(super) fn pick<'a>(
    executions: &'a [ExecutionRecord],
    run: &RunRecord,
    args: &ShowArgs,
) -> Result<&'a ExecutionRecord, Failure> {
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
    let of_phase: Vec<&ExecutionRecord> =
        executions.iter().filter(|e| e.phase_id == phase).collect();
    if of_phase.is_empty() {
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
    match args.attempt {
        None => Ok(of_phase[of_phase.len() - 1]),
        Some(n) => of_phase
            .iter()
            .copied()
            .find(|e| e.attempt == n)
            .ok_or_else(|| {
                Failure::usage(miette::miette!(
                    help = format!("phase {phase} had {} attempt(s)", of_phase.len()),
                    "phase {phase} has no attempt {n} in run {short}"
                ))
            }),
    }
}

/// Everything recorded about `execution`, the attempt `show` reports.
pub(super) fn collect(
    store: &Store,
    run: &RunRecord,
    execution: &ExecutionRecord,
    attempts: usize,
    root: &Path,
) -> Result<Shown, StateError> {
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
    let mut commits: Vec<String> = store
        .restarts(execution.id)?
        .into_iter()
        .filter_map(|r| r.commit_id)
        .collect();
    commits.extend(execution.commit_id.clone());
    let progress = store
        .progress(&run.id, &execution.phase_id)?
        .into_iter()
        .map(|p| p.step)
        .collect();
    Ok(Shown {
        run_id: run.id.clone(),
        plan_title: run.plan_title.clone(),
        phase_id: execution.phase_id.clone(),
        attempt: execution.attempt,
        attempts: u32::try_from(attempts).unwrap_or(u32::MAX),
        remediation: execution.remediation,
        status: execution.status.to_string(),
        outcome: execution.outcome_code.map(outcome_name),
        error: execution.error.clone(),
        started_at: execution.started_at.clone(),
        ended_at: execution.ended_at.clone(),
        sessions,
        gates: store.gates(execution.id)?,
        commits,
        progress,
    })
}

fn resolve(root: &Path, path: &str) -> PathBuf {
    let path = Path::new(path);
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        root.join(path)
    }
}
