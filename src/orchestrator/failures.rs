//! What a failed session means for its attempt, in words that quote the agent: the
//! failure debussy recognised (with its fix), else the agent's last words (its error
//! result, its lines that were not JSON, its stderr tail).
//!
//! Pure: it reads a [`SessionReport`] and returns the attempt's end.

use crate::agent::AgentFailure;
use crate::process::ExitStatus;
use crate::session::{SessionOutcome, SessionReport};

use super::attempt::AttemptEnd;

/// How a session that failed ends its attempt: a failure no retry can fix (the agent
/// could not start; its credentials, login or model) is fatal, anything else a failed
/// attempt. Call it for a session that did not succeed.
pub(crate) fn attempt_end(report: &SessionReport) -> AttemptEnd {
    match &report.outcome {
        SessionOutcome::SpawnError(failure) => AttemptEnd::Fatal(failure.to_string()),
        SessionOutcome::AgentFailure(failure) if failure.kind.is_permanent() => {
            AttemptEnd::Fatal(with_fix(failure, report.agent))
        }
        SessionOutcome::AgentFailure(failure) => {
            AttemptEnd::Failed(with_fix(failure, report.agent))
        }
        SessionOutcome::Failed {
            exit: ExitStatus::Code(0),
        } => AttemptEnd::Failed(quoting(
            "the agent exited 0 without its final result line".to_owned(),
            report,
        )),
        SessionOutcome::Failed { exit } => {
            AttemptEnd::Failed(quoting(format!("the agent exited with {exit}"), report))
        }
        other => AttemptEnd::Failed(quoting(
            format!("the agent's session ended with an error: {other}"),
            report,
        )),
    }
}

/// `the agent is not logged in: “Not logged in · Please run /login”; fix: run `claude`
/// once to log in, or set ANTHROPIC_API_KEY`.
pub(crate) fn with_fix(failure: &AgentFailure, agent: &str) -> String {
    format!("{failure}; fix: {}", failure.kind.fix(agent))
}

/// `what`, then the agent's last words when it left any.
fn quoting(what: String, report: &SessionReport) -> String {
    match report.last_words.quote() {
        Some(words) => format!("{what}; the agent's last words: {words}"),
        None => what,
    }
}
