//! SIGINT, SIGTERM and SIGHUP for the long-lived MCP commands: the first two stop the
//! supervisor or bridge, the last restarts its server.

use super::say;

/// What a signal asks of a running supervisor or bridge.
pub(crate) trait SignalTarget: Send + 'static {
    /// Stop gracefully (`signal` names the cause in logs); a second call stops at once.
    fn stop(&self, signal: &'static str);
    /// Restart the server.
    fn restart(&self, signal: &'static str);
}

/// [`forward`] in a task of its own, for the life of the runtime.
pub(crate) fn forward_in_background(target: impl SignalTarget) {
    tokio::spawn(forward(target));
}

/// Turn the process's SIGINT/SIGTERM into [`SignalTarget::stop`] and SIGHUP into
/// [`SignalTarget::restart`], for as long as the task runs.
pub(crate) async fn forward(target: impl SignalTarget) {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut interrupt), Ok(mut terminate), Ok(mut hangup)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
        signal(SignalKind::hangup()),
    ) else {
        say("cannot listen for SIGINT/SIGTERM/SIGHUP; stop by closing stdin");
        return;
    };
    loop {
        tokio::select! {
            _ = interrupt.recv() => target.stop("SIGINT"),
            _ = terminate.recv() => target.stop("SIGTERM"),
            _ = hangup.recv() => target.restart("SIGHUP"),
        }
    }
}
