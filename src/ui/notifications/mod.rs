//! Notifications: a sink that turns the few run events a person wants to hear about
//! (run started, phase completed or failed, context restart, a phase that needs a human,
//! run finished) into short messages and delivers them through the configured provider:
//! an [ntfy](https://ntfy.sh) server ([`ntfy`]) or the desktop's notifier ([`desktop`]).
//!
//! # Theory of operation
//!
//! [`Notifier`] is a [`Sink`]: `event` only decides whether an event is worth a
//! notification ([`notice_for`], pure) and hands it to a worker thread over a channel, so
//! a slow or dead server never slows the run. The worker delivers notices one at a time;
//! a failure is logged and the next notice is tried. [`Sink::close`] (the run ended)
//! closes the channel and waits, at most [`FLUSH_WAIT`], for the worker to send what is
//! queued, so the "run finished" notice goes out before debussy exits.

pub mod desktop;
pub mod ntfy;

use std::collections::HashMap;
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;

use crate::config::{NotificationProvider, NotificationsConfig};
use crate::events::{Event, PhaseState};
use crate::state::RunStatus;
use crate::ui::Sink;
use crate::ui::summary::{duration, thousands};
use crate::words::plural;

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
    /// The ntfy server could not be reached or refused.
    #[error("failed to post to {url}: {source}")]
    Http {
        /// Where.
        url: String,
        /// Why.
        #[source]
        source: Box<ureq::Error>,
    },
    /// The desktop notifier could not be run.
    #[error("failed to run {program}: {source}")]
    Spawn {
        /// Which program.
        program: String,
        /// Why.
        #[source]
        source: std::io::Error,
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

/// Something that delivers notices (a provider).
pub trait Deliver: Send {
    /// Deliver one notice.
    ///
    /// # Errors
    /// When it could not be delivered; the notifier logs it and goes on.
    fn deliver(&mut self, notice: &Notice) -> Result<(), NotifyError>;
}

/// The run facts a notice needs that its event does not carry.
#[derive(Debug, Default, Clone)]
pub struct RunFacts {
    /// The plan's title.
    pub plan_title: String,
    /// Phase titles by id.
    pub titles: HashMap<String, String>,
}

impl RunFacts {
    /// Learn the plan and its phases from the run's first event.
    pub fn observe(&mut self, event: &Event) {
        if let Event::RunStarted {
            plan_title, phases, ..
        } = event
        {
            self.plan_title.clone_from(plan_title);
            self.titles = phases
                .iter()
                .map(|p| (p.id.clone(), p.title.clone()))
                .collect();
        }
    }

    fn phase(&self, id: &str) -> String {
        match self.titles.get(id) {
            Some(title) => format!("phase {id} \"{title}\""),
            None => format!("phase {id}"),
        }
    }
}

/// The notice for `event`, if it is one people want to hear about.
#[must_use]
pub fn notice_for(event: &Event, facts: &RunFacts) -> Option<Notice> {
    let plan = &facts.plan_title;
    // Messages open with the plan's name once the run has said it.
    let notice = |title: String, message: String, priority, tags: &[&'static str]| Notice {
        title,
        message: if plan.is_empty() {
            message
        } else {
            format!("{plan}: {message}")
        },
        priority,
        tags: tags.to_vec(),
    };
    match event {
        Event::RunStarted {
            phases,
            agent,
            model,
            resumed,
            ..
        } => {
            let pending = phases
                .iter()
                .filter(|p| p.status == PhaseState::Pending)
                .count();
            let verb = if *resumed { "resumed" } else { "started" };
            Some(notice(
                format!("debussy: run {verb}"),
                format!(
                    "{pending} phase{} to run with {agent} ({model})",
                    plural(pending)
                ),
                Priority::Default,
                &["arrow_forward"],
            ))
        }
        Event::PhaseFinished {
            phase_id,
            status,
            attempts,
            restarts,
            error,
        } => {
            let phase = facts.phase(phase_id);
            let because = error
                .as_deref()
                .map(|e| format!(": {e}"))
                .unwrap_or_default();
            match status {
                PhaseState::Completed => Some(notice(
                    format!("debussy: phase {phase_id} completed"),
                    format!(
                        "{phase} completed after {attempts} attempt{} and {restarts} restart{}",
                        plural(*attempts),
                        plural(*restarts)
                    ),
                    Priority::Default,
                    &["white_check_mark"],
                )),
                PhaseState::Failed => Some(notice(
                    format!("debussy: phase {phase_id} failed"),
                    format!("{phase} failed{because}"),
                    Priority::High,
                    &["x"],
                )),
                PhaseState::Blocked => Some(notice(
                    format!("debussy: phase {phase_id} needs you"),
                    format!("{phase} is blocked{because}"),
                    Priority::Urgent,
                    &["warning", "raising_hand"],
                )),
                _ => None,
            }
        }
        Event::Restart {
            phase_id,
            restart,
            max_restarts,
            context_percent,
            ..
        } => Some(notice(
            format!("debussy: context restart {restart}/{max_restarts}"),
            format!(
                "{} restarted with a checkpoint at {context_percent:.1}% context",
                facts.phase(phase_id)
            ),
            Priority::Low,
            &["arrows_counterclockwise"],
        )),
        Event::RunFinished { summary } => {
            let done = summary
                .phases
                .iter()
                .filter(|p| p.status == PhaseState::Completed)
                .count();
            let figures = format!(
                "{done}/{} phases completed in {}, {} tokens, ${:.2}",
                summary.phases.len(),
                duration(summary.duration_secs),
                thousands(summary.tokens),
                summary.cost_usd
            );
            let because = summary
                .error
                .as_deref()
                .map(|e| format!("; {e}"))
                .unwrap_or_default();
            let (priority, tags): (Priority, &[&'static str]) = match summary.status {
                RunStatus::Completed => (Priority::Default, &["tada"]),
                RunStatus::Paused => (Priority::Default, &["pause_button"]),
                _ => (Priority::High, &["x"]),
            };
            Some(notice(
                format!("debussy: run {}", summary.status),
                format!("{figures}{because}"),
                priority,
                tags,
            ))
        }
        _ => None,
    }
}

/// The notifications sink: decides on the run's task, delivers on its own thread.
pub struct Notifier {
    facts: RunFacts,
    queue: Option<mpsc::Sender<Notice>>,
    worker: Option<JoinHandle<()>>,
    finished: mpsc::Receiver<()>,
}

impl Notifier {
    /// The notifier the configuration asks for, or `None` when notifications are off.
    #[must_use]
    pub fn from_config(config: &NotificationsConfig) -> Option<Notifier> {
        if !config.enabled {
            return None;
        }
        let deliver: Box<dyn Deliver> = match config.provider {
            NotificationProvider::None => return None,
            NotificationProvider::Desktop => Box::new(desktop::Desktop::from_env()),
            NotificationProvider::Ntfy => {
                // Validation rejects an enabled ntfy provider without a topic.
                let topic = config.ntfy.topic.clone()?;
                Box::new(ntfy::Ntfy::new(&config.ntfy.server, &topic))
            }
        };
        Some(Notifier::start(deliver))
    }

    /// A notifier delivering through `deliver` on a new thread.
    #[must_use]
    pub fn start(mut deliver: Box<dyn Deliver>) -> Notifier {
        let (queue, notices) = mpsc::channel::<Notice>();
        let (done, finished) = mpsc::channel();
        let worker = std::thread::Builder::new()
            .name("notifications".into())
            .spawn(move || {
                for notice in notices {
                    if let Err(err) = deliver.deliver(&notice) {
                        tracing::warn!("notification \"{}\" not sent: {err}", notice.title);
                    }
                }
                let _ = done.send(());
            });
        let worker = match worker {
            Ok(handle) => Some(handle),
            Err(err) => {
                tracing::warn!("notifications are off: cannot start their thread: {err}");
                None
            }
        };
        Notifier {
            facts: RunFacts::default(),
            queue: worker.is_some().then_some(queue),
            worker,
            finished,
        }
    }
}

impl Sink for Notifier {
    fn event(&mut self, event: &Event) -> std::io::Result<()> {
        self.facts.observe(event);
        if let (Some(queue), Some(notice)) = (&self.queue, notice_for(event, &self.facts)) {
            let _ = queue.send(notice);
        }
        Ok(())
    }

    /// Close the queue and wait (at most [`FLUSH_WAIT`]) for what is queued to go out.
    fn close(&mut self) {
        self.queue = None;
        let Some(worker) = self.worker.take() else {
            return;
        };
        match self.finished.recv_timeout(FLUSH_WAIT) {
            Ok(()) | Err(mpsc::RecvTimeoutError::Disconnected) => {
                let _ = worker.join();
            }
            Err(mpsc::RecvTimeoutError::Timeout) => tracing::warn!(
                "gave up waiting for notifications after {}s",
                FLUSH_WAIT.as_secs()
            ),
        }
    }
}

impl Drop for Notifier {
    fn drop(&mut self) {
        self.close();
    }
}

#[cfg(test)]
mod tests;
