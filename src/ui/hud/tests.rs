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
use futures_util::StreamExt;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::style::Color;
use serde_json::json;

use super::app::{App, Command};
use super::{Ending, drive};
use crate::context::{Exactness, Snapshot, Window, WindowSource};
use crate::events::{AttemptKind, Event, PhaseInfo, PhaseSummary, RunRequest, RunSummary};
use crate::session::{Activity, ActivityKind, Subagent, Thread};

const WIDTH: u16 = 100;
const HEIGHT: u16 = 30;
const ROOT: &str = "/work/shop";

/// A test clock: every event and frame happens at a fixed offset from one instant.
struct Clock(Instant);

impl Clock {
    fn at(&self, secs: u64) -> Instant {
        self.0 + Duration::from_secs(secs)
    }
}

struct Scene {
    clock: Clock,
    app: App,
}

impl Scene {
    fn new() -> Scene {
        let clock = Clock(Instant::now());
        let app = App::new(Some(PathBuf::from(ROOT)), clock.at(0));
        Scene { clock, app }
    }

    fn feed(&mut self, secs: u64, event: Event) -> &mut Self {
        let now = self.clock.at(secs);
        self.app.event(&event, now);
        self
    }

    fn key(&mut self, code: KeyCode) -> Option<Command> {
        self.app.key(&KeyEvent::new(code, KeyModifiers::NONE))
    }

    fn ctrl_c(&mut self) -> Option<Command> {
        self.app
            .key(&KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL))
    }

    fn draw_at(&mut self, secs: u64) -> Terminal<TestBackend> {
        self.app.tick(self.clock.at(secs));
        let mut terminal = Terminal::new(TestBackend::new(WIDTH, HEIGHT)).expect("terminal");
        terminal.draw(|frame| self.app.draw(frame)).expect("draw");
        terminal
    }

    fn screen_at(&mut self, secs: u64) -> String {
        self.draw_at(secs).backend().to_string()
    }
}

fn snapshot(
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
            source: WindowSource::ModelName,
        },
        percent,
        tool_calls,
        turns: tool_calls + 1,
        cost_usd: Some(cost),
        cost_estimated: false,
        billed: crate::context::cost::Billed::default(),
        model: Some("claude-opus-4".into()),
        stop: None,
    }
}

