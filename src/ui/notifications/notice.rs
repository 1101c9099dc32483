//! What a notification is ([`Notice`], [`Priority`]), how one is delivered
//! ([`Deliver`]), and what can go wrong doing it.

use std::time::Duration;

use crate::error_chain::error_chain;

/// Longest wait at the end of a run for queued notifications to go out.
pub const FLUSH_WAIT: Duration = Duration::from_secs(15);

/// How urgent a notification is (ntfy's 1–5 scale).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Priority {
    /// Routine: a context restart.
    Low = 2,
    /// Worth a look: started, completed.
    Default = 3,
    /// Something failed.
    High = 4,
    /// A person must act: a phase is blocked.
    Urgent = 5,
}

impl Priority {
    /// The number ntfy takes.
    #[must_use]
    pub fn number(self) -> u8 {
        self as u8
    }
}

/// One notification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    /// A short title.
    pub title: String,
    /// The text.
    pub message: String,
    /// How urgent.
    pub priority: Priority,
    /// ntfy tags (emoji short codes such as `white_check_mark`).
    pub tags: Vec<&'static str>,
}

/// Why a notification could not be delivered.
#[derive(Debug, thiserror::Error)]
pub enum NotifyError {
    /// No HTTP client could be built to post to the ntfy server.
    #[error("failed to post to {url}: could not {}", .source.describe())]
    Client {
        /// Where the post was to go.
        url: String,
        /// Why.
        #[source]
        source: crate::http::ClientError,
    },
    /// The post got no answer: the server was unreachable or too slow, or the URL is not
    /// one.
    #[error("failed to post to {url}: {}", error_chain(.source))]
    Http {
        /// Where.
        url: String,
        /// Why, without the URL.
        #[source]
        source: reqwest::Error,
    },
    /// The ntfy server answered with a status other than success.
    #[error("failed to post to {url}: the server answered HTTP {status}{}", quoted(.said))]
    Refused {
        /// Where.
        url: String,
        /// What it answered (`403 Forbidden`).
        status: reqwest::StatusCode,
        /// The start of its answer's body, where ntfy says why.
        said: String,
    },
    /// The desktop notifier could not be run.
    #[error("failed to {source}")]
    Spawn {
        /// Why.
        #[source]
        source: crate::process::ProcessError,
    },
    /// The desktop notifier failed or hung.
    #[error("{program} {how}")]
    Program {
        /// Which program.
        program: String,
        /// `exited with exit status: 1`, `did not finish within 5s`.
        how: String,
    },
}

/// `: said`, or nothing when the server said nothing.
fn quoted(said: &str) -> String {
    if said.is_empty() {
        String::new()
    } else {
        format!(": {said}")
    }
}

/// Something that delivers notices (a provider).
pub trait Deliver: Send {
    /// Deliver one notice. The notifier calls this on a thread of its own, never inside
    /// an async runtime, so it may block.
    ///
    /// # Errors
    /// When it could not be delivered; the notifier logs it and goes on.
    fn deliver(&mut self, notice: &Notice) -> Result<(), NotifyError>;
}
