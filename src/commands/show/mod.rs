//! `debussy show [RUN] [PHASE] [--attempt N]`: what happened in one attempt at a phase.
//! The prompt and checkpoint each session was given, a summary of each transcript (turns,
//! tool calls by tool, the last thing said), the gates with their output, the commits
//! and the progress steps. Read from `.debussy/state.db` and the run directory.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::cli::{GlobalArgs, ReportFormat, ShowArgs};
use crate::exit::{CommandResult, Exit, Failure};
use crate::state::{ExecutionRecord, GateRecord, RunRecord, SessionKind, StateError, Store};

use super::render::print;
mod transcript;

use transcript::{TranscriptSummary, summarize};

use super::report::{duration_between, local_time, outcome_name, tail};

/// How many lines of a gate's output the text shows.
const GATE_OUTPUT_LINES: usize = 15;

/// One attempt, as `show` reports it.
#[derive(Debug, Serialize)]
struct Shown {
    run_id: String,
    plan_title: String,
    phase_id: String,
    attempt: u32,
    /// How many attempts the phase had in this run.
    attempts: u32,
    remediation: bool,
    status: String,
    outcome: Option<String>,
    error: Option<String>,
    started_at: String,
    ended_at: Option<String>,
    sessions: Vec<SessionShown>,
    gates: Vec<GateRecord>,
    commits: Vec<String>,
    progress: Vec<String>,
}

/// One session of the attempt.
#[derive(Debug, Serialize)]
struct SessionShown {
    index: u32,
    outcome: String,
    context_percent: f64,
    /// The window the percentage is of, in tokens.
    context_window: u64,
    /// Where that window came from (`config`, `agent`, `remembered`, `table`,
    /// `default`); absent for runs recorded before it was kept.
    window_source: Option<String>,
    cost_usd: f64,
    /// Whether `cost_usd` is debussy's estimate from tokens and list prices.
    cost_estimated: bool,
    log_path: Option<String>,
    prompt: Option<String>,
    checkpoint: Option<String>,
    transcript: Option<TranscriptSummary>,
    /// After a context stop: the session resumed to write its own handoff.
    #[serde(skip_serializing_if = "Option::is_none")]
    handoff: Option<HandoffShown>,
}

/// The handoff a stopped session was asked for.
#[derive(Debug, Serialize)]
struct HandoffShown {
    outcome: String,
    cost_usd: f64,
    log_path: Option<String>,
}

pub(super) fn run(global: &GlobalArgs, args: &ShowArgs) -> CommandResult {
    let (root, store) = super::report::recorded_runs(global)?;
    let run = find_run(&store, args.run.as_deref(), &root)?;
    let executions = store.executions_of(&run).map_err(Failure::failed)?;
    let execution = pick(&executions, &run, args)?;
    let attempts = executions
        .iter()
        .filter(|e| e.phase_id == execution.phase_id)
        .count();
    let shown = collect(&store, &run, execution, attempts, &root).map_err(Failure::failed)?;
    match args.format {
        ReportFormat::Json => super::report::print_json(&shown)?,
        ReportFormat::Text => print(&render(&shown))?,
    }
    Ok(Exit::Success)
}

fn find_run(store: &Store, wanted: Option<&str>, root: &Path) -> Result<RunRecord, Failure> {
    match wanted {
        Some(id) if id != "latest" => store.run(id).map_err(Failure::failed)?.ok_or_else(|| {
            Failure::usage(miette::miette!(
                help = "`debussy history` lists run ids; `latest` is the newest",
                "no run matches `{id}` (or the prefix is ambiguous)"
            ))
        }),
        _ => super::report::latest_run(store, root),
    }
}

/// The execution the arguments name: the phase's given or last attempt; without a
/// phase, the last execution of the run.
fn pick<'a>(
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