fn run_started() -> Event {
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

fn phase_started(attempt: u32, kind: AttemptKind) -> Event {
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

fn session_started(restart: u32) -> Event {
    Event::SessionStarted {
        phase_id: "2".into(),
        attempt: 1,
        restart,
        max_restarts: 3,
        pid: 4242,
        log_path: format!(
            "{ROOT}/.debussy/runs/3f2a/2/attempt-1-session-{}.jsonl",
            restart + 1
        ),
        no_restart: None,
    }
}

fn main_line(kind: ActivityKind) -> Event {
    Event::Activity {
        phase_id: "2".into(),
        activity: Activity {
            thread: Thread::Main,
            kind,
        },
    }
}

fn tool(name: &str, input: serde_json::Value) -> Event {
    main_line(ActivityKind::ToolCall {
        id: format!("toolu_{name}"),
        name: name.into(),
        input,
    })
}

fn text(text: &str) -> Event {
    main_line(ActivityKind::Text { text: text.into() })
}

fn context(tokens: u64, percent: f64, exactness: Exactness, tool_calls: u32, cost: f64) -> Event {
    Event::Context {
        phase_id: "2".into(),
        snapshot: snapshot(tokens, percent, exactness, tool_calls, cost),
    }
}

/// Phase 2 under way: text, compact tool calls, a subagent, a tool error.
fn mid_phase(scene: &mut Scene) {
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
}

#[test]
fn starting() {
    let mut scene = Scene::new();
    scene.feed(0, run_started());
    insta::assert_snapshot!(scene.screen_at(1));
}

#[test]
fn mid_phase_at_45_percent() {
    let mut scene = Scene::new();
    mid_phase(&mut scene);
    let terminal = scene.draw_at(42);
    insta::assert_snapshot!(terminal.backend().to_string());
    // The gauge is green below 50 %.
    let buffer = terminal.backend().buffer();
    assert_eq!(buffer[(2, 5)].fg, Color::Green, "{:?}", buffer[(2, 5)]);
}

#[test]
fn mid_phase_at_85_percent_with_threshold_80() {
    let mut scene = Scene::new();
    mid_phase(&mut scene);
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
    let mut scene = Scene::new();
    mid_phase(&mut scene);
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
    let mut scene = Scene::new();
    mid_phase(&mut scene);
    scene.feed(40, context(130_000, 65.0, Exactness::Exact, 5, 0.4));
    let terminal = scene.draw_at(41);
    assert_eq!(terminal.backend().buffer()[(2, 5)].fg, Color::Yellow);
}

#[test]
fn restart_in_progress() {
    let mut scene = Scene::new();
    mid_phase(&mut scene);
    let mut stopped = snapshot(172_000, 86.0, Exactness::Exact, 6, 0.55);
    stopped.stop = None;
    scene
        .feed(55, context(172_000, 86.0, Exactness::Exact, 6, 0.55))
        .feed(
            56,
            Event::SessionEnded {
                phase_id: "2".into(),
                attempt: 1,
                restart: 0,
                outcome: OutcomeKind::ContextLimit,
                code: -2,
                detail: "context limit".into(),
                snapshot: stopped,
            },
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
            Event::Restart {
                phase_id: "2".into(),
                attempt: 1,
                restart: 1,
                max_restarts: 3,
                reason: "context at 172,000 of 200,000 tokens reached the 80% threshold (160,000)"
                    .into(),
                context_percent: 86.0,
                commit: Some("9c1e5b7d2a4f6e8c0b1d3f5a7c9e1b3d5f7a9c1e".into()),
                delay_secs: 2,
            },
        );
    insta::assert_snapshot!(scene.screen_at(57));
}

#[test]
fn gate_failure() {
    let mut scene = Scene::new();
    mid_phase(&mut scene);
    scene
        .feed(
            60,
            Event::SessionEnded {
                phase_id: "2".into(),
                attempt: 1,
                restart: 0,
                outcome: OutcomeKind::Completed,
                code: 0,
                detail: "completed (success)".into(),
                snapshot: snapshot(100_000, 50.0, Exactness::Exact, 7, 0.62),
            },
        )
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
    let mut scene = Scene::new();
    mid_phase(&mut scene);
    let phase = |id: &str, title: &str, status: PhaseState, tokens: u64, cost: f64| PhaseSummary {
        id: id.into(),
        title: title.into(),
        status,
        attempts: u32::from(status == PhaseState::Completed),
        restarts: 0,
        sessions: u32::from(status == PhaseState::Completed),
        tokens,
        cost_usd: cost,
        cost_estimated: false,
        duration_secs: 60.0,
        refused_calls: Vec::new(),
    };
    scene
        .feed(
            60,
            Event::SessionEnded {
                phase_id: "2".into(),
                attempt: 1,
                restart: 0,
                outcome: OutcomeKind::Completed,
                code: 0,
                detail: "completed (success)".into(),
                snapshot: snapshot(100_000, 50.0, Exactness::Exact, 7, 0.62),
            },
        )
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
        .feed(
            61,
            Event::PhaseFinished {
                phase_id: "2".into(),
                status: PhaseState::Completed,
                attempts: 1,
                restarts: 0,
                error: None,
            },
        )
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
        .feed(
            125,
            Event::PhaseFinished {
                phase_id: "3".into(),
                status: PhaseState::Completed,
                attempts: 1,
                restarts: 0,
                error: None,
            },
        )
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
                    tokens: 180_000,
                    cost_usd: 1.02,
                    cost_estimated: false,
                    duration_secs: 125.0,
                    commits: vec![],
                    error: None,
                },
            },
        );
    // The clocks stop when the run ends.
    insta::assert_snapshot!(scene.screen_at(300));
}

#[test]
fn quit_asks_first_then_interrupts() {
    let mut scene = Scene::new();
    mid_phase(&mut scene);
    assert_eq!(scene.key(KeyCode::Char('q')), None);
    insta::assert_snapshot!(scene.screen_at(43));
    assert_eq!(
        scene.key(KeyCode::Char('y')),
        Some(Command::Send(RunRequest::Interrupt))
    );
    let screen = scene.screen_at(44);
    assert!(screen.contains("stopping the agent"), "{screen}");
    // A second q does nothing more; Ctrl-C now kills, then aborts.
    assert_eq!(scene.key(KeyCode::Char('q')), None);
    assert_eq!(scene.ctrl_c(), Some(Command::Send(RunRequest::Kill)));
    assert_eq!(scene.ctrl_c(), Some(Command::Abort));
}

