//! The HUD's keys and loop: confirmations, pause, scrolling, bounds, small terminals,
//! quitting, verbose mode, the focus key over phases side by side, and the driver that
//! turns keys into run requests. Scenes come from [`super::tests`].

use std::time::{Duration, Instant};

use crate::state::RunStatus;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use futures_util::StreamExt;
use ratatui::Terminal;
use ratatui::backend::TestBackend;

use super::app::{App, Command};
use super::{Ending, drive};
use crate::context::Exactness;
use crate::events::{AttemptKind, Event, RunRequest, RunSummary};

use super::tests::*;

#[test]
fn no_keeps_the_run_going() {
    let mut scene = mid_phase();
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
    let mut scene = mid_phase();
    assert_eq!(scene.ctrl_c(), Some(Command::Send(RunRequest::Interrupt)));
    assert_eq!(scene.ctrl_c(), Some(Command::Send(RunRequest::Kill)));
    assert_eq!(scene.ctrl_c(), Some(Command::Abort));
}

#[test]
fn ctrl_c_while_only_a_commit_hook_runs_says_it_waits_for_the_hook() {
    let mut scene = mid_phase();
    scene.app.set_busy(crate::process::Busy {
        agent: false,
        hooks: vec!["pre-commit".into()],
        ..crate::process::Busy::default()
    });
    scene.ctrl_c();
    let screen = scene.screen_at(43);
    assert!(
        screen.contains("letting the pre-commit hook finish, then pausing the run"),
        "{screen}"
    );
    assert!(
        screen.contains("kill the git hook and exit at once"),
        "{screen}"
    );
    scene.ctrl_c();
    let screen = scene.screen_at(44);
    assert!(
        screen.contains("waiting for the pre-commit hook, then pausing the run"),
        "{screen}"
    );
    assert!(!screen.contains("kill the agent"), "{screen}");
    assert!(!screen.contains("killing the agent"), "{screen}");
}

#[test]
fn pause_is_requested_then_confirmed_by_the_run() {
    let mut scene = mid_phase();
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
    let mut scene = mid_phase();
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

#[test]
fn quit_asks_first_then_interrupts() {
    let mut scene = mid_phase();
    scene.app.set_busy(crate::process::Busy {
        agent: true,
        ..crate::process::Busy::default()
    });
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
fn verbose_shows_full_tool_inputs() {
    let mut scene = mid_phase();
    assert!(
        !scene
            .screen_at(42)
            .contains("echo done with the long command line")
    );
    scene.key(KeyCode::Char('v'));
    insta::assert_snapshot!(scene.screen_at(42));
}

/// Event `event` (built for phase 2) retold for `phase`.
fn for_phase(phase: &str, mut event: Event) -> Event {
    match &mut event {
        Event::PhaseStarted { phase_id, .. }
        | Event::SessionStarted { phase_id, .. }
        | Event::Activity { phase_id, .. }
        | Event::Context { phase_id, .. } => phase.clone_into(phase_id),
        other => panic!("not retold: {other:?}"),
    }
    event
}

#[test]
fn phases_side_by_side_get_a_gauge_each_tagged_lines_and_a_focus_key() {
    let mut scene = Scene::new();
    scene.feed(0, run_started());
    for phase in ["2", "3"] {
        scene
            .feed(1, for_phase(phase, phase_started(1, AttemptKind::First)))
            .feed(1, for_phase(phase, session_started(0)));
    }
    scene
        .feed(2, text("Adding the cart routes."))
        .feed(2, context(90_000, 45.0, Exactness::Exact, 4, 0.8))
        .feed(3, for_phase("3", text("Wiring the payment client.")))
        .feed(
            3,
            for_phase("3", context(150_000, 75.0, Exactness::Exact, 9, 1.5)),
        );
    let screen = scene.screen_at(4);
    assert!(
        screen.contains("   2 ") && screen.contains("45.0% · 90,000 / 200,000"),
        "{screen}"
    );
    assert!(screen.contains("75.0% · 150,000 / 200,000"), "{screen}");
    assert!(
        screen.contains("‹3› Wiring the payment client."),
        "{screen}"
    );
    insta::assert_snapshot!(screen);

    assert_eq!(
        scene.key(KeyCode::Char('f')),
        Some(Command::Send(RunRequest::Focus(Some("2".into()))))
    );
    let focused = scene.screen_at(5);
    assert!(focused.contains("Adding the cart routes."), "{focused}");
    assert!(!focused.contains("Wiring the payment client."), "{focused}");
    assert_eq!(
        scene.key(KeyCode::Char('f')),
        Some(Command::Send(RunRequest::Focus(Some("3".into()))))
    );
    assert_eq!(
        scene.key(KeyCode::Char('f')),
        Some(Command::Send(RunRequest::Focus(None))),
        "past the last running phase, every phase again"
    );
}
