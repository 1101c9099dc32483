//! What the front does when a server generation ends: a planned restart goes on, an
//! end by itself is restarted or waits for a change under the restart policy, a server
//! replaced by someone else is reached again at once, and too many crashes put the
//! front in degraded mode.

use std::time::Instant;

use serde_json::json;

use super::audit::AuditEvent;
use super::audit::millis;
use super::coordinator::Source;
use super::state::{Front, Idle, Phase, SuperviseOutcome};
use super::tools;
use crate::mcp::backend::{Backend, EndCause, StopWhy, Stopped};
use crate::mcp::say;
use crate::process::ExitStatus;
use crate::restart::{ChildExit, RestartDecision};

/// Lines of the server's stderr quoted in error messages (the audit log keeps them all).
const EXCERPT_LINES: usize = 5;

impl<B: Backend> Front<B> {
    /// The server of `generation` is gone (asked to or not).
    pub(crate) fn on_down(
        &mut self,
        generation: u64,
        cause: &EndCause,
        stop: Option<&Stopped>,
        pid: Option<u32>,
    ) {
        let Some(slot) = self.slot.take_if(|slot| slot.generation == generation) else {
            return;
        };
        let number = slot.number();
        let pid = pid.or_else(|| slot.pid());
        let asked = match slot.phase {
            Phase::Stopping(why) => Some(why),
            _ => None,
        };
        let ready = slot.ready_after.is_some();
        let broken_by_change = slot.for_change && !ready;
        let status = match cause {
            EndCause::Exited(status) => *status,
            _ => ExitStatus::Unknown,
        };
        let mut details = json!({"requested": asked.is_some()});
        match cause {
            EndCause::Exited(status) => {
                details["code"] = json!(status.code());
                details["signal"] = json!(status.signal_name().map_or_else(
                    || status.signal().map(|s| s.to_string()),
                    |n| Some(n.to_owned())
                ));
                details["status"] = json!(status.to_string());
            }
            EndCause::Replaced(why)
            | EndCause::Unreachable(why)
            | EndCause::Refused(why)
            | EndCause::Left(why) => {
                details["why"] = json!(why);
            }
        }
        if asked.is_none() && !self.stderr_tail.is_empty() {
            details["stderr_tail"] = json!(self.stderr_tail.lines());
        }
        if let Some(stop) = stop {
            details["stop_took_ms"] = json!(millis(stop.took));
            details["stop_actions"] = json!(stop.actions);
            if let Some(restart) = &mut self.restarts.restart {
                restart.stopped = Some(stop.clone());
            }
        }
        self.record_for(AuditEvent::ServerExited, Some(number), pid, details);
        let end = describe_end(cause);
        let what = pid.map_or_else(String::new, |pid| format!(", pid {pid}"));
        say(&format!("the server (generation {number}{what}) {end}"));
        self.restarts.last_exit = Some(end.clone());
        let why_lost = asked.map_or("exited or crashed", StopWhy::as_lost);
        self.fail_inflight(generation, why_lost);
        self.abandon_readings();

        if self.shutdown.is_some() {
            // Requests put back for a next server get none: answered before the exit.
            self.fail_buffered(&format!("the MCP {} is shutting down", self.opts.role));
            self.finish();
            return;
        }
        match asked {
            Some(StopWhy::Restart) => {
                let reason = self
                    .restarts
                    .restart
                    .as_ref()
                    .map_or_else(|| "restart".to_owned(), |r| r.reason.clone());
                self.start_or_fail(&reason);
            }
            Some(StopWhy::ReadinessTimeout) => {
                let what = if self.stateless_client() {
                    "did not answer server/discover in time"
                } else {
                    "did not answer initialize in time"
                };
                self.fail_restart_waiters(&format!(
                    "the new server {what}{}",
                    self.stderr_tail.excerpt(EXCERPT_LINES)
                ));
                if broken_by_change {
                    return self.wait_for_change(what);
                }
                self.after_crash(status, what);
            }
            Some(StopWhy::Shutdown) => self.finish(),
            None => match cause {
                EndCause::Exited(_) => self.after_unasked_exit(status, ready, broken_by_change),
                EndCause::Replaced(why) | EndCause::Left(why) => {
                    // Someone else restarted it (another bridge of a shared daemon): not
                    // a crash; reach the new one.
                    let reason = format!("the server was replaced: {why}");
                    self.start_or_fail(&reason);
                }
                EndCause::Unreachable(why) => {
                    let what = format!("went away ({why})");
                    self.fail_restart_waiters(&format!("the new server {what}"));
                    self.after_crash(status, &what);
                }
                EndCause::Refused(why) => {
                    self.fail_restart_waiters(why);
                    self.fail_buffered(why);
                    self.after_crash(status, why);
                }
            },
        }
    }

    /// Readings of the lists that went with a server that is gone.
    fn abandon_readings(&mut self) {
        if let Some(mut round) = self.learned.round.take() {
            self.save_learned();
            // The restart happened; what changed cannot be known now.
            for (raw_id, answer) in std::mem::take(&mut round.answers) {
                self.reply_result(&raw_id, &answer);
            }
        }
    }

    /// The server started for a file change failed before it was ready: the change
    /// broke it, and restarting the same files again would only fail again. Count the
    /// crash and wait (degraded) for the next change or a `restart_server` call.
    fn wait_for_change(&mut self, what: &str) {
        self.restarts.crashes += 1;
        let reason = format!(
            "the server {what} after the watched files changed; waiting for the next change (or call restart_server){}",
            self.stderr_tail.excerpt(EXCERPT_LINES)
        );
        say(&reason);
        self.record(
            AuditEvent::Degraded,
            json!({"reason": reason, "stderr_tail": self.stderr_tail.lines()}),
        );
        self.idle = Idle::Degraded(reason.clone());
        self.fail_buffered(&format!("the MCP server is down (degraded: {reason})"));
        self.after_settled();
    }

