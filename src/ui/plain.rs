//! Plain, timestamped lines for terminals without the HUD, pipes and log files: phase
//! starts and ends, restarts with context percentages, gates, commits, and the summary.

use std::fs::File;
use std::io::Write;
use std::path::PathBuf;

use crate::agent::FailureKind;
use crate::events::{AttemptKind, Event};
use crate::terminal_safe::{plain_text, terminal_safe};
use crate::ui::{Sink, summary, write_flush};
use crate::words::plural;

/// How much of a session's activity to print.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Detail {
    /// Milestones only: phases, sessions, restarts, gates, commits, warnings.
    Milestones,
    /// Also every activity line (assistant text, tool calls) and agent stderr.
    Activity,
}

/// Prints events as lines to a writer (stdout) and, optionally, to a per-run log file
/// under `log_dir` (`run-<id>.log`), opened when the run starts.
pub struct PlainSink {
    out: Option<Box<dyn Write + Send>>,
    log_dir: Option<PathBuf>,
    file: Option<File>,
    detail: Detail,
    /// Last context decile printed, so the gauge is reported every 10 %, not every token.
    last_decile: Option<u64>,
}

impl PlainSink {
    /// A sink printing to `out` (if any) and to a log file in `log_dir` (if any).
    #[must_use]
    pub fn new(
        out: Option<Box<dyn Write + Send>>,
        log_dir: Option<PathBuf>,
        detail: Detail,
    ) -> Self {
        PlainSink {
            out,
            log_dir,
            file: None,
            detail,
            last_decile: None,
        }
    }

    fn line(&mut self, text: &str) -> std::io::Result<()> {
        let stamp = jiff::Zoned::now().strftime("%H:%M:%S").to_string();
        let mut text = plain_text(text)
            .lines()
            .map(|l| format!("[{stamp}] {l}\n"))
            .collect::<String>();
        if text.is_empty() {
            text = format!("[{stamp}]\n");
        }
        self.raw(&text)
    }

    fn raw(&mut self, text: &str) -> std::io::Result<()> {
        let text = terminal_safe(text);
        if let Some(file) = &mut self.file {
            // The log file is best effort; the terminal is what the user watches.
            let _ = file.write_all(text.as_bytes());
        }
        match &mut self.out {
            Some(out) => write_flush(out.as_mut(), &text),
            None => Ok(()),
        }
    }
}

