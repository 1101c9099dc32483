//! The stop ladder: which actions end a child, and how long each gets to work.
//!
//! A ladder is a list of steps; each step acts (close stdin, or signal the whole
//! process group) and then waits its grace period for the child to exit. When the last
//! step's grace runs out, SIGKILL ends it. Before every step the group also gets
//! SIGCONT, so a child frozen with SIGSTOP can see its stdin close or handle its signal
//! (systemd does the same). The ladder itself is pure: [`LadderRun`] decides, the
//! supervising task acts and waits.

use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

/// One thing done to a child to make it exit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StopAction {
    /// Close the child's stdin (EOF is how an MCP stdio server is asked to exit).
    CloseStdin,
    /// Send this signal to the child's whole process group.
    Signal(Signal),
}

impl std::fmt::Display for StopAction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StopAction::CloseStdin => f.write_str("close stdin"),
            StopAction::Signal(signal) => f.write_str(signal.as_str()),
        }
    }
}

/// One rung of a [`StopLadder`]: act, then give the child `grace` to exit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StopStep {
    /// What to do.
    pub action: StopAction,
    /// How long to wait for the child to exit before the next step.
    pub grace: Duration,
}

impl StopStep {
    /// A step doing `action`, then waiting `grace`.
    #[must_use]
    pub fn new(action: StopAction, grace: Duration) -> Self {
        StopStep { action, grace }
    }
}

/// The escalating sequence used to stop a child. SIGKILL always ends it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StopLadder {
    steps: Vec<StopStep>,
}

impl StopLadder {
    /// A ladder of `steps`, followed by SIGKILL if the child outlives the last grace.
    ///
    /// Steps after a SIGKILL step are dropped: nothing can follow it.
    #[must_use]
    pub fn new(steps: impl IntoIterator<Item = StopStep>) -> Self {
        let mut kept = Vec::new();
        for step in steps {
            if step.action == StopAction::Signal(Signal::SIGKILL) {
                break;
            }
            kept.push(step);
        }
        StopLadder { steps: kept }
    }

    /// The agent ladder (issue 3): SIGINT, then SIGTERM, then SIGKILL, `grace` apart,
    /// each preceded by SIGCONT. SIGINT is what an interactive agent treats as "stop
    /// now and flush".
    #[must_use]
    pub fn agent(grace: Duration) -> Self {
        StopLadder::new([
            StopStep::new(StopAction::Signal(Signal::SIGINT), grace),
            StopStep::new(StopAction::Signal(Signal::SIGTERM), grace),
        ])
    }

    /// The MCP stdio ladder (MCP lifecycle spec, issue 6): close stdin and wait
    /// `close_grace`, then SIGTERM and wait `term_grace`, then SIGKILL.
    #[must_use]
    pub fn mcp(close_grace: Duration, term_grace: Duration) -> Self {
        StopLadder::new([
            StopStep::new(StopAction::CloseStdin, close_grace),
            StopStep::new(StopAction::Signal(Signal::SIGTERM), term_grace),
        ])
    }

    /// SIGKILL straight away.
    #[must_use]
    pub fn immediate() -> Self {
        StopLadder { steps: Vec::new() }
    }

    /// The steps before the final SIGKILL.
    #[must_use]
    pub fn steps(&self) -> &[StopStep] {
        &self.steps
    }

    /// The longest a stop can take before SIGKILL is sent: the sum of the graces.
    #[must_use]
    pub fn total_grace(&self) -> Duration {
        self.steps.iter().map(|step| step.grace).sum()
    }
}

impl Default for StopLadder {
    /// The agent ladder with the configured default grace of 2 s (`agent.stop_grace`).
    fn default() -> Self {
        StopLadder::agent(Duration::from_secs(2))
    }
}

/// Whether carrying out an action did anything.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Effect {
    /// The action was carried out: wait its grace.
    Done,
    /// There was nothing to act on (stdin already closed): go straight to the next step.
    Skipped,
}

