//! Why an agent could not work, in words a person can act on: [`AgentFailure`] and its
//! [`FailureKind`], and the agent's own retries ([`ApiRetry`]). What a failed session left
//! behind to judge it by is [`LastWords`](super::LastWords).
//!
//! Each backend recognises its agent's failures from what the agent prints (Claude Code's
//! `system`/`api_retry` lines and error results, Codex's `error` items and `turn.failed`,
//! the Gemini CLI's error result and stderr); this module holds the shared vocabulary and
//! the fix for each kind. Pure data: nothing here parses a line or does I/O.

use std::fmt;

use serde::Serialize;

/// Longest quote of the agent's words in a message, in characters.
const QUOTE_CHARS: usize = 400;

/// What kind of failure an agent reported. See [`FailureKind::is_permanent`] for which a
/// retry cannot fix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureKind {
    /// The API refused the credentials (401, 403, an invalid key).
    Auth,
    /// The agent has no credentials at all: no key, no login.
    NotLoggedIn,
    /// The model does not exist, or this account may not use it.
    UnknownModel,
    /// The API could not be reached (connection refused, DNS, no network).
    Unreachable,
    /// A usage or rate limit refused the request.
    UsageLimit,
    /// The API answered with a server error or said it is overloaded (5xx, Anthropic's
    /// 529) after the agent's own retries: an outage a wait may see the end of.
    Overloaded,
    /// The account has no credit left for the API, or its plan does not cover it (an
    /// exhausted prepaid balance, a spend cap): no wait ends it.
    NoCredit,
}

impl FailureKind {
    /// True when no retry can fix it (credentials, login, model, credit): the run stops
    /// after the first session and the attempt's retries are kept.
    #[must_use]
    pub fn is_permanent(self) -> bool {
        matches!(
            self,
            FailureKind::Auth
                | FailureKind::NotLoggedIn
                | FailureKind::UnknownModel
                | FailureKind::NoCredit
        )
    }

    /// True when the run waits it out and the same attempt goes on (a usage limit that
    /// resets, an API the network may reach again) rather than spend an attempt on it.
    #[must_use]
    pub fn is_waited_out(self) -> bool {
        matches!(
            self,
            FailureKind::UsageLimit | FailureKind::Unreachable | FailureKind::Overloaded
        )
    }

    /// What a run waiting it out waits for, in words: "the usage limit", "the agent's
    /// API".
    #[must_use]
    pub fn waiting_for(self) -> &'static str {
        match self {
            FailureKind::UsageLimit => "the usage limit",
            FailureKind::Unreachable | FailureKind::Overloaded => "the agent's API",
            FailureKind::Auth
            | FailureKind::NotLoggedIn
            | FailureKind::UnknownModel
            | FailureKind::NoCredit => "the agent",
        }
    }

    /// Its stable name, the same as its JSON spelling.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            FailureKind::Auth => "auth",
            FailureKind::NotLoggedIn => "not_logged_in",
            FailureKind::UnknownModel => "unknown_model",
            FailureKind::Unreachable => "unreachable",
            FailureKind::UsageLimit => "usage_limit",
            FailureKind::Overloaded => "overloaded",
            FailureKind::NoCredit => "no_credit",
        }
    }

    /// What it means, in words.
    #[must_use]
    pub fn describe(self) -> &'static str {
        match self {
            FailureKind::Auth => "the agent's API refused its credentials",
            FailureKind::NotLoggedIn => "the agent is not logged in",
            FailureKind::UnknownModel => "the agent's API does not know the model",
            FailureKind::Unreachable => "the agent could not reach its API",
            FailureKind::UsageLimit => "the agent's usage limit refused the session",
            FailureKind::Overloaded => "the agent's API is overloaded or failing",
            FailureKind::NoCredit => "the agent's account has no credit left for its API",
        }
    }

    /// How to fix it for the agent named `agent` (`claude`, `codex`, `gemini`).
    #[must_use]
    pub fn fix(self, agent: &str) -> String {
        let (program, key, login, base_url, billing) = match agent {
            "codex" => (
                "codex",
                "OPENAI_API_KEY (or the model provider's `env_key`)",
                "run `codex login`",
                "the model provider's `base_url`",
                "the OpenAI organization's billing (platform.openai.com/settings/organization/billing) or the ChatGPT plan",
            ),
            "gemini" => (
                "gemini",
                "GEMINI_API_KEY",
                "run `gemini` once to log in",
                "GOOGLE_GEMINI_BASE_URL",
                "the Google Cloud project's billing",
            ),
            _ => (
                "claude",
                "ANTHROPIC_API_KEY",
                "run `claude` once to log in",
                "ANTHROPIC_BASE_URL",
                "the Anthropic account's credits (Plans & Billing at console.anthropic.com)",
            ),
        };
        match self {
            FailureKind::Auth => {
                format!("check {key} (in the environment or `agent.env`), or {login} again")
            }
            FailureKind::NotLoggedIn => format!("{login}, or set {key}"),
            FailureKind::UnknownModel => format!(
                "check `model` (or the phase's **Model:** line): `{program}` must know the model"
            ),
            FailureKind::Unreachable => {
                format!("check the network, a proxy, and {base_url} if it is set")
            }
            FailureKind::UsageLimit => {
                "debussy waits for the limit to reset, up to `limits.max_wait`".to_owned()
            }
            FailureKind::Overloaded => {
                "debussy waits for the API to recover, up to `limits.max_wait`".to_owned()
            }
            FailureKind::NoCredit => {
                format!("add credit or raise the spend cap: {billing}")
            }
        }
    }
}

