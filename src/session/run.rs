//! The session driver: start the agent, read its output line by line into the log, the
//! parser, the tracker and the meter, act on stop decisions and requests, and turn the
//! end into a [`SessionReport`].

use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::Instant;

use super::control::SessionControl;
use super::event::{Activity, ActivityKind, Thread};
use super::event::{SessionEvent, SessionWarning, StopCause};
use super::guard::{CompactionGuard, GUARD_ENV, GuardPipe, STOP_ENV, StopMarker};
use super::home::{self, Followed};
use super::log::{LogFailure, LogState, SessionLog, StderrLog, own_log_dir, stderr_log_path};
use super::outage::Outage;
use super::outcome::{LimitReason, SpawnFailure};
use super::pacing::SnapshotPacing;
use super::report::SessionReport;
use super::spec::SessionSpec;
use super::state::SessionState;
use super::stop::{StopContext, Stops};
use super::throttle::{Admit, Throttle};
use super::tracker::Tracker;
use crate::agent::{AgentEvent, AgentFailure, ApiRetry, FailureKind, LastWords};
use crate::context::{ContextMeter, Snapshot};
use crate::process::{ChildControl, ProcessCommand, ProcessEvent, Role, StopLadder, Stream};

/// How long an agent that printed its final `result` may take to exit before it is
/// stopped (Claude Code exits within milliseconds; one waiting on a leftover child
/// process would otherwise hold the run until the session timeout).
const RESULT_LINGER: Duration = Duration::from_secs(10);

/// Run one agent session to its end. See the [module docs](super) for the whole
/// picture.
///
/// Never fails: an agent that cannot be started ends as
/// [`SessionOutcome::SpawnError`](super::SessionOutcome::SpawnError). Never hangs past the timeout plus the stop ladder:
/// every way out of the session reaps the agent. Events are sent on `events` as they
/// happen; a closed receiver is fine (the events are dropped, the session goes on).
/// `control` carries stop requests from the caller (manual restart, interrupt).
///
/// Cancelling the returned future (dropping it) kills the agent's process group at once.
pub async fn run(
    spec: SessionSpec,
    events: mpsc::UnboundedSender<SessionEvent>,
    control: SessionControl,
) -> SessionReport {
    Driver::new(&spec, events).run(&control).await
}

/// One session's state while it runs, owned by [`run`].
pub(super) struct Driver<'a> {
    pub(super) spec: &'a SessionSpec,
    pub(super) events: mpsc::UnboundedSender<SessionEvent>,
    pub(super) meter: ContextMeter,
    pub(super) tracker: Tracker,
    pub(super) started_at: jiff::Timestamp,
    pub(super) started: Instant,
    /// Where the agent is in its life: preparing, running, exited.
    pub(super) state: SessionState,
    /// When the meter's figures go out, and the last ones that did.
    pub(super) pacing: SnapshotPacing<Snapshot>,
    /// Where the session is headed, and what decides its stop.
    pub(super) stops: Stops,
    /// A failure recognised while the session ran (a retry no retry can fix, an API out
    /// of reach past the grace).
    pub(super) failure: Option<AgentFailure>,
    /// Since when the agent's retries have found its API unreachable.
    pub(super) outage: Outage,
    /// The error result, non-JSON stdout and stderr tail, for a failure's report.
    pub(super) words: LastWords,
    /// Every stderr line, in a file opened on the first one.
    pub(super) stderr_log: LogState<StderrLog>,
    pub(super) throttle: Throttle,
    pub(super) warnings: Vec<SessionWarning>,
    /// The transcript: every stdout line as it came.
    pub(super) log: LogState<SessionLog>,
    pub(super) lines_seen: u64,
    pub(super) invalid_utf8_warned: bool,
    pub(super) command: Option<String>,
}

impl<'a> Driver<'a> {
    fn new(spec: &'a SessionSpec, events: mpsc::UnboundedSender<SessionEvent>) -> Self {
        Driver {
            spec,
            events,
            meter: ContextMeter::new(spec.meter.clone(), spec.window.clone()),
            tracker: Tracker::new(&spec.cwd),
            started_at: jiff::Timestamp::now(),
            started: Instant::now(),
            state: SessionState::Preparing,
            pacing: SnapshotPacing::new(),
            stops: Stops::new(spec.tool_grace),
            failure: None,
            outage: Outage::default(),
            words: LastWords::default(),
            stderr_log: LogState::Unopened,
            throttle: Throttle::new(std::time::Instant::now()),
            warnings: Vec::new(),
            log: LogState::Unopened,
            lines_seen: 0,
            invalid_utf8_warned: false,
            command: None,
        }
    }