impl Sink for PlainSink {
    #[expect(
        clippy::too_many_lines,
        reason = "one arm per event kind reads best as one match"
    )]
    fn event(&mut self, event: &Event) -> std::io::Result<()> {
        match event {
            Event::RunStarted {
                run_id,
                plan_title,
                phases,
                agent,
                model,
                context_threshold,
                max_restarts,
                resumed,
                ..
            } => {
                if let Some(dir) = &self.log_dir {
                    let _ = std::fs::create_dir_all(dir);
                    self.file =
                        crate::files::create_private(&dir.join(format!("run-{run_id}.log"))).ok();
                }
                let verb = if *resumed { "resumed" } else { "started" };
                self.line(&format!(
                    "run {} {verb}: {plan_title} ({} phase{}; agent {agent}, model {model}; restart at {context_threshold}% context, up to {max_restarts} restart{} per attempt)",
                    short(run_id),
                    phases.len(),
                    plural(phases.len()),
                    plural(*max_restarts),
                ))
            }
            Event::PhaseSkipped { phase_id, reason } => {
                self.line(&format!("phase {phase_id} skipped: {reason}"))
            }
            Event::PhaseStarted {
                phase_id,
                title,
                index,
                total,
                attempt,
                max_attempts,
                kind,
            } => {
                self.last_decile = None;
                let numbered = |what: &str| format!("{what}, attempt {attempt}/{max_attempts}");
                let what = match kind {
                    AttemptKind::First => numbered("started"),
                    AttemptKind::Retry => numbered("retrying"),
                    AttemptKind::Remediation => numbered("fixing the findings"),
                    AttemptKind::MergeFix => "merge fix: resolving its merge's conflicts".to_owned(),
                };
                self.line(&format!(
                    "phase {phase_id} ({index}/{total}) \"{title}\" {what}"
                ))
            }
            Event::SessionStarted {
                phase_id,
                restart,
                max_restarts,
                pid,
                log_path,
                no_restart,
                ..
            } => {
                self.last_decile = None;
                let which = if *restart == 0 {
                    "session started".to_owned()
                } else {
                    format!("session after restart {restart}/{max_restarts} started")
                };
                let note = no_restart
                    .map(|why| format!(" ({why})"))
                    .unwrap_or_default();
                self.line(&format!(
                    "phase {phase_id}: {which} (pid {pid}){note}, transcript {log_path}"
                ))
            }
            Event::Activity { phase_id, activity } => {
                if self.detail == Detail::Activity {
                    self.line(&format!("phase {phase_id}: {activity}"))
                } else {
                    Ok(())
                }
            }
            Event::AgentStderr { phase_id, line } => {
                if self.detail == Detail::Activity {
                    self.line(&format!("phase {phase_id}: agent stderr: {line}"))
                } else {
                    Ok(())
                }
            }
            Event::Context { phase_id, snapshot } => {
                if snapshot.tokens == 0 {
                    return Ok(());
                }
                #[expect(
                    clippy::cast_possible_truncation,
                    clippy::cast_sign_loss,
                    reason = "a percentage"
                )]
                let decile = (snapshot.percent.max(0.0) / 10.0) as u64;
                if self.last_decile.is_some_and(|last| last >= decile) {
                    return Ok(());
                }
                self.last_decile = Some(decile);
                self.line(&format!(
                    "phase {phase_id}: context {:.1}% ({} / {} tokens, window: {}{}), {} tool call{}",
                    snapshot.percent,
                    crate::words::thousands(snapshot.tokens),
                    crate::words::thousands(snapshot.window.tokens),
                    snapshot.window.source,
                    if snapshot.exactness == crate::context::Exactness::Exact {
                        ""
                    } else {
                        ", estimated"
                    },
                    snapshot.tool_calls,
                    plural(snapshot.tool_calls),
                ))
            }
            Event::SessionEnded {
                phase_id,
                detail,
                code,
                snapshot,
                last_words,
                ..
            } => {
                let mut text = format!(
                    "phase {phase_id}: session ended: {detail} (code {code}) at {:.1}% of {} tokens (window: {})",
                    snapshot.percent,
                    crate::words::thousands(snapshot.window.tokens),
                    snapshot.window.source
                );
                if let Some(words) = last_words {
                    text.push_str(&format!("\nphase {phase_id}: the agent's last words: {words}"));
                }
                self.line(&text)
            }
            Event::AgentRetry { phase_id, retry } => {
                self.line(&format!("phase {phase_id}: warning: {retry}"))
            }
            Event::WaitingForLimit {
                phase_id,
                kind,
                until,
                wait_secs,
                reset_known,
                said,
                ..
            } => {
                let how = match (kind, reset_known) {
                    (FailureKind::Unreachable, _) => {
                        "the agent could not reach it: backing off until the network may be back"
                    }
                    (_, true) => "when the agent said it resets",
                    (_, false) => "the agent did not say when it resets: backing off",
                };
                let wait = crate::config::RunDuration::parse(&wait_secs.max(&1).to_string())
                    .map_or_else(|_| format!("{wait_secs}s"), |wait| wait.to_string());
                self.line(&format!(
                    "phase {phase_id}: waiting for {} until {} ({wait}; {how}): “{said}”",
                    kind.waiting_for(),
                    crate::words::local_time_of(until),
                ))
            }
            Event::Restart {
                phase_id,
                restart,
                max_restarts,
                reason,
                commit,
                delay_secs,
                ..
            } => {
                let saved = commit.as_ref().map_or_else(
                    || "work left in the working tree".to_owned(),
                    |c| format!("checkpoint committed {}", short(c)),
                );
                self.line(&format!(
                    "phase {phase_id}: context restart {restart}/{max_restarts}: {reason}; {saved}; next session in {delay_secs}s"
                ))
            }
            Event::GateStarted { .. } => Ok(()),
            Event::GateFinished {
                phase_id,
                name,
                command,
                verdict,
                duration_ms,
                ..
            } => self.line(&format!(
                "phase {phase_id}: gate {name} {verdict} in {:.1}s: {command}",
                f64::from(u32::try_from(*duration_ms).unwrap_or(u32::MAX)) / 1000.0
            )),
            Event::Compliance {
                phase_id,
                verdict,
                findings,
                ..
            } => {
                let mut text = format!("phase {phase_id}: checks: {}", verdict.words());
                for finding in findings {
                    text.push_str(&format!("\n  {finding}"));
                }
                self.line(&text)
            }
            Event::Merged {
                phase_id,
                branch,
                commit,
                fast_forward,
            } => self.line(&format!(
                "phase {phase_id}: merged {branch} ({}) at {}",
                if *fast_forward {
                    "fast-forward"
                } else {
                    "merge commit"
                },
                short(commit)
            )),
            Event::MergeConflict {
                phase_id,
                branch,
                files,
            } => self.line(&format!(
                "phase {phase_id}: merging {branch} conflicts in {}; a merge fix resolves it in the phase's worktree",
                files.join(", ")
            )),
            Event::Committed {
                phase_id,
                commit,
                message,
                files_changed,
            } => self.line(&format!(
                "phase {phase_id}: committed {} ({files_changed} file{}): {message}",
                short(commit),
                plural(*files_changed)
            )),
            Event::AttemptFailed {
                phase_id,
                attempt,
                reason,
            } => self.line(&format!(
                "phase {phase_id}: attempt {attempt} failed: {reason}"
            )),
            Event::PhaseFinished {
                phase_id,
                status,
                attempts,
                restarts,
                error,
            } => {
                let mut text = format!(
                    "phase {phase_id} {status} ({attempts} attempt{}, {restarts} restart{})",
                    plural(*attempts),
                    plural(*restarts)
                );
                if let Some(error) = error {
                    text.push_str(&format!(": {error}"));
                }
                self.line(&text)
            }
            Event::Paused { phase_id } => self.line(&format!(
                "paused before the next session of phase {phase_id}"
            )),
            Event::Resumed { phase_id } => self.line(&format!("resumed phase {phase_id}")),
            Event::HandoffRequested { phase_id, .. } => self.line(&format!(
                "phase {phase_id}: asking the stopped session to write its handoff"
            )),
            Event::Handoff {
                phase_id,
                written,
                detail,
                cost_usd,
                ..
            } => {
                if *written {
                    self.line(&format!("phase {phase_id}: {detail}, ${cost_usd:.2}"))
                } else {
                    self.line(&format!(
                        "phase {phase_id}: no handoff from the agent ({detail}); the checkpoint is debussy's own"
                    ))
                }
            }
            Event::LimitReached {
                phase_id,
                detail,
                raise_with,
                ..
            } => self.line(&format!(
                "phase {phase_id}: {detail}; stopping the session and pausing the run (continue with --resume, e.g. --resume {raise_with})"
            )),
            Event::Warning { message } => self.line(&format!("warning: {message}")),
            Event::RunFinished { summary } => {
                let text = format!("\n{}", summary::render(summary));
                self.raw(&text)
            }
        }
    }
}

