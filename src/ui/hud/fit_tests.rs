//! The HUD's words and fit: debussy's own lines wrap rather than being cut, the gauge
//! clears between phases, and the hint bar names actions, not states.

use crossterm::event::KeyCode;

use super::tests::{
    Scene, WIDTH, context, first_restart, mid_phase, phase_completed, phase_started, run_started,
    session_ended, session_started, snapshot,
};
use crate::context::Exactness;
use crate::events::AttemptKind;
use crate::session::OutcomeKind;

/// Every row of the screen joined, with the borders and padding taken off, so a
/// wrapped line reads as one string again.
fn joined(screen: &str) -> String {
    screen
        .lines()
        .map(|row| row.trim_matches(|c: char| c == '"' || c == '│' || c.is_whitespace()))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The rows of the Context block.
fn gauge(screen: &str) -> String {
    screen
        .lines()
        .skip_while(|row| !row.contains("┌ Context"))
        .take_while(|row| !row.contains("┌ Activity"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn a_long_restart_reason_wraps_and_is_shown_whole() {
    let mut scene = mid_phase();
    let reason = "context at 172,000 of 200,000 tokens (window: reported by the agent for claude-opus-4) \
                  reached the 80% threshold (160,000), and the handoff was skipped: the stop left 19,000 \
                  tokens, fewer than the 33,000 the agent keeps free";
    assert!(reason.len() > usize::from(WIDTH) * 2);
    scene.feed(56, first_restart(reason, None));
    let screen = scene.screen_at(57);
    let text = joined(&screen);
    assert!(
        text.contains("fewer than the 33,000 the agent keeps free"),
        "the end of the reason is on screen:\n{screen}"
    );
    assert!(!screen.contains("keeps…"), "{screen}");
}

#[test]
fn between_phases_the_gauge_no_longer_shows_the_last_session() {
    let mut scene = mid_phase();
    scene.feed(50, context(150_000, 75.0, Exactness::Exact, 9, 1.5));
    assert!(gauge(&scene.screen_at(50)).contains("75.0%"));
    scene
        .feed(
            60,
            session_ended(
                OutcomeKind::Completed,
                0,
                "completed",
                snapshot(150_000, 75.0, Exactness::Exact, 9, 1.5),
            ),
        )
        .feed(61, phase_completed("2"));
    let between = gauge(&scene.screen_at(62));
    assert!(!between.contains("75.0%"), "{between}");
    assert!(between.contains("no session running"), "{between}");
    // The run's figures stay; the session's are gone.
    assert!(between.contains("session 0 billed"), "{between}");
    scene
        .feed(63, phase_started(1, AttemptKind::First))
        .feed(63, session_started(0));
    let next = gauge(&scene.screen_at(64));
    assert!(next.contains("no usage reported yet"), "{next}");
}

#[test]
fn the_hint_bar_names_what_each_key_does_now() {
    let mut scene = Scene::new();
    scene.feed(0, run_started());
    let screen = scene.screen_at(1);
    assert!(screen.contains(" v  show details"), "{screen}");
    assert!(screen.contains(" a  stop following"), "{screen}");
    assert!(!screen.contains("verbose off"), "{screen}");
    scene.key(KeyCode::Char('v'));
    let screen = scene.screen_at(2);
    assert!(screen.contains(" v  hide details"), "{screen}");
}
