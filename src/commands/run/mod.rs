//! `debussy run`: load the configuration and the plan, audit it, pick the output (the
//! HUD on a terminal, else plain lines or JSON), add notifications, hook up Ctrl-C, run
//! the orchestrator and turn its summary into an exit code (0 completed, 1 a phase failed
//! or was blocked, 2 usage or config, 130 interrupted).

mod dry_run;
mod overrides;

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::sync::Arc;

use crate::agent::{self, BackendContext};
use crate::cli::{GlobalArgs, ReportFormat, RunArgs, RunOverrides};
use crate::config::OutputMode;
use crate::events::{self, RequestSender, RunRequest};
use crate::exit::{CommandResult, Exit, Failure, to_stderr, to_stdout};
use crate::orchestrator::{self, RunOptions, RunSetup};
use crate::plan;
use crate::state::RunStatus;
use crate::state::StartedWith;
use crate::ui::{
    self, Sink,
    hud::{self, Ending},
    json::JsonSink,
    notifications::Notifier,
    plain::{Detail, PlainSink},
};

use super::audit::render_report;
use super::render::Palette;

pub(super) async fn run(global: &GlobalArgs, args: RunArgs) -> CommandResult {
    if args.dry_run {
        return dry_run::run(global, &args).await;
    }
    let mut overrides = args.overrides.clone();
    let mut env = load_options(global, &overrides)?.env;
    let mut loaded = load_config(global, &overrides, &env)?;
    if args.resume && reuse_started_with(&args, &loaded.project_root, &mut overrides, &mut env)? {
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
            RunStatus::Paused => Exit::Interrupted,
            RunStatus::Failed | RunStatus::Running | RunStatus::Interrupted => Exit::Failure,
        }),
        Err(err) if err.is_usage() => Err(Failure::usage(err)),
        Err(err) => Err(Failure::failed(err)),
    }
}

/// The configuration inputs of this process, with `overrides` as the flags.
fn load_options<'a>(
    global: &GlobalArgs,
    overrides: &'a RunOverrides,
) -> Result<crate::config::LoadOptions<'a>, Failure> {
    let cwd = std::env::current_dir().map_err(|err| {
        Failure::usage(miette::miette!("cannot read the current directory: {err}"))
    })?;
    crate::config::LoadOptions::from_process(cwd, global.config.clone(), Some(&overrides.values))
        .map_err(Failure::usage)
}

/// The configuration from files, `env` (the `DEBUSSY_*` variables) and `overrides`.
fn load_config(
    global: &GlobalArgs,
    overrides: &RunOverrides,
    env: &BTreeMap<String, String>,
) -> Result<crate::config::Loaded, Failure> {
    let mut options = load_options(global, overrides)?;
    options.env.clone_from(env);
    crate::config::load(&options).map_err(Failure::usage)
}

/// On `--resume`, take the flags and `DEBUSSY_*` variables the resumed run was started
/// with for every one not given now, saying which were reused. True when any was.
fn reuse_started_with(
    args: &RunArgs,
    root: &std::path::Path,
    flags: &mut RunOverrides,
    env: &mut BTreeMap<String, String>,
) -> Result<bool, Failure> {
    // A plan that does not load is reported by the inspection that follows.
    let Ok(plan) = plan::load(&args.plan) else {
        return Ok(false);
    };
    let Some(store) = crate::state::Store::open_existing(root).map_err(Failure::failed)? else {
        return Ok(false);
    };
    let Some(run) = orchestrator::resumable_run(&store, &plan).map_err(Failure::failed)? else {
        return Ok(false);
    };
    let mut reused = overrides::reuse(flags, &run.started_with.flags).map_err(Failure::usage)?;
    reused.extend(overrides::reuse_env(env, &run.started_with.env));
    if reused.is_empty() {
        return Ok(false);
    }
    to_stderr(&format!(
        "debussy: resuming run {} with the settings it was started with: {}\n",
        run.id,
        reused.join(" ")
    ));
    Ok(true)
}

/// Where a run's events are shown.
enum Output {
    /// The interactive dashboard.
    Hud,
    /// Plain lines or JSON.
    Sink(Box<dyn Sink>),
}

/// The HUD when `interactive` is on (`--no-interactive`/`--yolo` turn it off), no JSON
/// was asked for, output goes to the terminal, and both stdout and stdin are terminals;
/// else JSON lines with `--output-format json`, else plain lines.
fn choose_output(
    global: &GlobalArgs,
    args: &RunArgs,
    config: &crate::config::Config,
    root: &std::path::Path,
) -> Output {
    if args.output_format == Some(ReportFormat::Json) {
        return Output::Sink(Box::new(JsonSink::new(Box::new(std::io::stdout()))));
    }
    let terminal = std::io::stdout().is_terminal() && std::io::stdin().is_terminal();
    if config.interactive && terminal && config.output != OutputMode::File {
        return Output::Hud;
    }
    Output::Sink(plain_sink(global, config.output, root))
}

/// The plain console; with `output: file` or `both`, plain lines also go to
/// `.debussy/logs/run-<id>.log`.
fn plain_sink(global: &GlobalArgs, output: OutputMode, root: &std::path::Path) -> Box<dyn Sink> {
    let log_dir = matches!(output, OutputMode::File | OutputMode::Both)
        .then(|| {
            crate::files::private_dir(root, std::path::Path::new(".debussy/logs"))
                .inspect_err(|err| tracing::warn!("cannot write the run's log: {err}"))
                .ok()
        })
        .flatten();
    let terminal: Option<Box<dyn std::io::Write + Send>> = (output != OutputMode::File)
        .then(|| Box::new(std::io::stdout()) as Box<dyn std::io::Write + Send>);
    let detail = if global.verbose > 0 {
        Detail::Activity
    } else {
        Detail::Milestones
    };
    Box::new(PlainSink::new(terminal, log_dir, detail))
}

/// Third Ctrl-C: kill every agent process group and exit now.
fn abort() -> ! {
    crate::process::kill_all_groups();
    std::process::exit(i32::from(Exit::Interrupted.code()));
}

/// Ctrl-C and SIGTERM: the first stops the agent gracefully and pauses the run, the
/// second kills the agent, the third exits at once (killing every child group).
/// With the HUD up, nothing is printed (it shows what happens).
async fn forward_signals(requests: RequestSender, quiet: bool) {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut interrupt), Ok(mut terminate)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) else {
        tracing::warn!(
            "cannot listen for Ctrl-C; interrupting will kill the run without saving state"
        );
        return;
    };
    let mut count = 0;
    loop {
        tokio::select! {
            _ = interrupt.recv() => {}
            _ = terminate.recv() => {}
        }
        count += 1;
        match count {
            1 => {
                if !quiet {
                    to_stderr(
                        "\ndebussy: stopping the agent and pausing the run (Ctrl-C again to kill it)\n",
                    );
                }
                let _ = requests.send(RunRequest::Interrupt);
            }
            2 => {
                if !quiet {
                    to_stderr("\ndebussy: killing the agent (Ctrl-C again to exit at once)\n");
                }
                let _ = requests.send(RunRequest::Kill);
            }
            _ => {
                crate::ui::hud::restore_terminal();
                abort();
            }
        }
    }
}