#[test]
fn no_keeps_the_run_going() {
    let mut scene = Scene::new();
    mid_phase(&mut scene);
    scene.key(KeyCode::Char('q'));
    assert_eq!(scene.key(KeyCode::Esc), None);
    let screen = scene.screen_at(43);
    assert!(!screen.contains("Confirm"), "{screen}");
    assert_eq!(scene.key(KeyCode::Char('s')), None);
    let screen = scene.screen_at(43);
    assert!(
        screen.contains("Skip phase 2 \"Cart API endpoints\"?"),
        "{screen}"
    );
    assert_eq!(
        scene.key(KeyCode::Enter),
        Some(Command::Send(RunRequest::SkipPhase))
    );
    assert!(scene.screen_at(44).contains("skipping the phase"));
}

#[test]
fn ctrl_c_needs_no_confirmation() {
    let mut scene = Scene::new();
    mid_phase(&mut scene);
    assert_eq!(scene.ctrl_c(), Some(Command::Send(RunRequest::Interrupt)));
    assert_eq!(scene.ctrl_c(), Some(Command::Send(RunRequest::Kill)));
    assert_eq!(scene.ctrl_c(), Some(Command::Abort));
}

#[test]
fn pause_is_requested_then_confirmed_by_the_run() {
    let mut scene = Scene::new();
    mid_phase(&mut scene);
    assert_eq!(
        scene.key(KeyCode::Char('p')),
        Some(Command::Send(RunRequest::TogglePause))
    );
    assert!(scene.screen_at(43).contains("pausing after this session"));
    scene.feed(
        50,
        Event::Paused {
            phase_id: "2".into(),
        },
    );
    let screen = scene.screen_at(51);
    assert!(screen.contains("paused (p resumes)"), "{screen}");
    assert!(screen.contains(" p  resume"), "{screen}");
    assert_eq!(
        scene.key(KeyCode::Char('p')),
        Some(Command::Send(RunRequest::TogglePause))
    );
    scene.feed(
        60,
        Event::Resumed {
            phase_id: "2".into(),
        },
    );
    assert!(scene.screen_at(61).contains("● running"));
    assert_eq!(
        scene.key(KeyCode::Char('r')),
        Some(Command::Send(RunRequest::RestartNow))
    );
}

#[test]
fn verbose_shows_full_tool_inputs() {
    let mut scene = Scene::new();
    mid_phase(&mut scene);
    assert!(
        !scene
            .screen_at(42)
            .contains("echo done with the long command line")
    );
    scene.key(KeyCode::Char('v'));
    insta::assert_snapshot!(scene.screen_at(42));
}

#[test]
fn scrolling_up_holds_the_view_while_lines_arrive() {
    let mut scene = Scene::new();
    scene.feed(0, run_started());
    for i in 0..100 {
        scene.feed(i, text(&format!("line {i}")));
    }
    assert!(scene.screen_at(100).contains("line 99"));
    scene.key(KeyCode::PageUp);
    let screen = scene.screen_at(100);
    assert!(
        !screen.contains("line 99") && screen.contains("scrolled"),
        "{screen}"
    );
    let top_line = |screen: &str| {
        screen
            .lines()
            .find_map(|l| l.split("line ").nth(1).map(|rest| rest[..2].to_owned()))
    };
    let before = top_line(&screen);
    scene.feed(101, text("line 100"));
    assert_eq!(top_line(&scene.screen_at(101)), before);
    // `a` follows again.
    scene.key(KeyCode::Char('a'));
    assert!(scene.screen_at(102).contains("line 100"));
    scene.key(KeyCode::Home);
    assert!(scene.screen_at(102).contains("run started"));
    scene.key(KeyCode::End);
    assert!(scene.screen_at(102).contains("line 100"));
}

#[test]
fn the_activity_log_is_bounded() {
    let mut scene = Scene::new();
    scene.feed(0, run_started());
    for i in 0..(super::activity::CAPACITY as u64 + 500) {
        scene.feed(1, text(&format!("line {i}")));
    }
    assert_eq!(scene.app.activity_len(), super::activity::CAPACITY);
}