    async fn run(mut self, control: &SessionControl) -> SessionReport {
        let spec = self.spec;
        if let Err(err) = own_log_dir(spec.files_root.as_deref(), &spec.log_path) {
            let doing = format!("prepare the directory of {}", spec.log_path.display());
            return self
                .not_started(SpawnFailure::making(doing, &err, None))
                .await;
        }
        match SessionLog::create(&spec.log_path) {
            Ok(log) => self.log = LogState::Writing(log),
            Err(err) => {
                let doing = format!("create the session log {}", spec.log_path.display());
                let help = Some("check that the directory is writable");
                return self
                    .not_started(SpawnFailure::making(doing, &err, help))
                    .await;
            }
        }
        let command = match &spec.resume {
            Some(resume) => spec.backend.resume_command(&crate::agent::ResumeRequest {
                session_id: &resume.session_id,
                prompt: &spec.prompt,
                model: &spec.model,
                window: resume.window,
            }),
            None => spec.backend.command(&spec.prompt, &spec.model),
        };
        let command = match command {
            Ok(command) => command,
            Err(err) => {
                let help = miette::Diagnostic::help(&err).map(|help| help.to_string());
                return self.not_started(SpawnFailure::from_error(&err, help)).await;
            }
        };
        self.command = Some(command.to_string());
        let home::Prepared {
            env: agent_env,
            followed,
        } = match home::prepare_files(&command, &spec.log_path) {
            Ok(prepared) => prepared,
            Err(failure) => return self.not_started(failure).await,
        };
        let mut process = ProcessCommand::new(&command.program)
            .args(&command.args)
            .current_dir(&spec.cwd)
            .role(Role::Agent)
            .stop_ladder(StopLadder::agent(spec.stop_grace));
        if !spec.inherit_env {
            process = process.env_clear();
        }
        process = process.envs(&command.env).envs(spec.env.iter().cloned());
        process = process.envs(agent_env);
        let guard = GuardPipe::arm(spec.compaction_guard, &spec.log_path).unwrap_or_else(|err| {
            self.warn(SessionWarning::Guard {
                message: err.to_string(),
            });
            None
        });
        if let Some(guard) = &guard {
            process = process.env(GUARD_ENV, guard.path().display().to_string());
        }
        let marker = StopMarker::beside(&spec.log_path);
        process = process.env(STOP_ENV, marker.path().display().to_string());
        self.stops.set_marker(marker);
        if let Some(stdin) = command.stdin {
            process = process.stdin_payload(stdin);
        }
        let mut child = match process.spawn() {
            Ok(child) => child,
            Err(err) => {
                let help = SpawnFailure::help_for(&err);
                return self.not_started(SpawnFailure::from_error(&err, help)).await;
            }
        };
        let ctl = child.control();
        self.state.started(child.pid());
        tracing::debug!(pid = child.pid(), command = ?self.command, "agent session started");
        self.send(SessionEvent::Started {
            pid: child.pid(),
            start: child.identity().start,
            command: self.command.clone().unwrap_or_default(),
            log_path: spec.log_path.clone(),
        });
        if let Some(reason) = self.meter.observe_prompt(&spec.prompt) {
            let (stops, cx) = self.stops_with_context(&ctl);
            stops.meter_stop(reason, Instant::now(), &cx);
        }
        self.send_snapshot();

        if let Some(mut output) = child.take_events() {
            self.drive(&mut output, &ctl, control, guard, followed)
                .await;
        } else {
            // Not reachable (the events were just created), but never leave a child.
            let report = ctl.kill().await;
            self.state.exited(report, Instant::now());
        }
        drop(child);
        self.finish().await
    }

