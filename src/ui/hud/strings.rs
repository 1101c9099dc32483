//! Every word the HUD shows, in one place, so wording stays consistent and can be
//! reviewed (or translated) without reading drawing code.

/// Block titles.
pub(crate) const TITLE_APP: &str = " debussy ";
pub(crate) const TITLE_CONTEXT: &str = " Context ";
pub(crate) const TITLE_ACTIVITY: &str = " Activity ";
pub(crate) const TITLE_ACTIVITY_PAUSED: &str = " Activity (scrolled: a to follow) ";
pub(crate) const TITLE_ACTIVITY_VERBOSE: &str = " Activity (verbose) ";
pub(crate) const TITLE_PHASES: &str = " Phases ";
pub(crate) const TITLE_CONFIRM: &str = " Confirm ";

/// Header words.
pub(crate) const NO_PHASE_YET: &str = "waiting for the first phase";
pub(crate) const RUN: &str = "run";
/// Before the ids of phases running side by side.
pub(crate) const PHASES_RUNNING: &str = "running phases";
pub(crate) const PHASE: &str = "phase";
pub(crate) const AGENT: &str = "agent";
pub(crate) const MODEL: &str = "model";
/// Shown for the model when the agent runs its own default.
pub(crate) const AGENT_DEFAULT_MODEL: &str = "agent's default";
pub(crate) const ATTEMPT: &str = "attempt";
pub(crate) const RESTART: &str = "restart";
pub(crate) const RESTARTS_OFF: &str = "restarts off";

/// What the run is doing, as the header says it.
pub(crate) const STAGE_STARTING: &str = "starting";
pub(crate) const STAGE_RUNNING: &str = "running";
pub(crate) const STAGE_RESTARTING: &str = "restarting";
pub(crate) const STAGE_CHECKING: &str = "checking the work";
pub(crate) const STAGE_GATE: &str = "gate";
pub(crate) const STAGE_BETWEEN: &str = "between attempts";
pub(crate) const STAGE_PAUSED: &str = "paused (p resumes)";
pub(crate) const STAGE_PAUSE_REQUESTED: &str = "pausing after this session";
pub(crate) const STAGE_SKIPPING: &str = "skipping the phase";
pub(crate) const STAGE_NEEDS_HUMAN: &str = "blocked: needs you";
pub(crate) const STAGE_WAITING_FOR: &str = "waiting for";

/// Attempt kinds.
pub(crate) const KIND_RETRY: &str = "retry";
pub(crate) const KIND_REMEDIATION: &str = "fixing findings";
/// In place of an attempt number: the session resolving a phase's merge conflicts.
pub(crate) const MERGE_FIX: &str = "merge fix";

/// Gauge words.
pub(crate) const GAUGE_WAITING: &str = "no usage reported yet";
/// Between phases, when no session runs.
pub(crate) const GAUGE_IDLE: &str = "no session running";
pub(crate) const GAUGE_ESTIMATED: &str = "estimated";
pub(crate) const GAUGE_TOKENS: &str = "tokens";
pub(crate) const GAUGE_BILLED: &str = "billed";
pub(crate) const GAUGE_RESTART_AT: &str = "restart at";
pub(crate) const GAUGE_SESSION: &str = "session";
pub(crate) const GAUGE_RUN: &str = "run";
pub(crate) const GAUGE_TOOL_CALLS: &str = "tool call";

/// Activity markers (one glyph each) and fixed lines.
pub(crate) const MARK_TOOL: &str = "▸ ";
pub(crate) const MARK_ERROR: &str = "✗ ";
pub(crate) const MARK_OK: &str = "✓ ";
pub(crate) const MARK_RESTART: &str = "⟳ ";
pub(crate) const MARK_WARNING: &str = "! ";
pub(crate) const MARK_COMMIT: &str = "● ";
pub(crate) const ACTIVITY_EMPTY: &str =
    "Nothing yet: the agent's text, tool calls, restarts and gates appear here.";
pub(crate) const STDERR: &str = "stderr:";

