//! Phase statuses as plans write them.

use std::fmt;
use std::str::FromStr;

use serde::Serialize;

/// Where a phase stands, as written in the plan (and later updated by runs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PhaseStatus {
    /// Not started.
    Pending,
    /// Started by a person or an earlier run, not finished.
    InProgress,
    /// An agent session is working on it.
    Running,
    /// Gates and compliance checks are running.
    Validating,
    /// Finished (`Complete`, `Completed` and `Done` all mean this).
    Completed,
    /// Gave up after its retries.
    Failed,
    /// Cannot continue until something outside the phase changes.
    Blocked,
    /// Waiting for a person to decide.
    AwaitingHuman,
}

/// The status words a plan may use, for error messages.
pub const STATUS_WORDS: &str = "Pending, In Progress, Running, Validating, Completed (or Complete, Done), Failed, Blocked, Awaiting Human";

impl PhaseStatus {
    /// Every status, in lifecycle order.
    pub const ALL: [PhaseStatus; 8] = [
        PhaseStatus::Pending,
        PhaseStatus::InProgress,
        PhaseStatus::Running,
        PhaseStatus::Validating,
        PhaseStatus::Completed,
        PhaseStatus::Failed,
        PhaseStatus::Blocked,
        PhaseStatus::AwaitingHuman,
    ];

    /// Parse a status as plans write it: case-insensitive, multi-word, `-`/`_` read as
    /// spaces, decorations (emoji, trailing `(…)` remarks) ignored.
    #[must_use]
    pub fn parse(text: &str) -> Option<Self> {
        let text = text.split(['(', '[']).next().unwrap_or_default();
        let words: Vec<String> = text
            .split(|c: char| c.is_whitespace() || c == '-' || c == '_')
            .map(|word| {
                word.chars()
                    .filter(|c| c.is_alphanumeric())
                    .collect::<String>()
                    .to_lowercase()
            })
            .filter(|word| !word.is_empty())
            .collect();
        let normalized = words.join(" ");
        let status = match normalized.as_str() {
            "pending" | "todo" | "to do" | "not started" | "planned" => PhaseStatus::Pending,
            "in progress" | "wip" | "started" => PhaseStatus::InProgress,
            "running" => PhaseStatus::Running,
            "validating" => PhaseStatus::Validating,
            "complete" | "completed" | "done" | "finished" => PhaseStatus::Completed,
            "failed" => PhaseStatus::Failed,
            "blocked" => PhaseStatus::Blocked,
            "awaiting human" | "awaiting input" | "needs human" => PhaseStatus::AwaitingHuman,
            _ => return None,
        };
        Some(status)
    }

    /// The status as a plan would write it.
    #[must_use]
    pub fn label(self) -> &'static str {
        match self {
            PhaseStatus::Pending => "Pending",
            PhaseStatus::InProgress => "In Progress",
            PhaseStatus::Running => "Running",
            PhaseStatus::Validating => "Validating",
            PhaseStatus::Completed => "Completed",
            PhaseStatus::Failed => "Failed",
            PhaseStatus::Blocked => "Blocked",
            PhaseStatus::AwaitingHuman => "Awaiting Human",
        }
    }

    /// Whether the phase's work is finished and a run can skip it.
    #[must_use]
    pub fn is_completed(self) -> bool {
        self == PhaseStatus::Completed
    }
}

impl fmt::Display for PhaseStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

impl FromStr for PhaseStatus {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        PhaseStatus::parse(text)
            .ok_or_else(|| format!("unknown status `{text}` (expected one of: {STATUS_WORDS})"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_are_case_insensitive_and_multi_word() {
        let cases = [
            ("Pending", PhaseStatus::Pending),
            ("pending", PhaseStatus::Pending),
            ("In Progress", PhaseStatus::InProgress),
            ("in_progress", PhaseStatus::InProgress),
            ("IN-PROGRESS", PhaseStatus::InProgress),
            ("Running", PhaseStatus::Running),
            ("Validating", PhaseStatus::Validating),
            ("Complete", PhaseStatus::Completed),
            ("Completed", PhaseStatus::Completed),
            ("✅ Done", PhaseStatus::Completed),
            ("Failed", PhaseStatus::Failed),
            ("Blocked (waiting on API keys)", PhaseStatus::Blocked),
            ("Awaiting  Human", PhaseStatus::AwaitingHuman),
        ];
        for (text, status) in cases {
            assert_eq!(PhaseStatus::parse(text), Some(status), "{text}");
        }
        assert_eq!(PhaseStatus::parse("Draft"), None);
        assert_eq!(PhaseStatus::parse(""), None);
        for status in PhaseStatus::ALL {
            assert_eq!(PhaseStatus::parse(status.label()), Some(status));
        }
        assert!("nope".parse::<PhaseStatus>().is_err());
    }
}
