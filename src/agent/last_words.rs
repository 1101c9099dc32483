//! [`LastWords`]: what a failed session left behind to judge it by, gathered from its
//! events and its stderr as the session runs.

use serde::Serialize;

use super::event::{AgentEvent, SessionResult};
use super::failure::quote;

/// Most non-JSON stdout lines [`LastWords`] keeps.
pub const LAST_STDOUT_LINES: usize = 5;

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

#[cfg(test)]
mod tests {
    use super::*;

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