fn short(id: &str) -> &str {
    id.get(..8).unwrap_or(id)
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;
    use crate::context::{ContextMeter, WindowInputs};
    use crate::session::OutcomeKind;

    /// A writer the test can read back.
    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().expect("lock").extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_failed_session_is_followed_by_the_agents_last_words_and_retries_warn() {
        let out = Shared::default();
        let mut sink = PlainSink::new(Some(Box::new(out.clone())), None, Detail::Milestones);
        let settings = crate::session::meter_settings(
            &crate::config::Config::default(),
            crate::agent::UsageReporting::PerMessage,
        );
        let snapshot = ContextMeter::new(settings, WindowInputs::default()).snapshot();
        sink.event(&Event::AgentRetry {
            phase_id: "1".into(),
            retry: crate::agent::ApiRetry {
                attempt: Some(1),
                max_retries: Some(10),
                delay_ms: Some(600),
                status: Some(401),
                error: "authentication_failed".into(),
                kind: Some(crate::agent::FailureKind::Auth),
            },
        })
        .expect("printed");
        sink.event(&Event::SessionEnded {
            phase_id: "1".into(),
            attempt: 1,
            restart: 0,
            outcome: OutcomeKind::Failed,
            code: 1,
            detail: "agent failed".into(),
            snapshot,
            last_words: Some("stderr: “boom”".into()),
        })
        .expect("printed");
        let text = String::from_utf8(out.0.lock().expect("lock").clone()).expect("utf-8");
        assert!(
            text.contains("phase 1: warning: the agent's API request failed (401 authentication_failed); it retries in 0.6s (attempt 1 of 10)"),
            "{text}"
        );
        assert!(
            text.contains("phase 1: the agent's last words: stderr: “boom”"),
            "{text}"
        );
    }

    #[test]
    fn a_session_end_names_the_window_its_percentage_is_of() {
        let out = Shared::default();
        let mut sink = PlainSink::new(Some(Box::new(out.clone())), None, Detail::Milestones);
        let settings = crate::session::meter_settings(
            &crate::config::Config::default(),
            crate::agent::UsageReporting::PerMessage,
        );
        let inputs = WindowInputs {
            configured: Some(1_000_000),
            ..WindowInputs::default()
        };
        let snapshot = ContextMeter::new(settings, inputs).snapshot();
        sink.event(&Event::SessionEnded {
            phase_id: "1".into(),
            attempt: 1,
            restart: 0,
            outcome: OutcomeKind::ContextLimit,
            code: -2,
            detail: "context limit: …".into(),
            snapshot,
            last_words: None,
        })
        .expect("printed");
        let text = String::from_utf8(out.0.lock().expect("lock").clone()).expect("utf-8");
        assert!(
            text.contains("at 0.0% of 1,000,000 tokens (window: config)"),
            "{text}"
        );
    }

    #[test]
    fn a_merge_conflict_names_the_merge_fix_that_resolves_it() {
        let out = Shared::default();
        let mut sink = PlainSink::new(Some(Box::new(out.clone())), None, Detail::Milestones);
        sink.event(&Event::MergeConflict {
            phase_id: "3".into(),
            branch: "debussy/3".into(),
            files: vec!["shared.txt".into()],
        })
        .expect("printed");
        let text = String::from_utf8(out.0.lock().expect("lock").clone()).expect("utf-8");
        assert!(
            text.contains("phase 3: merging debussy/3 conflicts in shared.txt; a merge fix resolves it in the phase's worktree"),
            "{text}"
        );
    }
}
