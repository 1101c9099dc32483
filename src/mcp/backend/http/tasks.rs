//! The HTTP back end's background work, one task each: reaching (or starting) the
//! daemon, POSTing a message, holding a legacy session's GET stream, checking why a link
//! broke, stopping the daemon, and waiting for a started daemon's exit. Each reports to
//! the back end as an [`Internal`] message, in the order things happened.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;
use tokio::sync::mpsc::UnboundedSender;
use tokio::task::AbortHandle;

use super::client::{Endpoint, EventStream, Incoming, PostError, Session};
use super::daemon::{self, Daemon, DaemonRecord, OwnDaemon, StartEntry};
use super::lock::{self, LOCK_SLACK};
use super::sse::SseItem;
use crate::mcp::backend::{BackendEvent, EndCause, Fate, Stopped};
use crate::mcp::jsonrpc::message::Message;
use crate::process::ExitStatus;

/// How long to wait before opening the GET stream again after the daemon closed it.
const REOPEN_AFTER: Duration = Duration::from_secs(1);
/// How long a broken link waits for the reaper of a daemon this bridge started, whose
/// exit status says more than "nothing listens".
const OWN_EXIT_WAIT: Duration = Duration::from_millis(500);

/// A report from a task.
#[derive(Debug)]
pub(crate) enum Internal {
    /// Pass this on to the front as it is.
    Event(BackendEvent),
    /// The start of a generation ended: the daemon takes connections, or why not
    /// (`true`: waiting will not help).
    Reached {
        generation: u64,
        result: Result<Reached, (String, bool)>,
    },
    /// The daemon answered `initialize`: the session to use from now on.
    Session {
        generation: u64,
        id: Option<String>,
        protocol: Option<String>,
    },
    /// `notifications/initialized` went through: the GET stream can be opened.
    Initialized { generation: u64 },
    /// A request's POST is over.
    PostDone { generation: u64, id: u64 },
    /// A POST or the GET stream broke: find out why.
    Broken { generation: u64, why: String },
    /// The link is gone, for this reason.
    Gone { generation: u64, cause: EndCause },
    /// A daemon this bridge started exited.
    DaemonExited { pid: u32, status: ExitStatus },
    /// A stop the front asked for is over.
    Stopped {
        generation: u64,
        stopped: Stopped,
        cause: EndCause,
    },
}

/// A daemon reached.
#[derive(Debug)]
pub(crate) struct Reached {
    /// The recorded daemon it is, when the state directory records it.
    pub(crate) entry: Option<StartEntry>,
    /// Set when this start spawned it.
    pub(crate) own: Option<OwnDaemon>,
    /// From the start to taking connections.
    pub(crate) startup: Duration,
}

/// Make sure a daemon takes connections for `generation`: the one already listening,
/// or a new one started for `reason` (under the restart lock, so bridges sharing the
/// daemon never start two). A daemon started here that does not come up is stopped.
pub(crate) fn start(
    daemon: Daemon,
    reason: String,
    generation: u64,
    tx: UnboundedSender<Internal>,
) {
    tokio::spawn(async move {
        let result = reach(&daemon, &reason).await;
        let _ = tx.send(Internal::Reached { generation, result });
    });
}

async fn reach(daemon: &Daemon, reason: &str) -> Result<Reached, (String, bool)> {
    let _lock = lock::acquire(&daemon.state_dir, daemon.ready_timeout + LOCK_SLACK)
        .await
        .map_err(|why| (why, false))?;
    if daemon.endpoint.listening().await {
        let entry = DaemonRecord::load(&daemon.state_dir)
            .current()
            .filter(|entry| entry.identity().is_some_and(|i| i.is_alive()))
            .cloned();
        return Ok(Reached {
            entry,
            own: None,
            startup: Duration::ZERO,
        });
    }
    let (entry, own) = daemon.spawn(reason).map_err(|why| (why, true))?;
    match daemon.wait_ready(&own).await {
        Ok(startup) => Ok(Reached {
            entry: Some(entry),
            own: Some(own),
            startup,
        }),
        Err(why) => {
            // Started here and asked to come up: it does not outlive the failure.
            let exited = own.exit.borrow().is_some();
            if !exited {
                let (stopped, _) = daemon.stop(Some(&own)).await;
                crate::mcp::say(&format!(
                    "stopped the daemon that did not come up (pid {}): {}",
                    own.identity.pid, stopped.how
                ));
            }
            Err((why, exited))
        }
    }
}

/// Report the exit of a daemon this bridge started.
pub(crate) fn watch_exit(own: &OwnDaemon, tx: UnboundedSender<Internal>) {
    let mut exit = own.exit.clone();
    let pid = own.identity.pid;
    tokio::spawn(async move {
        if let Ok(status) = exit.wait_for(Option::is_some).await
            && let Some(status) = *status
        {
            let _ = tx.send(Internal::DaemonExited { pid, status });
        }
    });
}

