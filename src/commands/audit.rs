//! `debussy audit PLAN [--strict] [--format text|json]`: check a plan without running it.
//!
//! Exit 0 when the plan passes, 1 when it has errors (with `--strict`, warnings too), 2
//! for usage and configuration errors.

use std::io::IsTerminal;
use std::path::Path;

use super::render::{Palette, print, print_exactly};
use crate::cli::{AuditArgs, GlobalArgs, ReportFormat};
use crate::exit::{CommandResult, Exit, Failure};
use crate::plan::{self, AuditReport, Inspection, Severity};
use crate::words::plural;

pub(super) fn run(global: &GlobalArgs, args: &AuditArgs) -> CommandResult {
    let loaded = super::load_config(global, None)?;
    let inspection = plan::inspect(&args.plan, &loaded.config.gates, &loaded.project_root);
    let passed = inspection.report.passed(args.strict);
    let master = inspection
        .plan
        .as_ref()
        .map_or(args.plan.as_path(), |p| p.master.as_path());
    let output = match args.format {
        ReportFormat::Text => {
            let palette = Palette::new(crate::logging::use_color(
                global.color,
                std::io::stdout().is_terminal(),
            ));
            let mut text = heading("Audit of", &inspection, master, palette);
            let agents = phase_agents(&inspection);
            for (phase, agent, model) in &agents {
                let model = model.as_deref().unwrap_or("its default model");
                text.push_str(&format!("phase {phase} runs on {agent} ({model})\n"));
            }
            let missing = missing_programs(&loaded, &inspection);
            for (detail, fix) in &missing {
                text.push_str(&format!(
                    "  {} {detail}\n",
                    palette.yellow("not installed:")
                ));
                if let Some(fix) = fix {
                    text.push_str(&format!("  {} {fix}\n", palette.dim("fix:")));
                }
            }
            if !agents.is_empty() || !missing.is_empty() {
                text.push('\n');
            }
            text.push_str(&render_report(&inspection.report, args.strict, palette));
            text
        }
        ReportFormat::Json => {
            let mut value =
                serde_json::to_value(inspection.report.to_json(args.strict)).map_err(|err| {
                    Failure::failed(miette::miette!("failed to encode the report: {err}"))
                })?;
            let agents: Vec<serde_json::Value> = phase_agents(&inspection)
                .into_iter()
                .map(|(phase, agent, model)| {
                    serde_json::json!({"phase": phase, "agent": agent, "model": model})
                })
                .collect();
            value["phase_agents"] = serde_json::Value::Array(agents);
            value["missing_agent_programs"] = missing_programs(&loaded, &inspection)
                .into_iter()
                .map(|(detail, fix)| serde_json::json!({"detail": detail, "fix": fix}))
                .collect();
            let mut json = serde_json::to_string_pretty(&value).map_err(|err| {
                Failure::failed(miette::miette!("failed to encode the report: {err}"))
            })?;
            json.push('\n');
            json
        }
    };
    match args.format {
        ReportFormat::Text => print(&output)?,
        ReportFormat::Json => print_exactly(&output)?,
    }
    Ok(if passed { Exit::Success } else { Exit::Failure })
}

/// The phases that name their own agent or model (`**Agent:**`, `**Model:**`): the phase,
/// the agent (`the configured agent` when only a model is named)
/// and the model.
fn phase_agents(inspection: &Inspection) -> Vec<(String, String, Option<String>)> {
    let Some(plan) = &inspection.plan else {
        return Vec::new();
    };
    plan.phases
        .iter()
        .filter(|phase| phase.agent.is_some() || phase.model.is_some())
        .map(|phase| {
            let agent = phase.agent.map_or_else(
                || "the configured agent".to_owned(),
                |kind| kind.as_str().to_owned(),
            );
            (phase.id.to_string(), agent, phase.model.clone())
        })
        .collect()
}

/// The agents the plan runs (the configured one, and those phases name) whose program
/// cannot be found: what was looked for, and how to install it. Not an audit error (the
/// plan is fine; this machine lacks a program), but `run` will refuse to start.
fn missing_programs(
    loaded: &crate::config::Loaded,
    inspection: &Inspection,
) -> Vec<(String, Option<String>)> {
    let Some(plan) = &inspection.plan else {
        return Vec::new();
    };
    let configured = crate::preflight::configured_agent_check(loaded, &plan.master);
    std::iter::once(configured)
        .chain(crate::preflight::phase_agent_checks(loaded, plan))
        .filter(|check| check.verdict == crate::preflight::Verdict::Fail)
        .map(|check| (check.detail, check.fix))
        .collect()
}

