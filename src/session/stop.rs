//! The session's own stops: [`Stops`] follows the session's course ([`Course`]: running,
//! completed, or stopping), what it decided and why, where the stop stands
//! ([`StopState`]: waiting for a running tool call's result, or asked of the process
//! layer), the main-thread tool calls in flight ([`ToolsInFlight`]), and the caller's
//! requests (manual restart, interrupt, kill).
//!
//! A context stop decided while a main-thread tool call runs waits for that call's result
//! (up to `agent.tool_grace`) and stops before the next model request: an interrupted
//! tool can leave a stale lock or a half-written file behind. Claude Code's
//! `PostToolUse` hook ([`super::guard::StopMarker`]) makes it end cleanly right after
//! the result; for other agents the stop follows the result line at once. A tool that
//! outlasts the grace is interrupted as before, and the report says which.

use std::collections::BTreeMap;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::Instant;

use super::control::Requests;
use super::event::{Activity, ActivityKind, SessionEvent, StopCause, Thread};
use super::guard::StopMarker;
use super::outcome::LimitReason;
use crate::agent::{AgentEvent, AssistantBlock, UserBlock};
use crate::context::{ContextMeter, Snapshot, StopReason};
use crate::process::ChildControl;

/// A stop the session decided.
#[derive(Debug)]
pub(super) struct Stopping {
    pub(super) cause: StopCause,
    /// When the stop was decided: the arrival of the line that crossed the threshold,
    /// or the request.
    pub(super) decided_at: Instant,
    /// The meter when it was decided.
    pub(super) snapshot: Snapshot,
}

/// Where the session's stop stands.
#[derive(Debug)]
pub(super) enum StopState {
    /// Decided while a main-thread tool call ran: the agent goes on until the call's
    /// result arrives, or until `deadline`.
    AwaitingTool {
        stopping: Stopping,
        /// The call waited for, in a few words (`Bash: make test`).
        tool: String,
        deadline: Instant,
    },
    /// The process layer was asked to stop the agent at `requested_at`.
    Requested {
        stopping: Stopping,
        requested_at: Instant,
        /// The tool call the stop interrupted after the grace ran out, if one.
        cut_short: Option<String>,
    },
}

impl StopState {
    /// The decision, wherever the stop stands.
    pub(super) fn stopping(&self) -> &Stopping {
        match self {
            StopState::AwaitingTool { stopping, .. } | StopState::Requested { stopping, .. } => {
                stopping
            }
        }
    }

    /// When the wait for a running tool call ends, while there is one.
    pub(super) fn tool_deadline(&self) -> Option<Instant> {
        match self {
            StopState::AwaitingTool { deadline, .. } => Some(*deadline),
            StopState::Requested { .. } => None,
        }
    }

    /// When the process layer was asked to stop (`None` while waiting for a tool).
    pub(super) fn requested_at(&self) -> Option<Instant> {
        match self {
            StopState::Requested { requested_at, .. } => Some(*requested_at),
            StopState::AwaitingTool { .. } => None,
        }
    }

    /// The tool call the stop interrupted after the grace ran out, if one.
    pub(super) fn cut_short(&self) -> Option<&str> {
        match self {
            StopState::Requested { cut_short, .. } => cut_short.as_deref(),
            StopState::AwaitingTool { .. } => None,
        }
    }
}

/// The main thread's tool calls that have no result yet, by call id.
#[derive(Debug, Default)]
pub(super) struct ToolsInFlight {
    calls: BTreeMap<String, String>,
}

impl ToolsInFlight {
    /// Follow one event: a main-thread call starts one, its result ends it.
    pub(super) fn observe(&mut self, event: &AgentEvent) {
        match event {
            AgentEvent::Assistant(message) if message.parent_tool_use_id.is_none() => {
                for block in &message.content {
                    if let AssistantBlock::ToolUse(call) = block {
                        self.calls
                            .insert(call.id.clone(), describe(&call.name, &call.input));
                    }
                }
            }
            AgentEvent::User(message) if message.parent_tool_use_id.is_none() => {
                for block in &message.content {
                    if let UserBlock::ToolResult(result) = block {
                        self.calls.remove(&result.tool_use_id);
                    }
                }
            }
            _ => {}
        }
    }

    /// One call still running, in a few words, if any.
    pub(super) fn running(&self) -> Option<&str> {
        self.calls.values().next().map(String::as_str)
    }
}

/// `Bash: sleep 4 && touch f`, `Write: src/a.rs`, or the tool's name.
fn describe(name: &str, input: &serde_json::Value) -> String {
    crate::agent::DeniedCall {
        tool_name: name.to_owned(),
        tool_use_id: None,
        tool_input: input.clone(),
    }
    .describe()
}

