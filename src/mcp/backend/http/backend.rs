//! [`HttpBackend`]: the links to the daemon, one per generation, and the reports of the
//! tasks that start it, stop it and carry messages, turned into back-end events.

use std::collections::{HashMap, VecDeque};

use serde_json::{Value, json};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};
use tokio::task::AbortHandle;

use super::client::{Endpoint, Session};
use super::daemon::{Daemon, DaemonRecord, OwnDaemon, StartEntry};
use super::headers::{self, ParamHeaders};
use super::tasks::{self, DaemonFate, Internal, Reached};
use crate::mcp::backend::{Backend, BackendEvent, EndCause, Fate, ServerInfo, StopWhy};
use crate::mcp::front::stateless::PROTOCOL_VERSION_KEY;
use crate::mcp::front::tools::StartRecord;
use crate::mcp::jsonrpc::message::{Kind, Message, Parsed};
use crate::process::{ExitStatus, Signal};

/// What the HTTP back end is told.
#[derive(Debug, Clone)]
pub(crate) struct HttpSettings {
    /// The daemon: how to start, reach, check and stop it.
    pub(crate) daemon: Daemon,
    /// Stop the daemon when the bridge ends, if this bridge started it.
    pub(crate) stop_on_exit: bool,
}

/// The HTTP back end.
#[derive(Debug)]
pub(crate) struct HttpBackend {
    daemon: Daemon,
    stop_on_exit: bool,
    tx: UnboundedSender<Internal>,
    rx: UnboundedReceiver<Internal>,
    link: Option<Link>,
    /// The daemon this bridge started last.
    own: Option<OwnDaemon>,
    /// The `Mcp-Param-*` headers the daemon's tools declare.
    params: ParamHeaders,
    pending: VecDeque<BackendEvent>,
}

/// One generation's link to the daemon.
#[derive(Debug)]
struct Link {
    generation: u64,
    endpoint: Endpoint,
    up: bool,
    /// The recorded daemon it reached, if the state directory records it.
    daemon: Option<StartEntry>,
    session: Session,
    listener: Option<AbortHandle>,
    /// Requests being posted, by the front's id, and whether each is stateless.
    posts: HashMap<u64, (AbortHandle, bool)>,
    stopping: bool,
    checking: bool,
    down: bool,
}

impl Link {
    fn abort(&mut self) {
        if let Some(listener) = self.listener.take() {
            listener.abort();
        }
        for (_, (post, _)) in self.posts.drain() {
            post.abort();
        }
    }
}

impl HttpBackend {
    /// A back end for the daemon described by `settings`.
    pub(crate) fn new(settings: HttpSettings) -> Self {
        let (tx, rx) = unbounded_channel();
        HttpBackend {
            daemon: settings.daemon,
            stop_on_exit: settings.stop_on_exit,
            tx,
            rx,
            link: None,
            own: None,
            params: ParamHeaders::default(),
            pending: VecDeque::new(),
        }
    }

    fn link(&mut self, generation: u64) -> Option<&mut Link> {
        self.link.as_mut().filter(|l| l.generation == generation)
    }

    /// The link of `generation` is gone: its last event.
    fn down(
        &mut self,
        generation: u64,
        cause: EndCause,
        stop: Option<crate::mcp::backend::Stopped>,
    ) {
        let Some(link) = self.link(generation) else {
            return;
        };
        if link.down {
            return;
        }
        link.down = true;
        link.abort();
        let pid = link.daemon.as_ref().map(|d| d.pid);
        self.pending.push_back(BackendEvent::Down {
            generation,
            cause,
            stop,
            pid,
        });
    }

    fn on_internal(&mut self, report: Internal) {
        match report {
            Internal::Event(event) => {
                if let BackendEvent::Line { line, .. } = &event {
                    self.params.learn(line);
                }
                self.pending.push_back(event);
            }
            Internal::Reached { generation, result } => self.on_reached(generation, result),
            Internal::Session {
                generation,
                id,
                protocol,
            } => {
                if let Some(link) = self.link(generation) {
                    link.session = Session { id, protocol };
                }
            }
            Internal::Initialized { generation } => {
                let max = self.daemon.endpoint.max();
                let tx = self.tx.clone();
                if let Some(link) = self.link(generation).filter(|l| l.listener.is_none()) {
                    let handle = tasks::listen(
                        link.endpoint.clone(),
                        link.session.clone(),
                        generation,
                        max,
                        tx,
                    );
                    link.listener = Some(handle);
                }
            }
            Internal::PostDone { generation, id } => {
                if let Some(link) = self.link(generation) {
                    link.posts.remove(&id);
                }
            }
            Internal::Broken { generation, why } => {
                let own_exit = self.own_reached().map(|own| own.exit.clone());
                let state_dir = self.daemon.state_dir.clone();
                let tx = self.tx.clone();
                if let Some(link) = self
                    .link(generation)
                    .filter(|l| !l.stopping && !l.down && !l.checking)
                {
                    link.checking = true;
                    tasks::check(
                        link.endpoint.clone(),
                        state_dir,
                        link.daemon.clone(),
                        generation,
                        why,
                        own_exit,
                        tx,
                    );
                }
            }
            Internal::Gone { generation, cause } => {
                if self.link(generation).is_some_and(|l| !l.stopping) {
                    self.down(generation, cause, None);
                }
            }
            Internal::DaemonExited { pid, status } => self.on_daemon_exit(pid, status),
            Internal::Stopped {
                generation,
                stopped,
                cause,
            } => self.down(generation, cause, Some(stopped)),
        }
    }

