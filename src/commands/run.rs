//! `debussy run`: load the configuration and the plan, audit it, pick the output, hook
//! up Ctrl-C, run the orchestrator and turn its summary into an exit code
//! (0 completed, 1 a phase failed or was blocked, 2 usage or config, 130 interrupted).

mod dry_run;

use std::io::IsTerminal;
use std::sync::Arc;

use crate::agent::{self, BackendContext};
use crate::cli::{GlobalArgs, ReportFormat, RunArgs};
use crate::config::OutputMode;
use crate::events::{self, RequestSender, RunRequest};
use crate::exit::{CommandResult, Exit, Failure};
use crate::orchestrator::{self, RunOptions, RunSetup};
use crate::plan;
use crate::ui::{
    self, Sink,
    json::JsonSink,
    plain::{Detail, PlainSink},
};

use super::audit::render_report;
use super::render::Palette;

pub(super) async fn run(global: &GlobalArgs, args: RunArgs) -> CommandResult {
    if args.dry_run {
        return dry_run::run(global, &args);
    }
    let loaded = super::load_config(global, Some(&args.overrides))?;
    let root = loaded.project_root.clone();
    let inspection = plan::inspect(&args.plan, &loaded.config.gates, &root);
    let Some(plan) = inspection.plan else {
        let palette = Palette::new(crate::logging::use_color(
            global.color,
            std::io::stderr().is_terminal(),
        ));
        eprint!("{}", render_report(&inspection.report, false, palette));
        return Ok(Exit::Failure);
    };
    if !args.skip_audit && inspection.report.summary.errors > 0 {
        let palette = Palette::new(crate::logging::use_color(
            global.color,
            std::io::stderr().is_terminal(),
        ));
        eprint!("{}", render_report(&inspection.report, false, palette));
        eprintln!("the plan has audit errors; fix them (see `debussy audit`) or pass --skip-audit");
        return Ok(Exit::Failure);
    }
    let backend = agent::backend(
        &loaded.config.agent,
        BackendContext {
            project_root: &root,
            plan_path: Some(&plan.master),
        },
    )
    .map_err(Failure::usage)?;
    let backend: Arc<dyn agent::AgentBackend> = Arc::from(backend);

    if let Err(err) = crate::logging::log_to_file(&root.join(".debussy/logs/orchestrator.log")) {
        tracing::warn!("cannot write .debussy/logs/orchestrator.log: {err}");
    }
    let sink = choose_sink(global, &args, loaded.config.output, &root);
    let (event_sender, event_receiver) = events::channel();
    let (request_sender, requests) = tokio::sync::mpsc::unbounded_channel();
    let output = tokio::spawn(ui::drain(event_receiver, sink));
    let signals = tokio::spawn(forward_signals(request_sender));

    let setup = RunSetup {
        loaded,
        plan,
        backend,
        options: RunOptions {
            resume: args.resume,
            ignore_history: args.restart,
            start_phase: args.phase.clone(),
            allow_dirty: args.allow_dirty,
        },
        events: event_sender,
        requests,
    };
    let result = orchestrator::run(setup).await;
    signals.abort();
    // The orchestrator dropped its sender: the sink drains what is left and ends.
    let _ = output.await;
    match result {
        Ok(summary) => Ok(match summary.status.as_str() {
            "completed" => Exit::Success,
            "paused" => Exit::Interrupted,
            _ => Exit::Failure,
        }),
        Err(err) if err.is_usage() => Err(Failure::usage(err)),
        Err(err) => Err(Failure::failed(err)),
    }
}

/// The plain console, or JSON lines with `--output-format json`; with `output: file`
/// or `both`, plain lines also go to `.debussy/logs/run-<id>.log`.
fn choose_sink(
    global: &GlobalArgs,
    args: &RunArgs,
    output: OutputMode,
    root: &std::path::Path,
) -> Box<dyn Sink> {
    if args.output_format == Some(ReportFormat::Json) {
        return Box::new(JsonSink::new(Box::new(std::io::stdout())));
    }
    let log_dir =
        matches!(output, OutputMode::File | OutputMode::Both).then(|| root.join(".debussy/logs"));
    let terminal: Option<Box<dyn std::io::Write + Send>> = (output != OutputMode::File)
        .then(|| Box::new(std::io::stdout()) as Box<dyn std::io::Write + Send>);
    let detail = if global.verbose > 0 {
        Detail::Activity
    } else {
        Detail::Milestones
    };
    Box::new(PlainSink::new(terminal, log_dir, detail))
}

/// Ctrl-C and SIGTERM: the first stops the agent gracefully and pauses the run, the
/// second kills the agent, the third exits at once (killing every child group).
async fn forward_signals(requests: RequestSender) {
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
                eprintln!(
                    "\ndebussy: stopping the agent and pausing the run (Ctrl-C again to kill it)"
                );
                let _ = requests.send(RunRequest::Interrupt);
            }
            2 => {
                eprintln!("\ndebussy: killing the agent (Ctrl-C again to exit at once)");
                let _ = requests.send(RunRequest::Kill);
            }
            _ => {
                crate::process::kill_all_groups();
                std::process::exit(i32::from(Exit::Interrupted.code()));
            }
        }
    }
}
