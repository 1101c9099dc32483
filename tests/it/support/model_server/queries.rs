//! What a test asks the server afterwards: the requests it saw, and waits for more.

use std::io::{self, Write as _};
use std::path::Path;
use std::time::Duration;

use super::{ModelServer, RecordedRequest, RequestKind, WaitTimeout};

impl ModelServer {
    /// Every request so far, in arrival order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared.recorder.snapshot()
    }

    /// The main-conversation requests so far.
    pub fn main_requests(&self) -> Vec<RecordedRequest> {
        self.requests_where(RecordedRequest::is_main)
    }

    /// The subagent requests so far.
    pub fn subagent_requests(&self) -> Vec<RecordedRequest> {
        self.requests_where(RecordedRequest::is_subagent)
    }

    /// The requests so far of the given kind (compare with `==`, e.g.
    /// `RequestKind::Compact`).
    pub fn requests_of(&self, kind: &RequestKind) -> Vec<RecordedRequest> {
        self.requests_where(|request| &request.kind == kind)
    }

    /// The requests so far for which `keep` holds.
    pub fn requests_where(&self, keep: impl Fn(&RecordedRequest) -> bool) -> Vec<RecordedRequest> {
        self.requests()
            .into_iter()
            .filter(|request| keep(request))
            .collect()
    }

    /// Requests answered by a fallback: a script that ran out, an unmatched
    /// subagent, an unknown route. A test that scripted everything expects none.
    pub fn unexpected(&self) -> Vec<RecordedRequest> {
        self.requests_where(|request| !request.scripted)
    }

    /// Fails the test, listing them, if any request was [`Self::unexpected`].
    pub fn assert_all_scripted(&self) {
        let unexpected = self.unexpected();
        assert!(
            unexpected.is_empty(),
            "unscripted requests: {unexpected:#?}"
        );
    }

    /// The distinct Claude Code session ids, in order of their first request.
    pub fn session_ids(&self) -> Vec<String> {
        let mut ids: Vec<String> = Vec::new();
        for request in self.requests() {
            if let Some(id) = request.session_id()
                && !ids.iter().any(|seen| seen == id)
            {
                ids.push(id.to_owned());
            }
        }
        ids
    }

    /// The main-conversation requests grouped by the session id the agent sends (its
    /// `session-id` header or metadata), sessions in order of their first request.
    pub fn main_sessions(&self) -> Vec<Vec<RecordedRequest>> {
        let mut sessions: Vec<(String, Vec<RecordedRequest>)> = Vec::new();
        for request in self.main_requests() {
            let id = request.session_id().unwrap_or_default().to_owned();
            match sessions.iter_mut().find(|(known, _)| *known == id) {
                Some((_, requests)) => requests.push(request),
                None => sessions.push((id, vec![request])),
            }
        }
        sessions.into_iter().map(|(_, requests)| requests).collect()
    }

    /// Blocks until `done` holds for the requests so far; `what` names the wait in
    /// the timeout error. Do not call it from inside an async test's runtime thread
    /// while that runtime must make progress: use [`Self::wait_until_async`].
    pub fn wait_until(
        &self,
        what: &str,
        timeout: Duration,
        done: impl Fn(&[RecordedRequest]) -> bool,
    ) -> Result<Vec<RecordedRequest>, WaitTimeout> {
        self.shared.recorder.wait_until(what, timeout, done)
    }

    /// Awaits until `done` holds for the requests so far.
    pub async fn wait_until_async(
        &self,
        what: &str,
        timeout: Duration,
        done: impl Fn(&[RecordedRequest]) -> bool,
    ) -> Result<Vec<RecordedRequest>, WaitTimeout> {
        self.shared
            .recorder
            .wait_until_async(what, timeout, done)
            .await
    }

    /// Blocks until at least `count` main-conversation requests have arrived.
    pub fn wait_for_main_requests(
        &self,
        count: usize,
        timeout: Duration,
    ) -> Result<Vec<RecordedRequest>, WaitTimeout> {
        self.wait_until(&format!("{count} main request(s)"), timeout, |requests| {
            requests.iter().filter(|request| request.is_main()).count() >= count
        })
    }

    /// Awaits at least `count` main-conversation requests.
    pub async fn wait_for_main_requests_async(
        &self,
        count: usize,
        timeout: Duration,
    ) -> Result<Vec<RecordedRequest>, WaitTimeout> {
        self.wait_until_async(&format!("{count} main request(s)"), timeout, |requests| {
            requests.iter().filter(|request| request.is_main()).count() >= count
        })
        .await
    }

    /// Writes every request so far as JSON Lines (see [`RecordedRequest::to_json`]).
    pub fn save_requests(&self, path: &Path) -> io::Result<()> {
        let mut out = io::BufWriter::new(std::fs::File::create(path)?);
        for request in self.requests() {
            writeln!(out, "{}", request.to_json())?;
        }
        out.flush()
    }
}