/// Where the session is headed.
#[derive(Debug, Default)]
#[expect(
    clippy::large_enum_variant,
    reason = "one per session, held in place for its whole life"
)]
pub(super) enum Course {
    /// Working; no stop decided and no successful result yet.
    #[default]
    Running,
    /// A successful `result` arrived before any stop was decided: the session completed,
    /// whatever happens after (a later stop only makes the agent exit).
    Completed,
    /// debussy decided to stop the session.
    Stopping(StopState),
}

/// What a stop needs from the session that decides it: the process to stop, the meter
/// to snapshot, and the events to tell.
pub(super) struct StopContext<'a> {
    pub(super) ctl: &'a ChildControl,
    pub(super) meter: &'a ContextMeter,
    pub(super) events: &'a mpsc::UnboundedSender<SessionEvent>,
}

impl StopContext<'_> {
    fn send(&self, event: SessionEvent) {
        // A closed receiver means nobody watches; the session goes on regardless.
        let _ = self.events.send(event);
    }
}

/// The session's course and everything that decides a stop: the main-thread tool calls
/// in flight, the file that tells the agent's hook to end the session, and the caller's
/// requests acted on so far.
#[derive(Debug)]
pub(super) struct Stops {
    course: Course,
    tools: ToolsInFlight,
    marker: Option<StopMarker>,
    /// How long a context stop waits for a running tool call (`agent.tool_grace`).
    tool_grace: Duration,
    /// The caller's requests as last acted on.
    acted_on: Requests,
}

impl Stops {
    /// A running session whose context stops wait up to `tool_grace` for a tool call.
    pub(super) fn new(tool_grace: Duration) -> Self {
        Stops {
            course: Course::Running,
            tools: ToolsInFlight::default(),
            marker: None,
            tool_grace,
            acted_on: Requests::default(),
        }
    }

    /// Tell the agent's `PostToolUse` hook through `marker` when the session stops.
    pub(super) fn set_marker(&mut self, marker: StopMarker) {
        self.marker = Some(marker);
    }

    /// Where the session is headed.
    pub(super) fn course(&self) -> &Course {
        &self.course
    }

    /// The stop decided, if one.
    pub(super) fn state(&self) -> Option<&StopState> {
        match &self.course {
            Course::Stopping(state) => Some(state),
            Course::Running | Course::Completed => None,
        }
    }

    /// Whether a stop was decided.
    pub(super) fn is_stopping(&self) -> bool {
        self.state().is_some()
    }

    /// When the wait for a running tool call ends, while a stop waits for one.
    pub(super) fn tool_deadline(&self) -> Option<Instant> {
        self.state().and_then(StopState::tool_deadline)
    }

    /// Follow one agent event: the tool calls in flight, and a successful `result`
    /// before any stop, which completes the session.
    pub(super) fn observe(&mut self, event: &AgentEvent) {
        self.tools.observe(event);
        if let AgentEvent::Result(result) = event
            && result.is_success()
            && matches!(self.course, Course::Running)
        {
            self.course = Course::Completed;
        }
    }

    /// The meter crossed a threshold.
    pub(super) fn meter_stop(
        &mut self,
        reason: StopReason,
        decided_at: Instant,
        cx: &StopContext<'_>,
    ) {
        tracing::debug!(%reason, "context meter decided to stop the session");
        self.begin(
            StopCause::ContextLimit(LimitReason::Meter(reason)),
            decided_at,
            cx,
        );
    }

    /// Start stopping the agent for `cause`, unless a stop is already under way (the
    /// first cause stays) or the agent already completed (then it is only made to exit).
    /// A context stop decided while a main-thread tool call runs waits for its result.
    pub(super) fn begin(&mut self, cause: StopCause, decided_at: Instant, cx: &StopContext<'_>) {
        match &self.course {
            Course::Completed => {
                cx.ctl.request_stop();
                return;
            }
            Course::Stopping(state) => {
                // The first cause stays; but a timeout or a failure does not wait for the
                // tool a context stop was waiting for.
                if state.tool_deadline().is_some() && !matches!(cause, StopCause::ContextLimit(_)) {
                    self.tool_grace_over(cx);
                }
                return;
            }
            Course::Running => {}
        }
        let stopping = Stopping {
            cause: cause.clone(),
            decided_at,
            snapshot: cx.meter.snapshot(),
        };
        let grace = self.tool_grace;
        let running = self.tools.running().map(str::to_owned);
        if let (StopCause::ContextLimit(_), Some(tool), false) = (&cause, running, grace.is_zero())
        {
            self.mark_stop();
            let text = format!(
                "{cause}; stopping once the running {tool} call returns (at most {}s)",
                grace.as_secs()
            );
            cx.send(SessionEvent::Activity(Activity {
                thread: Thread::Main,
                kind: ActivityKind::Notice { text },
            }));
            self.course = Course::Stopping(StopState::AwaitingTool {
                stopping,
                tool,
                deadline: Instant::now() + grace,
            });
            return;
        }
        self.request_stop(stopping, None, cx.ctl);
        cx.send(SessionEvent::Stopping {
            cause,
            immediate: false,
        });
    }

