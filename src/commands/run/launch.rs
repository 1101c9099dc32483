//! One `debussy run`, from the flags to the exit code.

use std::io::IsTerminal;
use std::sync::Arc;

use crate::agent::{self, BackendContext};
use crate::cli::{GlobalArgs, ReportFormat, RunArgs};
use crate::config::OutputMode;
use crate::events::{self, RunRequest};
use crate::exit::{CommandResult, Exit, Failure, to_stderr, to_stdout};
use crate::orchestrator::{self, RunOptions, RunSetup};
use crate::plan;
use crate::state::RunStatus;
use crate::state::StartedWith;
use crate::ui::{
    self, Sink,
    hud::{self, Ending},
    notifications::Notifier,
    plain::{Detail, PlainSink},
};

use super::output::{Output, choose_output, plain_sink};
use super::settings::{Reused, load_config, load_options, reuse_started_with};
use super::signals::{abort, forward_signals};
use super::{dry_run, overrides};

use crate::commands::audit::render_report;
use crate::commands::render::Palette;

pub(in crate::commands) async fn run(global: &GlobalArgs, args: RunArgs) -> CommandResult {
    if args.dry_run {
        return dry_run::run(global, &args).await;
    }
    let mut overrides = args.overrides.clone();
    let mut env = load_options(global, &overrides)?.env;
    let mut loaded = load_config(global, &overrides, &env)?;
    let reused = if args.resume {
        reuse_started_with(&args, &loaded.project_root, &mut overrides, &mut env)?
    } else {
        Reused::Nothing
    };
    if let Reused::AlreadyComplete(_) = reused {
        reused.say();
        return Ok(Exit::Success);
    }
    if reused.any() {
        loaded = load_config(global, &overrides, &env)?;
    }
    let root = loaded.project_root.clone();
    let inspection = plan::inspect(&args.plan, &loaded.config.gates, &root);
    let Some(plan) = inspection.plan else {
        let palette = Palette::new(crate::logging::use_color(
            global.color,
            std::io::stderr().is_terminal(),
        ));
        to_stderr(&render_report(&inspection.report, false, palette));
        return Ok(Exit::Failure);
    };
    if !args.skip_audit && inspection.report.summary.errors > 0 {
        let palette = Palette::new(crate::logging::use_color(
            global.color,
            std::io::stderr().is_terminal(),
        ));
        to_stderr(&render_report(&inspection.report, false, palette));
        to_stderr(
            "the plan has audit errors; fix them (see `debussy audit`) or pass --skip-audit\n",
        );
        return Ok(Exit::Failure);
    }
    let backend = agent::backend(
        &crate::session::default_backend_settings(&loaded.config),
        BackendContext {
            project_root: &root,
            plan_path: Some(&plan.master),
        },
    )
    .map_err(Failure::usage)?;
    let backend: Arc<dyn agent::AgentBackend> = Arc::from(backend);
    // A run that commits needs a repository: said before anything is written into a
    // directory git does not hold.
    if loaded.config.auto_commit {
        crate::git::Repo::discover(&root).map_err(Failure::usage)?;
    }
    // Before the checks: a live run is named, not its agent's files found untracked. A
    // run directory that cannot be prepared is said by the checks' `writable`, with its
    // fix, before its own error.
    let lock = match orchestrator::lock::take(&root) {
        Err(err) if err.is_usage() => return Err(Failure::usage(err)),
        taken => taken,
    };
    reused.say();
    // Everything the run needs, all at once, before anything is recorded.
    let preflight = crate::preflight::check(crate::preflight::Target {
        loaded: &loaded,
        plan: Some(&plan.master),
        auto_commit: loaded.config.auto_commit,
    });
    to_stderr(&preflight.render(false));
    if preflight.failed() {
        to_stderr("debussy: not started; fix the problems above (`debussy doctor` checks again)\n");
        return Ok(Exit::Usage);
    }
    let lock = lock.map_err(Failure::failed)?;

    let logged = crate::files::private_dir(&root, std::path::Path::new(".debussy/logs"))
        .and_then(|dir| crate::logging::log_to_file(&dir.join("orchestrator.log")));
    if let Err(err) = logged {
        tracing::warn!("cannot write .debussy/logs/orchestrator.log: {err}");
    }
    let output = choose_output(global, &args, &loaded.config, &root);
    // With `output: file` the terminal shows nothing during the run; the summary is
    // still printed at the end, as in every other mode.
    let summary_to_terminal = matches!(output, Output::Sink(_))
        && args.output_format != Some(ReportFormat::Json)
        && loaded.config.output == OutputMode::File;
    let (event_sender, mut event_receiver) = events::channel();
    let (request_sender, requests) = tokio::sync::mpsc::unbounded_channel();

    // Side sinks see every event on the way to the main output.
    let mut side: Vec<Box<dyn Sink>> = Vec::new();
    if let Some(notifier) = Notifier::from_config(&loaded.config.notifications) {
        side.push(Box::new(notifier));
    }
    if matches!(output, Output::Hud) && loaded.config.output == OutputMode::Both {
        side.push(Box::new(PlainSink::new(
            None,
            Some(root.join(".debussy/logs")),
            Detail::Milestones,
        )));
    }
    let mut side_task = None;
    if !side.is_empty() {
        let (passed, task) = ui::tee(event_receiver, side);
        event_receiver = passed;
        side_task = Some(task);
    }

    let interactive = matches!(output, Output::Hud);
    let output = match output {
        Output::Hud => {
            let options = hud::Options {
                root: Some(root.clone()),
                fallback: plain_sink(global, OutputMode::Terminal, &root),
            };
            let hud = tokio::spawn(hud::run(event_receiver, request_sender.clone(), options));
            let requests = request_sender.clone();
            tokio::spawn(async move {
                match hud.await {
                    Ok(Ending::Closed) => {}
                    Ok(Ending::Abort) => abort(),
                    Err(err) => {
                        // The panic hook restored the terminal; stop the agent gracefully
                        // so the run is saved as paused rather than going on unseen.
                        to_stderr(&format!(
                            "debussy: the dashboard failed ({err}); pausing the run\n"
                        ));
                        let _ = requests.send(RunRequest::Interrupt);
                    }
                }
            })
        }
        Output::Sink(sink) => tokio::spawn(ui::drain(event_receiver, sink)),
    };
    let signals = tokio::spawn(forward_signals(request_sender, interactive));

    let setup = RunSetup {
        loaded,
        plan,
        backend,
        options: RunOptions {
            resume: args.resume,
            ignore_history: args.restart,
            start_phase: args.phase.clone(),
            allow_dirty: args.allow_dirty,
            started_with: StartedWith {
                flags: overrides::to_words(&overrides),
                env: overrides::recordable_env(&env),
            },
        },
        events: event_sender,
        requests,
        lock,
    };
    let result = orchestrator::run(setup).await;
    signals.abort();
    // The orchestrator dropped its sender: the output drains what is left and ends
    // (the HUD restores the terminal and prints the summary), then notifications flush.
    let _ = output.await;
    if let Some(task) = side_task {
        let _ = task.await;
    }
    if summary_to_terminal && let Ok(summary) = &result {
        to_stdout(&format!(
            "{}The run's lines are in {}\n",
            ui::summary::render(summary),
            root.join(".debussy/logs").display()
        ));
    }
    match result {
        Ok(summary) => Ok(match summary.status {
            RunStatus::Completed => Exit::Success,
            RunStatus::Paused if summary.limit.is_some() => Exit::LimitReached,
            RunStatus::Paused if summary.disk_full => Exit::Failure,
            RunStatus::Paused => Exit::Interrupted,
            RunStatus::Failed | RunStatus::Running | RunStatus::Interrupted => Exit::Failure,
        }),
        Err(err) if err.is_usage() => Err(Failure::usage(err)),
        Err(err) => Err(Failure::failed(err)),
    }
}
