//! One phase: its attempts, the validation after each (gates, then compliance), and the
//! commit that records the result.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::compliance::{self, Finding, GateOutcome, Severity, Verdict};
use crate::config::Config;
use crate::events::NoRestart;
use crate::events::{
    AttemptKind, Event, EventSender, PhaseSummary, RequestReceiver, RunRequest, RunSummary,
};
use crate::gates::{self, GateRun, GateSpec};
use crate::plan::{Phase, Plan};
use crate::session::SessionSpec;
use crate::state::{ExecutionEnd, ExecutionStatus, GateRecord, PauseRecord, Store, now};

use super::attempt::{AttemptEnd, AttemptTally};
use super::prompts::{self, PromptGate};
use super::selection::Standing;
use super::vcs;

/// What the user has asked for that outlives one session.
#[derive(Debug, Default)]
pub(crate) struct Flags {
    /// Pause before the next session starts.
    pub(crate) pause_requested: bool,
    /// The run is being interrupted.
    pub(crate) interrupted: bool,
    /// The current phase is being skipped.
    pub(crate) skip_requested: bool,
}

/// The state of a running run, owned by its one task.
pub(crate) struct Runner<'plan> {
    pub(crate) config: Config,
    pub(crate) root: PathBuf,
    pub(crate) plan: &'plan Plan,
    /// Every session's settings from the configuration; each session adds its prompt,
    /// log path and environment.
    pub(crate) session: SessionSpec,
    pub(crate) store: Store,
    pub(crate) run_id: String,
    pub(crate) events: EventSender,
    pub(crate) requests: RequestReceiver,
    pub(crate) flags: Flags,
    pub(crate) summary: RunSummary,
    /// Where the paused run being resumed stopped; its phase's first session gets it.
    pub(crate) resume_point: Option<ResumePoint>,
    /// The process group of the agent session running now.
    pub(crate) agent_group: Option<i32>,
    /// Why the current attempt's sessions are not restarted for their context, if so.
    pub(crate) no_restart: Option<NoRestart>,
}

/// The phase a paused run stopped in and what its pause recorded.
#[derive(Debug, Clone)]
pub(crate) struct ResumePoint {
    pub(crate) phase: String,
    pub(crate) pause: PauseRecord,
}

/// How a phase ended in this run.
pub(crate) struct PhaseResult {
    pub(crate) standing: Standing,
    pub(crate) error: Option<String>,
    pub(crate) summary: PhaseSummary,
}

/// What the next attempt is.
struct NextAttempt {
    kind: AttemptKind,
    prompt: String,
}

/// How validation went.
enum Validation {
    Judged {
        verdict: Verdict,
        gates: Vec<GateOutcome>,
    },
    Interrupted,
    Skipped,
}

