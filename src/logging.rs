//! Tracing setup: human logs on stderr, filtered by `-v`/`-q` or `DEBUSSY_LOG`.
//!
//! Logs never go to stdout, which belongs to command output (and, under
//! `debussy mcp supervise`, to the MCP client).

use tracing_subscriber::EnvFilter;

use crate::cli::{ColorChoice, GlobalArgs};

/// Install the global subscriber. `DEBUSSY_LOG` (an `EnvFilter` directive such as
/// `debussy=trace`) wins over `-v`/`-q`.
pub fn init(args: &GlobalArgs) {
    let level = match (args.verbose, args.quiet) {
        (0, 0) => "info",
        (1, _) => "debug",
        (v, _) if v >= 2 => "trace",
        (_, 1) => "warn",
        _ => "error",
    };
    let filter = EnvFilter::try_from_env("DEBUSSY_LOG")
        .unwrap_or_else(|_| EnvFilter::new(format!("debussy={level},warn")));
    let ansi = use_color(
        args.color,
        std::io::IsTerminal::is_terminal(&std::io::stderr()),
    );
    // A second init (tests calling into the library) is harmless; ignore it.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(ansi)
        .with_target(false)
        .try_init();
}

/// Whether to colour a stream, honouring `--color` and `NO_COLOR`.
#[must_use]
pub fn use_color(choice: ColorChoice, is_terminal: bool) -> bool {
    match choice {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => is_terminal && std::env::var_os("NO_COLOR").is_none(),
    }
}