    /// The event loop: output, requests, the timeout and the linger timer, until the
    /// process layer's last event.
    async fn drive(
        &mut self,
        output: &mut crate::process::Events,
        ctl: &ChildControl,
        control: &SessionControl,
        mut guard: Option<GuardPipe>,
        mut followed: Option<Followed>,
    ) {
        let mut follow_tick = tokio::time::interval(home::FOLLOW_INTERVAL);
        follow_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut requests = control.subscribe();
        let mut requests_open = true;
        let timeout = self.spec.timeout;
        let timeout_at = timeout.map(|after| self.started + after);
        let mut timeout_fired = false;
        loop {
            let linger_at = self.state.linger_deadline(RESULT_LINGER);
            // A figure held back by the pacing goes out when its interval ends, so a
            // quiet agent never leaves the gauge behind.
            let snapshot_due = self.pacing.due();
            let tool_deadline = self.stops.tool_deadline();
            let cut_off_at = self
                .outage
                .cut_off_at(self.spec.offline_grace)
                .filter(|_| self.failure.is_none());
            tokio::select! {
                biased;
                changed = requests.changed(), if requests_open => {
                    if changed.is_ok() {
                        let now = *requests.borrow_and_update();
                        let (stops, cx) = self.stops_with_context(ctl);
                        stops.apply(now, &cx);
                    } else {
                        requests_open = false;
                    }
                }
                () = sleep_until(timeout_at), if !timeout_fired => {
                    timeout_fired = true;
                    let after = timeout.unwrap_or_default();
                    self.begin_stop(StopCause::Timeout { after }, ctl);
                }
                () = sleep_until(linger_at), if linger_at.is_some() => {
                    self.state.overstayed();
                    if ctl.is_running() {
                        self.warn(SessionWarning::Lingered { after: RESULT_LINGER });
                        ctl.request_stop();
                    }
                }
                () = GuardPipe::heard(guard.as_mut()), if guard.is_some() => {
                    if self.spec.compaction_guard == CompactionGuard::Stop {
                        tracing::debug!("the agent was about to compact; its hook blocked it, stopping the session");
                        self.begin_stop(
                            StopCause::ContextLimit(LimitReason::AgentCompactionBlocked),
                            ctl,
                        );
                        // Heard once is enough; the FIFO goes with it.
                        guard = None;
                    } else {
                        tracing::debug!("the agent was about to compact; its hook blocked it");
                    }
                }
                () = sleep_until(tool_deadline), if tool_deadline.is_some() => {
                    let (stops, cx) = self.stops_with_context(ctl);
                    stops.tool_grace_over(&cx);
                }
                () = sleep_until(cut_off_at), if cut_off_at.is_some() => self.on_cut_off(ctl),
                () = sleep_until(snapshot_due), if snapshot_due.is_some() => self.flush_snapshot(),
                _ = follow_tick.tick(), if followed.is_some() => {
                    self.read_followed(&mut followed, false, ctl);
                }
                event = output.recv() => match event {
                    Some(event) => self.on_process_event(event, ctl),
                    None => break,
                },
            }
        }
        // What the agent wrote last, before it exited.
        self.read_followed(&mut followed, true, ctl);
    }

    /// Take in the lines the agent added to the file it follows (see
    /// [`home::read_followed`]).
    fn read_followed(&mut self, followed: &mut Option<Followed>, at_end: bool, ctl: &ChildControl) {
        if followed.is_none() {
            return;
        }
        match home::read_followed(followed, at_end) {
            Ok(lines) => {
                let arrived = Instant::now();
                for line in lines {
                    for event in self.spec.backend.parse_followed_line(&line) {
                        self.on_event(event, arrived, ctl);
                    }
                }
                self.send_snapshot();
            }
            Err(warning) => self.warn(warning),
        }
    }

