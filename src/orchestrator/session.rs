//! One session of an attempt, as the run sees it: its transcript path, the spec it starts
//! from, its events forwarded to the outputs, the user's requests served while it runs,
//! and its record in the state store.

use std::path::PathBuf;

use tokio::sync::mpsc;

use crate::events::{Event, RunRequest};
use crate::plan::Phase;
use crate::process::ProcessIdentity;
use crate::run_env::RunEnv;
use crate::session::guard::CompactionGuard;
use crate::session::{
    self, SessionControl, SessionEvent, SessionOutcome, SessionReport, SessionSpec,
};
use crate::state::{LiveFigures, LiveSession, SessionKind, SessionRecord, StateError};

use super::runner::Runner;

/// What the user's restart request does to the session running now.
#[derive(Debug, Clone, Copy)]
pub(super) enum RestartRequest {
    /// Stop it for a context restart.
    Restart,
    /// Nothing; the warning says why.
    Refuse(&'static str),
}

impl Runner<'_> {
    /// A transcript path no earlier session of this run used: sessions of a resumed run
    /// start their numbering again, so the number continues past existing files.
    fn fresh_log_path(&self, phase_id: &str, attempt: u32, restart: u32) -> PathBuf {
        let dir = self
            .run
            .root
            .join(".debussy/runs")
            .join(&self.run.run_id)
            .join(phase_id);
        let mut number = restart + 1;
        loop {
            let path = dir.join(format!("attempt-{attempt}-session-{number}.jsonl"));
            if !path.exists() {
                return path;
            }
            number += 1;
        }
    }

    /// The spec of a session of `phase_id` in this runner's tree: the phase's settings,
    /// the run's variables for the agent, `prompt`, the transcript at `log_path`, and
    /// every window agents reported before.
    pub(super) fn phase_session_spec(
        &self,
        phase_id: &str,
        attempt: u32,
        restart: u32,
        prompt: String,
        log_path: PathBuf,
    ) -> SessionSpec {
        let run_env = RunEnv {
            run_id: self.run.run_id.clone(),
            phase_id: phase_id.to_owned(),
            attempt,
            restart,
            project_root: self.run.root.clone(),
        };
        let mut spec = self.session_spec(phase_id).clone().with_env(run_env.vars());
        spec.prompt = prompt;
        spec.log_path = log_path;
        spec.files_root = Some(self.run.root.clone());
        spec.cwd.clone_from(&self.workdir);
        // Every remembered window: the agent names its model in full (`claude-opus-5-5`)
        // on its first line while the config may hold an alias (`opus`), so the window
        // is found by either name as soon as the agent says which model runs.
        spec.window.remembered = self.run.store.context_windows().unwrap_or_default();
        spec
    }