    fn on_reached(&mut self, generation: u64, result: Result<Reached, (String, bool)>) {
        let Some(link) = self.link(generation) else {
            return;
        };
        if link.stopping || link.down {
            return;
        }
        match result {
            Ok(reached) => {
                link.up = true;
                link.daemon.clone_from(&reached.entry);
                let server = ServerInfo {
                    pid: reached.entry.as_ref().map(|e| e.pid),
                    number: reached.entry.as_ref().map_or(0, |e| e.generation),
                    startup: reached.startup,
                    started: reached.own.is_some(),
                };
                if let Some(own) = reached.own {
                    tasks::watch_exit(&own, self.tx.clone());
                    self.own = Some(own);
                }
                self.pending
                    .push_back(BackendEvent::Up { generation, server });
            }
            Err((why, definite)) => {
                let cause = if definite {
                    EndCause::Refused(why)
                } else {
                    EndCause::Unreachable(why)
                };
                self.down(generation, cause, None);
            }
        }
    }

    fn on_daemon_exit(&mut self, pid: u32, status: ExitStatus) {
        let state_dir = &self.daemon.state_dir;
        let Some(link) = self.link.as_mut() else {
            return;
        };
        let reached = link.daemon.as_ref().filter(|d| d.pid == pid);
        if reached.is_none() || link.stopping || link.down {
            return;
        }
        let replaced = super::daemon::replaced_elsewhere(state_dir, reached);
        let generation = link.generation;
        crate::mcp::say(&format!("the MCP daemon (pid {pid}) exited: {status}"));
        let cause = if replaced {
            EndCause::Replaced("another bridge is restarting the daemon".to_owned())
        } else {
            EndCause::Exited(status)
        };
        self.down(generation, cause, None);
    }

    /// The daemon this bridge started, when the current link reached it.
    fn own_reached(&self) -> Option<&OwnDaemon> {
        self.own.as_ref().filter(|own| {
            self.link
                .as_ref()
                .and_then(|l| l.daemon.as_ref())
                .is_some_and(|d| d.pid == own.identity.pid)
        })
    }

    /// The recorded daemon, while it is still the recorded process.
    fn recorded(&self) -> Option<crate::process::ProcessIdentity> {
        DaemonRecord::load(&self.daemon.state_dir)
            .current()
            .and_then(StartEntry::identity)
            .filter(crate::process::ProcessIdentity::is_alive)
    }
}

impl Backend for HttpBackend {
    const CLEAN_EXIT_ENDS: bool = false;

    fn start(
        &mut self,
        generation: u64,
        reason: &str,
    ) -> Result<Option<ServerInfo>, crate::process::ProcessError> {
        if let Some(mut old) = self.link.take() {
            old.abort();
        }
        let endpoint = self.daemon.endpoint.fresh();
        self.link = Some(Link {
            generation,
            endpoint,
            up: false,
            daemon: None,
            session: Session::default(),
            listener: None,
            posts: HashMap::new(),
            stopping: false,
            checking: false,
            down: false,
        });
        tasks::start(
            self.daemon.clone(),
            reason.to_owned(),
            generation,
            self.tx.clone(),
        );
        Ok(None)
    }

    fn send(&mut self, generation: u64, line: Vec<u8>) {
        let tx = self.tx.clone();
        let params = &self.params;
        let Some(link) = self
            .link
            .as_mut()
            .filter(|l| l.generation == generation)
            .filter(|l| l.up && !l.down && !l.stopping)
        else {
            return;
        };
        let Parsed::Message(message) = Message::parse(line) else {
            return;
        };
        let (id, method) = match message.kind() {
            Kind::Request { id, method } => (id.as_u64(), Some(method.to_string())),
            Kind::Notification { method } => (None, Some(method.to_string())),
            Kind::Response { .. } => (None, None),
        };
        if link.checking {
            // The link broke and is going down: the request never reaches this daemon.
            if let Some(id) = id {
                self.pending.push_back(BackendEvent::Undelivered {
                    generation,
                    id,
                    fate: Fate::NotSent("the connection to the daemon broke".to_owned()),
                });
            }
            return;
        }
        let key = PROTOCOL_VERSION_KEY.as_bytes();
        let stateless = message
            .bytes()
            .windows(key.len())
            .any(|w| w == key)
            .then(|| message.to_value())
            .flatten()
            .and_then(|value| headers::stateless(&value, params));
        let post = tasks::Post {
            endpoint: link.endpoint.clone(),
            // A 2026-07-28 request is self-contained: no session.
            session: if stateless.is_some() {
                Session::default()
            } else {
                link.session.clone()
            },
            headers: stateless.clone().unwrap_or_default(),
            generation,
            id,
            method,
        };
        let handle = tasks::post(post, message, tx);
        if let Some(id) = id {
            link.posts.insert(id, (handle, stateless.is_some()));
        }
    }

