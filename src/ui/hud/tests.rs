//! HUD frames for representative states, built by feeding [`Event`]s into the app as a
//! run does, drawn on ratatui's `TestBackend` and compared with insta snapshots. Time
//! is injected (`at(seconds)`), so elapsed clocks are fixed and nothing is redacted.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::compliance::VerdictKind;
use crate::events::{GateVerdict, PhaseState};
use crate::session::OutcomeKind;
use crate::state::RunStatus;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::style::Color;
use serde_json::json;

use super::app::{App, Command};
use crate::context::{Exactness, Snapshot, Window, WindowSource};
use crate::events::{AttemptKind, Event, PhaseInfo, PhaseSummary, RunSummary};
use crate::session::{Activity, ActivityKind, Subagent, Thread};

pub(super) const WIDTH: u16 = 100;
pub(super) const HEIGHT: u16 = 30;
pub(super) const ROOT: &str = "/work/shop";

/// A test clock: every event and frame happens at a fixed offset from one instant.
pub(super) struct Clock(pub(super) Instant);

impl Clock {
    pub(super) fn at(&self, secs: u64) -> Instant {
        self.0 + Duration::from_secs(secs)
    }
}

pub(super) struct Scene {
    pub(super) clock: Clock,
    pub(super) app: App,
}

impl Scene {
    pub(super) fn new() -> Scene {
        let clock = Clock(Instant::now());
        let app = App::new(Some(PathBuf::from(ROOT)), clock.at(0));
        Scene { clock, app }
    }

    pub(super) fn feed(&mut self, secs: u64, event: Event) -> &mut Self {
        let now = self.clock.at(secs);
        self.app.event(&event, now);
        self
    }

    pub(super) fn key(&mut self, code: KeyCode) -> Option<Command> {
        self.app.key(&KeyEvent::new(code, KeyModifiers::NONE))
    }

    pub(super) fn ctrl_c(&mut self) -> Option<Command> {
        self.app
            .key(&KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL))
    }

    pub(super) fn draw_at(&mut self, secs: u64) -> Terminal<TestBackend> {
        self.app.tick(self.clock.at(secs));
        let mut terminal = Terminal::new(TestBackend::new(WIDTH, HEIGHT)).expect("terminal");
        terminal.draw(|frame| self.app.draw(frame)).expect("draw");
        terminal
    }

    pub(super) fn screen_at(&mut self, secs: u64) -> String {
        self.draw_at(secs).backend().to_string()
    }
}

pub(super) fn snapshot(
    tokens: u64,
    percent: f64,
    exactness: Exactness,
    tool_calls: u32,
    cost: f64,
) -> Snapshot {
    Snapshot {
        tokens,
        reported_tokens: if exactness == Exactness::Exact {
            tokens
        } else {
            tokens.saturating_sub(4_000)
        },
        estimated_tokens: if exactness == Exactness::Exact {
            0
        } else {
            4_000
        },
        exactness,
        window: Window {
            tokens: 200_000,
            source: WindowSource::Table,
        },
        percent,
        tool_calls,
        turns: tool_calls + 1,
        cost_usd: Some(cost),
        cost_estimated: false,
        billed: crate::context::cost::Billed {
            input: 500,
            cache_write: tokens / 4,
            cache_read: tokens,
            output: u64::from(tool_calls) * 100,
        },
        model: Some("claude-opus-4".into()),
        stop: None,
    }
}

pub(super) fn run_started() -> Event {
    Event::RunStarted {
        run_id: "3f2a9c41-0b7e-4d7e-9a51-6c1d2e3f4a5b".into(),
        plan_title: "Shop Checkout".into(),
        plan_path: "plans/checkout/MASTER_PLAN.md".into(),
        phases: vec![
            PhaseInfo {
                id: "1".into(),
                title: "Data model".into(),
                status: PhaseState::Skipped,
            },
            PhaseInfo {
                id: "2".into(),
                title: "Cart API endpoints".into(),
                status: PhaseState::Pending,
            },
            PhaseInfo {
                id: "3".into(),
                title: "Payment provider integration".into(),
                status: PhaseState::Pending,
            },
        ],
        agent: "claude".into(),
        model: "opus".into(),
        context_threshold: crate::context::ContextLimit::At(80.0),
        max_restarts: 3,
        resumed: false,
    }
}

