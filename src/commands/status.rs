//! `debussy status`: where the latest run (or one run) stands, phase by phase.

use serde::Serialize;

use crate::cli::{GlobalArgs, ReportFormat, StatusArgs};
use crate::exit::{CommandResult, Exit, Failure};
use crate::state::{ExecutionRecord, GateRecord, RestartRecord, RunRecord, SessionRecord, Store};

use super::report::{duration_between, table};

#[derive(Serialize)]
struct StatusReport {
    run: RunRecord,
    executions: Vec<ExecutionReport>,
}

#[derive(Serialize)]
struct ExecutionReport {
    #[serde(flatten)]
    execution: ExecutionRecord,
    sessions: Vec<SessionRecord>,
    restart_events: Vec<RestartRecord>,
    gates: Vec<GateRecord>,
}

pub(super) fn run(global: &GlobalArgs, args: &StatusArgs) -> CommandResult {
    let root = super::load_config(global, None)?.project_root;
    let Some(store) = Store::open_existing(&root).map_err(Failure::failed)? else {
        return Err(Failure::failed(miette::miette!(
            "no runs recorded in {} yet",
            root.display()
        )));
    };
    let run = match &args.run {
        Some(id) => store.run(id).map_err(Failure::failed)?.ok_or_else(|| {
            Failure::usage(miette::miette!(
                help = "`debussy history` lists run ids",
                "no run matches `{id}` (or the prefix is ambiguous)"
            ))
        })?,
        None => store
            .runs(None, 1)
            .map_err(Failure::failed)?
            .into_iter()
            .next()
            .ok_or_else(|| {
                Failure::failed(miette::miette!(
                    "no runs recorded in {} yet",
                    root.display()
                ))
            })?,
    };
    let report = collect(&store, run).map_err(Failure::failed)?;
    match args.format {
        ReportFormat::Json => super::report::print_json(&report)?,
        ReportFormat::Text => super::render::print(&render(&report))?,
    }
    Ok(Exit::Success)
}

fn collect(store: &Store, run: RunRecord) -> Result<StatusReport, crate::state::StateError> {
    let executions = store
        .executions(&run.id)?
        .into_iter()
        .map(|execution| {
            Ok(ExecutionReport {
                sessions: store.sessions(execution.id)?,
                restart_events: store.restarts(execution.id)?,
                gates: store.gates(execution.id)?,
                execution,
            })
        })
        .collect::<Result<_, crate::state::StateError>>()?;
    Ok(StatusReport { run, executions })
}

fn render(report: &StatusReport) -> String {
    let run = &report.run;
    let mut out = format!("Run {}  {}\n", run.id, run.plan_title);
    out.push_str(&format!("Plan:    {}\n", run.plan_path));
    out.push_str(&format!(
        "Status:  {}{}\n",
        run.status,
        run.current_phase
            .as_ref()
            .map(|p| format!(" (phase {p})"))
            .unwrap_or_default()
    ));
    out.push_str(&format!(
        "Started: {}   took {}\n",
        run.started_at,
        duration_between(&run.started_at, run.ended_at.as_deref())
    ));
    if let Some(error) = &run.error {
        out.push_str(&format!("Error:   {error}\n"));
    }
    if report.executions.is_empty() {
        out.push_str("\nNo phase has started yet.\n");
        return out;
    }
    let rows: Vec<Vec<String>> = report
        .executions
        .iter()
        .map(|e| {
            let ex = &e.execution;
            let passed = e.gates.iter().filter(|g| g.passed).count();
            vec![
                ex.phase_id.clone(),
                format!(
                    "{}{}",
                    ex.attempt,
                    if ex.remediation { " (fix)" } else { "" }
                ),
                ex.status.to_string(),
                ex.restarts.to_string(),
                e.sessions.len().to_string(),
                ex.outcome_code
                    .map(|c| c.to_string())
                    .unwrap_or_else(|| "-".into()),
                ex.tokens.to_string(),
                format!("${:.2}", ex.cost_usd),
                if e.gates.is_empty() {
                    "-".into()
                } else {
                    format!("{passed}/{} passed", e.gates.len())
                },
                duration_between(&ex.started_at, ex.ended_at.as_deref()),
            ]
        })
        .collect();
    out.push('\n');
    out.push_str(&table(
        &[
            "PHASE", "ATTEMPT", "STATUS", "RESTARTS", "SESSIONS", "OUTCOME", "TOKENS", "COST",
            "GATES", "TIME",
        ],
        &rows,
    ));
    for e in &report.executions {
        for restart in &e.restart_events {
            out.push_str(&format!(
                "  phase {} attempt {}: restart {} ({}){}\n",
                e.execution.phase_id,
                e.execution.attempt,
                restart.restart_number,
                restart.reason,
                restart
                    .commit_id
                    .as_ref()
                    .map(|c| format!(", commit {}", &c[..c.len().min(12)]))
                    .unwrap_or_default()
            ));
        }
        for gate in e.gates.iter().filter(|g| !g.passed) {
            out.push_str(&format!(
                "  phase {} attempt {}: gate {} failed: {}\n",
                e.execution.phase_id, e.execution.attempt, gate.name, gate.command
            ));
        }
        if let Some(error) = &e.execution.error {
            out.push_str(&format!(
                "  phase {} attempt {}: {error}\n",
                e.execution.phase_id, e.execution.attempt
            ));
        }
    }
    out
}
