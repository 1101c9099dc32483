//! `debussy status`: where the latest run (or one run) stands, phase by phase.

use serde::Serialize;

use crate::cli::{GlobalArgs, ReportFormat, StatusArgs};
use crate::exit::{CommandResult, Exit, Failure};
use crate::state::{
    ExecutionRecord, GateRecord, LiveSession, RestartRecord, RunRecord, RunStatus, RunTotals,
    SessionKind, SessionRecord, Store,
};

use super::report::{duration_between, local_time, outcome_name, table, tail};
use crate::words::thousands;

#[derive(Serialize)]
struct StatusReport {
    run: RunRecord,
    /// The phases being worked on now (several when phases run side by side).
    running_phases: Vec<String>,
    /// What the run spent over every recorded session, handoffs included.
    totals: RunTotals,
    executions: Vec<ExecutionReport>,
}

#[derive(Serialize)]
struct ExecutionReport {
    #[serde(flatten)]
    execution: ExecutionRecord,
    sessions: Vec<SessionRecord>,
    /// The session running now (or left running by a debussy that died), with what it
    /// has spent so far; not in `sessions` until it ends.
    #[serde(skip_serializing_if = "Option::is_none")]
    live_session: Option<LiveSession>,
    restart_events: Vec<RestartRecord>,
    gates: Vec<GateRecord>,
}

pub(super) fn run(global: &GlobalArgs, args: &StatusArgs) -> CommandResult {
    let (root, store) = super::report::recorded_runs(global)?;
    let run = match &args.run {
        Some(id) => store.run(id).map_err(Failure::failed)?.ok_or_else(|| {
            Failure::usage(miette::miette!(
                help = "`debussy history` lists run ids",
                "no run matches `{id}` (or the prefix is ambiguous)"
            ))
        })?,
        None => super::report::latest_run(&store, &root)?,
    };
    let report = collect(&store, run).map_err(Failure::failed)?;
    match args.format {
        ReportFormat::Json => super::report::print_json(&report)?,
        ReportFormat::Text => super::render::print(&render(&report))?,
    }
    Ok(Exit::Success)
}

fn collect(store: &Store, run: RunRecord) -> Result<StatusReport, crate::state::StateError> {
    let mut live = store.live_sessions(&run.id)?;
    let executions: Vec<ExecutionReport> = store
        .executions_of(&run)?
        .into_iter()
        .map(|mut execution| {
            let sessions = store.sessions(execution.id)?;
            let live_session = live
                .iter()
                .position(|live| live.execution_id == execution.id)
                .map(|index| live.swap_remove(index));
            let restart_events = store.restarts(execution.id)?;
            // An attempt records its totals when it ends; until then, its sessions and
            // restarts say, the running session with what it has spent so far.
            if execution.ended_at.is_none() {
                execution.restarts = u32::try_from(restart_events.len()).unwrap_or(u32::MAX);
                execution.billed = sessions
                    .iter()
                    .fold(Default::default(), |sum, session| sum + session.billed);
                let recorded: f64 = sessions.iter().map(|session| session.cost_usd).sum();
                execution.cost_usd = recorded;
                if let Some(live) = &live_session {
                    execution.billed += live.billed;
                    execution.cost_usd += live.cost_usd;
                    execution.cost_estimated |= live.cost_estimated;
                }
            }
            Ok(ExecutionReport {
                live_session,
                sessions,
                restart_events,
                gates: store.gates(execution.id)?,
                execution,
            })
        })
        .collect::<Result<_, crate::state::StateError>>()?;
    let totals = store.totals(&run.id, None)?;
    let running_phases = if run.status == RunStatus::Running {
        executions
            .iter()
            .filter(|e| e.execution.ended_at.is_none())
            .map(|e| e.execution.phase_id.clone())
            .collect()
    } else {
        Vec::new()
    };
    Ok(StatusReport {
        run,
        running_phases,
        totals,
        executions,
    })
}