    fn on_process_event(&mut self, event: ProcessEvent, ctl: &ChildControl) {
        match event {
            ProcessEvent::Line {
                stream: Stream::Stdout,
                line,
            } => self.on_line(&line, ctl),
            ProcessEvent::Line {
                stream: Stream::Stderr,
                line,
            } => {
                self.log_stderr(&line);
                let text = String::from_utf8_lossy(&line);
                self.words
                    .observe_stderr(&text, self.spec.stderr_tail_lines);
                if let Some(retry) = self.spec.backend.stderr_retry(&text) {
                    self.on_retry(retry, ctl);
                }
                if self.admit() {
                    self.send(SessionEvent::Stderr(text.into_owned()));
                }
            }
            ProcessEvent::LineTooLong { stream, limit, .. } => {
                self.warn(SessionWarning::LineTooLong { stream, limit });
            }
            // Processes left in the agent's group (Claude Code's own helpers, a tool's
            // background job) were killed with it: expected, and worth a debug line only.
            // Something outside the group holding the output open survived: that warns.
            ProcessEvent::Leaked(leak) if leak.open_pipes.is_empty() => {
                tracing::debug!(%leak, "the agent's leftover processes were killed with its group");
            }
            ProcessEvent::Leaked(leak) => self.warn(SessionWarning::Leaked(leak)),
            ProcessEvent::Exited(report) => {
                tracing::debug!(status = %report.status, "agent session exited");
                self.state.exited(report, Instant::now());
            }
        }
    }

    /// One stdout line: log it, parse it, track it, meter it — and stop at once if it
    /// crossed a threshold — then tell the observers.
    fn on_line(&mut self, line: &[u8], ctl: &ChildControl) {
        let arrived = Instant::now();
        self.lines_seen += 1;
        self.log_line(line);
        if !self.invalid_utf8_warned && std::str::from_utf8(line).is_err() {
            self.invalid_utf8_warned = true;
            self.warn(SessionWarning::InvalidUtf8 {
                line: self.lines_seen,
            });
        }
        for event in self.spec.backend.parse_line(line) {
            self.on_event(event, arrived, ctl);
        }
        self.send_snapshot();
    }

    /// One agent event: track it, meter it — and stop at once if it crossed a threshold
    /// — then show what it did.
    pub(super) fn on_event(&mut self, event: AgentEvent, arrived: Instant, ctl: &ChildControl) {
        let activity = self.tracker.observe(&event);
        let reason = self.meter.observe(&event);
        self.stops.observe(&event);
        self.words.observe(&event);
        if let AgentEvent::ApiRetry(retry) = &event {
            self.on_retry(retry.clone(), ctl);
        }
        if let AgentEvent::Result(_) = &event {
            self.state.answered(arrived);
        }
        if matches!(event, AgentEvent::Assistant(_) | AgentEvent::Result(_)) {
            self.outage.answered();
        }
        if let Some(reason) = reason {
            let (stops, cx) = self.stops_with_context(ctl);
            stops.meter_stop(reason, arrived, &cx);
        }
        if let AgentEvent::User(_) = &event {
            let (stops, cx) = self.stops_with_context(ctl);
            stops.after_tool_result(&cx);
        }
        for agent in self.tracker.take_new_agents() {
            self.send(SessionEvent::SubagentUsed { agent });
        }
        for line in activity {
            if self.admit() {
                self.send(SessionEvent::Activity(line));
            }
        }
    }

    /// Whether one more activity or stderr line may be shown; when lines were left out
    /// before it, a note says how many first (see [`Throttle`]).
    fn admit(&mut self) -> bool {
        match self.throttle.admit(std::time::Instant::now()) {
            Admit::Show => true,
            Admit::ShowAfterGap(gap) => {
                self.send_gap_note(gap);
                true
            }
            Admit::Drop => false,
        }
    }

    pub(super) fn send_gap_note(&mut self, gap: u64) {
        let text = format!(
            "{gap} line{} of agent output not shown here; the transcript {} and its .stderr.log have them all",
            crate::words::plural(gap),
            self.spec.log_path.display()
        );
        self.send(SessionEvent::Activity(Activity {
            thread: Thread::Main,
            kind: ActivityKind::Notice { text },
        }));
    }

    /// Append a stderr line to the session's stderr log, opened on first use.
    fn log_stderr(&mut self, line: &[u8]) {
        let transcript = &self.spec.log_path;
        let failure = match self
            .stderr_log
            .write(line, || StderrLog::create(transcript))
        {
            Ok(()) => return,
            Err(LogFailure::Create(err)) => {
                format!("could not be created, stderr is not saved: {err}")
            }
            Err(LogFailure::Write(err)) => {
                format!("write failed, later stderr lines are not saved: {err}")
            }
        };
        self.warn(SessionWarning::Log {
            path: stderr_log_path(&self.spec.log_path),
            message: failure,
        });
    }