pub(super) fn phase_started(attempt: u32, kind: AttemptKind) -> Event {
    Event::PhaseStarted {
        phase_id: "2".into(),
        title: "Cart API endpoints".into(),
        index: 2,
        total: 3,
        attempt,
        max_attempts: 3,
        kind,
    }
}

pub(super) fn session_started(restart: u32) -> Event {
    Event::SessionStarted {
        phase_id: "2".into(),
        attempt: 1,
        restart,
        max_restarts: 3,
        agent: "claude".into(),
        model: "opus".into(),
        pid: 4242,
        log_path: format!(
            "{ROOT}/.debussy/runs/3f2a/2/attempt-1-session-{}.jsonl",
            restart + 1
        ),
        no_restart: None,
        workdir: None,
    }
}

/// The end of phase 2's first session, with the meter's last `snapshot`.
pub(super) fn session_ended(
    outcome: OutcomeKind,
    code: i32,
    detail: &str,
    snapshot: Snapshot,
) -> Event {
    Event::SessionEnded {
        phase_id: "2".into(),
        attempt: 1,
        restart: 0,
        outcome,
        code,
        detail: detail.into(),
        snapshot,
        last_words: None,
    }
}

/// Phase 2's first session ended in success, at half its window.
fn session_succeeded() -> Event {
    session_ended(
        OutcomeKind::Completed,
        0,
        "completed (success)",
        snapshot(100_000, 50.0, Exactness::Exact, 7, 0.62),
    )
}

/// Phase 2's first restart, at 86 % of the window, for `reason`, after the checkpoint
/// `commit` if one was made.
pub(super) fn first_restart(reason: &str, commit: Option<&str>) -> Event {
    Event::Restart {
        phase_id: "2".into(),
        attempt: 1,
        restart: 1,
        max_restarts: 3,
        reason: reason.into(),
        context_percent: 86.0,
        commit: commit.map(str::to_owned),
        delay_secs: 2,
    }
}

/// `phase_id` completed at its first attempt, without a restart.
pub(super) fn phase_completed(phase_id: &str) -> Event {
    Event::PhaseFinished {
        phase_id: phase_id.into(),
        status: PhaseState::Completed,
        attempts: 1,
        restarts: 0,
        error: None,
    }
}

pub(super) fn main_line(kind: ActivityKind) -> Event {
    Event::Activity {
        phase_id: "2".into(),
        activity: Activity {
            thread: Thread::Main,
            kind,
        },
    }
}

pub(super) fn tool(name: &str, input: serde_json::Value) -> Event {
    main_line(ActivityKind::ToolCall {
        id: format!("toolu_{name}"),
        name: name.into(),
        input,
    })
}

pub(super) fn text(text: &str) -> Event {
    main_line(ActivityKind::Text { text: text.into() })
}

pub(super) fn context(
    tokens: u64,
    percent: f64,
    exactness: Exactness,
    tool_calls: u32,
    cost: f64,
) -> Event {
    Event::Context {
        phase_id: "2".into(),
        snapshot: snapshot(tokens, percent, exactness, tool_calls, cost),
    }
}

/// A scene with phase 2 under way: text, compact tool calls, a subagent, a tool error.
pub(super) fn mid_phase() -> Scene {
    let mut scene = Scene::new();
    scene
        .feed(0, run_started())
        .feed(0, Event::PhaseSkipped {
            phase_id: "1".into(),
            reason: "marked completed in the plan".into(),
        })
        .feed(1, phase_started(1, AttemptKind::First))
        .feed(1, session_started(0))
        .feed(1, context(0, 0.0, Exactness::Estimated, 0, 0.0))
        .feed(4, text("I'll start by reading the existing cart model\nand the routes."))
        .feed(4, context(31_000, 15.5, Exactness::Exact, 0, 0.04))
        .feed(5, tool("Read", json!({"file_path": format!("{ROOT}/src/cart/model.rs")})))
        .feed(
            9,
            tool(
                "Bash",
                json!({"command": "cargo test -p cart --no-fail-fast -- --test-threads 4 2>&1 | tail -n 40 && echo done with the long command line"}),
            ),
        )
        .feed(
            12,
            tool(
                "Edit",
                json!({"file_path": format!("{ROOT}/src/cart/routes.rs"), "old_string": "a", "new_string": "b"}),
            ),
        )
        .feed(
            14,
            main_line(ActivityKind::ToolError {
                tool_use_id: Some("toolu_Edit".into()),
                tool: Some("Edit".into()),
                message: "String to replace not found in file.".into(),
            }),
        )
        .feed(
            20,
            tool(
                "Task",
                json!({"description": "Review the cart routes", "subagent_type": "code-reviewer", "prompt": "…"}),
            ),
        )
        .feed(
            22,
            Event::Activity {
                phase_id: "2".into(),
                activity: Activity {
                    thread: Thread::Subagent(Subagent {
                        parent_tool_use_id: "toolu_Task".into(),
                        subagent_type: Some("code-reviewer".into()),
                        description: Some("Review the cart routes".into()),
                    }),
                    kind: ActivityKind::ToolCall {
                        id: "toolu_sub".into(),
                        name: "Grep".into(),
                        input: json!({"pattern": "fn add_item", "path": format!("{ROOT}/src")}),
                    },
                },
            },
        )
        .feed(
            30,
            text("The routes compile; adding the remove-item endpoint next."),
        )
        .feed(30, context(90_000, 45.0, Exactness::Exact, 4, 0.31));
    scene
}

