//! Tracing setup: human logs on stderr, filtered by `-v`/`-q` or `DEBUSSY_LOG`, and, once a
//! run knows its project, structured JSON logs in `.debussy/logs/orchestrator.log`.
//!
//! Logs never go to stdout, which belongs to command output (and, under
//! `debussy mcp supervise`, to the MCP client). The HUD turns the stderr layer off while
//! it owns the screen, so log lines never write into it.

use std::fs::File;
use std::io::{self, Write};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};

use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::fmt::{FormatFields, MakeWriter};
use tracing_subscriber::prelude::*;
use tracing_subscriber::{EnvFilter, Layer};

static STDERR_ENABLED: AtomicBool = AtomicBool::new(true);

/// The tracing target of the MCP supervisor's lines for people: printed on stderr as
/// `[<ISO-8601 UTC>] [SUPERVISOR] message` at every verbosity, and kept out of the
/// ordinary log format.
pub const SUPERVISOR_TARGET: &str = "debussy::supervisor";
static RUN_LOG: OnceLock<Mutex<Option<File>>> = OnceLock::new();

/// When to colour output (`--color`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorChoice {
    /// Colour when the stream is a terminal, `NO_COLOR` is unset and `TERM` is not `dumb`.
    Auto,
    /// Always colour.
    Always,
    /// Never colour.
    Never,
}

/// How much to log on stderr, and in colour or not: `-v`/`-q` counted, and `--color`.
#[derive(Debug, Clone, Copy)]
pub struct LogSettings {
    /// How many times `-v` was given.
    pub verbose: u8,
    /// How many times `-q` was given.
    pub quiet: u8,
    /// `--color`.
    pub color: ColorChoice,
}

/// Install the global subscriber. `DEBUSSY_LOG` (an `EnvFilter` directive such as
/// `debussy=trace`) wins over `-v`/`-q`.
pub fn init(args: LogSettings) {
    let level = match (args.verbose, args.quiet) {
        (0, 0) => "info",
        (1, _) => "debug",
        (v, _) if v >= 2 => "trace",
        (_, 1) => "warn",
        _ => "error",
    };
    let filter = EnvFilter::try_from_env("DEBUSSY_LOG")
        .unwrap_or_else(|_| EnvFilter::new(format!("debussy={level},warn")));
    let filter = match format!("{SUPERVISOR_TARGET}=off").parse() {
        Ok(directive) => filter.add_directive(directive),
        Err(_) => filter,
    };
    let ansi = use_color(
        args.color,
        std::io::IsTerminal::is_terminal(&std::io::stderr()),
    );
    let stderr = tracing_subscriber::fmt::layer()
        .with_writer(|| StderrWriter)
        .with_ansi(ansi)
        .with_target(false)
        .with_filter(filter);
    // debussy's own debug lines; other crates only when they warn (process-wrap logs a
    // `pre_spawn TypeId(…)` line per hook per spawn at debug, which buried ours).
    let file = tracing_subscriber::fmt::layer()
        .json()
        .with_writer(RunLogWriter)
        .with_filter(
            Targets::new()
                .with_target("debussy", LevelFilter::DEBUG)
                .with_default(LevelFilter::WARN),
        );
    let supervisor = tracing_subscriber::fmt::layer()
        .with_writer(|| StderrWriter)
        .event_format(SupervisorLine)
        .with_filter(Targets::new().with_target(SUPERVISOR_TARGET, LevelFilter::INFO));
    // A second init (tests calling into the library) is harmless; ignore it.
    let _ = tracing_subscriber::registry()
        .with(stderr)
        .with(supervisor)
        .with(file)
        .try_init();
}

/// Whether to colour a stream, honouring `--color`, `NO_COLOR` and a dumb terminal.
#[must_use]
pub fn use_color(choice: ColorChoice, is_terminal: bool) -> bool {
    match choice {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => {
            is_terminal && std::env::var_os("NO_COLOR").is_none() && !terminal_is_dumb()
        }
    }
}

/// Whether the terminal takes no control sequences (`TERM=dumb`: Emacs's shell and
/// compilation buffers, some CI logs): no colour and no HUD there.
#[must_use]
pub fn terminal_is_dumb() -> bool {
    std::env::var_os("TERM").is_some_and(|term| term == "dumb")
}

/// Turn stderr logging off (while a full-screen UI owns the terminal) or back on.
pub fn set_stderr_enabled(enabled: bool) {
    STDERR_ENABLED.store(enabled, Ordering::Relaxed);
}

/// Also write debussy's logs, as JSON lines at debug level, to `path` (appending). The
/// file is readable by its owner only: it holds prompts, paths and commands. A link in
/// its place is refused, never written through.
///
/// # Errors
/// When the file or its directory cannot be created, or the file is a link.
pub fn log_to_file(path: &Path) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;

    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let file = crate::files::open_private_append(path)?;
    // A log created by an older version keeps its mode on open; tighten it.
    file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    let slot = RUN_LOG.get_or_init(|| Mutex::new(None));
    if let Ok(mut guard) = slot.lock() {
        *guard = Some(file);
    }
    Ok(())
}

struct StderrWriter;

impl Write for StderrWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if STDERR_ENABLED.load(Ordering::Relaxed) {
            io::stderr().write(buf)
        } else {
            Ok(buf.len())
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        io::stderr().flush()
    }
}

struct RunLogWriter;

struct RunLogHandle;

impl<'a> MakeWriter<'a> for RunLogWriter {
    type Writer = RunLogHandle;

    fn make_writer(&'a self) -> Self::Writer {
        RunLogHandle
    }
}

impl Write for RunLogHandle {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if let Some(slot) = RUN_LOG.get()
            && let Ok(mut guard) = slot.lock()
            && let Some(file) = guard.as_mut()
        {
            file.write_all(buf)?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// `[<ISO-8601 UTC>] [SUPERVISOR] message`: the MCP supervisor's line format, which
/// people and scripts watching a supervisor's stderr rely on.
struct SupervisorLine;

impl<S, N> tracing_subscriber::fmt::FormatEvent<S, N> for SupervisorLine
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &tracing_subscriber::fmt::FmtContext<'_, S, N>,
        mut writer: tracing_subscriber::fmt::format::Writer<'_>,
        event: &tracing::Event<'_>,
    ) -> std::fmt::Result {
        write!(writer, "[{:.3}] [SUPERVISOR] ", jiff::Timestamp::now())?;
        ctx.format_fields(writer.by_ref(), event)?;
        writeln!(writer)
    }
}