fn collect(
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

fn render(shown: &Shown) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Run {}  {}: phase {}, attempt {} of {}{}",
        &shown.run_id[..shown.run_id.len().min(8)],
        shown.plan_title,
        shown.phase_id,
        shown.attempt,
        shown.attempts,
        if shown.remediation { " (fix)" } else { "" }
    );
    let _ = writeln!(
        out,
        "Status:  {}{}",
        shown.status,
        shown
            .outcome
            .as_ref()
            .map(|o| format!(" (last session: {o})"))
            .unwrap_or_default()
    );
    let _ = writeln!(
        out,
        "Started: {}   took {}",
        local_time(&shown.started_at),
        duration_between(&shown.started_at, shown.ended_at.as_deref())
    );
    if let Some(error) = &shown.error {
        let _ = writeln!(out, "Error:   {error}");
    }
    for session in &shown.sessions {
        if session.outcome == "running" {
            let _ = writeln!(out, "\nSession {}: running", session.index + 1);
        } else if session.outcome == "unrecorded" {
            let _ = writeln!(
                out,
                "\nSession {}: no record of its end (the run stopped while it ran)",
                session.index + 1
            );
        } else {
            let source = session
                .window_source
                .as_deref()
                .map(|source| format!(", window: {source}"))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "\nSession {}: {} at {:.1}% of {} tokens{source}, {}${:.2}",
                session.index + 1,
                session.outcome.replace('_', " "),
                session.context_percent,
                crate::words::thousands(session.context_window),
                if session.cost_estimated { "~" } else { "" },
                session.cost_usd
            );
        }
        match (&session.checkpoint, &session.prompt) {
            (Some(checkpoint), _) => {
                out.push_str("  Checkpoint it continued from:\n");
                out.push_str(&indent(checkpoint));
            }
            (None, Some(prompt)) => {
                out.push_str("  Prompt:\n");
                out.push_str(&indent(prompt));
            }
            (None, None) => {
                out.push_str("  Prompt: not recorded (a run before prompts were stored)\n");
            }
        }
        match &session.transcript {
            Some(t) => {
                let calls: Vec<String> = t
                    .tool_calls
                    .iter()
                    .map(|(name, n)| format!("{name} ×{n}"))
                    .collect();
                let _ = writeln!(
                    out,
                    "  Transcript: {} line{}, {} turn{}, tool calls: {}{}",
                    t.lines,
                    crate::words::plural(t.lines),
                    t.turns,
                    crate::words::plural(t.turns),
                    if calls.is_empty() {
                        "none".to_owned()
                    } else {
                        calls.join(", ")
                    },
                    if t.subagent_tool_calls > 0 {
                        format!(" (+{} in subagents)", t.subagent_tool_calls)
                    } else {
                        String::new()
                    }
                );
                if let Some(last) = &t.last_message {
                    let _ = writeln!(out, "  Last said: {}", first_line(last));
                }
                if let Some(result) = &t.result {
                    let _ = writeln!(out, "  Result: {result}");
                }
            }
            None if session.log_path.is_none() => {}
            None => out.push_str("  Transcript: not found\n"),
        }
        if let Some(path) = &session.log_path {
            let _ = writeln!(out, "  Log: {path}");
        }
        if let Some(handoff) = &session.handoff {
            let _ = writeln!(
                out,
                "  Handoff: {}, ${:.2}{}",
                handoff.outcome.replace('_', " "),
                handoff.cost_usd,
                handoff
                    .log_path
                    .as_deref()
                    .map(|path| format!(" ({path})"))
                    .unwrap_or_default()
            );
        }
    }
    if !shown.gates.is_empty() {
        out.push_str("\nGates:\n");
        for gate in &shown.gates {
            let verdict = if gate.passed { "passed" } else { "FAILED" };
            let _ = writeln!(out, "  {} {verdict}: {}", gate.name, gate.command);
            if !gate.output.trim().is_empty() {
                out.push_str(&tail(&gate.output, GATE_OUTPUT_LINES, "      "));
            }
        }
    }
    if !shown.progress.is_empty() {
        out.push_str("\nProgress:\n");
        for step in &shown.progress {
            let _ = writeln!(out, "  - {step}");
        }
    }
    out.push_str("\nCommits: ");
    if shown.commits.is_empty() {
        out.push_str("none\n");
    } else {
        let short: Vec<&str> = shown
            .commits
            .iter()
            .map(|c| &c[..c.len().min(12)])
            .collect();
        let _ = writeln!(out, "{}", short.join(" "));
    }
    out
}

fn indent(text: &str) -> String {
    text.lines().map(|l| format!("    {l}\n")).collect()
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or("")
}