impl fmt::Display for FailureKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A failure the agent reported, classified.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AgentFailure {
    /// What kind it is.
    pub kind: FailureKind,
    /// The agent's own words for it (its error message), on one line.
    pub said: String,
    /// When a usage limit resets, in seconds since the epoch, when the agent said so.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resets_at: Option<i64>,
}

impl AgentFailure {
    /// A failure of `kind` in the agent's words `said` (cut to one line).
    #[must_use]
    pub fn new(kind: FailureKind, said: &str) -> Self {
        AgentFailure {
            kind,
            said: one_line(said),
            resets_at: None,
        }
    }

    /// The same, resetting at `resets_at` (seconds since the epoch).
    #[must_use]
    pub fn resetting_at(mut self, resets_at: Option<i64>) -> Self {
        self.resets_at = resets_at;
        self
    }
}

impl fmt::Display for AgentFailure {
    /// `the agent is not logged in: “Not logged in · Please run /login”`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.kind.describe())?;
        if !self.said.is_empty() {
            write!(f, ": “{}”", quote(&self.said))?;
        }
        Ok(())
    }
}

/// One of the agent's own retries of a failed API request (Claude Code's
/// `system`/`api_retry`, Codex's `Reconnecting… n/m`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ApiRetry {
    /// Which retry this is, from 1, when the agent says.
    pub attempt: Option<u32>,
    /// How many retries the agent makes at most, when it says.
    pub max_retries: Option<u32>,
    /// How long the agent waits before this retry, in milliseconds, when it says.
    pub delay_ms: Option<u64>,
    /// The HTTP status of the failed request, when there was one.
    pub status: Option<u16>,
    /// The error in the agent's words (`authentication_failed`, `rate_limit`, …).
    pub error: String,
    /// What the error means, when it is recognised.
    pub kind: Option<FailureKind>,
}

impl fmt::Display for ApiRetry {
    /// `the agent's API request failed (401 authentication_failed); it retries in 0.6s
    /// (attempt 1 of 10)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.status, self.kind) {
            (Some(status), _) => write!(
                f,
                "the agent's API request failed ({status} {})",
                quote(&self.error)
            )?,
            (None, Some(FailureKind::Unreachable)) => write!(
                f,
                "the agent's API request got no answer ({})",
                quote(&self.error)
            )?,
            (None, _) => write!(f, "the agent's API request failed ({})", quote(&self.error))?,
        }
        match self.delay_ms {
            #[expect(
                clippy::cast_precision_loss,
                reason = "a delay in milliseconds is far below 2^52"
            )]
            Some(delay) => write!(f, "; it retries in {:.1}s", delay as f64 / 1000.0)?,
            None => f.write_str("; it retries")?,
        }
        match (self.attempt, self.max_retries) {
            (Some(attempt), Some(max)) => write!(f, " (attempt {attempt} of {max})"),
            (Some(attempt), None) => write!(f, " (attempt {attempt})"),
            _ => Ok(()),
        }
    }
}

/// `text` on one line, whitespace runs made single spaces.
#[must_use]
pub fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// At most [`QUOTE_CHARS`] characters of `text` on one line, with `…` when cut.
pub(super) fn quote(text: &str) -> String {
    let line = one_line(text);
    match line.char_indices().nth(QUOTE_CHARS) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None => line,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_credentials_login_and_model_are_permanent() {
        assert!(FailureKind::Auth.is_permanent());
        assert!(FailureKind::NotLoggedIn.is_permanent());
        assert!(FailureKind::UnknownModel.is_permanent());
        assert!(!FailureKind::Unreachable.is_permanent());
        assert!(!FailureKind::UsageLimit.is_permanent());
    }

    #[test]
    fn each_fix_names_what_to_do_for_its_agent() {
        assert_eq!(
            FailureKind::NotLoggedIn.fix("claude"),
            "run `claude` once to log in, or set ANTHROPIC_API_KEY"
        );
        assert!(
            FailureKind::Auth
                .fix("claude")
                .contains("check ANTHROPIC_API_KEY")
        );
        assert!(FailureKind::Auth.fix("codex").contains("OPENAI_API_KEY"));
        assert!(
            FailureKind::NotLoggedIn
                .fix("gemini")
                .contains("GEMINI_API_KEY")
        );
        assert!(FailureKind::UnknownModel.fix("codex").contains("`codex`"));
    }

    #[test]
    fn a_failure_reads_with_the_agents_words() {
        let failure = AgentFailure::new(
            FailureKind::NotLoggedIn,
            "Not logged in ·\n Please run /login",
        );
        assert_eq!(
            failure.to_string(),
            "the agent is not logged in: “Not logged in · Please run /login”"
        );
    }

    #[test]
    fn a_retry_says_which_and_when() {
        let retry = ApiRetry {
            attempt: Some(1),
            max_retries: Some(10),
            delay_ms: Some(617),
            status: Some(401),
            error: "authentication_failed".into(),
            kind: Some(FailureKind::Auth),
        };
        assert_eq!(
            retry.to_string(),
            "the agent's API request failed (401 authentication_failed); it retries in 0.6s (attempt 1 of 10)"
        );
        let offline = ApiRetry {
            status: None,
            error: "unknown".into(),
            kind: Some(FailureKind::Unreachable),
            delay_ms: None,
            ..retry
        };
        assert_eq!(
            offline.to_string(),
            "the agent's API request got no answer (unknown); it retries (attempt 1 of 10)"
        );
    }
}
