//! [`Drive`]: the run's one task taking phases up as their dependencies allow, up to
//! `jobs` at a time, and passing the user's requests on to the phases running.
//!
//! Every running phase is a future of this task (a [`Runner`] of its own), polled side
//! by side with the request channel: they share the state store without a lock because
//! only this task ever touches it. With one job, a phase runs in the working tree
//! itself; with more, each runs in its own git worktree and is merged back when it
//! completes ([`super::integrate`]).

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::pin::Pin;

use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use tokio::sync::mpsc;

use crate::events::{Event, PhaseState, PhaseSummary, RequestReceiver, RunRequest, RunSummary};
use crate::plan::Phase;

use super::context::RunContext;
use super::guards::{Guards, LimitHit};
use super::integrate;
use super::phase::PhaseResult;
use super::resume::ResumePoint;
use super::runner::{Flags, Runner};
use super::schedule::{self, Next};
use super::selection::Standing;
use crate::git::worktree::Worktree;

/// A running phase: its runner comes back with its result.
type Work<'run> = Pin<Box<dyn Future<Output = (Runner<'run>, &'run Phase, PhaseResult)> + 'run>>;

/// What every phase's runner is made from, and where the run stands.
pub(super) struct Drive<'run> {
    /// What every phase of the run shares.
    pub(super) run: &'run RunContext<'run>,
    pub(super) order: Vec<&'run Phase>,
    pub(super) standings: BTreeMap<String, Standing>,
    pub(super) requests: RequestReceiver,
    pub(super) resume_points: BTreeMap<String, ResumePoint>,
    /// Phases of a resumed run that completed but whose branch is not merged, with the
    /// attempt that completed them.
    pub(super) unmerged: BTreeMap<String, i64>,
    pub(super) guards: Guards,
    /// Phases run at once.
    pub(super) jobs: usize,
    /// The branch the run started on, when phases run in worktrees and merge into it.
    pub(super) run_branch: Option<String>,
    pub(super) summary: RunSummary,
}

/// Where the run ended up.
pub(super) struct Ending {
    /// The first phase (in execution order) that paused, when any did.
    pub(super) paused_at: Option<String>,
    /// Why the run failed.
    pub(super) run_error: Option<String>,
    /// The phase the run stopped in (or, completed, its last).
    pub(super) stopped_at: Option<String>,
    /// The limit that paused the run.
    pub(super) limit: Option<LimitHit>,
}

/// The running phases' request channels, in the order they started, and the focus.
#[derive(Default)]
struct Crew {
    running: Vec<(String, mpsc::UnboundedSender<RunRequest>)>,
    focus: Option<String>,
}

impl Crew {
    fn tell_all(&self, request: &RunRequest) {
        for (_, sender) in &self.running {
            let _ = sender.send(request.clone());
        }
    }

    /// The focused phase if it runs, else the first one started.
    fn aimed(&self) -> Option<&mpsc::UnboundedSender<RunRequest>> {
        self.running
            .iter()
            .find(|(id, _)| Some(id) == self.focus.as_ref())
            .or_else(|| self.running.first())
            .map(|(_, sender)| sender)
    }
}

