//! [`Runner`]: the state of one phase being worked on, and what every step of it needs:
//! events and warnings, requests between sessions, waits, and commits.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::events::{Event, NoRestart, RequestReceiver, RunRequest, RunSummary};
use crate::plan::Phase;
use crate::session::SessionSpec;
use crate::state::PauseRecord;

use super::checkout::Checkout;
use super::context::RunContext;
use super::guards::{Guards, LimitHit};
use super::no_space::NoSpace;
use super::resume::ResumePoint;
use crate::git::vcs;

/// What the user has asked for that outlives one session.
#[derive(Debug, Default)]
pub(crate) struct Flags {
    /// Pause before the next session starts.
    pub(crate) pause_requested: bool,
    /// The run is being interrupted.
    pub(crate) interrupted: bool,
    /// The current phase is being skipped.
    pub(crate) skip_requested: bool,
    /// A spending or time limit was reached: the run pauses.
    pub(crate) limit: Option<LimitHit>,
}

/// The state of one phase being worked on. Phases running side by side each have one;
/// all of them are futures of the run's one task, which owns the state store they share.
pub(crate) struct Runner<'run> {
    /// What every phase of the run shares.
    pub(crate) run: &'run RunContext<'run>,
    /// Where the agent works and gates and checks run: the project root, or, when phases
    /// run side by side, the project's directory in the phase's git worktree (the
    /// worktree itself unless the project is a directory of its repository). Commits
    /// made from here take the whole working tree it is in.
    pub(crate) workdir: PathBuf,
    /// The phase's worktree and branch, when it has one.
    pub(crate) worktree: Option<crate::git::worktree::Worktree>,
    /// The user's requests for this phase, as the run passes them on.
    pub(crate) requests: RequestReceiver,
    pub(crate) flags: Flags,
    /// What this phase's work added to the run's figures.
    pub(crate) summary: RunSummary,
    /// Where the stopped run being resumed left this phase; its first attempt goes on
    /// from it.
    pub(crate) resume_point: Option<ResumePoint>,
    /// The leader of the process group of the agent session running now.
    pub(crate) agent_group: Option<crate::process::ProcessIdentity>,
    /// Why the current attempt's sessions are not restarted for their context, if so.
    pub(crate) no_restart: Option<NoRestart>,
    /// The run's spending and time limits, and what it spent.
    pub(crate) guards: Guards,
}

