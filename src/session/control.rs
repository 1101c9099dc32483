//! [`SessionControl`]: how the orchestrator (for the HUD's `r` and Ctrl-C) asks a running
//! session to stop, and why.

use std::sync::Arc;

use tokio::sync::watch;

/// What has been asked of one session so far. Requests only accumulate.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Requests {
    /// A manual restart was asked for.
    pub(crate) restart: bool,
    /// How many interrupts were asked for: the first stops gracefully, the second kills.
    pub(crate) interrupts: u32,
}

impl Requests {
    /// True when the agent should be killed at once rather than stopped gracefully.
    pub(crate) fn kill(self) -> bool {
        self.interrupts >= 2
    }
}

/// A remote control for one session. Cheap to clone; every clone controls the same
/// session.
///
/// Make one per session, hand a clone to [`super::run`], keep the other. Requests are
/// remembered: one made before the session started takes effect as soon as it starts,
/// one made after it ended does nothing. All methods are idempotent except
/// [`interrupt`](Self::interrupt), whose second call escalates ([`stop`](Self::stop)
/// never does).
#[derive(Debug, Clone)]
pub struct SessionControl {
    requests: Arc<watch::Sender<Requests>>,
}

impl Default for SessionControl {
    fn default() -> Self {
        SessionControl::new()
    }
}

impl SessionControl {
    /// A control with nothing requested.
    #[must_use]
    pub fn new() -> Self {
        SessionControl {
            requests: Arc::new(watch::Sender::new(Requests::default())),
        }
    }

    /// Ask for a manual restart (the HUD's `r`): the agent is stopped through its stop
    /// ladder and the session ends as a context limit with reason `manual`, so the
    /// orchestrator checkpoints and continues in a fresh session. An interrupt
    /// overrides it.
    pub fn restart(&self) {
        self.requests
            .send_modify(|requests| requests.restart = true);
    }

    /// Ask the session to end because the user interrupted the run (Ctrl-C): the first
    /// call stops the agent through its stop ladder, a second call kills it at once.
    /// The session ends as [`super::SessionOutcome::Interrupted`] whatever else was
    /// decided before.
    pub fn interrupt(&self) {
        self.requests
            .send_modify(|requests| requests.interrupts = requests.interrupts.saturating_add(1));
    }

    /// Ask the session to stop through its stop ladder, once: a session already asked
    /// to stop (or to be killed) is left to it. For stops that may come from several
    /// places at once (a limit, a full disk, the run stopping every phase), where a
    /// second [`interrupt`](Self::interrupt) would kill the agent.
    pub fn stop(&self) {
        self.requests
            .send_modify(|requests| requests.interrupts = requests.interrupts.max(1));
    }

    /// Interrupt and kill at once (SIGKILL to the agent's process group): the same as
    /// calling [`interrupt`](Self::interrupt) twice.
    pub fn kill(&self) {
        self.requests
            .send_modify(|requests| requests.interrupts = requests.interrupts.max(2));
    }

    /// True once [`interrupt`](Self::interrupt) or [`kill`](Self::kill) was called.
    #[must_use]
    pub fn is_interrupted(&self) -> bool {
        self.requests.borrow().interrupts > 0
    }

    /// True once [`restart`](Self::restart) was called.
    #[must_use]
    pub fn is_restart_requested(&self) -> bool {
        self.requests.borrow().restart
    }

    /// A receiver of the requests, marked as not yet seen so the session looks at
    /// requests made before it started.
    pub(crate) fn subscribe(&self) -> watch::Receiver<Requests> {
        let mut receiver = self.requests.subscribe();
        receiver.mark_changed();
        receiver
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_accumulate_and_escalate() {
        let control = SessionControl::new();
        let receiver = control.subscribe();
        assert!(receiver.has_changed().expect("open"));
        assert_eq!(*receiver.borrow(), Requests::default());
        control.restart();
        control.restart();
        assert!(control.is_restart_requested());
        assert!(!control.is_interrupted());
        control.interrupt();
        assert!(!receiver.borrow().kill());
        control.clone().interrupt();
        assert!(receiver.borrow().kill());
        assert_eq!(receiver.borrow().interrupts, 2);
    }

    #[test]
    fn stops_never_escalate_and_never_undo_a_kill() {
        let control = SessionControl::new();
        control.stop();
        control.stop();
        assert!(control.is_interrupted());
        assert!(!control.subscribe().borrow().kill());
        control.interrupt();
        assert!(
            control.subscribe().borrow().kill(),
            "the user's second stop"
        );
        control.stop();
        assert!(control.subscribe().borrow().kill());
    }

    #[test]
    fn kill_is_two_interrupts() {
        let control = SessionControl::new();
        control.kill();
        assert!(control.is_interrupted());
        assert!(control.subscribe().borrow().kill());
    }
}