    /// Run one session, forwarding its events and serving requests while it runs.
    #[expect(
        clippy::too_many_arguments,
        reason = "one session's coordinates, each from the attempt that runs it"
    )]
    pub(super) async fn run_session(
        &mut self,
        phase: &Phase,
        execution: i64,
        attempt: u32,
        restart: u32,
        max_restarts: u32,
        prompt: &str,
        restarts_allowed: bool,
    ) -> SessionReport {
        let id = phase.id.as_str().to_owned();
        let log_path = self.fresh_log_path(&id, attempt, restart);
        let mut spec = self.phase_session_spec(&id, attempt, restart, prompt.to_owned(), log_path);
        let model = spec.model.clone();
        if !restarts_allowed {
            spec.meter = spec.meter.observe_only();
        }
        // The agent's own compaction becomes a checkpoint restart while one is left;
        // after that it compacts as it would without debussy.
        if restarts_allowed && restart < max_restarts {
            spec.compaction_guard = CompactionGuard::Stop;
        }
        let control = SessionControl::new();
        let (sender, mut receiver) = mpsc::unbounded_channel();
        let running = session::run(spec, sender, control.clone());
        tokio::pin!(running);
        let deadline = self.guards.deadline();
        let mut live = LiveRecord::new(execution, restart);
        let report = loop {
            tokio::select! {
                report = &mut running => break report,
                Some(event) = receiver.recv() => {
                    self.note_agent_group(&id, &event);
                    self.note_live_session(&id, &mut live, &event);
                    let pause = match &event {
                        SessionEvent::Context(snapshot) => {
                            self.must_pause(&id, snapshot.cost_usd.unwrap_or(0.0))
                        }
                        _ => self.pausing(),
                    };
                    if pause {
                        control.stop();
                    }
                    self.forward(&id, attempt, restart, max_restarts, event);
                }
                () = sleep_until(deadline), if !self.pausing() => {
                    if self.must_pause(&id, 0.0) {
                        control.stop();
                    }
                }
                Some(request) = self.requests.recv() => {
                    let restart = if restarts_allowed {
                        RestartRequest::Restart
                    } else {
                        RestartRequest::Refuse("restarts are off for this attempt")
                    };
                    self.handle_session_request(request, &control, restart);
                }
            }
        };
        while let Ok(event) = receiver.try_recv() {
            self.forward(&id, attempt, restart, max_restarts, event);
        }
        self.note_agent_end(&id);
        self.emit(Event::SessionEnded {
            phase_id: id,
            attempt,
            restart,
            outcome: report.outcome.kind(),
            code: report.outcome.code(),
            detail: report.outcome.to_string(),
            snapshot: report.snapshot.clone(),
            last_words: match &report.outcome {
                SessionOutcome::AgentFailure(_) => report.last_words.quote_besides_result(),
                outcome if outcome.is_success() || outcome.is_context_limit() => None,
                _ => report.last_words.quote(),
            },
        });
        if let Some(window) = &report.reported_window {
            // Under the configured name too, so the next session knows the window even
            // before the agent names its model.
            let names = [window.model.as_str(), model.as_str()];
            let names = names.iter().take(if names[0] == names[1] { 1 } else { 2 });
            for name in names.filter(|name| !name.is_empty()) {
                if let Err(err) = self.run.store.learn_context_window(name, window.tokens) {
                    self.could_not("remember the context window", &err);
                }
            }
        }
        report
    }

    /// Keep the state store's record of the running session current: when it starts,
    /// and what it has spent whenever that changes (a reading per model request, not per
    /// token), so `status` shows it and a killed run still knows what it spent.
    fn note_live_session(&self, phase_id: &str, live: &mut LiveRecord, event: &SessionEvent) {
        let written = match event {
            SessionEvent::Started { log_path, .. } => {
                let spec = self.session_spec(phase_id);
                let session = LiveSession {
                    phase_id: phase_id.to_owned(),
                    execution_id: live.execution,
                    session_index: live.index,
                    agent: spec.backend.name().to_owned(),
                    model: spec.model.clone(),
                    log_path: log_path.display().to_string(),
                    started_at: crate::state::now(),
                    billed: crate::context::cost::Billed::default(),
                    cost_usd: 0.0,
                    cost_estimated: false,
                    context_percent: 0.0,
                    tool_calls: 0,
                };
                self.run
                    .store
                    .start_live_session(&self.run.run_id, &session)
            }
            // Recorded at once: a session killed after it is still judged to have used it.
            SessionEvent::SubagentUsed { agent } => {
                self.run.store.record_agent_used(live.execution, agent)
            }
            SessionEvent::Context(snapshot)
                if live.written != Some((snapshot.billed, snapshot.tool_calls)) =>
            {
                let figures = LiveFigures {
                    billed: snapshot.billed,
                    cost_usd: snapshot.cost_usd.unwrap_or(0.0),
                    cost_estimated: snapshot.cost_estimated,
                    context_percent: snapshot.percent,
                    tool_calls: snapshot.tool_calls,
                };
                let written =
                    self.run
                        .store
                        .update_live_session(&self.run.run_id, phase_id, &figures);
                if written.is_ok() {
                    live.written = Some((snapshot.billed, snapshot.tool_calls));
                }
                written
            }
            _ => Ok(()),
        };
        match written {
            Ok(()) => {}
            Err(err) if self.out_of_space("record the running session", &err) => {}
            // Said once a session: the next figures are tried all the same.
            Err(err @ StateError::Locked { .. }) => {
                if !live.said_locked {
                    live.said_locked = true;
                    self.warn(format!(
                        "phase {phase_id}: {}; the run goes on, and records the running session's figures once the database is free",
                        crate::error_chain::error_chain(&err)
                    ));
                }
            }
            Err(err) => tracing::debug!("cannot record the running session: {err}"),
        }
    }

    /// Record a started agent's process group by its leader as started (it leads its
    /// own group, so pgid = pid), so that a resume after this process dies can find and
    /// kill it, and never another process that got the number later.
    pub(super) fn note_agent_group(&mut self, phase_id: &str, event: &SessionEvent) {
        if let SessionEvent::Started { pid, start, .. } = event {
            let leader = ProcessIdentity {
                pid: *pid,
                start: *start,
            };
            self.agent_group = Some(leader);
            if let Err(err) =
                self.run
                    .store
                    .set_agent_group(&self.run.run_id, phase_id, Some(leader))
            {
                self.could_not("record the agent's process group", &err);
            }
        }
    }

    /// Forget the ended agent's process group, in the store too, if one was recorded.
    pub(super) fn note_agent_end(&mut self, phase_id: &str) {
        if self.agent_group.take().is_some()
            && let Err(err) = self
                .run
                .store
                .set_agent_group(&self.run.run_id, phase_id, None)
        {
            self.could_not("record the agent's end", &err);
        }
    }

    /// Act on the user's request for the session `control` steers; a restart request
    /// does what `restart` says.
    pub(super) fn handle_session_request(
        &mut self,
        request: RunRequest,
        control: &SessionControl,
        restart: RestartRequest,
    ) {
        match request {
            // A session a pause already stops is not stopped twice: only the user's
            // `Kill` kills.
            RunRequest::Interrupt => {
                self.flags.interrupted = true;
                control.stop();
            }
            RunRequest::Kill => {
                self.flags.interrupted = true;
                control.kill();
            }
            RunRequest::SkipPhase => {
                self.flags.skip_requested = true;
                control.stop();
            }
            RunRequest::TogglePause => self.flags.pause_requested = !self.flags.pause_requested,
            RunRequest::RestartNow => match restart {
                RestartRequest::Restart => control.restart(),
                RestartRequest::Refuse(why) => self.warn(why.to_owned()),
            },
            RunRequest::Focus(_) => {}
        }
    }

    fn forward(
        &self,
        phase_id: &str,
        attempt: u32,
        restart: u32,
        max_restarts: u32,
        event: SessionEvent,
    ) {
        let phase_id = phase_id.to_owned();
        match event {
            SessionEvent::Started { pid, log_path, .. } => self.emit(Event::SessionStarted {
                agent: self.session_spec(&phase_id).backend.name().to_owned(),
                model: self.session_spec(&phase_id).model.clone(),
                phase_id,
                attempt,
                restart,
                max_restarts,
                pid,
                log_path: log_path.display().to_string(),
                no_restart: self.no_restart,
                workdir: self
                    .worktree
                    .as_ref()
                    .map(|worktree| worktree.path.display().to_string()),
            }),
            SessionEvent::Activity(activity) => self.emit(Event::Activity { phase_id, activity }),
            SessionEvent::Context(snapshot) => self.emit(Event::Context { phase_id, snapshot }),
            SessionEvent::Stderr(line) => self.emit(Event::AgentStderr { phase_id, line }),
            SessionEvent::Warning(warning) => self.warn(format!("phase {phase_id}: {warning}")),
            SessionEvent::ApiRetry(retry) => self.emit(Event::AgentRetry { phase_id, retry }),
            SessionEvent::Stopping { .. } | SessionEvent::SubagentUsed { .. } => {}
        }
    }

    /// Record a finished session (of `kind`) in the state store; a failure is a warning.
    pub(super) fn record_session(
        &self,
        execution: i64,
        restart: u32,
        kind: SessionKind,
        report: &SessionReport,
    ) {
        let record = SessionRecord {
            session_index: restart,
            kind,
            agent_session_id: report.agent_session_id.clone(),
            agent: Some(report.agent.to_owned()),
            model: report.model.clone(),
            outcome: report.outcome.name().to_owned(),
            outcome_code: i64::from(report.outcome.code()),
            context_tokens: report.snapshot.tokens,
            context_window: report.snapshot.window.tokens,
            window_source: Some(report.snapshot.window.source.label().to_owned()),
            context_percent: report.snapshot.percent,
            tool_calls: report.snapshot.tool_calls,
            cost_usd: report.snapshot.cost_usd.unwrap_or(0.0),
            cost_estimated: report.snapshot.cost_estimated && report.snapshot.cost_usd.is_some(),
            billed: report.snapshot.billed,
            log_path: Some(report.log_path.display().to_string()),
            agent_pgid: report.pid.and_then(|pid| i32::try_from(pid).ok()),
            started_at: report.started_at.to_string(),
            ended_at: report.ended_at.to_string(),
        };
        if let Err(err) = self.run.store.record_session(execution, &record) {
            self.could_not("record the session", &err);
        }
        // What compliance judges, for an attempt a resume goes on with.
        for agent in &report.invoked_agents {
            if let Err(err) = self.run.store.record_agent_used(execution, agent) {
                self.could_not("record a subagent used", &err);
            }
        }
        if let Err(err) = self
            .run
            .store
            .record_refused_calls(execution, &report.permission_denials)
        {
            self.could_not("record the refused calls", &err);
        }
    }
}

/// Where the running session's record stands.
struct LiveRecord {
    /// The attempt's execution row.
    execution: i64,
    /// The session's index in the attempt.
    index: u32,
    /// The figures last written: billed tokens and tool calls.
    written: Option<(crate::context::cost::Billed, u32)>,
    /// Whether the user was told that another process keeps the database locked.
    said_locked: bool,
}

impl LiveRecord {
    fn new(execution: i64, index: u32) -> LiveRecord {
        LiveRecord {
            execution,
            index,
            written: None,
            said_locked: false,
        }
    }
}

/// Sleep until `deadline`, or forever without one.
async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}
