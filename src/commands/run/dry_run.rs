//! `debussy run PLAN --dry-run`: parse and audit the plan, then print the effective
//! configuration (every value with where it came from) and the execution order as a
//! table. Runs nothing. Exit 1 when the audit finds errors (unless `--skip-audit`) or no
//! order exists (a dependency cycle); 2 for usage errors.

use std::collections::{BTreeMap, BTreeSet};
use std::io::IsTerminal;
use std::path::Path;

use serde_norway::Value;

use crate::cli::{GlobalArgs, ReportFormat, RunArgs};
use crate::commands::audit::{heading, render_report, shown};
use crate::commands::render::{Palette, Table, print};
use crate::config::{Loaded, Source};
use crate::exit::{CommandResult, Exit, Failure};
use crate::orchestrator::selection::{self, History, Standing};
use crate::plan::{
    self, AgentCatalog, DependencyTarget, GateOrigin, Phase, PhaseId, Plan, execution_order,
};

pub(super) async fn run(global: &GlobalArgs, args: &RunArgs) -> CommandResult {
    let loaded = crate::commands::load_config(global, Some(&args.overrides))?;
    let inspection = plan::inspect(&args.plan, &loaded.config.gates, &loaded.project_root);
    let palette = Palette::new(crate::logging::use_color(
        global.color,
        std::io::stdout().is_terminal(),
    ));
    let master = inspection
        .plan
        .as_ref()
        .map_or(args.plan.as_path(), |p| p.master.as_path());
    let mut out = heading("Dry run of", &inspection, master, palette);
    out.push_str(&palette.bold("Effective configuration"));
    out.push('\n');
    // The profiles of the agents the plan runs: the default kind and any a phase names.
    let mut kinds = vec![loaded.config.agent.kind];
    if let Some(plan) = &inspection.plan {
        kinds.extend(plan.phases.iter().filter_map(|phase| phase.agent));
    }
    out.push_str(&config_table(&loaded, args, &kinds).render("  ", palette));
    out.push('\n');
    out.push_str(&palette.bold("Restarts and limits"));
    out.push('\n');
    let backend = crate::agent::backend(
        &crate::session::default_backend_settings(&loaded.config),
        crate::agent::BackendContext {
            project_root: &loaded.project_root,
            plan_path: Some(master),
        },
    );
    let (agent, can_resume, usage) = backend.as_ref().map_or(("agent", false, None), |b| {
        (b.name(), b.can_resume(), Some(b.usage_reporting()))
    });
    out.push_str(&restart_lines(&loaded.config, agent, can_resume, usage));
    out.push('\n');
    // The checks `run` makes before it records anything.
    let mut preflight = crate::preflight::check(crate::preflight::Target {
        loaded: &loaded,
        plan: inspection.plan.as_ref().map(|p| p.master.as_path()),
        auto_commit: loaded.config.auto_commit,
    });
    // What the run checks as it starts: git, and phases side by side.
    if loaded.config.auto_commit {
        preflight.checks.push(
            crate::preflight::git_check_allowing(loaded.project_root.clone(), args.allow_dirty)
                .await,
        );
    }
    if let Some(plan) = &inspection.plan {
        preflight
            .checks
            .extend(crate::preflight::phase_agent_checks(&loaded, plan));
        if loaded.config.jobs.side_by_side() {
            preflight.checks.push(
                crate::preflight::jobs_check(loaded.project_root.clone(), plan, &loaded.config)
                    .await,
            );
        }
    }
    out.push_str(&palette.bold("Pre-flight"));
    out.push('\n');
    out.push_str(&preflight.render(true));
    out.push('\n');

    out.push_str(&palette.bold("Audit"));
    out.push('\n');
    out.push_str(&render_report(&inspection.report, false, palette));
    out.push('\n');

    let errors = inspection.report.summary.errors;
    let Some(plan) = &inspection.plan else {
        print(&out)?;
        return Ok(Exit::Failure);
    };
    let order = match execution_order(plan) {
        Ok(order) => order,
        Err(cycles) => {
            let cycles: Vec<String> = cycles.iter().map(ToString::to_string).collect();
            out.push_str(&format!(
                "{} the phases depend on each other in a cycle ({}), so no phase can start.\n",
                palette.red("No execution order:"),
                cycles.join("; ")
            ));
            print(&out)?;
            return Ok(Exit::Failure);
        }
    };
    let start = match &args.phase {
        None => None,
        Some(text) => Some(start_phase(plan, text)?),
    };
    // The phases the run would skip, as the run chooses them.
    let history = History {
        ignore: args.restart,
        resume: args.resume,
        completed_before: if args.resume {
            done_on_resume(&loaded.project_root, plan)
        } else {
            BTreeSet::new()
        },
        start_at: start.as_ref().map(ToString::to_string),
    };
    let standings = selection::select(&order, &history)
        .map_err(|err| Failure::usage(miette::miette!("{err}")))?;
    if !order.is_empty() {
        out.push_str(&format!(
            "{} {}\n",
            palette.bold("Execution order"),
            palette.dim(&format!("(paths relative to {})", shown_dir(plan.dir())))
        ));
        out.push_str(
            &order_table(plan, &order, &standings, &loaded, &inspection.agents)
                .render("  ", palette),
        );
        out.push('\n');
    }
    let exit = if preflight.failed() {
        out.push_str(&format!(
            "{} a pre-flight check failed; `debussy run` would not start.\n",
            palette.red("Not runnable:")
        ));
        Exit::Failure
    } else if errors > 0 && !args.skip_audit {
        out.push_str(&format!(
            "{} the audit found {}; `debussy run` would stop before the first phase.\n",
            palette.red("Not runnable:"),
            if errors == 1 {
                "1 error".to_owned()
            } else {
                format!("{errors} errors")
            }
        ));
        Exit::Failure
    } else {
        if errors > 0 {
            out.push_str(&format!(
                "{} audit errors are ignored (--skip-audit).\n",
                palette.yellow("Warning:")
            ));
        }
        out.push_str("Dry run: nothing was run.\n");
        Exit::Success
    };
    print(&out)?;
    Ok(exit)
}

