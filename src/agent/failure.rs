//! Why an agent could not work, in words a person can act on: [`AgentFailure`] and its
//! [`FailureKind`], the agent's own retries ([`ApiRetry`]), and what a failed session left
//! behind to judge it by ([`LastWords`]).
//!
//! Each backend recognises its agent's failures from what the agent prints (Claude Code's
//! `system`/`api_retry` lines and error results, Codex's `error` items and `turn.failed`,
//! the Gemini CLI's error result and stderr); this module holds the shared vocabulary and
//! the fix for each kind. Pure data: nothing here parses a line or does I/O.

use std::fmt;

use serde::Serialize;

use super::event::{AgentEvent, SessionResult};

/// Most non-JSON stdout lines [`LastWords`] keeps.
pub const LAST_STDOUT_LINES: usize = 5;

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
}

impl FailureKind {
    /// True when no retry can fix it (credentials, login, model): the run stops after the
    /// first session and the attempt's retries are kept.
    #[must_use]
    pub fn is_permanent(self) -> bool {
        matches!(
            self,
            FailureKind::Auth | FailureKind::NotLoggedIn | FailureKind::UnknownModel
        )
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
        }
    }

    /// How to fix it for the agent named `agent` (`claude`, `codex`, `gemini`).
    #[must_use]
    pub fn fix(self, agent: &str) -> String {
        let (program, key, login, base_url) = match agent {
            "codex" => (
                "codex",
                "OPENAI_API_KEY (or the model provider's `env_key`)",
                "run `codex login`",
                "the model provider's `base_url`",
            ),
            "gemini" => (
                "gemini",
                "GEMINI_API_KEY",
                "run `gemini` once to log in",
                "GOOGLE_GEMINI_BASE_URL",
            ),
            _ => (
                "claude",
                "ANTHROPIC_API_KEY",
                "run `claude` once to log in",
                "ANTHROPIC_BASE_URL",
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

/// What a session left behind to judge a failure by: its error result, its last lines on
/// stdout that were not JSON, and the tail of its stderr.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct LastWords {
    /// The agent's final result, when it printed one.
    #[serde(skip)]
    pub result: Option<SessionResult>,
    /// The last lines on stdout that were not JSON (at most [`LAST_STDOUT_LINES`]).
    pub stdout: Vec<String>,
    /// The last lines on stderr.
    pub stderr: Vec<String>,
    /// When a usage limit the agent reported as reached resets, in seconds since the
    /// epoch (Claude Code's `rate_limit_event`).
    #[serde(skip)]
    pub limit_resets_at: Option<i64>,
}

impl LastWords {
    /// Take in one event: the final result, a line that was not JSON (kept up to
    /// [`LAST_STDOUT_LINES`]), and a usage limit reported as reached with its reset.
    pub fn observe(&mut self, event: &AgentEvent) {
        match event {
            AgentEvent::Result(result) => self.result = Some(result.clone()),
            AgentEvent::Text(text) => {
                push_bounded(&mut self.stdout, &text.line, LAST_STDOUT_LINES);
            }
            AgentEvent::RateLimit(limit) if limit.status.as_deref() == Some("rejected") => {
                self.limit_resets_at = limit.resets_at.or(self.limit_resets_at);
            }
            _ => {}
        }
    }

    /// Take in one stderr line, keeping the last `keep` (at least one).
    pub fn observe_stderr(&mut self, line: &str, keep: usize) {
        push_bounded(&mut self.stderr, line, keep.max(1));
    }

    /// The error result's text, when the agent ended with an error result.
    #[must_use]
    pub fn error_result(&self) -> Option<&str> {
        let result = self.result.as_ref().filter(|result| !result.is_success())?;
        result
            .result
            .as_deref()
            .or_else(|| result.errors.first().map(String::as_str))
            .map(str::trim)
            .filter(|text| !text.is_empty())
    }

    /// Every line worth reading, error result first: for matching the agent's messages.
    pub fn lines(&self) -> impl Iterator<Item = &str> {
        self.error_result()
            .into_iter()
            .chain(self.stdout.iter().map(String::as_str))
            .chain(self.stderr.iter().map(String::as_str))
    }

    /// The agent's last words in one short quote for a message (`its error result: “…”;
    /// stderr: “…”`), or `None` when it said nothing.
    #[must_use]
    pub fn quote(&self) -> Option<String> {
        self.quoted(true)
    }

    /// [`quote`](Self::quote) without the error result: for a failure whose own words
    /// already are the agent's, or a session debussy stopped (its result then only says
    /// it was interrupted).
    #[must_use]
    pub fn quote_besides_result(&self) -> Option<String> {
        self.quoted(false)
    }

    fn quoted(&self, with_result: bool) -> Option<String> {
        let mut parts = Vec::new();
        if let Some(result) = self.error_result().filter(|_| with_result) {
            parts.push(format!("its error result: “{}”", quote(result)));
        }
        let stdout: Vec<&str> = meaningful(&self.stdout).collect();
        if !stdout.is_empty() {
            parts.push(format!("stdout: “{}”", quote(&stdout.join(" / "))));
        }
        let stderr: Vec<&str> = meaningful(&self.stderr).collect();
        if let Some(tail) = stderr.get(stderr.len().saturating_sub(3)..)
            && !tail.is_empty()
        {
            parts.push(format!("stderr: “{}”", quote(&tail.join(" / "))));
        }
        (!parts.is_empty()).then(|| parts.join("; "))
    }
}

/// Longest line kept, in bytes.
const LINE_BYTES: usize = 4096;

/// Append `line` (cut to [`LINE_BYTES`] at a character boundary) and drop the oldest
/// lines past `keep`.
fn push_bounded(lines: &mut Vec<String>, line: &str, keep: usize) {
    let mut end = line.len().min(LINE_BYTES);
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    lines.push(line[..end].to_owned());
    if lines.len() > keep {
        let extra = lines.len() - keep;
        lines.drain(..extra);
    }
}

/// Lines with something in them, trimmed.
fn meaningful(lines: &[String]) -> impl Iterator<Item = &str> {
    lines
        .iter()
        .map(|line| line.trim())
        .filter(|line| !line.is_empty())
}

/// `text` on one line, whitespace runs made single spaces.
#[must_use]
pub fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// At most [`QUOTE_CHARS`] characters of `text` on one line, with `…` when cut.
fn quote(text: &str) -> String {
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

    #[test]
    fn last_words_quote_the_error_result_stdout_and_the_end_of_stderr() {
        let words = LastWords {
            result: Some(SessionResult {
                subtype: "success".into(),
                is_error: true,
                result: Some("API Error: 401".into()),
                ..SessionResult::default()
            }),
            stdout: vec!["Not logged in".into(), "  ".into()],
            stderr: vec!["a".into(), "b".into(), "c".into(), "d".into()],
            limit_resets_at: None,
        };
        assert_eq!(
            words.quote().as_deref(),
            Some(
                "its error result: “API Error: 401”; stdout: “Not logged in”; stderr: “b / c / d”"
            )
        );
        assert_eq!(LastWords::default().quote(), None);
        let long = LastWords {
            stderr: vec!["x".repeat(1_000)],
            ..LastWords::default()
        };
        let quoted = long.quote().expect("quote");
        assert!(
            quoted.ends_with("…”") && quoted.chars().count() < 420,
            "{quoted}"
        );
    }
}