    /// Ask the process layer to stop the agent now.
    fn request_stop(&mut self, stopping: Stopping, cut_short: Option<String>, ctl: &ChildControl) {
        self.mark_stop();
        ctl.request_stop();
        self.course = Course::Stopping(StopState::Requested {
            stopping,
            requested_at: Instant::now(),
            cut_short,
        });
    }

    /// Tell the agent's `PostToolUse` hook to end the session after the running tool.
    fn mark_stop(&self) {
        if let Some(marker) = &self.marker
            && let Err(err) = marker.set()
        {
            tracing::debug!("cannot mark the stop for the agent's hook: {err}");
        }
    }

    /// A stop waiting for a tool call takes it out of the course, leaving the course
    /// as it is otherwise.
    fn take_awaiting(&mut self) -> Option<(Stopping, String)> {
        match std::mem::take(&mut self.course) {
            Course::Stopping(StopState::AwaitingTool { stopping, tool, .. }) => {
                Some((stopping, tool))
            }
            other => {
                self.course = other;
                None
            }
        }
    }

    /// After an event: a stop waiting for the tool calls in flight goes ahead once none
    /// is left.
    pub(super) fn after_tool_result(&mut self, cx: &StopContext<'_>) {
        if self.tools.running().is_some() {
            return;
        }
        if let Some((stopping, _)) = self.take_awaiting() {
            let cause = stopping.cause.clone();
            self.request_stop(stopping, None, cx.ctl);
            cx.send(SessionEvent::Stopping {
                cause,
                immediate: false,
            });
        }
    }

    /// The grace for the running tool ran out: stop now, and say which call is cut short.
    pub(super) fn tool_grace_over(&mut self, cx: &StopContext<'_>) {
        if let Some((stopping, tool)) = self.take_awaiting() {
            tracing::debug!(%tool, "the running tool outlasted agent.tool_grace; stopping anyway");
            let cause = stopping.cause.clone();
            self.request_stop(stopping, Some(tool), cx.ctl);
            cx.send(SessionEvent::Stopping {
                cause,
                immediate: false,
            });
        }
    }

    /// Act on what the caller asked for so far.
    pub(super) fn apply(&mut self, requests: Requests, cx: &StopContext<'_>) {
        let now = Instant::now();
        let acted_on = std::mem::replace(&mut self.acted_on, requests);
        let completed = matches!(self.course, Course::Completed);
        if requests.interrupts > 0 && acted_on.interrupts == 0 {
            let kill = requests.kill();
            if kill {
                cx.ctl.request_kill();
            } else {
                cx.ctl.request_stop();
            }
            if !completed {
                let state = match std::mem::take(&mut self.course) {
                    Course::Stopping(StopState::Requested {
                        mut stopping,
                        requested_at,
                        cut_short,
                    }) => {
                        stopping.cause = StopCause::Interrupt;
                        StopState::Requested {
                            stopping,
                            requested_at,
                            cut_short,
                        }
                    }
                    Course::Stopping(StopState::AwaitingTool { mut stopping, .. }) => {
                        stopping.cause = StopCause::Interrupt;
                        StopState::Requested {
                            stopping,
                            requested_at: now,
                            cut_short: None,
                        }
                    }
                    Course::Running | Course::Completed => StopState::Requested {
                        stopping: Stopping {
                            cause: StopCause::Interrupt,
                            decided_at: now,
                            snapshot: cx.meter.snapshot(),
                        },
                        requested_at: now,
                        cut_short: None,
                    },
                };
                self.course = Course::Stopping(state);
                cx.send(SessionEvent::Stopping {
                    cause: StopCause::Interrupt,
                    immediate: kill,
                });
            }
        } else if requests.kill() && !acted_on.kill() {
            cx.ctl.request_kill();
            if !completed {
                cx.send(SessionEvent::Stopping {
                    cause: StopCause::Interrupt,
                    immediate: true,
                });
            }
        }
        if requests.restart && !acted_on.restart {
            self.begin(StopCause::ContextLimit(LimitReason::Manual), now, cx);
        }
    }
}