/// The phases an earlier run of the plan completed, which `--resume` skips; none when
/// no run was recorded (or the record cannot be read: the dry run then shows them).
fn done_on_resume(root: &Path, plan: &Plan) -> BTreeSet<String> {
    match crate::state::Store::open_existing(root) {
        Ok(Some(store)) => crate::orchestrator::done_on_resume(&store, plan).unwrap_or_default(),
        Ok(None) | Err(_) => BTreeSet::new(),
    }
}

/// The phase `--phase` names, or a usage error listing the plan's phases.
fn start_phase(plan: &Plan, text: &str) -> Result<PhaseId, Failure> {
    PhaseId::parse(text)
        .filter(|id| plan.phase(id).is_some())
        .ok_or_else(|| {
            let ids: Vec<String> = plan.phases.iter().map(|p| p.id.to_string()).collect();
            Failure::usage(miette::miette!(
                help = format!("the plan's phases are: {}", ids.join(", ")),
                "--phase {text}: no such phase in {}",
                shown(&plan.master)
            ))
        })
}

fn shown_dir(dir: &Path) -> String {
    if dir.as_os_str().is_empty() {
        ".".to_owned()
    } else {
        shown(dir)
    }
}

/// Every configuration value a run uses (the `gates` map is shown per gate in the
/// execution order), then the run options, each with where it came from.
/// What happens at a context stop and which limits pause the run, in words.
fn restart_lines(
    config: &crate::config::Config,
    agent: &str,
    can_resume: bool,
    usage: Option<crate::agent::UsageReporting>,
) -> String {
    use crate::agent::UsageReporting;
    use crate::config::HandoffMode;
    let measured = match usage {
        Some(UsageReporting::PerMessage) => "exact, from the usage on each of its messages",
        Some(UsageReporting::PerRequest) => {
            "exact, from each request's usage in the file it writes beside its output"
        }
        Some(UsageReporting::Nothing) => "estimated with the tokenizer (it reports no usage)",
        None => "unknown (the agent could not be prepared)",
    };
    let handoff = match (config.handoff, can_resume) {
        (HandoffMode::Mechanical, _) => {
            "mechanical: debussy writes the checkpoint alone".to_owned()
        }
        (HandoffMode::Agent, true) => format!(
            "agent: the stopped {agent} session is resumed once to write it (up to {}), debussy's checkpoint below it",
            config.handoff_timeout
        ),
        (HandoffMode::Agent, false) => format!(
            "mechanical: the {agent} agent cannot resume a stopped session, so debussy writes the checkpoint alone"
        ),
    };
    let money =
        |limit: Option<f64>| limit.map_or_else(|| "none".to_owned(), |usd| format!("${usd:.2}"));
    let progress = match config.no_progress_restarts {
        0 => "never".to_owned(),
        n => format!(
            "after {n} restart{} in a row without progress",
            crate::words::plural(n)
        ),
    };
    let model = if config.model.is_empty() {
        format!("{agent}'s own default")
    } else {
        config.model.clone()
    };
    format!(
        "  agent:         {agent}, model {model}; context {measured}\n  handoff:       {handoff}\n  max cost:      {} per run, {} per phase\n  max duration:  {}\n  no progress:   {progress}\n",
        money(config.max_cost_usd),
        money(config.max_phase_cost_usd),
        config
            .max_duration
            .map_or_else(|| "none".to_owned(), |d| d.to_string()),
    )
}

