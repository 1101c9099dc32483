//! The Gemini CLI's failures, recognised from its error `result` and its stderr.
//!
//! Observed with the Gemini CLI 0.61.0 against the scripted Gemini API (recordings in
//! `tests/fixtures/agent-failures/gemini-*`), and read in its `classifyGoogleError`
//! (`googleQuotaErrors.ts`) and exit codes (`exitCodes.ts`). Its `result.error.type` is
//! `unknown` for all of them, so the message decides:
//!
//! | situation | what it prints |
//! |---|---|
//! | bad key | the result "[API Error: {…"API key not valid…", "API_KEY_INVALID"…}]" |
//! | refused (403) | the result "[API Error: {…"code":403,…"PERMISSION_DENIED"}]" |
//! | no billing (403 "This API method requires billing to be enabled …") | the same result with that message: no credit, not the key |
//! | no key | nothing on stdout; stderr "When using Gemini API, you must specify the GEMINI_API_KEY environment variable."; exit 41 |
//! | unknown model | the result "[API Error: models/… is not found for API version v1beta…]" |
//! | quota (429) | the result "[API Error: You have exhausted your daily quota on this model.]…"; a per-minute quota is retried by the CLI, "Suggested retry after 20s." |
//! | API unreachable | stderr "Attempt 1 failed. Retrying with backoff... Error: exception TypeError: fetch failed sending request", again and again |

use jiff::Zoned;

use crate::agent::LastWords;
use crate::agent::failure::{AgentFailure, ApiRetry, FailureKind};

/// A stderr line announcing one of the CLI's own retries: `Attempt 2 failed. Retrying
/// with backoff... Error: …`.
#[must_use]
pub fn retry(line: &str) -> Option<ApiRetry> {
    let rest = line.trim().strip_prefix("Attempt ")?;
    let (attempt, rest) = rest.split_once(" failed")?;
    let error = rest
        .split_once("Error: ")
        .map_or(rest, |(_, error)| error)
        .trim()
        .to_owned();
    Some(ApiRetry {
        attempt: attempt.parse().ok(),
        max_retries: None,
        delay_ms: None,
        status: None,
        kind: kind_of(&error),
        error,
    })
}

/// Why a Gemini CLI session failed: its error result, else its stderr.
#[must_use]
pub fn diagnose(words: &LastWords, now: &Zoned) -> Option<AgentFailure> {
    words.lines().find_map(|line| {
        let kind = kind_of(line)?;
        let resets_at = (kind == FailureKind::UsageLimit)
            .then(|| {
                retry_after(line)
                    .map(|secs| now.timestamp().as_second() + secs)
                    .or_else(|| is_daily(line).then(|| next_pacific_midnight(now)).flatten())
            })
            .flatten();
        Some(AgentFailure::new(kind, line).resetting_at(resets_at))
    })
}

fn kind_of(message: &str) -> Option<FailureKind> {
    let lower = message.to_ascii_lowercase();
    if lower.contains("must specify the gemini_api_key")
        || lower.contains("please set an auth method")
    {
        Some(FailureKind::NotLoggedIn)
    } else if lower.contains("requires billing") || lower.contains("billing to be enabled") {
        Some(FailureKind::NoCredit)
    } else if lower.contains("api key not valid")
        || lower.contains("api_key_invalid")
        || lower.contains("permission_denied")
        || lower.contains("\"code\":401")
        || lower.contains("\"code\":403")
    {
        Some(FailureKind::Auth)
    } else if lower.contains("is not found for api version") || lower.contains("model not found") {
        Some(FailureKind::UnknownModel)
    } else if lower.contains("exhausted your")
        || lower.contains("resource_exhausted")
        || lower.contains("exceeded your current quota")
    {
        Some(FailureKind::UsageLimit)
    } else if lower.contains("model is overloaded")
        || lower.contains("\"code\":503")
        || lower.contains("\"code\":500")
        || lower.contains("\"status\":\"unavailable\"")
    {
        Some(FailureKind::Overloaded)
    } else if lower.contains("fetch failed")
        || lower.contains("econnrefused")
        || lower.contains("enotfound")
    {
        Some(FailureKind::Unreachable)
    } else {
        None
    }
}

/// Whether a quota error is the daily one ("You have exhausted your daily quota on this
/// model."), which names no retry: the Gemini API resets requests-per-day quotas at
/// midnight Pacific time.
fn is_daily(message: &str) -> bool {
    message.to_ascii_lowercase().contains("daily quota")
}

/// The next midnight in Mountain View after `now`, in seconds since the epoch: when the
/// Gemini API's daily quotas reset. The zone is built in, for machines without a time
/// zone database.
fn next_pacific_midnight(now: &Zoned) -> Option<i64> {
    static PACIFIC: jiff::tz::TimeZone = jiff::tz::get!("America/Los_Angeles");
    let tomorrow = now.with_time_zone(PACIFIC.clone()).date().tomorrow().ok()?;
    let midnight = tomorrow.to_zoned(PACIFIC.clone()).ok()?;
    Some(midnight.timestamp().as_second())
}

