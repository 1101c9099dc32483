//! Opening a session with the daemon: make sure one answers (starting it under the
//! restart lock when nothing listens on its port), send `initialize` with the client's
//! own parameters and `notifications/initialized`, then learn its lists.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::{Value, json};

use super::daemon::{Daemon, DaemonRecord, StartEntry};
use super::http::{Endpoint, PostError, Session};
use super::learned::{LISTS, Learned};
use super::lock;

/// Longer than any one restart holds the lock: stop (SIGTERM grace, SIGKILL) and slack.
pub(crate) const LOCK_SLACK: Duration = Duration::from_secs(10);
/// The most pages read of one list.
const MAX_PAGES: usize = 100;

/// A session opened with the daemon, and what was learned through it.
#[derive(Debug, Clone)]
pub(crate) struct Connection {
    /// The endpoint, with a connection pool of this session's own.
    pub(crate) endpoint: Endpoint,
    /// The session.
    pub(crate) session: Session,
    /// The daemon's `initialize` result and lists.
    pub(crate) learned: Learned,
    /// The daemon as `daemon.json` records it, if this state directory started it.
    pub(crate) daemon: Option<StartEntry>,
    /// The daemon this connect started, and how long it took to become ready.
    pub(crate) started: Option<(StartEntry, Duration)>,
}

/// Why no session could be opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ConnectError {
    /// In words, with the end of the daemon's log when it failed to start.
    pub(crate) why: String,
    /// Waiting will not help: the daemon could not be started, did not come up, or what
    /// answers on the port refuses MCP sessions. Requests waiting for it are answered
    /// with the reason instead of waiting out their deadline.
    pub(crate) definite: bool,
}

impl ConnectError {
    fn start(why: String) -> Self {
        ConnectError {
            why,
            definite: true,
        }
    }
}

/// The `initialize` parameters used before the client sent its own.
pub(crate) fn default_initialize_params() -> Value {
    json!({
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "debussy-bridge", "version": env!("CARGO_PKG_VERSION")},
    })
}

/// Make sure a daemon answers (starting one for `start_reason` if nothing listens), then
/// open a session with `init_params` and learn the daemon's lists.
///
/// # Errors
/// The daemon cannot be started, does not answer within the ready timeout, or refuses
/// a session.
pub(crate) async fn connect(
    daemon: &Daemon,
    init_params: &Value,
    start_reason: &str,
) -> Result<Connection, ConnectError> {
    let started = {
        // Waits out a restart another bridge is running.
        let _lock = lock::acquire(&daemon.state_dir, daemon.ready_timeout + LOCK_SLACK)
            .await
            .map_err(ConnectError::start)?;
        if daemon.endpoint.listening().await {
            None
        } else {
            let entry = daemon.spawn(start_reason).map_err(ConnectError::start)?;
            let took = daemon
                .wait_ready(entry.pid)
                .await
                .map_err(ConnectError::start)?;
            Some((entry, took))
        }
    };
    let endpoint = daemon.endpoint.fresh();
    let (session, learned) = open_session(&endpoint, init_params, daemon.ready_timeout)
        .await
        .map_err(|err| match err {
            PostError::NotSent(_) | PostError::Lost(_) => ConnectError {
                why: err.to_string(),
                definite: false,
            },
            other => ConnectError {
                why: format!(
                    "what answers on {} refused an MCP session ({other}); is it the daemon, and is `--path` right?",
                    endpoint.url()
                ),
                definite: true,
            },
        })?;
    Ok(Connection {
        endpoint,
        session,
        learned,
        daemon: DaemonRecord::load(&daemon.state_dir).current().cloned(),
        started,
    })
}

/// `initialize`, `notifications/initialized` and the lists, each within `timeout`.
async fn open_session(
    endpoint: &Endpoint,
    init_params: &Value,
    timeout: Duration,
) -> Result<(Session, Learned), PostError> {
    let mut session = Session::default();
    let (init, session_id) = call(endpoint, &session, "initialize", init_params, timeout).await?;
    session.id = session_id;
    session.protocol = init
        .get("protocolVersion")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    bounded(
        timeout,
        endpoint.post(
            &session,
            serde_json::to_vec(&initialized).unwrap_or_default(),
            None,
            &mut |_| {},
        ),
    )
    .await?;
    let mut learned = Learned {
        initialize: Some(init),
        ..Learned::default()
    };
    for (method, key) in LISTS {
        let capability = method.split('/').next().unwrap_or_default();
        if learned.has_capability(capability) {
            let items = list_all(endpoint, &session, method, key, timeout).await?;
            learned.lists.insert(method.to_owned(), items);
        }
    }
    Ok((session, learned))
}

/// Every page of a list.
pub(super) async fn list_all(
    endpoint: &Endpoint,
    session: &Session,
    method: &str,
    key: &str,
    timeout: Duration,
) -> Result<Vec<Value>, PostError> {
    let mut items = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..MAX_PAGES {
        let params = cursor
            .as_ref()
            .map_or_else(|| json!({}), |c| json!({"cursor": c}));
        let (page, _) = call(endpoint, session, method, &params, timeout).await?;
        if let Some(page_items) = page.get(key).and_then(Value::as_array) {
            items.extend(page_items.iter().cloned());
        }
        cursor = page
            .get("nextCursor")
            .and_then(Value::as_str)
            .map(str::to_owned);
        if cursor.is_none() {
            break;
        }
    }
    Ok(items)
}

/// One request of the bridge's own: its result (an error response counts as an HTTP
/// error) and the session header of the answer.
async fn call(
    endpoint: &Endpoint,
    session: &Session,
    method: &str,
    params: &Value,
    timeout: Duration,
) -> Result<(Value, Option<String>), PostError> {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let id = json!(format!(
        "debussy-bridge-{}",
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let request = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    let mut answer = None;
    let session_id = bounded(
        timeout,
        endpoint.post(
            session,
            serde_json::to_vec(&request).unwrap_or_default(),
            Some(&id),
            &mut |message| {
                if super::http::is_response_to(&message, &id) {
                    answer = Some(message);
                }
            },
        ),
    )
    .await?;
    let Some(answer) = answer else {
        return Err(PostError::Lost(format!("no answer to `{method}`")));
    };
    if let Some(result) = answer.get("result") {
        return Ok((result.clone(), session_id));
    }
    Err(PostError::Status {
        code: 200,
        body: format!("`{method}` failed: {}", answer["error"]),
    })
}

async fn bounded<T>(
    timeout: Duration,
    future: impl Future<Output = Result<T, PostError>>,
) -> Result<T, PostError> {
    tokio::time::timeout(timeout, future)
        .await
        .unwrap_or_else(|_| {
            Err(PostError::NotSent(format!(
                "no answer within {} ms (is the daemon frozen?)",
                timeout.as_millis()
            )))
        })
}