pub(crate) fn config_table(
    loaded: &Loaded,
    args: &RunArgs,
    kinds: &[crate::config::AgentKind],
) -> Table {
    let mut table = Table::new(&["Key", "Value", "Source"]);
    let unused = |key: &str| {
        key.strip_prefix("agents.").is_some_and(|rest| {
            !kinds
                .iter()
                .any(|kind| rest.starts_with(&format!("{kind}.")))
        })
    };
    for (key, value) in effective_config(loaded)
        .into_iter()
        .filter(|(key, _)| !unused(key))
    {
        let source = source_of(&loaded.sources, &key);
        table.row(vec![vec![key], vec![value], vec![source]]);
    }
    let flag = |set: bool| {
        if set {
            "flag".to_owned()
        } else {
            "default".to_owned()
        }
    };
    let options = [
        ("run.resume", args.resume.to_string(), flag(args.resume)),
        ("run.restart", args.restart.to_string(), flag(args.restart)),
        (
            "run.phase",
            args.phase.clone().unwrap_or_else(|| "first".to_owned()),
            flag(args.phase.is_some()),
        ),
        (
            "run.skip_audit",
            args.skip_audit.to_string(),
            flag(args.skip_audit),
        ),
        (
            "run.allow_dirty",
            args.allow_dirty.to_string(),
            flag(args.allow_dirty),
        ),
        (
            "run.output_format",
            match args.output_format.unwrap_or_default() {
                ReportFormat::Text => "text",
                ReportFormat::Json => "json",
            }
            .to_owned(),
            flag(args.output_format.is_some()),
        ),
    ];
    for (key, value, source) in options {
        table.row(vec![vec![key.to_owned()], vec![value], vec![source]]);
    }
    table
}

/// The configuration as dotted keys and display values, in the order of the
/// configuration's own fields; the `gates` map is left out.
pub(crate) fn effective_config(loaded: &Loaded) -> Vec<(String, String)> {
    let mut out = Vec::new();
    match serde_norway::to_value(&loaded.config) {
        Ok(value) => flatten("", &value, &mut out),
        Err(err) => out.push(("config".to_owned(), format!("cannot be shown: {err}"))),
    }
    out.retain(|(key, _)| key != "gates" && !key.starts_with("gates."));
    out
}

fn flatten(prefix: &str, value: &Value, out: &mut Vec<(String, String)>) {
    match value {
        Value::Mapping(map) if !map.is_empty() => {
            for (key, value) in map {
                let key = scalar(key);
                let path = if prefix.is_empty() {
                    key
                } else {
                    format!("{prefix}.{key}")
                };
                flatten(&path, value, out);
            }
        }
        other => out.push((prefix.to_owned(), scalar(other))),
    }
}