/// One POST: where, in which session, and what the front called it.
pub(crate) struct Post {
    pub(crate) endpoint: Endpoint,
    pub(crate) session: Session,
    /// The per-request headers of a 2026-07-28 request.
    pub(crate) headers: super::client::Headers,
    pub(crate) generation: u64,
    /// The front's id, for a request.
    pub(crate) id: Option<u64>,
    /// The method, for a request or a notification.
    pub(crate) method: Option<String>,
}

/// POST `message`; every message of the answer goes to the front, then how it went.
pub(crate) fn post(post: Post, message: Message, tx: UnboundedSender<Internal>) -> AbortHandle {
    tokio::spawn(async move {
        let Post {
            endpoint,
            session,
            headers,
            generation,
            id,
            method,
        } = post;
        let raw_id = message.raw_id().map(<[u8]>::to_vec);
        let is_initialize = method.as_deref() == Some("initialize") && id.is_some();
        let result = {
            let tx = tx.clone();
            let mut session_id = session.id.clone();
            let mut on_message = |incoming: Incoming| {
                let event = match incoming {
                    Incoming::Session(id) => {
                        session_id = Some(id);
                        return;
                    }
                    Incoming::Message(line) => {
                        if is_initialize && let Some(protocol) = protocol_of(&line) {
                            // The session is in place before the client hears the
                            // answer and sends the next request.
                            let _ = tx.send(Internal::Session {
                                generation,
                                id: session_id.clone(),
                                protocol: Some(protocol),
                            });
                        }
                        BackendEvent::Line { generation, line }
                    }
                    Incoming::TooLong(excerpt) => BackendEvent::TooLong {
                        generation,
                        len: excerpt.len,
                        head: excerpt.head,
                        tail: excerpt.tail,
                    },
                };
                let _ = tx.send(Internal::Event(event));
            };
            endpoint
                .post(
                    &session,
                    headers,
                    message.into_bytes(),
                    raw_id.as_deref().filter(|_| id.is_some()),
                    &mut on_message,
                )
                .await
        };
        match result {
            Ok(_) => {
                if method.as_deref() == Some("notifications/initialized") {
                    let _ = tx.send(Internal::Initialized { generation });
                }
            }
            Err(err) => failed(&endpoint, generation, id, method.as_deref(), &err, &tx),
        }
        if let Some(id) = id {
            let _ = tx.send(Internal::PostDone { generation, id });
        }
    })
    .abort_handle()
}

/// Report a POST that got no answer: what became of the request, then what it says
/// about the link.
fn failed(
    endpoint: &Endpoint,
    generation: u64,
    id: Option<u64>,
    method: Option<&str>,
    err: &PostError,
    tx: &UnboundedSender<Internal>,
) {
    let fate = match err {
        PostError::NotSent(why) => Fate::NotSent(why.clone()),
        PostError::Lost(why) => Fate::Lost(why.clone()),
        PostError::SessionGone => Fate::NotSent(err.to_string()),
        PostError::Status { .. } if method == Some("initialize") => Fate::Refused(format!(
            "what answers on {} refused an MCP session ({err}); is it the daemon, and is `--path` right?",
            endpoint.url()
        )),
        PostError::Status { .. } | PostError::BadBody(_) => Fate::Refused(err.to_string()),
    };
    let report = match err {
        PostError::NotSent(why) | PostError::Lost(why) => Some(Internal::Broken {
            generation,
            why: why.clone(),
        }),
        PostError::SessionGone => Some(Internal::Gone {
            generation,
            cause: EndCause::Replaced("the daemon no longer knows the session".to_owned()),
        }),
        PostError::Status { .. } | PostError::BadBody(_) => None,
    };
    // A broken link is known before the request's fate reaches the front, so that what
    // the client sends on hearing of it is held for the next daemon, not posted to this
    // one. A session the daemon forgot ends the link after the fate: the request is then
    // sent again rather than counted lost.
    let (before, after) = match report {
        Some(broken @ Internal::Broken { .. }) => (Some(broken), None),
        other => (None, other),
    };
    if let Some(report) = before {
        let _ = tx.send(report);
    }
    if let Some(id) = id {
        let _ = tx.send(Internal::Event(BackendEvent::Undelivered {
            generation,
            id,
            fate,
        }));
    }
    if let Some(report) = after {
        let _ = tx.send(report);
    }
}

/// The `protocolVersion` of an `initialize` answer.
fn protocol_of(line: &[u8]) -> Option<String> {
    let value: Value = serde_json::from_slice(line).ok()?;
    value
        .get("result")?
        .get("protocolVersion")?
        .as_str()
        .map(str::to_owned)
}

