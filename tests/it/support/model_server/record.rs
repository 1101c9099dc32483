//! What the scripted server saw: one [`RecordedRequest`] per HTTP request in arrival
//! order, how the server classified it, and the waiting that lets a test block (or
//! await) until some requests have arrived, with a timeout.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::sync::watch;

/// How the server understood a request, which decides what answered it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RequestKind {
    /// A streaming turn of the main conversation; `turn` counts from 0 across every
    /// Claude Code process that used the server.
    Main {
        /// Index into the scenario's main script.
        turn: usize,
    },
    /// A turn of a subagent conversation (the `Agent`/`Task` tool).
    Subagent {
        /// The scripted prompt fragment it matched, `None` when no script matched.
        key: Option<String>,
        /// Index into that subagent's script.
        turn: usize,
    },
    /// Claude Code asking for a compaction summary (auto-compact or `/compact`).
    Compact,
    /// debussy's handoff request: a stopped session resumed with the handoff prompt.
    Handoff,
    /// A side request: non-streaming, or streaming without tools (titles, summaries,
    /// small-model helpers).
    Side,
    /// `POST /v1/messages/count_tokens`.
    CountTokens,
    /// `HEAD /api/hello`, the connectivity probe Claude Code sends when nonessential
    /// traffic is not disabled.
    Hello,
    /// A model request refused by the scenario's refusal (a bad key, a usage limit, an
    /// unknown model).
    Refused,
    /// Anything else; answered 404 and reported on stderr.
    Unknown,
}

impl fmt::Display for RequestKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Main { turn } => write!(f, "main turn {turn}"),
            Self::Subagent {
                key: Some(key),
                turn,
            } => write!(f, "subagent {key:?} turn {turn}"),
            Self::Subagent { key: None, turn } => write!(f, "unmatched subagent turn {turn}"),
            Self::Compact => f.write_str("compaction"),
            Self::Handoff => f.write_str("handoff"),
            Self::Side => f.write_str("side request"),
            Self::CountTokens => f.write_str("count_tokens"),
            Self::Hello => f.write_str("hello probe"),
            Self::Refused => f.write_str("refused"),
            Self::Unknown => f.write_str("unknown route"),
        }
    }
}

/// One HTTP request the server received.
#[derive(Clone, Debug)]
pub struct RecordedRequest {
    /// Arrival order, from 0.
    pub index: usize,
    /// Time since the server started.
    pub elapsed: Duration,
    /// HTTP method.
    pub method: String,
    /// Path without the query string.
    pub path: String,
    /// Query string, if any (Claude Code sends `beta=true`).
    pub query: Option<String>,
    /// Headers with lowercase names.
    pub headers: BTreeMap<String, String>,
    /// The JSON body; a non-JSON body is kept as a string, an empty one as null.
    pub body: Value,
    /// How the server classified the request.
    pub kind: RequestKind,
    /// False when the answer was a fallback (script exhausted, no subagent script
    /// matched, unknown route).
    pub scripted: bool,
}

impl RecordedRequest {
    /// True for a main-conversation turn.
    pub const fn is_main(&self) -> bool {
        matches!(self.kind, RequestKind::Main { .. })
    }

    /// True for a subagent turn.
    pub const fn is_subagent(&self) -> bool {
        matches!(self.kind, RequestKind::Subagent { .. })
    }