/// Key hints: (key label, what it does).
pub(crate) const HINT_PAUSE: (&str, &str) = ("p", "pause");
pub(crate) const HINT_RESUME: (&str, &str) = ("p", "resume");
pub(crate) const HINT_UNPAUSE: (&str, &str) = ("p", "don't pause");
pub(crate) const HINT_RESTART: (&str, &str) = ("r", "restart");
pub(crate) const HINT_SKIP: (&str, &str) = ("s", "skip");
/// Focus the next running phase (phases side by side).
pub(crate) const HINT_FOCUS: (&str, &str) = ("f", "focus");
/// The `v` and `a` hints say what the key does now, as `p pause` / `p resume` do.
pub(crate) const HINT_VERBOSE_ON: (&str, &str) = ("v", "show details");
pub(crate) const HINT_VERBOSE_OFF: (&str, &str) = ("v", "hide details");
pub(crate) const HINT_FOLLOW_ON: (&str, &str) = ("a", "follow");
pub(crate) const HINT_FOLLOW_OFF: (&str, &str) = ("a", "stop following");
pub(crate) const HINT_SCROLL: (&str, &str) = ("↑↓ PgUp/Dn", "scroll");
pub(crate) const HINT_QUIT: (&str, &str) = ("q", "quit");
pub(crate) const HINT_YES: (&str, &str) = ("y", "yes");
pub(crate) const HINT_NO: (&str, &str) = ("n/Esc", "no");

/// The quit question.
pub(crate) const CONFIRM_QUIT: &str = "Stop the agent and pause the run?";
pub(crate) const CONFIRM_QUIT_DETAIL: &str = "The agent is stopped gracefully and the run is saved as paused; continue it later with `debussy run --resume`.";
/// The skip question's detail.
pub(crate) const CONFIRM_SKIP_DETAIL: &str =
    "The agent is stopped, the phase is marked skipped and the run moves on to the next phase.";

/// The skip question.
pub(crate) fn confirm_skip(phase_id: &str, title: &str) -> String {
    format!("Skip phase {phase_id} \"{title}\"?")
}

/// Printed on stderr when the dashboard fails and the run goes on with plain lines.
pub(crate) fn fell_back(error: &std::io::Error) -> String {
    format!("debussy: the dashboard failed ({error}); continuing with plain output")
}

/// Activity lines for run milestones.
pub(crate) mod lines {
    use crate::agent::FailureKind;
    use crate::compliance::VerdictKind;
    use crate::events::{AttemptKind, GateVerdict, PhaseState};
    use crate::state::RunStatus;
    use crate::words::plural;
    use crate::words::{duration, thousands};

    fn short(id: &str) -> &str {
        id.get(..8).unwrap_or(id)
    }

    pub(crate) fn run_started(title: &str, phases: usize, resumed: bool) -> String {
        let verb = if resumed { "resumed" } else { "started" };
        format!("run {verb}: {title} ({phases} phase{})", plural(phases))
    }

    pub(crate) fn phase_skipped(id: &str, reason: &str) -> String {
        format!("phase {id} skipped: {reason}")
    }

    pub(crate) fn phase_started(
        id: &str,
        title: &str,
        attempt: u32,
        max_attempts: u32,
        kind: AttemptKind,
    ) -> String {
        let which = match kind {
            AttemptKind::First => format!("attempt {attempt}/{max_attempts}"),
            AttemptKind::Retry => {
                format!("attempt {attempt}/{max_attempts} ({})", super::KIND_RETRY)
            }
            AttemptKind::Remediation => format!(
                "attempt {attempt}/{max_attempts} ({})",
                super::KIND_REMEDIATION
            ),
            AttemptKind::MergeFix => super::MERGE_FIX.to_owned(),
        };
        format!("phase {id} \"{title}\": {which}")
    }

    pub(crate) fn session_started(restart: u32, max_restarts: u32, pid: u32) -> String {
        if restart == 0 {
            format!("session started (pid {pid})")
        } else {
            format!("session after restart {restart}/{max_restarts} started (pid {pid})")
        }
    }

    pub(crate) fn session_ended(detail: &str, percent: f64) -> String {
        format!("session ended: {detail}, context {percent:.1}%")
    }