impl Runner<'_> {
    /// Send an event; a closed channel (sink gone) is not the run's problem.
    pub(crate) fn emit(&self, event: Event) {
        let _ = self.events.send(event);
    }

    /// Tell the user something that does not stop the run.
    pub(crate) fn warn(&self, message: String) {
        tracing::warn!("{message}");
        self.emit(Event::Warning { message });
    }

    /// Handle a request that arrives outside a session (during gates, waits, pauses).
    /// Returns true when the current step should stop (interrupt or skip).
    pub(crate) fn handle_idle_request(&mut self, request: RunRequest) -> bool {
        match request {
            RunRequest::Interrupt | RunRequest::Kill => {
                self.flags.interrupted = true;
                true
            }
            RunRequest::SkipPhase => {
                self.flags.skip_requested = true;
                true
            }
            RunRequest::TogglePause => {
                self.flags.pause_requested = !self.flags.pause_requested;
                false
            }
            RunRequest::RestartNow => {
                self.warn("no agent session is running; nothing to restart".into());
                false
            }
        }
    }

    pub(crate) async fn run_phase(
        &mut self,
        phase: &Phase,
        index: usize,
        total: usize,
    ) -> PhaseResult {
        let started = Instant::now();
        let id = phase.id.as_str().to_owned();
        self.flags.skip_requested = false;
        let base = vcs::head(self.root.clone()).await;
        let gates = self.gate_specs(phase);
        let prompt_gates: Vec<PromptGate> = gates
            .iter()
            .map(|g| PromptGate {
                name: g.name.clone(),
                command: g.command.clone(),
            })
            .collect();
        let phase_prompt = prompts::phase_prompt(self.plan, phase, &prompt_gates, &self.root);
        let max_attempts = self.config.max_retries + 1;
        let mut next = NextAttempt {
            kind: AttemptKind::First,
            prompt: phase_prompt.clone(),
        };
        let mut tally = AttemptTally::default();
        let mut attempts = 0;
        let mut last_error = None;

        for attempt in 1..=max_attempts {
            attempts = attempt;
            self.emit(Event::PhaseStarted {
                phase_id: id.clone(),
                title: phase.title.clone(),
                index,
                total,
                attempt,
                max_attempts,
                kind: next.kind,
            });
            let execution = match self.store.start_execution(
                &self.run_id,
                &id,
                attempt,
                next.kind == AttemptKind::Remediation,
            ) {
                Ok(execution) => execution,
                Err(err) => {
                    let error = format!("could not record the attempt: {err}");
                    return self.finish(
                        phase,
                        Standing::Failed,
                        Some(error),
                        attempts,
                        &tally,
                        started,
                    );
                }
            };
            if let Err(err) = self.store.update_run(
                &self.run_id,
                crate::state::RunStatus::Running,
                Some(&id),
                None,
            ) {
                self.warn(format!("could not record progress: {err}"));
            }

            self.no_restart = if !self.config.context_threshold.is_on() {
                Some(NoRestart::ThresholdOff)
            } else if self.config.max_restarts == 0 {
                Some(NoRestart::NoRestartsAllowed)
            } else if next.kind == AttemptKind::Remediation && !self.config.restart_in_fix_sessions
            {
                Some(NoRestart::FixSession)
            } else {
                None
            };
            let restarts_allowed = self.no_restart.is_none();
            let (end, attempt_tally) = self
                .run_attempt(
                    phase,
                    attempt,
                    execution,
                    &next.prompt,
                    restarts_allowed,
                    base,
                )
                .await;
            tally.absorb(&attempt_tally);

            let (mut status, mut error, mut standing) = match end {
                AttemptEnd::Interrupted => (ExecutionStatus::Paused, None, Some(Standing::Paused)),
                AttemptEnd::Skipped => (
                    ExecutionStatus::Skipped,
                    None,
                    Some(Standing::Dropped("skipped by user".into())),
                ),
                AttemptEnd::Fatal(message) => (
                    ExecutionStatus::Failed,
                    Some(message),
                    Some(Standing::Failed),
                ),
                AttemptEnd::Blocked(reason) => (
                    ExecutionStatus::Blocked,
                    Some(reason),
                    Some(Standing::Blocked),
                ),
                AttemptEnd::Failed(reason) => {
                    let finding = Finding {
                        severity: Severity::Critical,
                        problem: reason.clone(),
                        fix: "check the work so far against the phase file and finish it".into(),
                        gate: None,
                    };
                    next = NextAttempt {
                        kind: AttemptKind::Retry,
                        prompt: prompts::full_retry_prompt(&phase_prompt, attempt + 1, &[finding]),
                    };
                    (ExecutionStatus::Failed, Some(reason), None)
                }
                AttemptEnd::Done => match self
                    .validate(phase, attempt, execution, &gates, &attempt_tally)
                    .await
                {
                    Validation::Interrupted => {
                        (ExecutionStatus::Paused, None, Some(Standing::Paused))
                    }
                    Validation::Skipped => (
                        ExecutionStatus::Skipped,
                        None,
                        Some(Standing::Dropped("skipped by user".into())),
                    ),
                    Validation::Judged {
                        verdict,
                        gates: gate_outcomes,
                    } => {
                        if verdict.accepts() {
                            for finding in verdict.findings() {
                                self.warn(format!(
                                    "phase {id}: accepted despite: {}",
                                    finding.problem
                                ));
                            }
                            (ExecutionStatus::Completed, None, Some(Standing::Completed))
                        } else {
                            let problems: Vec<String> = verdict
                                .findings()
                                .iter()
                                .map(|f| f.problem.clone())
                                .collect();
                            next = match &verdict {
                                Verdict::FullRetry(findings) => NextAttempt {
                                    kind: AttemptKind::Retry,
                                    prompt: prompts::full_retry_prompt(
                                        &phase_prompt,
                                        attempt + 1,
                                        findings,
                                    ),
                                },
                                _ => NextAttempt {
                                    kind: AttemptKind::Remediation,
                                    prompt: prompts::remediation_prompt(
                                        phase,
                                        verdict.findings(),
                                        &gate_outcomes,
                                        &self.root,
                                    ),
                                },
                            };
                            (ExecutionStatus::Failed, Some(problems.join("; ")), None)
                        }
                    }
                },
            };

            let commit = match standing {
                Some(Standing::Completed) => match self.commit(phase, "completed").await {
                    Ok(commit) => commit,
                    // The work is done but not recorded: the phase fails, loudly, and
                    // the work stays in the tree for the user.
                    Err(err) => {
                        status = ExecutionStatus::Failed;
                        standing = Some(Standing::Failed);
                        error = Some(format!(
                            "the completed work could not be committed ({err}); it is still in the working tree"
                        ));
                        None
                    }
                },
                Some(Standing::Paused) => self.keep_paused_work(phase, base).await,
                Some(Standing::Failed | Standing::Blocked) if self.config.commit_on_failure => {
                    self.commit(phase, status.as_str()).await.ok().flatten()
                }
                _ => None,
            };
            let end = ExecutionEnd {
                status,
                restarts: attempt_tally.restarts,
                outcome_code: attempt_tally.last_code.map(i64::from),
                tokens: attempt_tally.tokens,
                cost_usd: attempt_tally.cost_usd,
                cost_estimated: attempt_tally.cost_estimated,
                commit_id: commit,
                error: error.clone(),
            };
            if let Err(err) = self.store.finish_execution(execution, &end) {
                self.warn(format!("could not record the attempt's end: {err}"));
            }
            if let Some(standing) = standing {
                return self.finish(phase, standing, error, attempts, &tally, started);
            }
            self.emit(Event::AttemptFailed {
                phase_id: id.clone(),
                attempt,
                reason: error.clone().unwrap_or_default(),
            });
            last_error = error;
        }

        if self.config.commit_on_failure {
            // A failure to commit was reported as a warning; the phase fails either way.
            let _ = self.commit(phase, "failed").await;
        }
        let error = last_error.map(|e| format!("{e} (after {attempts} attempts)"));
        self.finish(phase, Standing::Failed, error, attempts, &tally, started)
    }

    fn finish(
        &mut self,
        phase: &Phase,
        standing: Standing,
        error: Option<String>,
        attempts: u32,
        tally: &AttemptTally,
        started: Instant,
    ) -> PhaseResult {
        self.emit(Event::PhaseFinished {
            phase_id: phase.id.as_str().to_owned(),
            status: standing.state(),
            attempts,
            restarts: tally.restarts,
            error: error.clone(),
        });
        self.summary.restarts += tally.restarts;
        self.summary.sessions += tally.sessions;
        self.summary.tokens += tally.tokens;
        self.summary.cost_usd += tally.cost_usd;
        self.summary.cost_estimated |= tally.cost_estimated;
        let summary = PhaseSummary {
            id: phase.id.as_str().to_owned(),
            title: phase.title.clone(),
            status: standing.state(),
            attempts,
            restarts: tally.restarts,
            sessions: tally.sessions,
            tokens: tally.tokens,
            cost_usd: tally.cost_usd,
            cost_estimated: tally.cost_estimated,
            duration_secs: started.elapsed().as_secs_f64(),
            refused_calls: tally
                .permission_denials
                .iter()
                .map(|call| crate::events::RefusedCall {
                    call: call.describe(),
                    allow_with: call.suggested_rule(),
                })
                .collect(),
        };
        PhaseResult {
            standing,
            error,
            summary,
        }
    }

    /// The phase's gates with their commands; a gate without one fails when run.
    fn gate_specs(&self, phase: &Phase) -> Vec<GateSpec> {
        phase
            .gates
            .iter()
            .map(|gate| GateSpec {
                name: gate.name.clone(),
                command: gate
                    .resolve(&self.config.gates)
                    .map(|c| c.command)
                    .unwrap_or_default(),
            })
            .collect()
    }

    async fn validate(
        &mut self,
        phase: &Phase,
        attempt: u32,
        execution: i64,
        gates: &[GateSpec],
        tally: &AttemptTally,
    ) -> Validation {
        let id = phase.id.as_str().to_owned();
        if let Err(err) = self
            .store
            .set_execution_status(execution, ExecutionStatus::Validating)
        {
            self.warn(format!("could not record validation: {err}"));
        }
        let timeout = Duration::from_secs(self.config.gate_timeout);
        let mut runs: Vec<GateRun> = Vec::with_capacity(gates.len());
        for gate in gates {
            if gate.command.trim().is_empty() {
                runs.push(GateRun {
                    name: gate.name.clone(),
                    command: String::new(),
                    passed: false,
                    exit: None,
                    timed_out: false,
                    output: format!(
                        "gate `{}` has no command: give it one in the phase file or in the `gates` config map",
                        gate.name
                    ),
                    duration: Duration::ZERO,
                });
                continue;
            }
            self.emit(Event::GateStarted {
                phase_id: id.clone(),
                name: gate.name.clone(),
                command: gate.command.clone(),
            });
            let root = self.root.clone();
            let running = gates::run_gate(gate, &root, timeout);
            tokio::pin!(running);
            let run = loop {
                tokio::select! {
                    run = &mut running => break Some(run),
                    Some(request) = self.requests.recv() => {
                        if self.handle_idle_request(request) {
                            break None;
                        }
                    }
                }
            };
            // Dropping an unfinished gate kills its process group.
            let Some(run) = run else {
                return if self.flags.skip_requested {
                    Validation::Skipped
                } else {
                    Validation::Interrupted
                };
            };
            self.emit(Event::GateFinished {
                phase_id: id.clone(),
                name: run.name.clone(),
                command: run.command.clone(),
                passed: run.passed,
                verdict: run.verdict(),
                duration_ms: u64::try_from(run.duration.as_millis()).unwrap_or(u64::MAX),
            });
            runs.push(run);
        }
        for run in &runs {
            let record = GateRecord {
                name: run.name.clone(),
                command: run.command.clone(),
                passed: run.passed,
                exit_code: run.exit_code(),
                timed_out: run.timed_out,
                output: run.output.clone(),
                duration_ms: u64::try_from(run.duration.as_millis()).unwrap_or(u64::MAX),
                at: now(),
            };
            if let Err(err) = self.store.record_gate(execution, &record) {
                self.warn(format!("could not record gate {}: {err}", run.name));
            }
        }
        let outcomes: Vec<GateOutcome> = runs
            .iter()
            .map(|run| GateOutcome {
                name: run.name.clone(),
                command: run.command.clone(),
                passed: run.passed,
                output_tail: run.output.clone(),
            })
            .collect();
        let notes_path = phase.notes_out.as_ref().map(|n| n.path.clone());
        let notes_text = notes_path
            .as_ref()
            .and_then(|path| std::fs::read_to_string(path).ok());
        let facts = compliance::Facts {
            gates: outcomes.clone(),
            notes_path: notes_path.map(|p| {
                p.strip_prefix(&self.root)
                    .map(std::path::Path::to_path_buf)
                    .unwrap_or(p)
            }),
            notes_text,
            required_agents: phase
                .required_agents
                .iter()
                .map(|a| a.name.clone())
                .collect(),
            invoked_agents: tally.invoked_agents.clone(),
            permission_denials: tally.permission_denials.clone(),
        };
        let verdict = compliance::check(&facts);
        self.emit(Event::Compliance {
            phase_id: id,
            attempt,
            verdict: verdict.kind(),
            findings: verdict
                .findings()
                .iter()
                .map(|f| format!("[{}] {}", f.severity, f.problem))
                .collect(),
        });
        Validation::Judged {
            verdict,
            gates: outcomes,
        }
    }

    /// On a pause, keep the agent's work for `--resume`: commit it as a checkpoint when
    /// auto-commit is on, else (or when nothing could be committed) record the files it
    /// changed, which the resume then accepts as a dirty tree. Returns the commit id.
    async fn keep_paused_work(&mut self, phase: &Phase, base: Option<git2::Oid>) -> Option<String> {
        // A commit that fails falls back to recording the files: the work stays in the tree.
        let commit = self
            .commit(phase, "paused (checkpoint)")
            .await
            .ok()
            .flatten();
        let files = if commit.is_some() {
            Vec::new()
        } else {
            vcs::changes_since(self.root.clone(), base)
                .await
                .into_iter()
                .map(|change| change.path)
                .collect()
        };
        let pause = PauseRecord {
            base: base.map(|oid| oid.to_string()),
            commit: commit.clone(),
            files,
        };
        if let Err(err) = self.store.set_pause(&self.run_id, Some(&pause)) {
            self.warn(format!(
                "could not record where the pause left the work: {err}"
            ));
        }
        commit
    }

    /// Commit the phase's work with the configured message; returns the commit id, or
    /// git's own error (also sent as a warning).
    pub(crate) async fn commit(
        &mut self,
        phase: &Phase,
        status: &str,
    ) -> Result<Option<String>, String> {
        if !self.config.auto_commit {
            return Ok(None);
        }
        let message = vcs::commit_message(
            &self.config.commit_message_template,
            phase.id.as_str(),
            &phase.title,
            status,
        );
        self.commit_with(phase, message).await
    }

    /// Commit everything with `message`, reporting the result as an event; a failure is
    /// a warning and the error, in git's words, for the caller to act on.
    pub(crate) async fn commit_with(
        &mut self,
        phase: &Phase,
        message: String,
    ) -> Result<Option<String>, String> {
        match vcs::commit_all(
            self.root.clone(),
            message.clone(),
            self.config.git.run_hooks,
        )
        .await
        {
            Ok(Some(commit)) => {
                if let Some(note) = &commit.stale_lock {
                    self.warn(note.clone());
                }
                self.emit(Event::Committed {
                    phase_id: phase.id.as_str().to_owned(),
                    commit: commit.id.clone(),
                    message,
                    files_changed: commit.files_changed,
                });
                self.summary.commits.push(commit.id.clone());
                Ok(Some(commit.id))
            }
            Ok(None) => Ok(None),
            Err(err) => {
                let err = crate::error_chain::error_chain(&err);
                self.warn(format!("could not commit: {err}"));
                Err(err)
            }
        }
    }
}
