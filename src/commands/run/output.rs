//! Where a run's events are shown: the dashboard, JSON lines or plain lines.

use std::io::IsTerminal;

use crate::cli::{GlobalArgs, ReportFormat, RunArgs};
use crate::config::OutputMode;
use crate::ui::Sink;
use crate::ui::json::JsonSink;
use crate::ui::plain::{Detail, PlainSink};

/// Where a run's events are shown.
pub(super) enum Output {
    /// The interactive dashboard.
    Hud,
    /// Plain lines or JSON.
    Sink(Box<dyn Sink>),
}

/// The HUD when `interactive` is on (`--no-interactive`/`--yolo` turn it off), no JSON
/// was asked for, output goes to the terminal, both stdout and stdin are terminals, and
/// the terminal is not a dumb one; else JSON lines with `--output-format json`, else
/// plain lines.
pub(super) fn choose_output(
    global: &GlobalArgs,
    args: &RunArgs,
    config: &crate::config::Config,
    root: &std::path::Path,
) -> Output {
    if args.output_format == Some(ReportFormat::Json) {
        return Output::Sink(Box::new(JsonSink::new(Box::new(std::io::stdout()))));
    }
    let terminal = std::io::stdout().is_terminal()
        && std::io::stdin().is_terminal()
        && !crate::logging::terminal_is_dumb();
    if config.interactive && terminal && config.output != OutputMode::File {
        return Output::Hud;
    }
    Output::Sink(plain_sink(global, config.output, root))
}

/// The plain console; with `output: file` or `both`, plain lines also go to
/// `.debussy/logs/run-<id>.log`.
pub(super) fn plain_sink(
    global: &GlobalArgs,
    output: OutputMode,
    root: &std::path::Path,
) -> Box<dyn Sink> {
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