    pub(crate) fn restart(
        restart: u32,
        max_restarts: u32,
        percent: f64,
        reason: &str,
        commit: Option<&str>,
        delay_secs: u64,
    ) -> String {
        let saved = commit.map_or_else(
            || "work left uncommitted".to_owned(),
            |c| format!("checkpoint {}", short(c)),
        );
        format!(
            "restart {restart}/{max_restarts} at {percent:.1}%: {reason}; {saved}; next session in {delay_secs}s"
        )
    }

    pub(crate) fn gate_started(name: &str, command: &str) -> String {
        format!("gate {name}: {command}")
    }

    pub(crate) fn gate_finished(
        name: &str,
        verdict: &GateVerdict,
        duration_ms: u64,
        command: &str,
    ) -> String {
        let secs = f64::from(u32::try_from(duration_ms).unwrap_or(u32::MAX)) / 1000.0;
        format!("gate {name} {verdict} in {secs:.1}s: {command}")
    }

    pub(crate) fn compliance(verdict: VerdictKind, findings: &[String]) -> String {
        let mut text = format!("checks: {}", verdict.words());
        if !findings.is_empty() {
            text.push_str(": ");
            text.push_str(&findings.join("; "));
        }
        text
    }

    pub(crate) fn committed(commit: &str, files: usize, message: &str) -> String {
        format!(
            "committed {} ({files} file{}): {message}",
            short(commit),
            plural(files)
        )
    }

    pub(crate) fn merged(branch: &str, commit: &str, fast_forward: bool) -> String {
        let how = if fast_forward {
            "fast-forward"
        } else {
            "merge commit"
        };
        format!("merged {branch} ({how}) at {}", short(commit))
    }

    pub(crate) fn merge_conflict(branch: &str, files: &[String]) -> String {
        format!(
            "merging {branch} conflicts in {}: resolving in its worktree",
            files.join(", ")
        )
    }

    pub(crate) fn attempt_failed(attempt: u32, reason: &str) -> String {
        format!("attempt {attempt} failed: {reason}")
    }

    pub(crate) fn phase_finished(
        id: &str,
        status: PhaseState,
        attempts: u32,
        restarts: u32,
        error: Option<&str>,
    ) -> String {
        let status = if status == PhaseState::Blocked {
            super::STAGE_NEEDS_HUMAN
        } else {
            status.as_str()
        };
        let mut text = format!(
            "phase {id} {status} ({attempts} attempt{}, {restarts} restart{})",
            plural(attempts),
            plural(restarts)
        );
        if let Some(error) = error {
            text.push_str(": ");
            text.push_str(error);
        }
        text
    }

    pub(crate) fn paused(id: &str) -> String {
        format!("paused before the next session of phase {id}; p resumes")
    }

    pub(crate) fn resumed(id: &str) -> String {
        format!("resumed phase {id}")
    }

    pub(crate) fn tool_failed(tool: Option<&str>, message: &str) -> (String, String) {
        (
            tool.unwrap_or("tool").to_owned(),
            format!("failed: {message}"),
        )
    }

    pub(crate) const HANDOFF_REQUESTED: &str = "asking the stopped session to write its handoff";

    pub(crate) fn handoff(written: bool, detail: &str) -> String {
        if written {
            format!("handoff: {detail}")
        } else {
            format!("no handoff from the agent: {detail}")
        }
    }

    pub(crate) fn limit_reached(detail: &str) -> String {
        format!("{detail}: pausing the run")
    }

    pub(crate) fn last_words(words: &str) -> String {
        format!("the agent's last words: {words}")
    }

    pub(crate) fn waiting_for_limit(
        kind: FailureKind,
        until: &str,
        reset_known: bool,
        said: &str,
    ) -> String {
        let (what, how) = match (kind, reset_known) {
            (FailureKind::Unreachable, _) => {
                ("API unreachable", "backing off: the network may come back")
            }
            (_, true) => ("usage limit", "when it resets"),
            (_, false) => (
                "usage limit",
                "backing off: the agent did not say when it resets",
            ),
        };
        format!(
            "{what}: waiting until {} ({how}): “{said}”",
            crate::words::local_time_of(until)
        )
    }

    pub(crate) fn run_finished(status: RunStatus, secs: f64, tokens: u64, cost: f64) -> String {
        format!(
            "run {status} in {}: {} tokens billed, ${cost:.2}",
            duration(secs),
            thousands(tokens)
        )
    }
}