    fn after_unasked_exit(&mut self, status: ExitStatus, ready: bool, broken_by_change: bool) {
        if let Some(restart) = &self.restarts.restart {
            // It went while draining for a planned restart: carry on with the restart.
            let reason = restart.reason.clone();
            if ready || status.is_success() {
                return self.start_or_fail(&reason);
            }
        }
        let exit = ChildExit::classify(status);
        match exit {
            ChildExit::Clean if !B::CLEAN_EXIT_ENDS && ready => {
                self.start_or_fail("the server exited on its own (code 0)");
            }
            ChildExit::Clean
                if B::CLEAN_EXIT_ENDS && (ready || self.restarts.restart.is_none()) =>
            {
                say("the server exited cleanly (code 0): the supervisor exits too");
                self.fail_buffered("the MCP server shut down");
                self.fail_restart_waiters("the MCP server shut down");
                self.shutdown = Some(SuperviseOutcome::ServerExited);
                self.finish();
            }
            // Exit 42 asks for a restart only from a server that became ready: before
            // that it is a failed start, which must meet the backoff and the crash limit
            // (otherwise a server that exits 42 at once restarts forever).
            ChildExit::RestartRequested if ready => {
                let decision = self.restarts.policy.child_exited(exit, Instant::now());
                let reason = "the server exited with code 42 (restart requested)";
                say(reason);
                self.record(
                    AuditEvent::RestartRequested,
                    json!({"reason": reason, "source": Source::Exit42.as_str()}),
                );
                let generation = self.restarts.generation;
                let pid = self.restarts.history.last().and_then(|h| h.pid);
                self.write_marker(pid, generation, reason);
                self.apply(decision, reason, false);
            }
            _ => {
                let what = describe(status, ready);
                self.fail_restart_waiters(&format!(
                    "the new server {what}{}",
                    self.stderr_tail.excerpt(EXCERPT_LINES)
                ));
                if broken_by_change {
                    return self.wait_for_change(&what);
                }
                self.after_crash(status, &what);
            }
        }
    }

    /// A crash (or a start that failed): back off, or give up and go degraded.
    pub(super) fn after_crash(&mut self, status: ExitStatus, what: &str) {
        self.restarts.crashes += 1;
        let exit = match ChildExit::classify(status) {
            // A start that failed counts as a crash, whatever its code.
            ChildExit::Clean | ChildExit::RestartRequested => ChildExit::Crashed(status),
            crashed @ ChildExit::Crashed(_) => crashed,
        };
        let decision = self.restarts.policy.child_exited(exit, Instant::now());
        self.apply(decision, &format!("the server {what}"), true);
    }

    fn apply(&mut self, decision: RestartDecision, reason: &str, crash: bool) {
        match decision {
            RestartDecision::Stop => {
                self.shutdown = Some(SuperviseOutcome::ServerExited);
                self.finish();
            }
            RestartDecision::RestartAfter(delay) => {
                if crash {
                    say(&format!("{reason}: restarting in {} ms", delay.as_millis()));
                    self.record(
                        AuditEvent::CrashBackoff,
                        json!({"delay_ms": millis(delay), "reason": reason, "crash_streak": self.restarts.policy.crash_streak()}),
                    );
                }
                self.idle = Idle::Backoff(Instant::now() + delay);
                self.restarts.pending_reason = Some(reason.to_owned());
            }
            RestartDecision::Degraded => self.enter_degraded(reason),
        }
    }

    fn enter_degraded(&mut self, reason: &str) {
        let reason = format!("{reason}{}", self.stderr_tail.excerpt(EXCERPT_LINES));
        let reason = reason.as_str();
        let text = format!(
            "{reason}; {} crashes within {} s: not restarting on its own (degraded); requests get errors until `restart_server` is called",
            self.restarts.policy.crashes_in_window(Instant::now()),
            self.restarts.policy.config().crash_window.as_secs()
        );
        // Recorded before it is said: whoever reads the line finds the record.
        self.record(
            AuditEvent::Degraded,
            json!({"reason": reason, "stderr_tail": self.stderr_tail.lines()}),
        );
        say(&text);
        self.idle = Idle::Degraded(reason.to_owned());
        self.fail_buffered(&format!(
            "the MCP server is down (degraded: {reason}); call the restart_server tool to try again"
        ));
        self.fail_restart_waiters(&text);
        self.after_settled();
    }

    /// Tell `restart_server` callers waiting for a new server that it did not come up.
    pub(crate) fn fail_restart_waiters(&mut self, text: &str) {
        if let Some(restart) = self.restarts.restart.take() {
            let failure = tools::tool_result(&restart.failure(text), true);
            for waiter in restart.waiters {
                self.reply_result(&waiter.raw_id, &waiter.era.result(failure.clone()));
            }
        }
    }
}

fn describe_end(cause: &EndCause) -> String {
    match cause {
        EndCause::Exited(status) => format!("exited: {status}"),
        EndCause::Replaced(why) => format!("was replaced: {why}"),
        EndCause::Unreachable(why) => format!("went away: {why}"),
        EndCause::Refused(why) => format!("cannot be used: {why}"),
        EndCause::Left(why) => format!("keeps running: {why}"),
    }
}

fn describe(status: ExitStatus, ready: bool) -> String {
    match status {
        ExitStatus::Unknown => "could not be started".to_owned(),
        other if !ready && ChildExit::classify(other) == ChildExit::RestartRequested => {
            format!("failed to start ({other} before it answered initialize)")
        }
        other => format!("crashed ({other})"),
    }
}
