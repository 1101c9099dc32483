//! Where a session's agent is in its life, as the driver has seen it: being prepared,
//! running (and whether its final result is in), or reaped.

use std::time::Duration;

use tokio::time::Instant;

use crate::process::ExitReport;

/// The agent's life, one state at a time.
#[derive(Debug)]
pub(super) enum SessionState {
    /// Its log, command and process are being prepared; it may never start.
    Preparing,
    /// Started as `pid`.
    Running {
        /// The agent's process id.
        pid: u32,
        /// Whether its final result has arrived.
        answer: Answer,
    },
    /// Reaped: what its exit said, and when it was seen.
    Exited {
        /// The agent's process id.
        pid: u32,
        /// The process layer's account of the exit.
        report: ExitReport,
        /// When the exit was seen.
        at: Instant,
    },
}

/// Whether a running agent has printed its final result, and whether it overstayed it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Answer {
    /// No result yet.
    Awaited,
    /// The first result arrived at this instant; the agent should exit soon.
    Given(Instant),
    /// It was still running `linger` after its result and was asked to stop.
    Overstayed,
}

impl SessionState {
    /// The agent started as `pid`.
    pub(super) fn started(&mut self, pid: u32) {
        *self = SessionState::Running {
            pid,
            answer: Answer::Awaited,
        };
    }

    /// A result arrived at `at`; only the first one counts.
    pub(super) fn answered(&mut self, at: Instant) {
        if let SessionState::Running { answer, .. } = self
            && *answer == Answer::Awaited
        {
            *answer = Answer::Given(at);
        }
    }

    /// When an agent that gave its result and is still running has stayed `linger`
    /// past it.
    pub(super) fn linger_deadline(&self, linger: Duration) -> Option<Instant> {
        match self {
            SessionState::Running {
                answer: Answer::Given(at),
                ..
            } => Some(*at + linger),
            _ => None,
        }
    }

    /// The linger deadline passed: it is not set again.
    pub(super) fn overstayed(&mut self) {
        if let SessionState::Running { answer, .. } = self {
            *answer = Answer::Overstayed;
        }
    }

    /// The agent was reaped (`at`: when that was seen).
    pub(super) fn exited(&mut self, report: ExitReport, at: Instant) {
        if let Some(pid) = self.pid() {
            *self = SessionState::Exited { pid, report, at };
        }
    }

    /// The agent's process id, once it started.
    pub(super) fn pid(&self) -> Option<u32> {
        match self {
            SessionState::Preparing => None,
            SessionState::Running { pid, .. } | SessionState::Exited { pid, .. } => Some(*pid),
        }
    }

    /// How the agent exited, once it was reaped.
    pub(super) fn exit(&self) -> Option<&ExitReport> {
        match self {
            SessionState::Exited { report, .. } => Some(report),
            _ => None,
        }
    }

    /// When the exit was seen.
    pub(super) fn exited_at(&self) -> Option<Instant> {
        match self {
            SessionState::Exited { at, .. } => Some(*at),
            _ => None,
        }
    }

    /// The exit report, taken for the session's report.
    pub(super) fn into_exit(self) -> Option<ExitReport> {
        match self {
            SessionState::Exited { report, .. } => Some(report),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::process::ExitStatus;

    fn report() -> ExitReport {
        ExitReport {
            status: ExitStatus::Code(0),
            stop: None,
        }
    }

    const LINGER: Duration = Duration::from_secs(10);

    #[test]
    fn the_linger_runs_from_the_first_result_and_fires_once() {
        let mut state = SessionState::Preparing;
        let first = Instant::now();
        state.answered(first);
        assert_eq!(state.linger_deadline(LINGER), None, "not started yet");
        state.started(41);
        assert_eq!(state.linger_deadline(LINGER), None, "no result yet");
        state.answered(first);
        state.answered(first + Duration::from_secs(3));
        assert_eq!(state.linger_deadline(LINGER), Some(first + LINGER));
        state.overstayed();
        state.answered(first + Duration::from_secs(20));
        assert_eq!(state.linger_deadline(LINGER), None);
    }

    #[test]
    fn an_exit_keeps_the_pid_and_ends_the_linger() {
        let mut state = SessionState::Preparing;
        state.started(41);
        state.answered(Instant::now());
        let at = Instant::now() + Duration::from_millis(5);
        state.exited(report(), at);
        assert_eq!(state.pid(), Some(41));
        assert_eq!(state.exited_at(), Some(at));
        assert_eq!(
            state.exit().map(|exit| exit.status),
            Some(ExitStatus::Code(0))
        );
        assert_eq!(state.linger_deadline(LINGER), None);
        assert!(state.into_exit().is_some());
    }

    #[test]
    fn an_agent_that_never_started_has_no_pid_and_no_exit() {
        let mut state = SessionState::Preparing;
        state.exited(report(), Instant::now());
        assert_eq!(state.pid(), None);
        assert!(state.exit().is_none());
    }
}