/// How many lines of a failed gate's output the text report shows (its end, where
/// test runners and compilers put the verdict).
const GATE_OUTPUT_LINES: usize = 15;

/// The run's spending in one line: billed tokens by kind and cost, handoffs named.
pub(super) fn totals_line(totals: &RunTotals) -> String {
    let billed = totals.billed;
    let tilde = if totals.cost_estimated { "~" } else { "" };
    let handoffs = if totals.handoffs > 0 {
        format!(
            " (handoffs: {}, ${:.2})",
            totals.handoffs, totals.handoff_cost_usd
        )
    } else {
        String::new()
    };
    format!(
        "Billed:  {} tokens ({} input, {} cache write, {} cache read, {} output), {tilde}${:.2}{handoffs}\n",
        thousands(billed.total()),
        thousands(billed.input),
        thousands(billed.cache_write),
        thousands(billed.cache_read),
        thousands(billed.output),
        totals.cost_usd,
    )
}

/// `codex gpt-5.5`: the agent and the model it reported, each when known.
fn agent_and_model(session: &crate::state::SessionRecord) -> String {
    let words: Vec<&str> = [session.agent.as_deref(), session.model.as_deref()]
        .into_iter()
        .flatten()
        .collect();
    if words.is_empty() {
        "-".to_owned()
    } else {
        words.join(" ")
    }
}

/// `claude opus`: the running session's agent and the model it was started with.
fn live_agent(live: &LiveSession) -> String {
    if live.model.is_empty() {
        live.agent.clone()
    } else {
        format!("{} {}", live.agent, live.model)
    }
}

/// ` (phase 2)`: the phase the run stands in; ` before phase 2` for a run paused
/// between phases, before that one started; nothing while several phases run.
fn where_it_stands(report: &StatusReport) -> String {
    let Some(phase) = report
        .run
        .current_phase
        .as_ref()
        .filter(|_| report.running_phases.len() < 2)
    else {
        return String::new();
    };
    let started = report
        .executions
        .iter()
        .any(|e| e.execution.phase_id == *phase);
    if report.run.status == RunStatus::Paused && !started {
        format!(" before phase {phase}")
    } else {
        format!(" (phase {phase})")
    }
}

