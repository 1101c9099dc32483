//! Validation of an attempt: the phase's gates, then the compliance check over what the
//! attempt did, each recorded and reported.

use std::time::Duration;

use crate::compliance::{self, GateOutcome, Verdict};
use crate::events::Event;
use crate::gates::{self, GateRun, GateSpec};
use crate::plan::Phase;
use crate::state::{ExecutionStatus, GateRecord, now};

use super::attempt::AttemptTally;
use super::runner::Runner;

/// How validation went.
pub(super) enum Validation {
    Judged {
        verdict: Verdict,
        gates: Vec<GateOutcome>,
    },
    Interrupted,
    Skipped,
}

impl Runner<'_> {
    /// The phase's gates with their commands; a gate without one fails when run.
    pub(super) fn gate_specs(&self, phase: &Phase) -> Vec<GateSpec> {
        phase
            .gates
            .iter()
            .map(|gate| GateSpec {
                name: gate.name.clone(),
                command: gate
                    .resolve(&self.run.config.gates)
                    .map(|c| c.command)
                    .unwrap_or_default(),
            })
            .collect()
    }

    pub(super) async fn validate(
        &mut self,
        phase: &Phase,
        attempt: u32,
        execution: i64,
        gates: &[GateSpec],
        tally: &AttemptTally,
    ) -> Validation {
        let id = phase.id.as_str().to_owned();
        if let Err(err) = self
            .run
            .store
            .set_execution_status(execution, ExecutionStatus::Validating)
        {
            self.could_not("record validation", &err);
        }
        let timeout = self.run.config.gate_timeout.duration();
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
                    limit: timeout,
                });
                continue;
            }
            self.emit(Event::GateStarted {
                phase_id: id.clone(),
                name: gate.name.clone(),
                command: gate.command.clone(),
            });
            let root = self.workdir.clone();
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
            if let Err(err) = self.run.store.record_gate(execution, &record) {
                self.could_not(&format!("record gate {}", run.name), &err);
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
        let notes_text = notes_path.as_ref().and_then(|path| {
            // Written by the agent: a regular file of plan size, or nothing to judge.
            crate::files::read_text_limited(&self.in_workdir(path), crate::files::PLAN_LIMIT).ok()
        });
        let facts = compliance::Facts {
            gates: outcomes.clone(),
            notes_path: notes_path.map(|p| {
                p.strip_prefix(&self.run.root)
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
}