#[test]
fn starting() {
    let mut scene = Scene::new();
    scene.feed(0, run_started());
    insta::assert_snapshot!(scene.screen_at(1));
}

#[test]
fn mid_phase_at_45_percent() {
    let mut scene = mid_phase();
    let terminal = scene.draw_at(42);
    insta::assert_snapshot!(terminal.backend().to_string());
    // The gauge is green below 50 %.
    let buffer = terminal.backend().buffer();
    assert_eq!(buffer[(2, 5)].fg, Color::Green, "{:?}", buffer[(2, 5)]);
}

#[test]
fn mid_phase_at_85_percent_with_threshold_80() {
    let mut scene = mid_phase();
    scene
        .feed(
            50,
            tool(
                "Write",
                json!({"file_path": format!("{ROOT}/src/cart/remove.rs"), "content": "…"}),
            ),
        )
        .feed(51, context(170_000, 85.0, Exactness::Estimated, 5, 0.52));
    let terminal = scene.draw_at(52);
    insta::assert_snapshot!(terminal.backend().to_string());
    let buffer = terminal.backend().buffer();
    assert_eq!(buffer[(2, 5)].fg, Color::Red, "{:?}", buffer[(2, 5)]);
}

#[test]
fn a_fix_session_over_the_threshold_says_it_is_not_restarted() {
    let mut scene = mid_phase();
    let mut fix = session_started(0);
    if let Event::SessionStarted { no_restart, .. } = &mut fix {
        *no_restart = Some(crate::events::NoRestart::FixSession);
    }
    scene
        .feed(50, fix)
        .feed(51, context(170_000, 85.0, Exactness::Exact, 5, 0.52));
    let terminal = scene.draw_at(52);
    let screen = terminal.backend().to_string();
    assert!(screen.contains("no restart in fix sessions"), "{screen}");
    assert!(!screen.contains("restart at 80%"), "{screen}");
}

#[test]
fn gauge_is_yellow_between_half_and_the_threshold() {
    let mut scene = mid_phase();
    scene.feed(40, context(130_000, 65.0, Exactness::Exact, 5, 0.4));
    let terminal = scene.draw_at(41);
    assert_eq!(terminal.backend().buffer()[(2, 5)].fg, Color::Yellow);
}

#[test]
fn restart_in_progress() {
    let mut scene = mid_phase();
    let mut stopped = snapshot(172_000, 86.0, Exactness::Exact, 6, 0.55);
    stopped.stop = None;
    scene
        .feed(55, context(172_000, 86.0, Exactness::Exact, 6, 0.55))
        .feed(
            56,
            session_ended(OutcomeKind::ContextLimit, -2, "context limit", stopped),
        )
        .feed(
            56,
            Event::Committed {
                phase_id: "2".into(),
                commit: "9c1e5b7d2a4f6e8c0b1d3f5a7c9e1b3d5f7a9c1e".into(),
                message:
                    "debussy: phase 2 - Cart API endpoints checkpoint (restart 1/3, context 86.0%)"
                        .into(),
                files_changed: 3,
            },
        )
        .feed(
            56,
            first_restart(
                "context at 172,000 of 200,000 tokens reached the 80% threshold (160,000)",
                Some("9c1e5b7d2a4f6e8c0b1d3f5a7c9e1b3d5f7a9c1e"),
            ),
        );
    insta::assert_snapshot!(scene.screen_at(57));
}