/// `Audit of <title> (<path>)`, or only the path when the plan could not be read.
pub(super) fn heading(
    verb: &str,
    inspection: &Inspection,
    master: &Path,
    palette: Palette,
) -> String {
    match &inspection.plan {
        Some(plan) => format!(
            "{} {}\n\n",
            palette.bold(&format!("{verb} {}", plan.title)),
            palette.dim(&format!("({})", shown(master)))
        ),
        None => format!("{}\n\n", palette.bold(&format!("{verb} {}", shown(master)))),
    }
}

/// The issues, one block each, then the summary and the verdict.
pub(super) fn render_report(report: &AuditReport, strict: bool, palette: Palette) -> String {
    let mut out = String::new();
    for issue in &report.issues {
        let label = format!("{}[{}]", issue.severity, issue.code);
        let label = match issue.severity {
            Severity::Error => palette.red(&label),
            Severity::Warning => palette.yellow(&label),
        };
        out.push_str(&format!("{label}: {}\n", palette.bold(&issue.message)));
        out.push_str(&format!("  {} {}\n", palette.dim("-->"), issue.location));
        let mut help = issue.suggestion.lines();
        if let Some(first) = help.next() {
            out.push_str(&format!("  {} {first}\n", palette.dim("help:")));
        }
        for line in help {
            out.push_str(&format!("        {line}\n"));
        }
        out.push('\n');
    }
    out.push_str(&summary_line(report));
    out.push('\n');
    let verdict = if report.passed(strict) {
        palette.green("PASSED")
    } else if report.summary.errors == 0 {
        format!(
            "{} (--strict: warnings fail the audit)",
            palette.red("FAILED")
        )
    } else {
        palette.red("FAILED")
    };
    out.push_str(&verdict);
    out.push('\n');
    out
}

/// `2 phases (2 valid), 5 gates: 0 errors, 1 warning`.
pub(super) fn summary_line(report: &AuditReport) -> String {
    let s = &report.summary;
    format!(
        "{} ({} valid), {}: {}, {}",
        count(s.phases_found, "phase"),
        s.phases_valid,
        count(s.gates_total, "gate"),
        count(s.errors, "error"),
        count(s.warnings, "warning"),
    )
}

fn count(count: usize, word: &str) -> String {
    format!("{count} {word}{}", plural(count))
}

/// A path as the user would type it: without a leading `./`.
pub(super) fn shown(path: &Path) -> String {
    let text = path.display().to_string();
    match text.strip_prefix("./") {
        Some(rest) => rest.to_owned(),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{Issue, IssueCode, Location, Summary};

    fn report(issues: Vec<Issue>) -> AuditReport {
        let errors = issues
            .iter()
            .filter(|i| i.severity == Severity::Error)
            .count();
        AuditReport {
            summary: Summary {
                master_plan: "Demo".into(),
                phases_found: 1,
                phases_valid: 1,
                gates_total: 1,
                errors,
                warnings: issues.len() - errors,
            },
            issues,
        }
    }

    #[test]
    fn text_report_lists_issues_then_the_verdict() {
        let warning = Issue {
            severity: Severity::Warning,
            code: IssueCode::NoNotesOutput,
            message: "phase 1 does not say where it writes its notes".into(),
            location: Location::line(Path::new("p/phase-1.md"), 1),
            suggestion: "first line\nsecond line".into(),
            phases: vec![0],
        };
        let report = report(vec![warning]);
        let text = render_report(&report, false, Palette::new(false));
        assert_eq!(
            text,
            "warning[NO_NOTES_OUTPUT]: phase 1 does not say where it writes its notes\n\
             \x20 --> p/phase-1.md:1\n\
             \x20 help: first line\n\
             \x20       second line\n\n\
             1 phase (1 valid), 1 gate: 0 errors, 1 warning\nPASSED\n"
        );
        let strict = render_report(&report, true, Palette::new(false));
        assert!(strict.ends_with("FAILED (--strict: warnings fail the audit)\n"));
    }

    #[test]
    fn shown_paths_drop_dot_slash() {
        assert_eq!(shown(Path::new("./a/b.md")), "a/b.md");
        assert_eq!(shown(Path::new("a/b.md")), "a/b.md");
    }
}