    fn log_line(&mut self, line: &[u8]) {
        if let Err(err) = self.log.append(line) {
            self.warn(SessionWarning::Log {
                path: self.spec.log_path.clone(),
                message: format!("write failed, later lines are not saved: {err}"),
            });
        }
    }

    /// One of the agent's own API retries: shown at once; one no retry can fix
    /// (credentials, login, model) stops the session rather than wait for the agent to
    /// give up minutes later, and so does an API unreachable for `offline_grace`.
    fn on_retry(&mut self, retry: ApiRetry, ctl: &ChildControl) {
        // Paced like activity lines: an agent printing retries in a loop must not flood
        // the run's event queue.
        if self.admit() {
            self.send(SessionEvent::ApiRetry(retry.clone()));
        }
        let cut_off = retry.kind == Some(FailureKind::Unreachable)
            && self
                .outage
                .unreachable(&retry, Instant::now(), self.spec.offline_grace);
        if let Some(kind) = retry.kind.filter(|kind| kind.is_permanent() || cut_off) {
            self.fail(kind, &retry, ctl);
        }
    }

    /// The offline grace ended while the agent waits to retry an API it cannot reach.
    fn on_cut_off(&mut self, ctl: &ChildControl) {
        if let Some(retry) = self.outage.latest().cloned() {
            self.fail(FailureKind::Unreachable, &retry, ctl);
        }
    }

    /// Stop the session for a failure of `kind` its `retry` showed, said in words.
    fn fail(&mut self, kind: FailureKind, retry: &ApiRetry, ctl: &ChildControl) {
        if self.failure.is_some() {
            return;
        }
        let said = match (kind, retry.status) {
            // Claude Code says "unknown" of a connection refused.
            (FailureKind::Unreachable, _) if matches!(retry.error.as_str(), "" | "unknown") => {
                "cannot reach the API: its requests get no answer (connection refused, DNS, \
                 the network)"
                    .to_owned()
            }
            (FailureKind::Unreachable, _) => format!("cannot reach the API: {}", retry.error),
            (_, Some(status)) => format!("API error {status}: {}", retry.error),
            (_, None) => format!("API error: {}", retry.error),
        };
        let failure = AgentFailure::new(kind, &said);
        tracing::debug!(%failure, "the agent's retries cannot help; stopping the session");
        self.failure = Some(failure.clone());
        self.begin_stop(StopCause::AgentFailure(failure), ctl);
    }

    /// Stop the agent for `cause`, decided now (see [`Stops::begin`]).
    fn begin_stop(&mut self, cause: StopCause, ctl: &ChildControl) {
        let (stops, cx) = self.stops_with_context(ctl);
        stops.begin(cause, Instant::now(), &cx);
    }

    /// The session's stops, with what a stop needs from the rest of the session.
    fn stops_with_context<'s>(
        &'s mut self,
        ctl: &'s ChildControl,
    ) -> (&'s mut Stops, StopContext<'s>) {
        let cx = StopContext {
            ctl,
            meter: &self.meter,
            events: &self.events,
        };
        (&mut self.stops, cx)
    }

    pub(super) fn send(&self, event: SessionEvent) {
        // A closed receiver means nobody watches; the session goes on regardless.
        let _ = self.events.send(event);
    }

    /// Pass the meter's figures on when they changed, as the [pacing](super::pacing)
    /// allows; a figure held back goes out when the interval ends (the drive loop's
    /// timer) and the last one at the end. The meter itself sees every line: this only
    /// paces what is shown.
    pub(super) fn send_snapshot(&mut self) {
        if self.pacing.hold(Instant::now(), self.stops.is_stopping()) {
            return;
        }
        self.flush_snapshot();
    }

    /// Send the meter's figures if they differ from the last ones sent.
    pub(super) fn flush_snapshot(&mut self) {
        if let Some(snapshot) = self.pacing.release(self.meter.snapshot(), Instant::now()) {
            self.send(SessionEvent::Context(snapshot));
        }
    }

    /// Keep `warning` for the report and send it to the session's caller, who tells the
    /// user (the log keeps it at debug level).
    pub(super) fn warn(&mut self, warning: SessionWarning) {
        tracing::debug!("{warning}");
        self.warnings.push(warning.clone());
        self.send(SessionEvent::Warning(warning));
    }
}

/// Sleep until `deadline`, or forever without one.
async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}
