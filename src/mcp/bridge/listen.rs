//! Background readers of the daemon: the GET stream of one session, whose messages go
//! to the dispatcher and whose breaking says the daemon went away; and a list read again
//! after the daemon said it changed.

use futures_util::StreamExt;
use tokio::sync::mpsc::UnboundedSender;
use tokio::task::JoinHandle;

use super::daemon::Daemon;
use super::dispatch::Event;
use super::http::{Endpoint, PostError, Session};

/// How long to wait before opening the GET stream again after the daemon closed it.
const REOPEN_AFTER: std::time::Duration = std::time::Duration::from_secs(1);

/// Read the GET stream of `session` for as long as the session lasts. A stream that ends
/// while the daemon still listens (some daemons close idle streams) is opened again; one
/// that breaks, or ends with nothing listening, means the daemon went away.
pub(super) fn spawn(
    endpoint: Endpoint,
    session: Session,
    epoch: u64,
    events: UnboundedSender<Event>,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            let why = match endpoint.listen(&session).await {
                Ok(None) | Err(PostError::Status { .. }) => return,
                Ok(Some(response)) => {
                    let mut messages = super::http::messages(response);
                    let mut broke = None;
                    while let Some(message) = messages.next().await {
                        match message {
                            Ok(message) => {
                                let _ = events.send(Event::FromDaemon { epoch, message });
                            }
                            Err(err) => {
                                broke = Some(err.to_string());
                                break;
                            }
                        }
                    }
                    match broke {
                        Some(why) => why,
                        None if endpoint.listening().await => {
                            // Closed on purpose (an idle timeout): listen again.
                            tokio::time::sleep(REOPEN_AFTER).await;
                            continue;
                        }
                        None => {
                            "the daemon closed its event stream and stopped listening".to_owned()
                        }
                    }
                }
                Err(err) => err.to_string(),
            };
            let _ = events.send(Event::StreamEnded { epoch, why });
            return;
        }
    })
}

/// Read the list `method` again in `session` and report it as [`Event::Relearned`].
pub(super) fn relearn(
    daemon: Daemon,
    session: Session,
    epoch: u64,
    method: String,
    events: UnboundedSender<Event>,
) {
    tokio::spawn(async move {
        let key = super::learned::LISTS
            .iter()
            .find(|(m, _)| *m == method)
            .map_or("tools", |(_, key)| key);
        let items = super::connect::list_all(
            &daemon.endpoint,
            &session,
            &method,
            key,
            daemon.ready_timeout,
        )
        .await
        .map_err(|err| err.to_string());
        let _ = events.send(Event::Relearned {
            epoch,
            method,
            items,
        });
    });
}
