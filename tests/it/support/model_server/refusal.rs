//! The APIs' real refusals, for the agents' failure paths: a bad key, a usage limit that
//! resets at a known time, an unknown model, each answered the way the Anthropic
//! Messages API, the OpenAI Responses API and the Gemini API answer it (observed with the
//! pinned CLIs; the bodies and headers are the APIs' documented ones).
//!
//! A refusal holds for every model request until its deadline (counted from the server's
//! start), then the scripts play as usual. Refused requests advance no script.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use super::route::Wire;
use crate::support::ports::Port;

/// How the scripted model refuses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// 401 (Gemini: 400 `API_KEY_INVALID`): the key is wrong.
    BadKey,
    /// 429 with `retry-after` (the seconds left) and, for Claude Code, the
    /// `anthropic-ratelimit-unified-*` headers of a rejected five-hour limit resetting
    /// when the refusal ends.
    UsageLimit,
    /// 404 `not_found_error` (Codex: `model_not_found`; Gemini: `NOT_FOUND`).
    UnknownModel,
    /// The account's credit is used up: 400 "Your credit balance is too low" (Codex:
    /// 429 `insufficient_quota`; Gemini: 403 "requires billing to be enabled").
    NoCredit,
    /// The API is overloaded: 529 `overloaded_error` (Codex and Gemini: 503).
    Overloaded,
}

/// A refusal and when it ends, if it does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Refusing {
    pub(super) refusal: Refusal,
    /// Time after the server's start when requests go through again; `None`: never.
    pub(super) until: Option<Duration>,
}

/// An error answer: status, headers and body.
pub(super) struct RefusalAnswer {
    pub(super) status: u16,
    pub(super) headers: Vec<(&'static str, String)>,
    pub(super) body: Value,
}

impl Refusing {
    /// The answer to a request on `wire` for `model`, `left` before the refusal ends
    /// (`None`: it never does).
    pub(super) fn answer(self, wire: Wire, model: &str, left: Option<Duration>) -> RefusalAnswer {
        // A limit that never ends resets in five hours, as far as the headers say.
        let left = left.unwrap_or(Duration::from_secs(5 * 3600));
        let seconds = left.as_secs() + u64::from(left.subsec_nanos() > 0);
        let reset = SystemTime::now()
            .checked_add(left)
            .and_then(|at| at.duration_since(UNIX_EPOCH).ok())
            .map_or(0, |since| {
                since.as_secs() + u64::from(since.subsec_nanos() > 0)
            });
        match (self.refusal, wire) {
            (Refusal::BadKey, Wire::Messages) => answer(
                401,
                json!({"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}}),
            ),
            (Refusal::BadKey, Wire::Responses) => answer(
                401,
                json!({"error": {
                    "message": "Incorrect API key provided: sk-test. You can find your API key at https://platform.openai.com/account/api-keys.",
                    "type": "invalid_request_error", "param": null, "code": "invalid_api_key"}}),
            ),
            (Refusal::BadKey, Wire::Gemini) => answer(
                400,
                json!({"error": {"code": 400, "message": "API key not valid. Please pass a valid API key.",
                    "status": "INVALID_ARGUMENT", "details": [{
                        "@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID",
                        "domain": "googleapis.com",
                        "metadata": {"service": "generativelanguage.googleapis.com"}}]}}),
            ),
            (Refusal::UsageLimit, Wire::Messages) => {
                let mut refused = answer(
                    429,
                    json!({"type": "error", "error": {"type": "rate_limit_error",
                        "message": "This request would exceed your account's rate limit. Please try again later."}}),
                );
                refused.headers = vec![
                    ("retry-after", seconds.to_string()),
                    ("anthropic-ratelimit-unified-status", "rejected".to_owned()),
                    ("anthropic-ratelimit-unified-reset", reset.to_string()),
                    (
                        "anthropic-ratelimit-unified-5h-status",
                        "rejected".to_owned(),
                    ),
                    ("anthropic-ratelimit-unified-5h-reset", reset.to_string()),
                    (
                        "anthropic-ratelimit-unified-5h-utilization",
                        "1.0".to_owned(),
                    ),
                    (
                        "anthropic-ratelimit-unified-representative-claim",
                        "five_hour".to_owned(),
                    ),
                ];
                refused
            }
            (Refusal::UsageLimit, Wire::Responses) => answer(
                429,
                json!({"error": {"type": "usage_limit_reached", "message": "The usage limit has been reached",
                    "plan_type": "plus", "resets_at": reset, "resets_in_seconds": seconds}}),
            ),
            (Refusal::UsageLimit, Wire::Gemini) => answer(
                429,
                json!({"error": {"code": 429,
                    "message": "You exceeded your current quota, please check your plan and billing details.",
                    "status": "RESOURCE_EXHAUSTED", "details": [
                        {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [{
                            "quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests",
                            "quotaId": "GenerateRequestsPerDayPerProjectPerModel-FreeTier"}]},
                        {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": format!("{seconds}s")}]}}),
            ),
            (Refusal::UnknownModel, Wire::Messages) => answer(
                404,
                json!({"type": "error", "error": {"type": "not_found_error", "message": format!("model: {model}")}}),
            ),
            (Refusal::UnknownModel, Wire::Responses) => answer(
                404,
                json!({"error": {"message": format!("The model `{model}` does not exist or you do not have access to it."),
                    "type": "invalid_request_error", "param": null, "code": "model_not_found"}}),
            ),
            (Refusal::NoCredit, Wire::Messages) => answer(
                400,
                json!({"type": "error", "error": {"type": "invalid_request_error",
                    "message": "Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits."}}),
            ),
            (Refusal::NoCredit, Wire::Responses) => answer(
                429,
                json!({"error": {"message": "You exceeded your current quota, please check your plan and billing details. For more information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors.",
                    "type": "insufficient_quota", "param": null, "code": "insufficient_quota"}}),
            ),
            (Refusal::NoCredit, Wire::Gemini) => answer(
                403,
                json!({"error": {"code": 403,
                    "message": "This API method requires billing to be enabled. Please enable billing on project #1 by visiting https://console.developers.google.com/billing/enable?project=1 then retry.",
                    "status": "PERMISSION_DENIED"}}),
            ),
            (Refusal::Overloaded, Wire::Messages) => answer(
                529,
                json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
            ),
            (Refusal::Overloaded, Wire::Responses) => answer(
                503,
                json!({"error": {"message": "The server is overloaded or not ready yet.",
                    "type": "server_error", "param": null, "code": null}}),
            ),
            (Refusal::Overloaded, Wire::Gemini) => answer(
                503,
                json!({"error": {"code": 503, "message": "The model is overloaded. Please try again later.",
                    "status": "UNAVAILABLE"}}),
            ),
            (Refusal::UnknownModel, Wire::Gemini) => answer(
                404,
                json!({"error": {"code": 404,
                    "message": format!("models/{model} is not found for API version v1beta, or is not supported for generateContent."),
                    "status": "NOT_FOUND"}}),
            ),
        }
    }
}

fn answer(status: u16, body: Value) -> RefusalAnswer {
    RefusalAnswer {
        status,
        headers: Vec::new(),
        body,
    }
}

/// A `http://127.0.0.1:PORT` where nothing listens, for as long as the [`Port`] lives:
/// the API unreachable (connection refused).
pub fn unreachable_url() -> (String, Port) {
    let port = Port::reserve();
    (format!("http://127.0.0.1:{}", port.number()), port)
}
