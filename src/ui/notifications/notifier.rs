//! [`Notifier`]: the output sink that turns run events into notices and delivers them
//! from a thread of its own, so a slow notification service never holds the run.

use std::sync::mpsc;
use std::thread::JoinHandle;

use super::{Deliver, FLUSH_WAIT, Notice, RunFacts, desktop, notice_for, ntfy};
use crate::config::{NotificationProvider, NotificationsConfig};
use crate::events::Event;
use crate::ui::Sink;

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
