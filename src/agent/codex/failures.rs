//! The Codex CLI's failures, recognised from what `codex exec --json` prints.
//!
//! Observed with Codex 0.169.0 against the scripted Responses API (recordings in
//! `tests/fixtures/agent-failures/codex-*.jsonl`), and read in Codex's own
//! `UsageLimitReachedError`, `UnexpectedResponseError` and `EnvVarError`:
//!
//! | situation | what it prints |
//! |---|---|
//! | bad key (401) | `error` items "Reconnecting... 1/5 (unexpected status 401 Unauthorized: …)", then `turn.failed` with the same message |
//! | no key | at once, `turn.failed` "Missing environment variable: `OPENAI_API_KEY`." |
//! | unknown model | at once, `turn.failed` "The model `…` does not exist or you do not have access to it." |
//! | usage limit | at once, `turn.failed` "You've hit your usage limit. … try again at 11:47 PM." (local time; a date when it is not today) |
//! | credit used up (429 `insufficient_quota`) | at once, `turn.failed` "Quota exceeded. Check your plan and billing details." (no retry, no reset: a billing stop) |
//! | a spend cap, a ChatGPT plan without Codex | at once, "You hit your spend cap …", "To use Codex with your ChatGPT plan, upgrade to Plus …" |
//! | rate limit (429) | "Reconnecting... n/5 (exceeded retry limit, last status: 429 Too Many Requests)" |
//! | a server error (5xx) | the same retries, "… last status: 503 Service Unavailable" |
//! | API unreachable | "Reconnecting... waiting for network (Connection failed: error sending request)", without end |

use jiff::Zoned;

use crate::agent::LastWords;
use crate::agent::failure::{AgentFailure, ApiRetry, FailureKind};

/// An `error` item's message as one of Codex's own retries, if it is one:
/// `Reconnecting... 2/5 (unexpected status 401 Unauthorized: …)`, or `Reconnecting...
/// waiting for network (…)`.
#[must_use]
pub fn retry(message: &str) -> Option<ApiRetry> {
    let rest = message.strip_prefix("Reconnecting...")?.trim_start();
    let (counter, error) = match rest.split_once(' ') {
        Some((counter, error)) => (counter, error),
        None => (rest, ""),
    };
    let (attempt, max_retries) = match counter.split_once('/') {
        Some((attempt, max)) => (attempt.parse().ok(), max.parse().ok()),
        None => (None, None),
    };
    let error = if attempt.is_some() { error } else { rest };
    let error = error.trim();
    let error = error
        .strip_prefix('(')
        .and_then(|inner| inner.strip_suffix(')'))
        .unwrap_or(error)
        .to_owned();
    let status = status_in(&error);
    Some(ApiRetry {
        attempt,
        max_retries,
        delay_ms: None,
        kind: kind_of(&error, status),
        status,
        error,
    })
}

/// Why a Codex session failed: its `turn.failed` message (or an `error` item's), read
/// against Codex's own wording.
#[must_use]
pub fn diagnose(words: &LastWords, now: &Zoned) -> Option<AgentFailure> {
    words.lines().find_map(|line| {
        let message = line.strip_prefix("codex: ").unwrap_or(line);
        let kind = kind_of(message, status_in(message))?;
        let resets_at = (kind == FailureKind::UsageLimit)
            .then(|| try_again_at(message, now))
            .flatten();
        Some(AgentFailure::new(kind, message).resetting_at(resets_at))
    })
}

/// The HTTP status in `unexpected status 401 Unauthorized` or `last status: 429`.
fn status_in(message: &str) -> Option<u16> {
    let after = message
        .split_once("unexpected status ")
        .or_else(|| message.split_once("last status: "))?
        .1;
    after.get(..3)?.parse().ok()
}

fn kind_of(message: &str, status: Option<u16>) -> Option<FailureKind> {
    let lower = message.to_ascii_lowercase();
    if matches!(status, Some(401 | 403))
        || lower.contains("incorrect api key")
        || lower.contains("invalid_api_key")
    {
        Some(FailureKind::Auth)
    } else if lower.contains("missing environment variable") || lower.contains("not logged in") {
        Some(FailureKind::NotLoggedIn)
    } else if lower.contains("model_not_found")
        || (lower.contains("the model") && lower.contains("does not exist"))
    {
        Some(FailureKind::UnknownModel)
    } else if lower.contains("quota exceeded")
        || lower.contains("insufficient_quota")
        || lower.contains("spend cap")
        || lower.contains("upgrade to plus")
    {
        Some(FailureKind::NoCredit)
    } else if status == Some(429) || lower.contains("usage limit") {
        Some(FailureKind::UsageLimit)
    } else if status.is_some_and(|status| (500..600).contains(&status)) {
        Some(FailureKind::Overloaded)
    } else if lower.contains("waiting for network")
        || lower.contains("connection failed")
        || lower.contains("error sending request")
    {
        Some(FailureKind::Unreachable)
    } else {
        None
    }
}

/// When Codex says to try again: `try again at 11:47 PM.` (today, in local time) or `try
/// again at Nov 26th, 2026 1:05 AM.`, as seconds since the epoch, at the end of that
/// minute.
fn try_again_at(message: &str, now: &Zoned) -> Option<i64> {
    let lower = message.to_ascii_lowercase();
    let at = lower.rfind("try again at ")? + "try again at ".len();
    let text = message.get(at..)?.trim().trim_end_matches('.').trim();
    let time = |text: &str| jiff::civil::Time::strptime("%I:%M %p", text).ok();
    let datetime = if let Some(time) = time(text) {
        now.date().to_datetime(time)
    } else {
        // `Nov 26th, 2026 1:05 AM`: drop the day's suffix so strptime reads it.
        let (month, rest) = text.split_once(' ')?;
        let (day, rest) = rest.split_once(", ")?;
        let day = day.trim_end_matches(|c: char| c.is_ascii_alphabetic());
        jiff::civil::DateTime::strptime("%b %d %Y %I:%M %p", format!("{month} {day} {rest}"))
            .ok()?
    };
    let zoned = datetime.to_zoned(now.time_zone().clone()).ok()?;
    // The time is to the minute: the limit resets during that minute at the latest.
    Some(zoned.timestamp().as_second() + 60)
}

#[cfg(test)]
#[path = "failures_tests.rs"]
mod tests;