/// A stop in progress: which step is next and what was done so far.
#[derive(Debug)]
pub(crate) struct LadderRun {
    steps: Vec<StopStep>,
    next: usize,
    killed: bool,
    escalated: bool,
    taken: Vec<StopAction>,
    started: Instant,
}

impl LadderRun {
    /// A stop requested at `now`; nothing has been done yet.
    pub(crate) fn new(ladder: &StopLadder, now: Instant) -> Self {
        LadderRun {
            steps: ladder.steps.clone(),
            next: 0,
            killed: false,
            escalated: false,
            taken: Vec::new(),
            started: now,
        }
    }

    /// Carry out steps through `act` until one needs waiting for; returns when the
    /// next step is due, or `None` once SIGKILL was sent (then only reaping is left).
    ///
    /// `act` receives SIGCONT before each step (not recorded) and then the step's action.
    pub(crate) fn advance(
        &mut self,
        now: Instant,
        act: &mut dyn FnMut(StopAction) -> Effect,
    ) -> Option<Instant> {
        while let Some(step) = self.steps.get(self.next).copied() {
            self.next += 1;
            act(StopAction::Signal(Signal::SIGCONT));
            if act(step.action) == Effect::Done {
                self.taken.push(step.action);
                if !step.grace.is_zero() {
                    return Some(now + step.grace);
                }
            }
        }
        self.kill(act);
        None
    }

    /// Skip the remaining steps and send SIGKILL now (a second stop request, or the
    /// handle being dropped). Does nothing if SIGKILL was already sent.
    pub(crate) fn escalate(&mut self, act: &mut dyn FnMut(StopAction) -> Effect) {
        if !self.killed {
            self.escalated = true;
            self.kill(act);
        }
    }

    fn kill(&mut self, act: &mut dyn FnMut(StopAction) -> Effect) {
        if !self.killed {
            self.killed = true;
            self.next = self.steps.len();
            act(StopAction::Signal(Signal::SIGKILL));
            self.taken.push(StopAction::Signal(Signal::SIGKILL));
        }
    }

    /// The actions taken so far, in order.
    pub(crate) fn taken(&self) -> &[StopAction] {
        &self.taken
    }

    /// True once the ladder was cut short.
    pub(crate) fn escalated(&self) -> bool {
        self.escalated
    }

    /// When the stop was requested.
    pub(crate) fn started(&self) -> Instant {
        self.started
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const G: Duration = Duration::from_secs(2);

    /// A fake child that records every action and may lack stdin.
    struct Recorder {
        actions: Vec<StopAction>,
        has_stdin: bool,
    }

    impl Recorder {
        fn new(has_stdin: bool) -> Self {
            Recorder {
                actions: Vec::new(),
                has_stdin,
            }
        }

        fn act(&mut self) -> impl FnMut(StopAction) -> Effect + '_ {
            |action| {
                self.actions.push(action);
                match action {
                    StopAction::CloseStdin if !self.has_stdin => Effect::Skipped,
                    StopAction::CloseStdin => {
                        self.has_stdin = false;
                        Effect::Done
                    }
                    StopAction::Signal(_) => Effect::Done,
                }
            }
        }
    }

    use Signal::{SIGCONT, SIGINT, SIGKILL, SIGTERM};
    fn sig(s: Signal) -> StopAction {
        StopAction::Signal(s)
    }

    #[test]
    fn agent_ladder_walks_int_term_kill_with_cont_first() {
        let t0 = Instant::now();
        let mut child = Recorder::new(false);
        let mut run = LadderRun::new(&StopLadder::agent(G), t0);
        assert_eq!(run.advance(t0, &mut child.act()), Some(t0 + G));
        assert_eq!(child.actions, vec![sig(SIGCONT), sig(SIGINT)]);
        assert_eq!(run.advance(t0 + G, &mut child.act()), Some(t0 + G + G));
        assert_eq!(run.advance(t0 + G + G, &mut child.act()), None);
        assert_eq!(
            child.actions,
            vec![
                sig(SIGCONT),
                sig(SIGINT),
                sig(SIGCONT),
                sig(SIGTERM),
                sig(SIGKILL)
            ]
        );
        assert_eq!(run.taken(), &[sig(SIGINT), sig(SIGTERM), sig(SIGKILL)]);
        assert!(!run.escalated());
    }

