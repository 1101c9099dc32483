//! `debussy history`: past runs, newest first.

use serde::Serialize;

use crate::cli::{GlobalArgs, HistoryArgs, ReportFormat};
use crate::exit::{CommandResult, Exit, Failure};
use crate::state::{RunRecord, RunTotals, Store};
use crate::words::thousands;

use super::report::{duration_between, local_time, table};

/// One run as `history` lists it: its record and what it spent.
#[derive(Serialize)]
struct HistoryEntry {
    #[serde(flatten)]
    run: RunRecord,
    totals: RunTotals,
}

pub(super) fn run(global: &GlobalArgs, args: &HistoryArgs) -> CommandResult {
    let root = super::load_config(global, None)?.project_root;
    let runs: Vec<HistoryEntry> = match Store::open_to_read(&root).map_err(Failure::failed)? {
        Some(store) => store
            .runs(None, args.limit)
            .and_then(|runs| {
                runs.into_iter()
                    .map(|run| {
                        let totals = store.totals(&run.id, None)?;
                        Ok(HistoryEntry { run, totals })
                    })
                    .collect()
            })
            .map_err(Failure::failed)?,
        None => Vec::new(),
    };
    match args.format {
        ReportFormat::Json => super::report::print_json(&runs)?,
        ReportFormat::Text if runs.is_empty() => {
            super::render::print(&format!("no runs recorded in {} yet\n", root.display()))?;
        }
        ReportFormat::Text => {
            let rows: Vec<Vec<String>> = runs
                .iter()
                .map(|HistoryEntry { run, totals }| {
                    let tilde = if totals.cost_estimated { "~" } else { "" };
                    vec![
                        run.id[..run.id.len().min(8)].to_owned(),
                        local_time(&run.started_at),
                        run.status.to_string(),
                        duration_between(&run.started_at, run.ended_at.as_deref()),
                        thousands(totals.billed.total()),
                        format!("{tilde}${:.2}", totals.cost_usd),
                        run.plan_title.clone(),
                        run.current_phase.clone().unwrap_or_else(|| "-".into()),
                    ]
                })
                .collect();
            super::render::print(&table(
                &[
                    "RUN", "STARTED", "STATUS", "TIME", "BILLED", "COST", "PLAN", "PHASE",
                ],
                &rows,
            ))?;
        }
    }
    Ok(Exit::Success)
}