#[test]
fn gate_failure() {
    let mut scene = mid_phase();
    scene
        .feed(60, session_succeeded())
        .feed(
            60,
            Event::GateStarted {
                phase_id: "2".into(),
                name: "tests".into(),
                command: "cargo test -p cart".into(),
            },
        )
        .feed(
            75,
            Event::GateFinished {
                phase_id: "2".into(),
                name: "tests".into(),
                command: "cargo test -p cart".into(),
                passed: false,
                verdict: GateVerdict::Failed(crate::process::ExitStatus::Code(101)),
                duration_ms: 14_800,
            },
        )
        .feed(
            75,
            Event::Compliance {
                phase_id: "2".into(),
                attempt: 1,
                verdict: VerdictKind::TargetedFix,
                findings: vec!["[critical] gate tests failed: cargo test -p cart".into()],
            },
        )
        .feed(
            75,
            Event::AttemptFailed {
                phase_id: "2".into(),
                attempt: 1,
                reason: "gate tests failed: cargo test -p cart".into(),
            },
        );
    insta::assert_snapshot!(scene.screen_at(76));
}

#[test]
fn completed() {
    let mut scene = mid_phase();
    let phase = |id: &str, title: &str, status: PhaseState, tokens: u64, cost: f64| PhaseSummary {
        id: id.into(),
        title: title.into(),
        status,
        attempts: u32::from(status == PhaseState::Completed),
        restarts: 0,
        sessions: u32::from(status == PhaseState::Completed),
        billed: crate::context::cost::Billed {
            input: tokens,
            ..Default::default()
        },
        handoffs: 0,
        cost_usd: cost,
        cost_estimated: false,
        duration_secs: 60.0,
        refused_calls: Vec::new(),
    };
    scene
        .feed(60, session_succeeded())
        .feed(
            61,
            Event::GateFinished {
                phase_id: "2".into(),
                name: "tests".into(),
                command: "cargo test -p cart".into(),
                passed: true,
                verdict: GateVerdict::Passed,
                duration_ms: 9_100,
            },
        )
        .feed(61, phase_completed("2"))
        .feed(
            62,
            Event::PhaseStarted {
                phase_id: "3".into(),
                title: "Payment provider integration".into(),
                index: 3,
                total: 3,
                attempt: 1,
                max_attempts: 3,
                kind: AttemptKind::First,
            },
        )
        .feed(125, phase_completed("3"))
        .feed(
            125,
            Event::RunFinished {
                summary: RunSummary {
                    run_id: "3f2a9c41-0b7e-4d7e-9a51-6c1d2e3f4a5b".into(),
                    plan_path: "plans/greeting/MASTER_PLAN.md".into(),
                    status: RunStatus::Completed,
                    phases: vec![
                        phase("1", "Data model", PhaseState::Skipped, 0, 0.0),
                        phase(
                            "2",
                            "Cart API endpoints",
                            PhaseState::Completed,
                            100_000,
                            0.62,
                        ),
                        phase(
                            "3",
                            "Payment provider integration",
                            PhaseState::Completed,
                            80_000,
                            0.4,
                        ),
                    ],
                    restarts: 0,
                    sessions: 2,
                    billed: crate::context::cost::Billed {
                        input: 180_000,
                        ..Default::default()
                    },
                    cost_usd: 1.02,
                    handoffs: 0,
                    handoff_cost_usd: 0.0,
                    cost_estimated: false,
                    duration_secs: 125.0,
                    commits: vec![],
                    error: None,
                    limit: None,
                    raise_with: None,
                    disk_full: false,
                },
            },
        );
    // The clocks stop when the run ends.
    insta::assert_snapshot!(scene.screen_at(300));
}

#[test]
fn a_merge_fix_is_labelled_as_such_not_as_an_attempt() {
    let mut scene = Scene::new();
    scene
        .feed(0, run_started())
        .feed(1, phase_started(2, AttemptKind::MergeFix))
        .feed(1, session_started(0));
    let screen = scene.screen_at(2);
    assert!(screen.contains("· merge fix"), "{screen}");
    assert!(
        screen.contains("\"Cart API endpoints\": merge fix"),
        "{screen}"
    );
    assert!(!screen.contains("attempt 2/3"), "{screen}");
}
