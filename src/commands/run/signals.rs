//! Ctrl-C, SIGTERM and SIGHUP during a run: pause, then kill, then exit at once.

use crate::events::{RequestSender, RunRequest};
use crate::exit::{Exit, to_stderr};

/// Third Ctrl-C: kill every agent process group and exit now.
pub(super) fn abort() -> ! {
    crate::process::kill_all_groups();
    std::process::exit(i32::from(Exit::Interrupted.code()));
}

/// Ctrl-C, SIGTERM and SIGHUP (the terminal or the SSH connection gone): the first stops
/// the agent gracefully and pauses the run, the second kills the agent, the third exits
/// at once (killing every child group). Each says what it reaches, from what runs then
/// (a git hook around a commit is let finish, not the agent). With the HUD up, nothing
/// is printed (it shows what happens).
pub(super) async fn forward_signals(requests: RequestSender, quiet: bool) {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut interrupt), Ok(mut terminate), Ok(mut hangup)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
        signal(SignalKind::hangup()),
    ) else {
        tracing::warn!(
            "cannot listen for Ctrl-C; interrupting will kill the run without saving state"
        );
        return;
    };
    let mut count: u8 = 0;
    loop {
        tokio::select! {
            _ = interrupt.recv() => {}
            _ = terminate.recv() => {}
            _ = hangup.recv() => {}
        }
        count = count.saturating_add(1);
        if !quiet {
            let said = crate::ui::interrupts::said(count, &crate::process::busy());
            to_stderr(&format!("\ndebussy: {said}\n"));
        }
        match count {
            1 => {
                let _ = requests.send(RunRequest::Interrupt);
            }
            2 => {
                let _ = requests.send(RunRequest::Kill);
            }
            _ => {
                crate::ui::hud::restore_terminal();
                abort();
            }
        }
    }
}
