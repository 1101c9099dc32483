//! `debussy doctor [PLAN]`: the pre-flight checks of `debussy run` for this project,
//! each printed with ✓, ! or ✗ and its fix; exit 1 when any fails. Nothing is recorded.
//!
//! Besides [`crate::preflight`]'s checks it loads the configuration (reporting a broken
//! file as a failed check rather than stopping), asks git whether commits would be safe
//! (the same check `run` makes), and audits the plan when one is given.

use std::io::IsTerminal;

use crate::cli::{DoctorArgs, GlobalArgs, ReportFormat};
use crate::exit::{CommandResult, Exit, Failure};
use crate::preflight::{self, Check, Report, Verdict};

use super::render::{Palette, print};

pub(super) async fn run(global: &GlobalArgs, args: &DoctorArgs) -> CommandResult {
    let report = match super::load_config(global, Some(&args.overrides)) {
        Ok(loaded) => checks(&loaded, args).await,
        Err(failure) => Report {
            checks: vec![Check {
                name: "config",
                verdict: Verdict::Fail,
                detail: failure.report.to_string(),
                fix: Some(failure.report.help().map_or_else(
                    || "correct the file and key named above".to_owned(),
                    |help| help.to_string(),
                )),
            }],
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
    print(&text)?;
    Ok(if report.failed() {
        Exit::Failure
    } else {
        Exit::Success
    })
}

/// Every check for a project whose configuration loaded.
async fn checks(loaded: &crate::config::Loaded, args: &DoctorArgs) -> Report {
    let root = &loaded.project_root;
    let mut checks = vec![Check {
        name: "config",
        verdict: Verdict::Pass,
        detail: format!("loaded for {}", root.display()),
        fix: None,
    }];
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
        checks.push(
            match crate::orchestrator::vcs::preflight(root.clone(), false).await {
                Ok(branch) => Check {
                    name: "git",
                    verdict: Verdict::Pass,
                    detail: format!("on branch {branch}, no uncommitted tracked changes"),
                    fix: None,
                },
                Err(err) => Check {
                    name: "git",
                    verdict: Verdict::Fail,
                    detail: err.to_string(),
                    fix: Some(
                        miette::Diagnostic::help(&err)
                            .map_or_else(|| "see `git status`".to_owned(), |h| h.to_string()),
                    ),
                },
            },
        );
    }
    if let Some(inspection) = &inspection {
        let summary = &inspection.report.summary;
        checks.push(if inspection.plan.is_some() && summary.errors == 0 {
            Check {
                name: "plan",
                verdict: Verdict::Pass,
                detail: super::audit::summary_line(&inspection.report),
                fix: None,
            }
        } else {
            Check {
                name: "plan",
                verdict: Verdict::Fail,
                detail: super::audit::summary_line(&inspection.report),
                fix: Some("`debussy audit PLAN` lists each problem and its fix".to_owned()),
            }
        });
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