fn render(report: &StatusReport) -> String {
    let run = &report.run;
    let mut out = format!("Run {}  {}\n", run.id, run.plan_title);
    out.push_str(&format!("Plan:    {}\n", run.plan_path));
    out.push_str(&format!(
        "Status:  {}{}\n",
        run.status,
        where_it_stands(report)
    ));
    out.push_str(&format!(
        "Started: {}   took {}\n",
        local_time(&run.started_at),
        duration_between(&run.started_at, run.ended_at.as_deref())
    ));
    if let Some(error) = &run.error {
        out.push_str(&format!("Error:   {error}\n"));
    }
    for id in &report.running_phases {
        let execution = report
            .executions
            .iter()
            .rev()
            .map(|e| &e.execution)
            .find(|ex| ex.phase_id == *id);
        let (attempt, status, place) = execution.map_or((0, String::new(), String::new()), |ex| {
            (
                ex.attempt,
                ex.status.to_string(),
                ex.workdir
                    .as_ref()
                    .map(|w| format!(", in {w}"))
                    .unwrap_or_default(),
            )
        });
        out.push_str(&format!(
            "Running: phase {id} (attempt {attempt}, {status}{place})\n"
        ));
    }
    for (id, wait) in &run.limit_waits {
        let said = wait
            .said
            .as_deref()
            .map(|said| format!(" (the agent said: “{said}”)"))
            .unwrap_or_default();
        out.push_str(&format!(
            "Waiting: phase {id} is waiting for {} until {}{said}\n",
            wait.kind.waiting_for(),
            crate::words::local_time_of(&wait.until)
        ));
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
                (e.sessions
                    .iter()
                    .filter(|s| s.kind == SessionKind::Work)
                    .count()
                    + usize::from(e.live_session.is_some()))
                .to_string(),
                ex.outcome_code.map_or_else(|| "-".into(), outcome_name),
                // The agent and the model it said it ran, in the attempt's last session
                // (the running one: the model it was started with).
                match &e.live_session {
                    Some(live) => live_agent(live),
                    None => e
                        .sessions
                        .iter()
                        .rev()
                        .find(|s| s.kind == SessionKind::Work)
                        .map_or_else(|| "-".into(), agent_and_model),
                },
                thousands(ex.billed.total()),
                if ex.cost_estimated {
                    format!("~${:.2}", ex.cost_usd)
                } else {
                    format!("${:.2}", ex.cost_usd)
                },
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
            "PHASE", "ATTEMPT", "STATUS", "RESTARTS", "SESSIONS", "OUTCOME", "AGENT", "BILLED",
            "COST", "GATES", "TIME",
        ],
        &rows,
    ));
    out.push_str(&totals_line(&report.totals));
    // Worktrees of phases not running that are still there: kept for a human.
    let mut worktrees: Vec<(&str, &str)> = report
        .executions
        .iter()
        .filter(|e| !report.running_phases.contains(&e.execution.phase_id))
        .filter_map(|e| {
            Some((
                e.execution.phase_id.as_str(),
                e.execution.workdir.as_deref()?,
            ))
        })
        .filter(|(_, workdir)| std::path::Path::new(workdir).exists())
        .collect();
    worktrees.dedup();
    for (phase, workdir) in worktrees {
        out.push_str(&format!("  phase {phase}: kept in worktree {workdir}\n"));
    }
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
        let attempt = format!(
            "  phase {} attempt {}",
            e.execution.phase_id, e.execution.attempt
        );
        // The attempt's error already names its failed gates; say it once, then show
        // what each failed gate printed.
        match &e.execution.error {
            Some(error) => out.push_str(&format!("{attempt}: {error}\n")),
            None => {
                for gate in e.gates.iter().filter(|g| !g.passed) {
                    out.push_str(&format!(
                        "{attempt}: gate `{}` failed: `{}`\n",
                        gate.name, gate.command
                    ));
                }
            }
        }
        for gate in e.gates.iter().filter(|g| !g.passed) {
            let how = if gate.timed_out {
                "timed out".to_owned()
            } else {
                gate.exit_code
                    .map_or_else(|| "killed".to_owned(), |code| format!("exit {code}"))
            };
            out.push_str(&format!("    gate `{}` ({how}) printed:\n", gate.name));
            if gate.output.trim().is_empty() {
                out.push_str("      (nothing)\n");
            } else {
                out.push_str(&tail(&gate.output, GATE_OUTPUT_LINES, "      "));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::{ExecutionStatus, RunStatus, StartedWith};

    fn failing_run() -> StatusReport {
        let error = "gate `check` failed: `make check`; the notes file was not written";
        // The run's one attempt billed all its tokens.
        let billed = crate::context::cost::Billed {
            input: 580,
            cache_write: 10_000,
            cache_read: 50_000,
            output: 0,
        };
        StatusReport {
            running_phases: Vec::new(),
            run: RunRecord {
                id: "0123456789".into(),
                plan_path: "/p/plan/MASTER_PLAN.md".into(),
                plan_title: "Plan".into(),
                status: RunStatus::Failed,
                current_phase: Some("1".into()),
                error: Some(format!("phase 1 failed: {error} (after 1 attempt)")),
                started_at: "2026-11-23T23:08:35.887285069Z".into(),
                ended_at: Some("2026-11-23T23:09:40.1Z".into()),
                owner_pid: None,
                owner_start: None,
                agent_groups: Vec::new(),
                phase_ids: vec!["1".into()],
                started_with: StartedWith::default(),
                pauses: Default::default(),
                active_secs: 0.0,
                start_branch: None,
                limit_waits: Default::default(),
            },
            totals: RunTotals {
                sessions: 1,
                billed,
                cost_usd: 0.2,
                ..RunTotals::default()
            },
            executions: vec![ExecutionReport {
                live_session: None,
                execution: ExecutionRecord {
                    id: 1,
                    run_id: "0123456789".into(),
                    phase_id: "1".into(),
                    attempt: 1,
                    remediation: false,
                    status: ExecutionStatus::Failed,
                    restarts: 0,
                    outcome_code: Some(-4),
                    billed,
                    cost_usd: 0.2,
                    cost_estimated: false,
                    commit_id: None,
                    error: Some(error.into()),
                    workdir: None,
                    branch_tip: None,
                    base: None,
                    started_at: "2026-11-23T23:08:35.887285069Z".into(),
                    ended_at: Some("2026-11-23T23:09:40.1Z".into()),
                },
                sessions: Vec::new(),
                restart_events: Vec::new(),
                gates: vec![GateRecord {
                    name: "check".into(),
                    command: "make check".into(),
                    passed: false,
                    exit_code: Some(2),
                    timed_out: false,
                    output: "compiling\nerror: expected `;` at src/lib.rs:3\n".into(),
                    duration_ms: 40,
                    at: "2026-11-23T23:09:40Z".into(),
                }],
            }],
        }
    }

    #[test]
    fn a_failed_gate_shows_its_output_and_the_failure_once() {
        let text = render(&failing_run());
        assert!(
            text.contains("error: expected `;` at src/lib.rs:3"),
            "the gate's output is shown:\n{text}"
        );
        assert_eq!(
            text.matches("make check").count(),
            2,
            "once for the run, once for the attempt:\n{text}"
        );
    }

    #[test]
    fn numbers_times_and_outcomes_read_naturally() {
        let text = render(&failing_run());
        assert!(text.contains("60,580"), "{text}");
        assert!(text.contains("interrupted"), "outcome -4 is named:\n{text}");
        assert!(!text.contains(" -4 "), "{text}");
        assert!(!text.contains(".887285069"), "no nanoseconds:\n{text}");
        assert!(text.contains("took 1m05s"), "{text}");
    }

    #[test]
    fn each_running_phase_is_named_with_its_worktree() {
        let mut report = failing_run();
        report.run.status = RunStatus::Running;
        report.run.error = None;
        let mut second = report.executions[0].execution.clone();
        report.executions[0].execution.ended_at = None;
        report.executions[0].execution.status = ExecutionStatus::Running;
        report.executions[0].execution.workdir = Some("/p/.debussy/worktrees/r/1".into());
        second.phase_id = "2".into();
        second.ended_at = None;
        second.status = ExecutionStatus::Validating;
        second.workdir = Some("/p/.debussy/worktrees/r/2".into());
        report.executions.push(ExecutionReport {
            execution: second,
            live_session: None,
            sessions: Vec::new(),
            restart_events: Vec::new(),
            gates: Vec::new(),
        });
        report.running_phases = vec!["1".into(), "2".into()];
        let text = render(&report);
        assert!(
            text.contains("Running: phase 1 (attempt 1, running, in /p/.debussy/worktrees/r/1)"),
            "{text}"
        );
        assert!(
            text.contains("Running: phase 2 (attempt 1, validating, in /p/.debussy/worktrees/r/2)"),
            "{text}"
        );
        assert!(!text.contains("kept in worktree"), "{text}");
        assert!(
            text.contains("\nStatus:  running\n"),
            "several run: no one phase named"
        );

        // Once phase 2 is no longer running, its worktree, still there, is kept.
        let kept = tempfile::tempdir().expect("tempdir");
        report.running_phases = vec!["1".into()];
        report.executions[1].execution.workdir = Some(kept.path().display().to_string());
        let text = render(&report);
        assert!(
            text.contains(&format!(
                "  phase 2: kept in worktree {}",
                kept.path().display()
            )),
            "{text}"
        );
    }
}