    #[test]
    fn mcp_ladder_closes_stdin_first() {
        let t0 = Instant::now();
        let mut child = Recorder::new(true);
        let ladder = StopLadder::mcp(Duration::from_secs(1), Duration::from_secs(3));
        let mut run = LadderRun::new(&ladder, t0);
        assert_eq!(
            run.advance(t0, &mut child.act()),
            Some(t0 + Duration::from_secs(1))
        );
        let t1 = t0 + Duration::from_secs(1);
        assert_eq!(
            run.advance(t1, &mut child.act()),
            Some(t1 + Duration::from_secs(3))
        );
        assert_eq!(
            run.advance(t1 + Duration::from_secs(3), &mut child.act()),
            None
        );
        assert_eq!(
            run.taken(),
            &[StopAction::CloseStdin, sig(SIGTERM), sig(SIGKILL)]
        );
    }

    #[test]
    fn closing_absent_stdin_does_not_wait() {
        let t0 = Instant::now();
        let mut child = Recorder::new(false);
        let ladder = StopLadder::mcp(Duration::from_secs(1), Duration::from_secs(3));
        let mut run = LadderRun::new(&ladder, t0);
        assert_eq!(
            run.advance(t0, &mut child.act()),
            Some(t0 + Duration::from_secs(3))
        );
        assert_eq!(run.taken(), &[sig(SIGTERM)]);
    }

    #[test]
    fn zero_grace_steps_run_back_to_back() {
        let t0 = Instant::now();
        let mut child = Recorder::new(false);
        let ladder = StopLadder::new([
            StopStep::new(sig(SIGINT), Duration::ZERO),
            StopStep::new(sig(SIGTERM), G),
        ]);
        let mut run = LadderRun::new(&ladder, t0);
        assert_eq!(run.advance(t0, &mut child.act()), Some(t0 + G));
        assert_eq!(run.taken(), &[sig(SIGINT), sig(SIGTERM)]);
    }

    #[test]
    fn escalation_kills_once_and_skips_the_rest() {
        let t0 = Instant::now();
        let mut child = Recorder::new(false);
        let mut run = LadderRun::new(&StopLadder::agent(G), t0);
        run.advance(t0, &mut child.act());
        run.escalate(&mut child.act());
        run.escalate(&mut child.act());
        assert_eq!(run.advance(t0 + G, &mut child.act()), None);
        assert_eq!(run.taken(), &[sig(SIGINT), sig(SIGKILL)]);
        assert_eq!(
            child.actions.iter().filter(|a| **a == sig(SIGKILL)).count(),
            1
        );
        assert!(run.escalated());
    }

    #[test]
    fn immediate_ladder_is_just_kill() {
        let t0 = Instant::now();
        let mut child = Recorder::new(true);
        let mut run = LadderRun::new(&StopLadder::immediate(), t0);
        assert_eq!(run.advance(t0, &mut child.act()), None);
        assert_eq!(child.actions, vec![sig(SIGKILL)]);
        assert!(!run.escalated());
    }

    #[test]
    fn steps_after_a_kill_are_dropped() {
        let ladder = StopLadder::new([
            StopStep::new(sig(SIGTERM), G),
            StopStep::new(sig(SIGKILL), G),
            StopStep::new(sig(SIGINT), G),
        ]);
        assert_eq!(ladder.steps().len(), 1);
        assert_eq!(ladder.total_grace(), G);
        assert_eq!(StopLadder::default(), StopLadder::agent(G));
    }
}