    fn resume(&mut self, _generation: u64) {
        if let Some(daemon) = self.recorded() {
            daemon.signal_group(Signal::SIGCONT);
        }
    }

    fn stop(&mut self, generation: u64, why: StopWhy) {
        let own = self.own.clone();
        let started_here = own.as_ref().is_some_and(|own| own.exit.borrow().is_none());
        let daemon_fate = match why {
            StopWhy::Restart | StopWhy::ReadinessTimeout => DaemonFate::Stop,
            StopWhy::Shutdown if self.stop_on_exit && started_here => DaemonFate::Stop,
            StopWhy::Shutdown if self.stop_on_exit => DaemonFate::Keep(
                "the daemon stays: another bridge started it, and --stop-daemon-on-exit stops only a daemon this bridge started",
            ),
            StopWhy::Shutdown => DaemonFate::Keep(
                "the daemon stays for the next client (--stop-daemon-on-exit stops it)",
            ),
        };
        let daemon = self.daemon.clone();
        let tx = self.tx.clone();
        let Some(link) = self.link(generation) else {
            return;
        };
        if link.stopping {
            return;
        }
        link.stopping = true;
        if let Some(listener) = link.listener.take() {
            listener.abort();
        }
        let session = link.session.clone();
        let endpoint = link.endpoint.clone();
        tasks::stop(tasks::Stop {
            daemon,
            endpoint,
            session,
            own,
            daemon_fate,
            generation,
            tx,
        });
    }

    fn stop_plan(&self, why: StopWhy) -> String {
        let ladder = format!(
            "SIGCONT, {}SIGTERM, SIGKILL after {} ms",
            if self.daemon.shutdown_path.is_some() {
                "shutdown request, "
            } else {
                ""
            },
            self.daemon.term_grace.as_millis()
        );
        match why {
            StopWhy::Shutdown if !self.stop_on_exit => {
                "end the session; the daemon keeps running".to_owned()
            }
            _ => ladder,
        }
    }

    fn kill(&mut self, generation: u64) {
        let mine = self
            .own
            .as_ref()
            .map(|own| own.identity)
            .filter(|identity| self.recorded() == Some(*identity));
        if let Some(identity) = mine.filter(|_| self.stop_on_exit) {
            identity.signal_group(Signal::SIGKILL);
        }
        self.down(generation, EndCause::Exited(ExitStatus::Unknown), None);
    }

    fn cancel(&mut self, generation: u64, id: u64) -> bool {
        // A 2026-07-28 request is cancelled by closing its response stream; a posted
        // `notifications/cancelled` would be acknowledged and dropped.
        let Some(link) = self.link(generation) else {
            return false;
        };
        match link.posts.get(&id) {
            Some((post, true)) => {
                post.abort();
                link.posts.remove(&id);
                true
            }
            _ => false,
        }
    }

    async fn next_event(&mut self) -> BackendEvent {
        loop {
            if let Some(event) = self.pending.pop_front() {
                return event;
            }
            match self.rx.recv().await {
                Some(report) => self.on_internal(report),
                None => return std::future::pending().await,
            }
        }
    }

    fn status(&self) -> Value {
        let record = DaemonRecord::load(&self.daemon.state_dir);
        let link = self.link.as_ref();
        json!({
            "url": self.daemon.endpoint.url(),
            "started_by_this_bridge": record
                .current()
                .is_some_and(|c| self.own.as_ref().is_some_and(|own| own.identity.pid == c.pid)),
            "session_id": link.and_then(|l| l.session.id.clone()),
            "starts": record.starts.len(),
            "bridge_pid": std::process::id(),
        })
    }

    fn starts(&self) -> Option<Vec<StartRecord>> {
        let starts = DaemonRecord::load(&self.daemon.state_dir)
            .starts
            .into_iter()
            .filter_map(|start| {
                Some(StartRecord {
                    generation: start.generation,
                    pid: Some(start.pid),
                    started_at: start.started_at.parse().ok()?,
                    reason: start.reason,
                })
            })
            .collect();
        Some(starts)
    }
}
