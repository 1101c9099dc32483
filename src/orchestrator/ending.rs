//! How an attempt ends ([`AttemptEnd`]), and what a failed session means for its attempt,
//! in words that quote the agent: the failure debussy recognised (with its fix), else the
//! agent's last words (its error result, its lines that were not JSON, its stderr tail).
//!
//! Pure: it reads a session's outcome and last words and returns the attempt's end.

use crate::agent::{AgentFailure, LastWords};
use crate::process::ExitStatus;
use crate::session::{SessionOutcome, SessionReport};

/// How an attempt's sessions ended, as the orchestrator acts on it (it owns this; a
/// single session's end is the session layer's [`SessionOutcome`](crate::session::SessionOutcome)).
pub(crate) enum AttemptEnd {
    /// The agent finished (and did not report blocked or failed): validate.
    Done,
    /// The agent reported the phase blocked.
    Blocked(String),
    /// The attempt failed (timeout, crash, error result, agent-reported failure, budget).
    Failed(String),
    /// The user interrupted the run.
    Interrupted,
    /// The user skipped the phase.
    Skipped,
    /// The agent cannot run at all (missing program); retrying will not help.
    Fatal(String),
}

/// How a session that failed ends its attempt: a failure no retry can fix (the agent
/// could not start; its credentials, login or model) is fatal, anything else a failed
/// attempt. Call it for a session that did not succeed.
pub(crate) fn attempt_end(report: &SessionReport) -> AttemptEnd {
    end_of(&report.outcome, report.agent, &report.last_words)
}

/// [`attempt_end`] for a session of `agent` that ended as `outcome`, leaving `words`.
fn end_of(outcome: &SessionOutcome, agent: &str, words: &LastWords) -> AttemptEnd {
    match outcome {
        SessionOutcome::SpawnError(failure) => AttemptEnd::Fatal(failure.to_string()),
        SessionOutcome::AgentFailure(failure) if failure.kind.is_permanent() => {
            AttemptEnd::Fatal(with_fix(failure, agent))
        }
        SessionOutcome::AgentFailure(failure) => AttemptEnd::Failed(with_fix(failure, agent)),
        SessionOutcome::Failed {
            exit: ExitStatus::Code(0),
        } => AttemptEnd::Failed(quoting(
            "the agent exited 0 without its final result line".to_owned(),
            words,
        )),
        SessionOutcome::Failed { exit } => {
            AttemptEnd::Failed(quoting(format!("the agent exited with {exit}"), words))
        }
        other => AttemptEnd::Failed(quoting(
            format!("the agent's session ended with an error: {other}"),
            words,
        )),
    }
}

/// `the agent is not logged in: “Not logged in · Please run /login”; fix: run `claude`
/// once to log in, or set ANTHROPIC_API_KEY`.
pub(crate) fn with_fix(failure: &AgentFailure, agent: &str) -> String {
    format!("{failure}; fix: {}", failure.kind.fix(agent))
}

/// `what`, then the agent's last words when it left any.
fn quoting(what: String, words: &LastWords) -> String {
    match words.quote() {
        Some(words) => format!("{what}; the agent's last words: {words}"),
        None => what,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::FailureKind;

    fn message(end: AttemptEnd) -> (bool, String) {
        match end {
            AttemptEnd::Fatal(message) => (true, message),
            AttemptEnd::Failed(message) => (false, message),
            _ => panic!("neither fatal nor failed"),
        }
    }

    #[test]
    fn what_no_retry_fixes_is_fatal_and_names_the_fix() {
        let failure = AgentFailure::new(
            FailureKind::NotLoggedIn,
            "Not logged in · Please run /login",
        );
        let (fatal, text) = message(end_of(
            &SessionOutcome::AgentFailure(failure),
            "claude",
            &LastWords::default(),
        ));
        assert!(fatal);
        assert_eq!(
            text,
            "the agent is not logged in: “Not logged in · Please run /login”; fix: run `claude` once to log in, or set ANTHROPIC_API_KEY"
        );
        let offline = AgentFailure::new(FailureKind::Unreachable, "fetch failed");
        let (fatal, text) = message(end_of(
            &SessionOutcome::AgentFailure(offline),
            "gemini",
            &LastWords::default(),
        ));
        assert!(!fatal, "the network may come back: {text}");
        assert!(text.contains("GOOGLE_GEMINI_BASE_URL"), "{text}");
    }

    #[test]
    fn a_crash_quotes_the_agents_last_words() {
        let words = LastWords {
            stdout: vec!["Not a JSON line".into()],
            stderr: vec!["panic: out of memory".into()],
            ..LastWords::default()
        };
        let (fatal, text) = message(end_of(
            &SessionOutcome::Failed {
                exit: ExitStatus::Code(1),
            },
            "claude",
            &words,
        ));
        assert!(!fatal);
        assert_eq!(
            text,
            "the agent exited with exit code 1; the agent's last words: stdout: “Not a JSON line”; stderr: “panic: out of memory”"
        );
        let (_, quiet) = message(end_of(
            &SessionOutcome::Failed {
                exit: ExitStatus::Code(0),
            },
            "claude",
            &LastWords::default(),
        ));
        assert_eq!(quiet, "the agent exited 0 without its final result line");
    }
}