fn scalar(value: &Value) -> String {
    match value {
        Value::Null => "none".to_owned(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) if s.is_empty() => "\"\"".to_owned(),
        Value::String(s) => s.clone(),
        Value::Sequence(items) => format!(
            "[{}]",
            items.iter().map(scalar).collect::<Vec<_>>().join(", ")
        ),
        Value::Mapping(map) if map.is_empty() => "{}".to_owned(),
        Value::Mapping(map) => format!(
            "{{{}}}",
            map.iter()
                .map(|(k, v)| format!("{}: {}", scalar(k), scalar(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Value::Tagged(tagged) => scalar(&tagged.value),
    }
}

/// Where `key` came from: its own entry in `sources`, else its nearest parent's, else the
/// built-in default.
fn source_of(sources: &BTreeMap<String, Source>, key: &str) -> String {
    let mut at = key;
    loop {
        if let Some(source) = sources.get(at) {
            return match source {
                Source::Default => "default".to_owned(),
                Source::UserFile(path) => format!("user file {}", path.display()),
                Source::ProjectFile(path) => format!("project file {}", path.display()),
                Source::Env(var) => format!("env {var}"),
                Source::Flag(flag) => format!("flag {flag}"),
            };
        }
        match at.rfind('.') {
            Some(dot) => at = &at[..dot],
            None => return "default".to_owned(),
        }
    }
}

/// One row per phase in execution order.
fn order_table(
    plan: &Plan,
    order: &[&Phase],
    standings: &BTreeMap<String, Standing>,
    loaded: &Loaded,
    agents: &AgentCatalog,
) -> Table {
    let mut table = Table::new(&[
        "#",
        "ID",
        "Title",
        "Status",
        "Depends on",
        "Gates",
        "Agents",
        "Notes",
    ]);
    let relative = |path: &Path| match path.strip_prefix(plan.dir()) {
        Ok(rest) if !plan.dir().as_os_str().is_empty() => shown(rest),
        _ => shown(path),
    };
    let mut step = 0;
    for phase in order {
        let skipped = match standings.get(phase.id.as_str()) {
            Some(Standing::Skipped(reason)) => Some(reason.as_str()),
            _ => None,
        };
        let number = if skipped.is_some() {
            "skip".to_owned()
        } else {
            step += 1;
            step.to_string()
        };
        let depends: Vec<String> = phase
            .depends_on
            .iter()
            .map(|d| match &d.target {
                DependencyTarget::Id(id) => id.to_string(),
                DependencyTarget::File(path) => relative(path),
            })
            .collect();
        let gates: Vec<String> = phase
            .gates
            .iter()
            .map(|gate| match gate.resolve(&loaded.config.gates) {
                Some(resolved) => {
                    let origin = match resolved.origin {
                        GateOrigin::Plan => "",
                        GateOrigin::Config => " (config)",
                    };
                    if resolved.origin == GateOrigin::Plan && resolved.command == gate.name {
                        format!("{}{origin}", resolved.command)
                    } else {
                        format!("{}: {}{origin}", gate.name, resolved.command)
                    }
                }
                None => format!("{}: NO COMMAND", gate.name),
            })
            .collect();
        let required: Vec<String> = phase
            .required_agents
            .iter()
            .map(|agent| match agents.find(&agent.name) {
                Some(_) => agent.name.clone(),
                None => format!("{} (missing)", agent.name),
            })
            .collect();
        let mut notes: Vec<String> = phase
            .notes_in
            .iter()
            .map(|n| format!("in: {}", relative(&n.path)))
            .collect();
        notes.extend(
            phase
                .notes_out
                .iter()
                .map(|n| format!("out: {}", relative(&n.path))),
        );
        let file_note = match &phase.file {
            plan::PhaseFile::Loaded(_) => None,
            plan::PhaseFile::NotFound(_) => Some("(file missing)"),
            plan::PhaseFile::Unreadable { .. } => Some("(file unreadable)"),
            plan::PhaseFile::NoLink => Some("(no file linked)"),
        };
        let mut title = vec![phase.title.clone()];
        title.extend(file_note.map(str::to_owned));
        title.extend(skipped.map(|reason| format!("(skipped: {reason})")));
        if let Some(own) = crate::orchestrator::agents::phase_agent(&loaded.config, phase) {
            let model = if own.model.is_empty() {
                "its default model"
            } else {
                own.model.as_str()
            };
            title.push(format!("runs on {} ({model})", own.kind));
        }
        let or_dash = |lines: Vec<String>| {
            if lines.is_empty() {
                vec!["-".to_owned()]
            } else {
                lines
            }
        };
        table.row(vec![
            vec![number],
            vec![phase.id.to_string()],
            title,
            vec![phase.status.label().to_owned()],
            or_dash(
                vec![depends.join(", ")]
                    .into_iter()
                    .filter(|s| !s.is_empty())
                    .collect(),
            ),
            or_dash(gates),
            or_dash(required),
            or_dash(notes),
        ]);
    }
    table
}

#[cfg(test)]
#[path = "dry_run_tests.rs"]
mod tests;