    /// A header value by (case-insensitive) name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .get(&name.to_ascii_lowercase())
            .map(String::as_str)
    }

    /// The Claude Code session that sent the request (`X-Claude-Code-Session-Id`).
    pub fn session_id(&self) -> Option<&str> {
        self.header("x-claude-code-session-id")
            .or_else(|| self.header("session-id"))
    }

    /// The requested model.
    pub fn model(&self) -> Option<&str> {
        self.body.get("model").and_then(Value::as_str)
    }

    /// True when the request asked for an SSE stream.
    pub fn is_streaming(&self) -> bool {
        self.body.get("stream").and_then(Value::as_bool) == Some(true)
    }

    /// The system prompt's text, blocks joined by newlines.
    pub fn system_text(&self) -> String {
        self.body
            .get("system")
            .map(content_text)
            .unwrap_or_default()
    }

    /// The names of the tools offered to the model.
    pub fn tool_names(&self) -> Vec<&str> {
        self.body["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|tool| tool["name"].as_str())
            .collect()
    }

    /// The conversation sent to the model.
    pub fn messages(&self) -> &[Value] {
        self.body
            .get("messages")
            .or_else(|| self.body.get("input"))
            .and_then(Value::as_array)
            .map_or(&[], Vec::as_slice)
    }

    /// All text the request sends the model, every message and tool output joined.
    pub fn input_text(&self) -> String {
        self.messages()
            .iter()
            .map(|message| {
                message
                    .get("output")
                    .and_then(Value::as_str)
                    .map_or_else(|| message_text(message), str::to_owned)
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// All text of the first user message (text blocks and tool results). For a fresh
    /// session it holds Claude Code's context reminders followed by the prompt.
    pub fn first_user_text(&self) -> String {
        self.messages()
            .iter()
            .find(|message| message.get("role").and_then(Value::as_str) == Some("user"))
            .map(message_text)
            .unwrap_or_default()
    }

    /// All text of the last user message.
    pub fn last_user_text(&self) -> String {
        self.messages()
            .iter()
            .rev()
            .find(|message| message.get("role").and_then(Value::as_str) == Some("user"))
            .map(message_text)
            .unwrap_or_default()
    }

    /// The request as one JSON object, for artifacts.
    pub fn to_json(&self) -> Value {
        json!({
            "index": self.index,
            "elapsed_ms": u64::try_from(self.elapsed.as_millis()).unwrap_or(u64::MAX),
            "method": self.method,
            "path": self.path,
            "query": self.query,
            "kind": self.kind.to_string(),
            "scripted": self.scripted,
            "headers": self.headers,
            "body": self.body,
        })
    }

    /// One line for diagnostics: index, kind, method and path.
    pub fn summary(&self) -> String {
        let scripted = if self.scripted { "" } else { " (unscripted)" };
        format!(
            "#{} {}{} {} {}",
            self.index, self.kind, scripted, self.method, self.path
        )
    }
}

/// The text of a message: its string content, or its text blocks and tool-result
/// contents joined by newlines.
pub fn message_text(message: &Value) -> String {
    message.get("content").map(content_text).unwrap_or_default()
}

/// The text of a content value (a string, or an array of blocks).
pub fn content_text(content: &Value) -> String {
    match content {
        Value::String(text) => text.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|block| match block.get("type").and_then(Value::as_str) {
                Some("text" | "input_text" | "output_text") => {
                    block.get("text").and_then(Value::as_str).map(str::to_owned)
                }
                Some("tool_result") => block.get("content").map(content_text),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// A wait that ran out of time; says what was awaited and what did arrive.
#[derive(Debug)]
pub struct WaitTimeout {
    what: String,
    waited: Duration,
    seen: Vec<String>,
}

impl fmt::Display for WaitTimeout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "timed out after {:?} waiting for {}; the model server saw {} request(s)",
            self.waited,
            self.what,
            self.seen.len()
        )?;
        for line in &self.seen {
            write!(f, "\n  {line}")?;
        }
        Ok(())
    }
}

impl std::error::Error for WaitTimeout {}

/// The shared log of requests, with blocking and async waiting.
#[derive(Debug)]
pub(super) struct Recorder {
    started: Instant,
    requests: Mutex<Vec<RecordedRequest>>,
    arrived: Condvar,
    count: watch::Sender<usize>,
}

impl Recorder {
    pub(super) fn new() -> Self {
        Self {
            started: Instant::now(),
            requests: Mutex::new(Vec::new()),
            arrived: Condvar::new(),
            count: watch::Sender::new(0),
        }
    }

    pub(super) fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    fn lock(&self) -> MutexGuard<'_, Vec<RecordedRequest>> {
        // A panic while holding the lock cannot leave the Vec half-written.
        self.requests.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Stores a request, giving it the next index, and wakes every waiter.
    pub(super) fn push(&self, mut request: RecordedRequest) -> usize {
        let index = {
            let mut requests = self.lock();
            request.index = requests.len();
            requests.push(request);
            requests.len()
        };
        self.arrived.notify_all();
        self.count.send_replace(index);
        index - 1
    }

    pub(super) fn snapshot(&self) -> Vec<RecordedRequest> {
        self.lock().clone()
    }

    fn timeout(&self, what: &str, waited: Duration) -> WaitTimeout {
        WaitTimeout {
            what: what.to_owned(),
            waited,
            seen: self.lock().iter().map(RecordedRequest::summary).collect(),
        }
    }

    /// Blocks until `done` holds for the requests so far, or the timeout passes.
    pub(super) fn wait_until(
        &self,
        what: &str,
        timeout: Duration,
        done: impl Fn(&[RecordedRequest]) -> bool,
    ) -> Result<Vec<RecordedRequest>, WaitTimeout> {
        let deadline = Instant::now() + timeout;
        let mut requests = self.lock();
        loop {
            if done(&requests) {
                return Ok(requests.clone());
            }
            let now = Instant::now();
            if now >= deadline {
                drop(requests);
                return Err(self.timeout(what, timeout));
            }
            requests = self
                .arrived
                .wait_timeout(requests, deadline - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// Awaits until `done` holds for the requests so far, or the timeout passes.
    /// Needs a Tokio runtime with timers (any `#[tokio::test]`).
    pub(super) async fn wait_until_async(
        &self,
        what: &str,
        timeout: Duration,
        done: impl Fn(&[RecordedRequest]) -> bool,
    ) -> Result<Vec<RecordedRequest>, WaitTimeout> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            // Subscribe before looking, so a request pushed in between still wakes us.
            let mut changed = self.count.subscribe();
            {
                let requests = self.lock();
                if done(&requests) {
                    return Ok(requests.clone());
                }
            }
            if tokio::time::timeout_at(deadline, changed.changed())
                .await
                .is_err()
            {
                return Err(self.timeout(what, timeout));
            }
        }
    }
}
