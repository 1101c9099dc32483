//! Which run events become notifications, and in what words: [`notice_for`].

use std::collections::HashMap;

use super::{Notice, Priority};
use crate::events::{Event, PhaseState};
use crate::state::RunStatus;
use crate::terminal_safe::clipped;
use crate::words::plural;
use crate::words::{duration, thousands};

/// The most characters of a notice's title.
const MAX_TITLE: usize = 120;
/// The most characters of a notice's message.
const MAX_MESSAGE: usize = 1_000;

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
    // A plan title or a reason is the user's or the agent's text, of any length; a
    // notice is read on a phone (ntfy refuses a message over 4 KB).
    let notice = |title: String, message: String, priority, tags: &[&'static str]| Notice {
        title: clipped(&title, MAX_TITLE).into_owned(),
        message: clipped(
            &if plan.is_empty() {
                message
            } else {
                format!("{plan}: {message}")
            },
            MAX_MESSAGE,
        )
        .into_owned(),
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
                PhaseState::AwaitingHuman => Some(notice(
                    format!("debussy: phase {phase_id} needs you"),
                    format!("{phase}'s branch could not be merged{because}"),
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
        Event::WaitingForLimit {
            phase_id,
            kind,
            until,
            said,
            ..
        } => Some(notice(
            format!("debussy: waiting for {}", kind.waiting_for()),
            format!(
                "{} waits for {} until {} (“{said}”); the run goes on then",
                facts.phase(phase_id),
                kind.waiting_for(),
                crate::words::local_time_of(until)
            ),
            Priority::Default,
            &["hourglass_flowing_sand"],
        )),
        Event::RunFinished { summary } => {
            let done = summary
                .phases
                .iter()
                .filter(|p| p.status == PhaseState::Completed)
                .count();
            let figures = format!(
                "{done}/{} phases completed in {}, {} tokens billed, ${:.2}",
                summary.phases.len(),
                duration(summary.duration_secs),
                thousands(summary.billed.total()),
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
