//! Text output helpers for commands: writing to stdout (a closed pipe is a quiet exit).

use std::io::Write;

use crate::exit::Failure;

pub(crate) use crate::ui::text::{Palette, Table};

/// Writing command output failed (a closed pipe is reported quietly by `main`).
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
#[error("failed to write to standard output")]
struct StdoutError(#[source] std::io::Error);

/// Write `text`, meant for people, to stdout in one go, its control characters shown
/// rather than sent (see [`terminal_safe`](crate::terminal_safe::terminal_safe)).
pub(crate) fn print(text: &str) -> Result<(), Failure> {
    print_exactly(&crate::terminal_safe::terminal_safe(text))
}

/// Write `text` to stdout in one go, byte for byte (JSON, which escapes its own control
/// characters, and completion scripts).
pub(crate) fn print_exactly(text: &str) -> Result<(), Failure> {
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
        .map_err(|err| Failure::failed(StdoutError(err)))
}