/// The seconds in "Suggested retry after 20s." or "Please retry in 20.5s".
fn retry_after(message: &str) -> Option<i64> {
    let after = message
        .split_once("retry after ")
        .or_else(|| message.split_once("retry in "))?
        .1;
    let number: String = after
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    let unit = &after[number.len()..];
    let value: f64 = number.parse().ok()?;
    let secs = if unit.starts_with("ms") {
        value / 1000.0
    } else {
        value
    };
    #[expect(
        clippy::cast_possible_truncation,
        reason = "a retry delay in seconds is far below 2^63"
    )]
    Some(secs.ceil() as i64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::gemini::stream_json::Parser;
    use crate::agent::recordings;

    /// The last words of the recording `name` (`.jsonl` on stdout, `.stderr` beside it).
    fn words(name: &str) -> LastWords {
        let parser = Parser::default();
        let stdout = format!("{name}.jsonl");
        let events = if recordings::path(&stdout).exists() {
            recordings::events(&stdout, |line| parser.parse_line(line))
        } else {
            Vec::new()
        };
        let mut words = recordings::last_words(&events);
        let stderr = recordings::path(&format!("{name}.stderr"));
        let stderr = std::fs::read_to_string(stderr).expect("stderr");
        for line in stderr.lines() {
            words.observe_stderr(line, 20);
        }
        words
    }

    fn kind(name: &str) -> Option<FailureKind> {
        diagnose(&words(name), &Zoned::now()).map(|failure| failure.kind)
    }

    #[test]
    fn each_recorded_failure_is_classified() {
        assert_eq!(kind("gemini-bad-key"), Some(FailureKind::Auth));
        assert_eq!(kind("gemini-forbidden"), Some(FailureKind::Auth));
        assert_eq!(kind("gemini-not-logged-in"), Some(FailureKind::NotLoggedIn));
        assert_eq!(
            kind("gemini-unknown-model"),
            Some(FailureKind::UnknownModel)
        );
        assert_eq!(kind("gemini-daily-quota"), Some(FailureKind::UsageLimit));
        assert_eq!(kind("gemini-unreachable"), Some(FailureKind::Unreachable));
    }

    #[test]
    fn an_overloaded_model_is_waited_out() {
        let words = LastWords {
            stderr: vec![r#"[API Error: {"error":{"code":503,"message":"The model is overloaded. Please try again later.","status":"UNAVAILABLE"}}]"#.into()],
            ..LastWords::default()
        };
        let failure = diagnose(&words, &Zoned::now()).expect("failure");
        assert_eq!(failure.kind, FailureKind::Overloaded);
    }

    #[test]
    fn a_project_without_billing_is_no_credit_not_a_bad_key() {
        let words = LastWords {
            stderr: vec![r#"[API Error: {"error":{"code":403,"message":"This API method requires billing to be enabled. Please enable billing on project #1 by visiting https://console.developers.google.com/billing/enable?project=1 then retry.","status":"PERMISSION_DENIED"}}]"#.into()],
            ..LastWords::default()
        };
        let failure = diagnose(&words, &Zoned::now()).expect("failure");
        assert_eq!(failure.kind, FailureKind::NoCredit);
    }

    #[test]
    fn the_error_result_is_quoted_first() {
        let failure = diagnose(&words("gemini-unknown-model"), &Zoned::now()).expect("failure");
        assert!(failure.said.starts_with("[API Error: models/"), "{failure}");
    }

    #[test]
    fn a_suggested_retry_sets_the_reset() {
        let noon: jiff::Timestamp = "2026-11-25T12:00:00Z".parse().expect("timestamp");
        let now = noon.to_zoned(jiff::tz::TimeZone::UTC);
        let words = LastWords {
            stderr: vec!["You exceeded your current quota.\nSuggested retry after 20s.".into()],
            ..LastWords::default()
        };
        let failure = diagnose(&words, &now).expect("failure");
        assert_eq!(failure.resets_at, Some(now.timestamp().as_second() + 20));
        assert_eq!(retry_after("Please retry in 1500ms"), Some(2));
    }

    #[test]
    fn a_daily_quota_resets_at_midnight_pacific_time() {
        let failure_at = |utc: &str| {
            let now = utc
                .parse::<jiff::Timestamp>()
                .expect("timestamp")
                .to_zoned(jiff::tz::TimeZone::UTC);
            let failure = diagnose(&words("gemini-daily-quota"), &now).expect("failure");
            assert_eq!(failure.kind, FailureKind::UsageLimit);
            failure
                .resets_at
                .and_then(|secs| jiff::Timestamp::from_second(secs).ok())
                .map(|at| at.to_string())
        };
        // Summer (PDT, UTC-7) and winter (PST, UTC-8); after midnight in Mountain View, the
        // next one.
        assert_eq!(
            failure_at("2026-07-01T12:00:00Z").as_deref(),
            Some("2026-07-02T07:00:00Z")
        );
        assert_eq!(
            failure_at("2026-11-25T12:00:00Z").as_deref(),
            Some("2026-11-26T08:00:00Z")
        );
        assert_eq!(
            failure_at("2026-11-26T08:30:00Z").as_deref(),
            Some("2026-11-27T08:00:00Z")
        );
    }

    #[test]
    fn its_retries_on_stderr_are_read() {
        let retry = retry(
            "Attempt 2 failed. Retrying with backoff... Error: exception TypeError: fetch failed sending request",
        )
        .expect("a retry");
        assert_eq!(retry.attempt, Some(2));
        assert_eq!(retry.kind, Some(FailureKind::Unreachable));
        assert_eq!(
            retry.error,
            "exception TypeError: fetch failed sending request"
        );
        assert!(super::retry("Ripgrep is not available.").is_none());
    }
}