/// Hold the GET stream of `session` for as long as the session lasts. A stream that
/// ends while the daemon still listens (some daemons close idle streams) is opened
/// again; one that breaks, or ends with nothing listening, says the link broke.
pub(crate) fn listen(
    endpoint: Endpoint,
    session: Session,
    generation: u64,
    max: usize,
    tx: UnboundedSender<Internal>,
) -> AbortHandle {
    tokio::spawn(async move {
        loop {
            let why = match endpoint.listen(&session).await {
                Ok(None) | Err(PostError::Status { .. } | PostError::BadBody(_)) => return,
                Err(PostError::SessionGone) => {
                    let cause =
                        EndCause::Replaced("the daemon no longer knows the session".to_owned());
                    let _ = tx.send(Internal::Gone { generation, cause });
                    return;
                }
                Err(err) => err.to_string(),
                Ok(Some(response)) => {
                    let mut events = EventStream::new(response, max);
                    let broke = loop {
                        match events.next().await {
                            Ok(Some(SseItem::Data(line))) => {
                                let _ = tx
                                    .send(Internal::Event(BackendEvent::Line { generation, line }));
                            }
                            Ok(Some(SseItem::TooLong(excerpt))) => {
                                let _ = tx.send(Internal::Event(BackendEvent::TooLong {
                                    generation,
                                    len: excerpt.len,
                                    head: excerpt.head,
                                    tail: excerpt.tail,
                                }));
                            }
                            Ok(None) => break None,
                            Err(err) => break Some(err.to_string()),
                        }
                    };
                    match broke {
                        Some(why) => why,
                        None if endpoint.listening().await => {
                            tokio::time::sleep(REOPEN_AFTER).await;
                            continue;
                        }
                        None => {
                            "the daemon closed its event stream and stopped listening".to_owned()
                        }
                    }
                }
            };
            let _ = tx.send(Internal::Broken { generation, why });
            return;
        }
    })
    .abort_handle()
}

/// Find out why a link broke: another bridge restarting or stopping the daemon `reached`
/// (not a crash), nothing listening any more, or a daemon that is there but lost the
/// connection.
pub(crate) fn check(
    endpoint: Endpoint,
    state_dir: PathBuf,
    reached: Option<StartEntry>,
    generation: u64,
    why: String,
    own_exit: Option<tokio::sync::watch::Receiver<Option<ExitStatus>>>,
    tx: UnboundedSender<Internal>,
) {
    tokio::spawn(async move {
        if let Some(mut exit) = own_exit
            && tokio::time::timeout(OWN_EXIT_WAIT, exit.wait_for(Option::is_some))
                .await
                .is_ok()
        {
            // The daemon this bridge started exited: its reaper reports how.
            return;
        }
        let cause = if daemon::replaced_elsewhere(&state_dir, reached.as_ref()) {
            EndCause::Replaced("another bridge is restarting the daemon".to_owned())
        } else if endpoint.listening().await {
            EndCause::Replaced(format!(
                "the connection broke ({why}) while the daemon still listens"
            ))
        } else {
            EndCause::Unreachable(why)
        };
        let _ = tx.send(Internal::Gone { generation, cause });
    });
}

/// A stop the front asked for.
pub(crate) struct Stop {
    pub(crate) daemon: Daemon,
    pub(crate) endpoint: Endpoint,
    pub(crate) session: Session,
    pub(crate) own: Option<OwnDaemon>,
    /// What becomes of the daemon.
    pub(crate) daemon_fate: DaemonFate,
    pub(crate) generation: u64,
    pub(crate) tx: UnboundedSender<Internal>,
}

/// What a stop does to the daemon.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DaemonFate {
    /// Stop it too (a restart, or the bridge's end with `--stop-daemon-on-exit`).
    Stop,
    /// Leave it running, for this reason: only the session ends.
    Keep(&'static str),
}

/// End the session and, when asked, stop the daemon under the restart lock.
pub(crate) fn stop(stop: Stop) {
    tokio::spawn(async move {
        let (stopped, cause) = match stop.daemon_fate {
            DaemonFate::Stop => {
                let _lock = lock::acquire(&stop.daemon.state_dir, LOCK_SLACK).await;
                let (stopped, status) = stop.daemon.stop(stop.own.as_ref()).await;
                (
                    stopped,
                    EndCause::Exited(status.unwrap_or(ExitStatus::Unknown)),
                )
            }
            DaemonFate::Keep(why) => {
                stop.endpoint.delete(&stop.session).await;
                (
                    Stopped {
                        actions: vec!["end the session".to_owned()],
                        how: "end the session".to_owned(),
                        took: Duration::ZERO,
                        gone: false,
                    },
                    EndCause::Left(format!("this bridge ended its session; {why}")),
                )
            }
        };
        let _ = stop.tx.send(Internal::Stopped {
            generation: stop.generation,
            stopped,
            cause,
        });
    });
}
