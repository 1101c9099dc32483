//! `debussy doctor [PLAN]`: the pre-flight checks of `debussy run` for this project,
//! each printed with ✓, ! or ✗ and its fix; exit 1 when any fails. Nothing is recorded.
//!
//! Besides the checks `run` makes first it reports a broken configuration file as a
//! failed check rather than stopping, asks git whether commits would be safe (the check
//! the run makes as it starts), and audits the plan when one is given.

use std::io::IsTerminal;

use crate::cli::{DoctorArgs, GlobalArgs, ReportFormat};
use crate::exit::{CommandResult, Exit, Failure};
use crate::preflight::{self, Report, Verdict};

use super::render::{Palette, print, print_exactly};

pub(super) async fn run(global: &GlobalArgs, args: &DoctorArgs) -> CommandResult {
    let report = match super::load_config(global, Some(&args.overrides)) {
        Ok(loaded) => checks(&loaded, args).await,
        Err(failure) => Report {
            checks: vec![preflight::config_check(Err(&failure.report))],
        },
    };
    let text = match args.format {
        ReportFormat::Json => {
            let mut json = serde_json::to_string_pretty(&report)
                .map_err(|err| Failure::failed(miette::miette!("failed to encode JSON: {err}")))?;
            json.push('\n');
            json
        }
        ReportFormat::Text => {
            let palette = Palette::new(crate::logging::use_color(
                global.color,
                std::io::stdout().is_terminal(),
            ));
            render(&report, palette)
        }
    };
    match args.format {
        ReportFormat::Text => print(&text)?,
        ReportFormat::Json => print_exactly(&text)?,
    }
    Ok(if report.failed() {
        Exit::Failure
    } else {
        Exit::Success
    })
}

/// Every check for a project whose configuration loaded.
async fn checks(loaded: &crate::config::Loaded, args: &DoctorArgs) -> Report {
    let root = &loaded.project_root;
    let mut checks = vec![preflight::config_check(Ok(loaded))];
    let inspection = args
        .plan
        .as_ref()
        .map(|plan| crate::plan::inspect(plan, &loaded.config.gates, root));
    let master = inspection
        .as_ref()
        .and_then(|i| i.plan.as_ref())
        .map(|p| p.master.clone());
    let mut found = preflight::check(preflight::Target {
        loaded,
        plan: master.as_deref(),
        auto_commit: loaded.config.auto_commit,
    });
    checks.append(&mut found.checks);
    if loaded.config.auto_commit {
        checks.push(preflight::git_check(root.clone()).await);
    }
    if let Some(plan) = inspection.as_ref().and_then(|i| i.plan.as_ref()) {
        checks.extend(preflight::phase_agent_checks(loaded, plan));
        if loaded.config.jobs.side_by_side() {
            checks.push(preflight::jobs_check(root.clone(), plan, &loaded.config).await);
        }
    }
    if let Some(inspection) = &inspection {
        checks.push(preflight::plan_check(
            inspection.plan.is_some() && inspection.report.summary.errors == 0,
            super::audit::summary_line(&inspection.report),
        ));
    }
    Report { checks }
}

/// The checks, one per line, marks coloured, then the verdict.
fn render(report: &Report, palette: Palette) -> String {
    let mut out = String::new();
    for line in report.render(true).lines() {
        let painted = if let Some(rest) = line.strip_prefix(Verdict::Pass.mark()) {
            format!("{}{rest}", palette.green(Verdict::Pass.mark()))
        } else if let Some(rest) = line.strip_prefix(Verdict::Fail.mark()) {
            format!("{}{rest}", palette.red(Verdict::Fail.mark()))
        } else if let Some(rest) = line.strip_prefix(Verdict::Warn.mark()) {
            format!("{}{rest}", palette.yellow(Verdict::Warn.mark()))
        } else {
            line.to_owned()
        };
        out.push_str(&painted);
        out.push('\n');
    }
    let failed = report
        .checks
        .iter()
        .filter(|c| c.verdict == Verdict::Fail)
        .count();
    out.push_str(&match failed {
        0 => "ready to run\n".to_owned(),
        1 => "1 check failed\n".to_owned(),
        n => format!("{n} checks failed\n"),
    });
    out
}
