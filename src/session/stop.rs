//! The session's own stops: what it decided and why, where the stop stands
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

use tokio::time::Instant;

use super::control::Requests;
use super::event::{Activity, ActivityKind, SessionEvent, StopCause, Thread};
use super::outcome::LimitReason;
use super::run::Driver;
use crate::agent::{AgentEvent, AssistantBlock, UserBlock};
use crate::context::{Snapshot, StopReason};
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

impl Driver<'_> {
    pub(super) fn meter_stop(
        &mut self,
        reason: StopReason,
        decided_at: Instant,
        ctl: &ChildControl,
    ) {
        tracing::debug!(%reason, "context meter decided to stop the session");
        self.begin_stop(
            StopCause::ContextLimit(LimitReason::Meter(reason)),
            decided_at,
            ctl,
        );
    }

    /// Start stopping the agent for `cause`, unless a stop is already under way (the
    /// first cause stays) or the agent already completed (then it is only made to exit).
    /// A context stop decided while a main-thread tool call runs waits for its result.
    pub(super) fn begin_stop(&mut self, cause: StopCause, decided_at: Instant, ctl: &ChildControl) {
        if self.finished {
            ctl.request_stop();
            return;
        }
        if let Some(state) = &self.stop {
            // The first cause stays; but a timeout or a failure does not wait for the
            // tool a context stop was waiting for.
            if state.tool_deadline().is_some() && !matches!(cause, StopCause::ContextLimit(_)) {
                self.tool_grace_over(ctl);
            }
            return;
        }
        let stopping = Stopping {
            cause: cause.clone(),
            decided_at,
            snapshot: self.meter.snapshot(),
        };
        let grace = self.spec.tool_grace;
        let running = self.tools.running().map(str::to_owned);
        if let (StopCause::ContextLimit(_), Some(tool), false) = (&cause, running, grace.is_zero())
        {
            self.mark_stop();
            let text = format!(
                "{cause}; stopping once the running {tool} call returns (at most {}s)",
                grace.as_secs()
            );
            self.send(SessionEvent::Activity(Activity {
                thread: Thread::Main,
                kind: ActivityKind::Notice { text },
            }));
            self.stop = Some(StopState::AwaitingTool {
                stopping,
                tool,
                deadline: Instant::now() + grace,
            });
            return;
        }
        self.request_stop(stopping, None, ctl);
        self.send(SessionEvent::Stopping {
            cause,
            immediate: false,
        });
    }

    /// Ask the process layer to stop the agent now.
    fn request_stop(&mut self, stopping: Stopping, cut_short: Option<String>, ctl: &ChildControl) {
        self.mark_stop();
        ctl.request_stop();
        self.stop = Some(StopState::Requested {
            stopping,
            requested_at: Instant::now(),
            cut_short,
        });
    }

    /// Tell the agent's `PostToolUse` hook to end the session after the running tool.
    fn mark_stop(&mut self) {
        if let Some(marker) = &self.stop_marker
            && let Err(err) = marker.set()
        {
            tracing::debug!("cannot mark the stop for the agent's hook: {err}");
        }
    }

    /// After an event: a stop waiting for the tool calls in flight goes ahead once none
    /// is left.
    pub(super) fn after_tool_result(&mut self, ctl: &ChildControl) {
        if self.tools.running().is_some() {
            return;
        }
        if let Some(StopState::AwaitingTool { .. }) = &self.stop
            && let Some(StopState::AwaitingTool { stopping, .. }) = self.stop.take()
        {
            let cause = stopping.cause.clone();
            self.request_stop(stopping, None, ctl);
            self.send(SessionEvent::Stopping {
                cause,
                immediate: false,
            });
        }
    }

    /// The grace for the running tool ran out: stop now, and say which call is cut short.
    pub(super) fn tool_grace_over(&mut self, ctl: &ChildControl) {
        if !matches!(self.stop, Some(StopState::AwaitingTool { .. })) {
            return;
        }
        if let Some(StopState::AwaitingTool { stopping, tool, .. }) = self.stop.take() {
            tracing::debug!(%tool, "the running tool outlasted agent.tool_grace; stopping anyway");
            let cause = stopping.cause.clone();
            self.request_stop(stopping, Some(tool), ctl);
            self.send(SessionEvent::Stopping {
                cause,
                immediate: false,
            });
        }
    }

    /// Act on what the caller asked for so far.
    pub(super) fn apply(&mut self, requests: Requests, ctl: &ChildControl) {
        let now = Instant::now();
        if requests.interrupts > 0 && !self.interrupted {
            self.interrupted = true;
            let kill = requests.kill();
            if kill {
                self.killed = true;
                ctl.request_kill();
            } else {
                ctl.request_stop();
            }
            if !self.finished {
                let state = match self.stop.take() {
                    Some(StopState::Requested {
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
                    Some(StopState::AwaitingTool { mut stopping, .. }) => {
                        stopping.cause = StopCause::Interrupt;
                        StopState::Requested {
                            stopping,
                            requested_at: now,
                            cut_short: None,
                        }
                    }
                    None => StopState::Requested {
                        stopping: Stopping {
                            cause: StopCause::Interrupt,
                            decided_at: now,
                            snapshot: self.meter.snapshot(),
                        },
                        requested_at: now,
                        cut_short: None,
                    },
                };
                self.stop = Some(state);
                self.send(SessionEvent::Stopping {
                    cause: StopCause::Interrupt,
                    immediate: kill,
                });
            }
        } else if requests.kill() && !self.killed {
            self.killed = true;
            ctl.request_kill();
            if !self.finished {
                self.send(SessionEvent::Stopping {
                    cause: StopCause::Interrupt,
                    immediate: true,
                });
            }
        }
        if requests.restart && !self.restart_seen {
            self.restart_seen = true;
            self.begin_stop(StopCause::ContextLimit(LimitReason::Manual), now, ctl);
        }
    }
}