impl<'run> Drive<'run> {
    /// Run phases until every one has been taken up or the run stops.
    pub(super) async fn run(mut self) -> (RunSummary, Ending) {
        let mut running: FuturesUnordered<Work<'run>> = FuturesUnordered::new();
        let mut crew = Crew::default();
        let mut taken = BTreeSet::new();
        let mut stopping = false;
        let mut interrupted = false;
        let mut paused = false;
        let mut ending = Ending {
            paused_at: None,
            run_error: None,
            stopped_at: None,
            limit: None,
        };
        let total = self.order.len();
        loop {
            while !stopping && running.len() < self.jobs {
                match schedule::next(&self.order, &self.standings, &taken) {
                    Next::Wait | Next::Done => break,
                    Next::Skip(phase, reason) => {
                        taken.insert(phase.id.as_str().to_owned());
                        self.skip(phase, reason, false);
                    }
                    Next::Drop(phase, reason) => {
                        taken.insert(phase.id.as_str().to_owned());
                        self.skip(phase, reason, true);
                    }
                    Next::Block(phase, error) => {
                        let id = phase.id.as_str().to_owned();
                        taken.insert(id.clone());
                        self.emit(Event::PhaseFinished {
                            phase_id: id.clone(),
                            status: PhaseState::Blocked,
                            attempts: 0,
                            restarts: 0,
                            error: Some(error.clone()),
                        });
                        self.standings.insert(id.clone(), Standing::Blocked);
                        self.summary
                            .phases
                            .push(not_run(phase, PhaseState::Blocked));
                        ending
                            .run_error
                            .get_or_insert(format!("phase {id} {error}"));
                        ending.stopped_at = Some(id);
                        stopping = true;
                    }
                    Next::Start(phase) => {
                        let id = phase.id.as_str().to_owned();
                        taken.insert(id.clone());
                        ending.stopped_at = Some(id.clone());
                        let index = self.order.iter().position(|p| p.id == phase.id);
                        let (sender, receiver) = mpsc::unbounded_channel();
                        crew.running.push((id, sender));
                        let mut runner = self.runner(phase, receiver);
                        runner.flags.pause_requested = paused;
                        running.push(self.work(runner, phase, index.unwrap_or(0) + 1, total));
                    }
                }
            }
            if running.is_empty() {
                break;
            }
            tokio::select! {
                Some((runner, phase, result)) = running.next() => {
                    let id = phase.id.as_str().to_owned();
                    crew.running.retain(|(running, _)| *running != id);
                    if let Some(hit) = runner.flags.limit.clone()
                        && ending.limit.is_none()
                    {
                        // The run pauses: the other phases stop where they are.
                        ending.limit = Some(hit);
                        crew.tell_all(&RunRequest::Interrupt);
                        stopping = true;
                    }
                    if self.run.no_space.get().is_some() {
                        // The other phases write to the same disk: they stop too.
                        crew.tell_all(&RunRequest::Interrupt);
                        stopping = true;
                    }
                    self.absorb(&runner.summary);
                    self.summary.phases.push(result.summary.clone());
                    self.standings.insert(id.clone(), result.standing.clone());
                    match &result.standing {
                        Standing::Paused => stopping = true,
                        Standing::Failed | Standing::Blocked | Standing::AwaitingHuman => {
                            if ending.run_error.is_none() {
                                ending.stopped_at = Some(id.clone());
                            }
                            ending.run_error.get_or_insert_with(|| {
                                format!(
                                    "phase {id} {}: {}",
                                    result.standing.state(),
                                    result.error.clone().unwrap_or_else(|| "see the attempts above".into())
                                )
                            });
                            stopping = true;
                        }
                        _ => {}
                    }
                }
                Some(request) = self.requests.recv() => match request {
                    RunRequest::Interrupt | RunRequest::Kill => {
                        interrupted = true;
                        stopping = true;
                        crew.tell_all(&request);
                    }
                    RunRequest::TogglePause => {
                        paused = !paused;
                        crew.tell_all(&request);
                    }
                    RunRequest::SkipPhase | RunRequest::RestartNow => {
                        if let Some(sender) = crew.aimed() {
                            let _ = sender.send(request);
                        }
                    }
                    RunRequest::Focus(phase) => crew.focus = phase,
                },
            }
        }

        // Paused phases, in execution order: the first is where the run stands.
        ending.paused_at = self
            .order
            .iter()
            .map(|p| p.id.as_str())
            .find(|id| matches!(self.standings.get(*id), Some(Standing::Paused)))
            .map(str::to_owned);
        // An interrupt that came between phases pauses the run before the next one.
        if interrupted && ending.paused_at.is_none() && ending.run_error.is_none() {
            ending.paused_at = self
                .order
                .iter()
                .find(|p| !taken.contains(p.id.as_str()))
                .map(|p| p.id.as_str().to_owned());
        }
        self.summarise_rest();
        (self.summary, ending)
    }

