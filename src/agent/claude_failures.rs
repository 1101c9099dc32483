//! Claude Code's failures, recognised from its `stream-json` output (the sim agent's too,
//! which prints the same format).
//!
//! Observed with Claude Code 2.1.330 against the scripted model server (recordings in
//! `tests/fixtures/agent-failures/claude-*.jsonl`):
//!
//! | situation | what it prints |
//! |---|---|
//! | bad key (401) | `system`/`api_retry` with `error_status` 401 and `error` `authentication_failed`, about ten of them over minutes, then the result "Invalid API key · Fix external API key" |
//! | refused key (403) | at once, the result "Failed to authenticate. API Error: 403 …", `api_error_status` 403 |
//! | no key, no login | at once, the result "Not logged in · Please run /login" with `api_error_status` null |
//! | unknown model | at once, the result "There's an issue with the selected model (…)", `api_error_status` 404 |
//! | API unreachable | `api_retry` with `error_status` null, then the result "API Error: Connection refused …", `api_error` `connection_failed` |
//! | 429, short `retry-after` | an `api_retry` with `error` `rate_limit`, then the request succeeds |
//! | 429, `retry-after` past about a minute | at once, the result "API Error: Request rejected (429) …", `api_error_status` 429 |
//! | a subscriber's usage limit | `rate_limit_event` with status `rejected` and `resetsAt`, then the result "You've hit your 5-hour limit · resets …", `api_error` `usage_limit_reached` |
//! | credit used up (400 "Your credit balance is too low …") | at once, the result "Credit balance is too low" (2.1.332) |
//! | overloaded (529 `overloaded_error`), a 5xx | `api_retry` with `error_status` 529 and `error` `overloaded`, ten of them (`CLAUDE_CODE_MAX_RETRIES`), then the result "API Error: 529 Overloaded. This is a server-side issue, usually temporary …", `api_error_status` 529 (2.1.332) |

use super::LastWords;
use super::failure::{AgentFailure, FailureKind};

/// What an `api_retry` line's error means: credentials (401, 403,
/// `authentication_failed`), a model that does not exist, a rate limit, or no answer at
/// all (no status: the request never got a response).
#[must_use]
pub fn retry_kind(status: Option<u16>, error: &str) -> Option<FailureKind> {
    match (status, error) {
        (Some(401 | 403), _)
        | (_, "authentication_failed" | "oauth_org_not_allowed" | "cloud_credential_error") => {
            Some(FailureKind::Auth)
        }
        (_, "model_not_found") => Some(FailureKind::UnknownModel),
        (Some(429), _) | (_, "rate_limit") => Some(FailureKind::UsageLimit),
        (Some(500..=599), _) | (_, "overloaded") => Some(FailureKind::Overloaded),
        (None, _) => Some(FailureKind::Unreachable),
        _ => None,
    }
}

/// Why a Claude Code session failed, from its last words: its error result first (with
/// the API status it carries), else what it printed outside JSON and on stderr.
#[must_use]
pub fn diagnose(words: &LastWords) -> Option<AgentFailure> {
    if let Some(result) = words.result.as_ref().filter(|result| result.is_error) {
        let text = words.error_result().unwrap_or_default();
        let kind = result_kind(result.api_error_status, result.api_error.as_deref(), text)
            .or_else(|| text_kind(text));
        if let Some(kind) = kind {
            return Some(failure(kind, text, words));
        }
    }
    words
        .stdout
        .iter()
        .chain(words.stderr.iter())
        .rev()
        .find_map(|line| text_kind(line).map(|kind| failure(kind, line, words)))
}

fn failure(kind: FailureKind, said: &str, words: &LastWords) -> AgentFailure {
    let resets_at = (kind == FailureKind::UsageLimit)
        .then_some(words.limit_resets_at)
        .flatten();
    AgentFailure::new(kind, said).resetting_at(resets_at)
}

/// What the result's API error says.
fn result_kind(status: Option<u16>, error: Option<&str>, text: &str) -> Option<FailureKind> {
    match (status, error) {
        (_, Some("usage_limit_reached" | "rate_limit_error")) | (Some(429), _) => {
            Some(FailureKind::UsageLimit)
        }
        (Some(401 | 403), _) | (_, Some("authentication_error" | "permission_error")) => {
            Some(FailureKind::Auth)
        }
        (Some(404), _) if text.contains("model") => Some(FailureKind::UnknownModel),
        (_, Some("connection_failed")) => Some(FailureKind::Unreachable),
        (Some(500..=599), _) => Some(FailureKind::Overloaded),
        _ => None,
    }
}

/// What a message in Claude Code's words says.
fn text_kind(text: &str) -> Option<FailureKind> {
    if text.contains("Not logged in") || text.contains("Please run /login") {
        Some(FailureKind::NotLoggedIn)
    } else if text.contains("Invalid API key") || text.contains("Failed to authenticate") {
        Some(FailureKind::Auth)
    } else if text.contains("issue with the selected model") {
        Some(FailureKind::UnknownModel)
    } else if text.contains("You've hit your") && text.contains("limit") {
        Some(FailureKind::UsageLimit)
    } else if text
        .to_ascii_lowercase()
        .contains("credit balance is too low")
    {
        Some(FailureKind::NoCredit)
    } else if text.contains("Connection refused")
        || text.contains("Unable to connect to API")
        || text.contains("ECONNREFUSED")
        || text.contains("ENOTFOUND")
    {
        Some(FailureKind::Unreachable)
    } else {
        None
    }
}

#[cfg(test)]
#[path = "claude_failures_tests.rs"]
mod tests;