#[test]
fn small_terminals_do_not_panic() {
    let mut scene = Scene::new();
    mid_phase(&mut scene);
    scene.key(KeyCode::Char('q'));
    for (w, h) in [(1, 1), (20, 5), (40, 12), (69, 20), (200, 60)] {
        let mut terminal = Terminal::new(TestBackend::new(w, h)).expect("terminal");
        terminal.draw(|frame| scene.app.draw(frame)).expect("draw");
    }
}

/// The loop itself, on a test backend: keys become requests, a burst of events is drawn
/// in few frames, and the loop ends when the run finishes.
#[tokio::test]
async fn the_loop_sends_requests_and_ends_with_the_run() {
    let (events_tx, mut events) = crate::events::channel();
    let (requests, mut requests_rx) = tokio::sync::mpsc::unbounded_channel();
    let mut app = App::new(None, Instant::now());
    let mut terminal = Terminal::new(TestBackend::new(WIDTH, HEIGHT)).expect("terminal");
    let keys = [
        KeyEvent::new(KeyCode::Char('q'), KeyModifiers::NONE),
        KeyEvent::new(KeyCode::Char('y'), KeyModifiers::NONE),
    ];
    let mut input = futures_util::stream::iter(
        keys.map(|k| Ok::<_, std::io::Error>(crossterm::event::Event::Key(k))),
    )
    .chain(super::no_input());
    events_tx.send(run_started()).expect("send");
    for i in 0..1_000 {
        events_tx.send(text(&format!("line {i}"))).expect("send");
    }
    events_tx
        .send(Event::RunFinished {
            summary: RunSummary {
                status: RunStatus::Paused,
                ..RunSummary::default()
            },
        })
        .expect("send");
    let mut frames = Vec::new();
    let ending = tokio::time::timeout(
        Duration::from_secs(10),
        drive(
            &mut app,
            &mut terminal,
            &mut events,
            &mut input,
            &requests,
            &mut |frame| frames.push(frame),
        ),
    )
    .await
    .expect("the loop ends")
    .expect("no error");
    assert_eq!(ending, Ending::Closed);
    assert!(app.summary().is_some());
    // 1,002 events already waiting: drawn in a couple of frames, not a thousand.
    assert!(frames.len() <= 3, "{} frames", frames.len());
    // The keys may or may not have been read before the run finished; if they were,
    // they asked for an interrupt.
    while let Ok(request) = requests_rx.try_recv() {
        assert_eq!(request, RunRequest::Interrupt);
    }
}

/// Keys reach the request channel while the run goes on.
#[tokio::test]
async fn keys_become_requests() {
    let (events_tx, mut events) = crate::events::channel();
    let (requests, mut requests_rx) = tokio::sync::mpsc::unbounded_channel();
    let mut app = App::new(None, Instant::now());
    let mut terminal = Terminal::new(TestBackend::new(WIDTH, HEIGHT)).expect("terminal");
    app.event(&run_started(), Instant::now());
    app.event(&phase_started(1, AttemptKind::First), Instant::now());
    let keys = ['p', 'r', 's', 'y', 'q', 'y'];
    let mut input = futures_util::stream::iter(keys.map(|c| {
        Ok::<_, std::io::Error>(crossterm::event::Event::Key(KeyEvent::new(
            KeyCode::Char(c),
            KeyModifiers::NONE,
        )))
    }))
    .chain(super::no_input());
    let mut ignore = |_| {};
    let looping = drive(
        &mut app,
        &mut terminal,
        &mut events,
        &mut input,
        &requests,
        &mut ignore,
    );
    let collect = async {
        let mut got = Vec::new();
        while got.len() < 4 {
            got.push(requests_rx.recv().await.expect("request"));
        }
        events_tx
            .send(Event::RunFinished {
                summary: RunSummary::default(),
            })
            .expect("send");
        got
    };
    let (ending, got) = tokio::time::timeout(Duration::from_secs(10), async {
        tokio::join!(looping, collect)
    })
    .await
    .expect("done in time");
    assert_eq!(ending.expect("no error"), Ending::Closed);
    assert_eq!(
        got,
        [
            RunRequest::TogglePause,
            RunRequest::RestartNow,
            RunRequest::SkipPhase,
            RunRequest::Interrupt
        ]
    );
}