    /// A runner for `phase`, receiving its requests on `requests`.
    fn runner(&mut self, phase: &Phase, requests: RequestReceiver) -> Runner<'run> {
        let id = phase.id.as_str();
        Runner {
            run: self.run,
            workdir: self.run.root.clone(),
            worktree: None,
            requests,
            flags: Flags::default(),
            summary: RunSummary::default(),
            resume_point: self.resume_points.remove(id),
            agent_group: None,
            no_restart: None,
            guards: self.guards.clone(),
        }
    }

    /// The future that works on `phase`: in its worktree when phases run side by side,
    /// merged back when it completes.
    fn work(
        &mut self,
        mut runner: Runner<'run>,
        phase: &'run Phase,
        index: usize,
        total: usize,
    ) -> Work<'run> {
        let unmerged = self.unmerged.remove(phase.id.as_str());
        let run_branch = self.run_branch.clone();
        Box::pin(async move {
            let Some(run_branch) = run_branch else {
                let result = runner.run_phase(phase, index, total).await;
                return (runner, phase, result);
            };
            if let Some(execution) = unmerged {
                let result = runner
                    .settle_merge(phase, execution, &run_branch, (index, total))
                    .await;
                return (runner, phase, result);
            }
            let worktree = Worktree::of(&runner.run.root, &runner.run.run_id, phase.id.as_str());
            if let Err(error) = runner.enter_worktree(worktree, &run_branch).await {
                let result = integrate::not_started(&mut runner, phase, error);
                return (runner, phase, result);
            }
            let result = runner.run_phase(phase, index, total).await;
            let result = if result.standing == Standing::Completed {
                runner
                    .integrate(phase, result, &run_branch, (index, total))
                    .await
            } else {
                result
            };
            (runner, phase, result)
        })
    }

    fn skip(&mut self, phase: &Phase, reason: String, dropped: bool) {
        let id = phase.id.as_str().to_owned();
        self.emit(Event::PhaseSkipped {
            phase_id: id.clone(),
            reason: reason.clone(),
        });
        if dropped {
            self.standings.insert(id, Standing::Dropped(reason));
        }
        self.summary
            .phases
            .push(not_run(phase, PhaseState::Skipped));
    }

    /// Add a phase's figures to the run's.
    fn absorb(&mut self, phase: &RunSummary) {
        let run = &mut self.summary;
        run.restarts += phase.restarts;
        run.sessions += phase.sessions;
        run.billed += phase.billed;
        run.cost_usd += phase.cost_usd;
        run.handoffs += phase.handoffs;
        run.handoff_cost_usd += phase.handoff_cost_usd;
        run.cost_estimated |= phase.cost_estimated;
        run.commits.extend(phase.commits.iter().cloned());
    }

    /// Summaries for the phases the run did not take up (`not run`: "blocked" is for a
    /// phase that needs a human), then all in execution order.
    fn summarise_rest(&mut self) {
        let done: BTreeSet<String> = self.summary.phases.iter().map(|p| p.id.clone()).collect();
        for phase in self.order.iter().filter(|p| !done.contains(p.id.as_str())) {
            self.summary.phases.push(not_run(phase, PhaseState::NotRun));
        }
        let position: BTreeMap<&str, usize> = self
            .order
            .iter()
            .enumerate()
            .map(|(index, phase)| (phase.id.as_str(), index))
            .collect();
        self.summary
            .phases
            .sort_by_key(|p| position.get(p.id.as_str()).copied().unwrap_or(usize::MAX));
    }

    fn emit(&self, event: Event) {
        let _ = self.run.events.send(event);
    }
}

fn not_run(phase: &Phase, status: PhaseState) -> PhaseSummary {
    PhaseSummary {
        id: phase.id.as_str().to_owned(),
        title: phase.title.clone(),
        status,
        ..PhaseSummary::default()
    }
}