impl Runner<'_> {
    /// Where the phase's uncommitted work is, for a person: the working tree, or the
    /// phase's worktree by its path.
    pub(crate) fn where_the_work_is(&self) -> String {
        self.worktree.as_ref().map_or_else(
            || "the working tree".to_owned(),
            |worktree| format!("its worktree {}", worktree.path.display()),
        )
    }

    /// The project's checkout, when this phase works and commits there; a phase's
    /// worktree has a branch of its own.
    fn checkout(&self) -> Option<&Checkout> {
        self.run
            .checkout
            .as_ref()
            .filter(|_| self.workdir == self.run.root)
    }

    /// When the phase's first attempt in this run started, in seconds since the epoch:
    /// what its tree's history and stashes hold from before then is not the phase's.
    pub(crate) fn phase_started(&self, phase_id: &str) -> i64 {
        self.run
            .store
            .executions(&self.run.run_id)
            .unwrap_or_default()
            .into_iter()
            .filter(|execution| execution.phase_id == phase_id)
            .filter_map(|execution| execution.started_at.parse::<jiff::Timestamp>().ok())
            .map(jiff::Timestamp::as_second)
            .min()
            .unwrap_or(0)
    }

    /// Work stashed in the project's checkout since the phase started that the run's
    /// branch does not hold, each stash named with how to get it back; `None` when there
    /// is none, or the phase has a worktree (its merge checks its stashes).
    pub(crate) async fn stashed_work(&self, phase_id: &str) -> Option<String> {
        let since = self.phase_started(phase_id);
        let stashed = self.checkout()?.stashed_since(&self.run.root, since).await;
        match stashed {
            Ok(stashes) if stashes.is_empty() => None,
            Ok(stashes) => Some(stashes.join("; ")),
            Err(err) => {
                self.could_not("list the stashes", &err);
                None
            }
        }
    }

    /// Changes the agent left uncommitted inside a submodule of the phase's tree, which
    /// no commit of the project holds, each submodule named with what to do; `None`
    /// when there are none.
    pub(crate) async fn submodule_work(&self) -> Option<String> {
        match vcs::uncommitted_in_submodules(self.workdir.clone()).await {
            Ok(changed) if changed.is_empty() => None,
            Ok(changed) => Some(changed.join("; ")),
            Err(err) => {
                self.could_not("list the submodules' changes", &err);
                None
            }
        }
    }

    /// `path` (a plan or notes file in the project) where the agent sees it: the same
    /// file in the phase's worktree when it has one.
    pub(crate) fn in_workdir(&self, path: &Path) -> PathBuf {
        if self.workdir == self.run.root {
            return path.to_path_buf();
        }
        let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        absolute.strip_prefix(&self.run.root).map_or_else(
            |_| path.to_path_buf(),
            |relative| self.workdir.join(relative),
        )
    }

    /// The session settings of `phase_id`: its own agent and model, else the run's.
    pub(crate) fn session_spec(&self, phase_id: &str) -> &SessionSpec {
        self.run
            .phase_sessions
            .get(phase_id)
            .unwrap_or(&self.run.session)
    }

    /// Send an event; a closed channel (sink gone) is not the run's problem.
    pub(crate) fn emit(&self, event: Event) {
        let _ = self.run.events.send(event);
    }

    /// Tell the user something that does not stop the run, once: as the run's event
    /// (the log keeps it at debug level).
    pub(crate) fn warn(&self, message: String) {
        tracing::debug!("{message}");
        self.emit(Event::Warning { message });
    }

    /// Warn that debussy could not `what` (e.g. "record the session"), with `err` and
    /// its causes: the cause (a full disk, a locked database) is what the user can fix.
    /// A full disk is said once, and pauses the run ([`Self::out_of_space`]).
    pub(crate) fn could_not(&self, what: &str, err: &(dyn std::error::Error + 'static)) {
        if self.out_of_space(what, err) {
            return;
        }
        self.warn(format!(
            "could not {what}: {}",
            crate::error_chain::error_chain(err)
        ));
    }

    /// Whether `err`, met while debussy tried to `what`, says the disk is full. The
    /// first such error is announced and remembered for the whole run, which pauses at
    /// its next step: every phase's writes go to the same project.
    pub(crate) fn out_of_space(&self, what: &str, err: &(dyn std::error::Error + 'static)) -> bool {
        let Some(full) = NoSpace::in_error(what, err) else {
            return false;
        };
        self.pause_for_no_space(full);
        true
    }

    /// Announce and remember that the disk is full (`full`), unless an earlier write
    /// found it so: the run pauses at its next step, and the room kept for its last
    /// records is given back for them.
    pub(crate) fn pause_for_no_space(&self, full: NoSpace) {
        if self.run.no_space.get().is_none() {
            self.run.store.release_reserve();
            self.warn(format!("the run pauses: {full}"));
            let _ = self.run.no_space.set(full);
        }
    }

    /// Whether the run is pausing: a limit was reached, or the disk is full.
    pub(crate) fn pausing(&self) -> bool {
        self.flags.limit.is_some() || self.run.no_space.get().is_some()
    }

    /// Whether the run must pause before going on: a limit is reached with the running
    /// session's cost so far (`live_cost`), or the disk is full. The first limit
    /// reached is announced and remembered.
    pub(crate) fn must_pause(&mut self, phase_id: &str, live_cost: f64) -> bool {
        if self.pausing() {
            return true;
        }
        self.guards.running(live_cost);
        let Some(hit) = self.guards.check(live_cost, tokio::time::Instant::now()) else {
            return false;
        };
        self.pause_for(phase_id, hit);
        true
    }

    /// Announce and remember that `hit` pauses the run.
    pub(crate) fn pause_for(&mut self, phase_id: &str, hit: LimitHit) {
        tracing::debug!("{hit}");
        self.emit(Event::LimitReached {
            phase_id: phase_id.to_owned(),
            limit: hit.key().to_owned(),
            detail: hit.to_string(),
            raise_with: hit.raise_hint(),
        });
        self.flags.limit = Some(hit);
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
            RunRequest::Focus(_) => false,
        }
    }

    /// On a pause, keep the agent's work for `--resume`: commit it as a checkpoint when
    /// auto-commit is on and the disk is not full, else (or when nothing could be
    /// committed) record the files it changed, which the resume then accepts as a dirty
    /// tree. Returns the commit id.
    pub(crate) async fn keep_paused_work(
        &mut self,
        phase: &Phase,
        base: Option<git2::Oid>,
    ) -> Option<String> {
        // A commit that fails falls back to recording the files: the work stays in the
        // tree. On a full disk none is tried: the room left is the records'.
        let commit = if self.run.no_space.get().is_some() {
            None
        } else {
            self.commit(phase, "paused (checkpoint)")
                .await
                .ok()
                .flatten()
        };
        let files = if commit.is_some() {
            Vec::new()
        } else {
            vcs::changes_since(self.workdir.clone(), base)
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
        if let Err(err) =
            self.run
                .store
                .set_pause(&self.run.run_id, phase.id.as_str(), Some(&pause))
        {
            self.could_not("record where the pause left the work", &err);
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
        if !self.run.config.auto_commit {
            return Ok(None);
        }
        let message = vcs::commit_message(
            &self.run.config.commit_message_template,
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
            self.workdir.clone(),
            message.clone(),
            super::parallel::git_cli(&self.run.config),
            vcs::hook_policy(&self.run.config.git),
            self.checkout().map(Checkout::on_branch),
        )
        .await
        {
            Ok(Some(commit)) => {
                if let Some(checkout) = self.checkout() {
                    checkout.committed(&commit.id);
                }
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
                let mut said = crate::error_chain::error_chain(&err);
                if let Some(help) = miette::Diagnostic::help(&err) {
                    said = format!("{said}: {help}");
                }
                if !self.out_of_space("commit the work", &err) {
                    self.warn(format!("could not commit: {said}"));
                }
                Err(said)
            }
        }
    }

    /// Wait `delay`, serving requests. False when interrupted or skipped meanwhile.
    pub(crate) async fn wait(&mut self, delay: Duration) -> bool {
        let sleep = tokio::time::sleep(delay);
        tokio::pin!(sleep);
        loop {
            tokio::select! {
                () = &mut sleep => return true,
                Some(request) = self.requests.recv() => {
                    if self.handle_idle_request(request) {
                        return false;
                    }
                }
            }
        }
    }

    /// Hold the run until the user resumes it. False when interrupted or skipped instead.
    pub(crate) async fn wait_while_paused(&mut self, phase_id: &str) -> bool {
        self.emit(Event::Paused {
            phase_id: phase_id.to_owned(),
        });
        while self.flags.pause_requested {
            match self.requests.recv().await {
                Some(request) => {
                    if self.handle_idle_request(request) {
                        return false;
                    }
                }
                // Nobody can resume us any more: carry on.
                None => self.flags.pause_requested = false,
            }
        }
        self.emit(Event::Resumed {
            phase_id: phase_id.to_owned(),
        });
        true
    }
}
