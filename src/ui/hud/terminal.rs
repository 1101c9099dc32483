//! The terminal guard: raw mode, the alternate screen and a hidden cursor while the HUD
//! runs, and their undoing — when the guard drops (quit, run finished, error) and, via
//! a panic hook, before a panic message prints. Log lines on stderr are held back while
//! the guard is active so they never write into the screen.

use std::io::{self, BufWriter, Stdout, Write};
use std::sync::Once;
use std::sync::atomic::{AtomicBool, Ordering};

use crossterm::cursor::{Hide, Show};
use crossterm::execute;
use crossterm::terminal::{
    EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
};
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;

use crate::logging;

/// Whether the terminal is currently set up for the HUD (and so needs restoring).
static ACTIVE: AtomicBool = AtomicBool::new(false);
static PANIC_HOOK: Once = Once::new();

/// Bytes buffered before a write to the terminal: a whole frame goes out in one write.
const WRITE_BUFFER: usize = 64 * 1024;

/// The backend the HUD draws on.
pub(crate) type Screen = Terminal<CrosstermBackend<BufWriter<Stdout>>>;

/// Owns the terminal while the HUD shows. Dropping it restores the terminal;
/// restoring twice is harmless.
pub(crate) struct TerminalGuard {
    terminal: Screen,
}

impl TerminalGuard {
    /// Enter raw mode and the alternate screen, hide the cursor, hold back stderr logs,
    /// and make sure a panic restores all of it first.
    ///
    /// # Errors
    /// When the terminal refuses; whatever was already set up is undone.
    pub(crate) fn enter() -> io::Result<TerminalGuard> {
        install_panic_hook();
        enable_raw_mode()?;
        ACTIVE.store(true, Ordering::SeqCst);
        logging::set_stderr_enabled(false);
        let setup = || -> io::Result<Screen> {
            let mut out = BufWriter::with_capacity(WRITE_BUFFER, io::stdout());
            execute!(out, EnterAlternateScreen, Hide)?;
            let mut terminal = Terminal::new(CrosstermBackend::new(out))?;
            terminal.clear()?;
            Ok(terminal)
        };
        match setup() {
            Ok(terminal) => Ok(TerminalGuard { terminal }),
            Err(err) => {
                restore();
                Err(err)
            }
        }
    }

    /// The terminal to draw on.
    pub(crate) fn screen(&mut self) -> &mut Screen {
        &mut self.terminal
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        let _ = self.terminal.backend_mut().flush();
        restore();
    }
}

/// Leave the alternate screen, show the cursor, leave raw mode and let logs through
/// again. Does nothing when the HUD is not active, so it is safe from the panic hook.
pub(crate) fn restore() {
    if !ACTIVE.swap(false, Ordering::SeqCst) {
        return;
    }
    let mut out = io::stdout();
    let _ = execute!(out, LeaveAlternateScreen, Show);
    let _ = out.flush();
    let _ = disable_raw_mode();
    logging::set_stderr_enabled(true);
}

/// Chain a hook in front of the current one that restores the terminal, so the panic
/// message lands on a usable screen (gitui does the same).
fn install_panic_hook() {
    PANIC_HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore();
            previous(info);
        }));
    });
}
