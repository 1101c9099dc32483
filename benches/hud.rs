//! The HUD under a flood: 1,000 run events a second for several seconds, fed through the
//! real loop (`debussy::ui::hud::drive`) with its 100 ms frame cap, drawn through the
//! crossterm backend into a byte counter (a 120×40 screen; escape sequences are really
//! generated, nothing reaches a terminal).
//!
//! Prints frames drawn, the worst lag of the screen behind the event stream (from when
//! an event was due to when a frame including it was drawn), draw times, bytes of
//! terminal output, and the CPU time of the HUD's thread (getrusage `RUSAGE_THREAD`) as
//! a fraction of one core. Run with `cargo bench --bench hud [-- SECONDS [RATE]]`.

#![allow(
    clippy::cast_precision_loss,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "a benchmark turns counts and durations into figures for its report"
)]
use std::io::{self, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use debussy::context::{Exactness, Snapshot, Window, WindowSource};
use debussy::events::{self, Event, PhaseInfo, RunSummary};
use debussy::session::{Activity, ActivityKind, Subagent, Thread};
use debussy::ui::hud::{self, App, FrameReport};
use nix::sys::resource::{UsageWho, getrusage};
use ratatui::backend::CrosstermBackend;
use ratatui::layout::Rect;
use ratatui::{Terminal, TerminalOptions, Viewport};
use serde_json::json;

const WIDTH: u16 = 120;
const HEIGHT: u16 = 40;

/// Counts what the backend writes.
#[derive(Clone, Default)]
struct Counter(Arc<AtomicU64>);

impl Write for Counter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.fetch_add(buf.len() as u64, Ordering::Relaxed);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn main() {
    let mut args = std::env::args().skip(1).filter(|a| !a.starts_with('-'));
    let seconds: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(5);
    let rate: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(1_000);
    let total = seconds * rate;
    let interval = Duration::from_secs(1) / u32::try_from(rate).expect("rate");

    let (sender, mut receiver) = events::channel();
    let (requests, _requests_rx) = tokio::sync::mpsc::unbounded_channel();
    let bytes = Counter::default();
    let written = bytes.clone();

    let start = Instant::now() + Duration::from_millis(200);
    let hud = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let backend = CrosstermBackend::new(written);
        let mut terminal = Terminal::with_options(
            backend,
            TerminalOptions {
                viewport: Viewport::Fixed(Rect::new(0, 0, WIDTH, HEIGHT)),
            },
        )
        .expect("terminal");
        let mut app = App::new(Some("/work/shop".into()), Instant::now());
        let mut frames: Vec<FrameReport> = Vec::new();
        let cpu_before = thread_cpu();
        let wall_before = Instant::now();
        let mut input = hud::no_input();
        let ending = runtime.block_on(hud::drive(
            &mut app,
            &mut terminal,
            &mut receiver,
            &mut input,
            &requests,
            &mut |frame| frames.push(frame),
        ));
        let cpu = thread_cpu() - cpu_before;
        let wall = wall_before.elapsed();
        ending.expect("the loop ran");
        (frames, cpu, wall)
    });

    // The run: events due every `interval` from `start`, sent as they fall due.
    let mut next = 0u64;
    while next < total {
        let due = start + interval * u32::try_from(next).expect("index");
        let now = Instant::now();
        if now < due {
            std::thread::sleep(due - now);
        }
        while next < total
            && start + interval * u32::try_from(next).expect("index") <= Instant::now()
        {
            sender.send(event(next)).expect("send");
            next += 1;
        }
    }
    sender
        .send(Event::RunFinished {
            summary: RunSummary {
                status: debussy::state::RunStatus::Completed,
                ..RunSummary::default()
            },
        })
        .expect("send");
    let (frames, cpu, wall) = hud.join().expect("hud thread");

    // Event `i` was due at `start + i * interval`; a frame reporting `events_applied = n`
    // shows events `0..n`. Event 0 is the run start, sent before the clock starts.
    let mut worst = Duration::ZERO;
    let mut shown = 0u64;
    for frame in &frames {
        if frame.events_applied > shown {
            let oldest_new = shown.max(1) - 1;
            let due = start + interval * u32::try_from(oldest_new).expect("index");
            worst = worst.max(frame.drawn_at.saturating_duration_since(due));
            shown = frame.events_applied;
        }
    }
    let draw_max = frames.iter().map(|f| f.draw_time).max().unwrap_or_default();
    let draw_mean = frames.iter().map(|f| f.draw_time).sum::<Duration>()
        / u32::try_from(frames.len().max(1)).expect("frames");
    let span = frames.last().map_or(Duration::ZERO, |f| {
        f.drawn_at.saturating_duration_since(start)
    });
    println!(
        "events: {total} at {rate}/s for {seconds}s; screen {WIDTH}x{HEIGHT}; profile {}",
        if cfg!(debug_assertions) {
            "debug"
        } else {
            "release"
        }
    );
    println!(
        "frames drawn: {} in {:.2}s ({:.1} per second; the cap allows 10)",
        frames.len(),
        span.as_secs_f64(),
        frames.len() as f64 / span.as_secs_f64().max(f64::EPSILON)
    );
    println!("events shown by the last frame: {shown} of {total}");
    println!(
        "worst lag behind the event stream: {:.1} ms (frame cap 100 ms)",
        worst.as_secs_f64() * 1000.0
    );
    println!(
        "draw time: mean {:.2} ms, max {:.2} ms",
        draw_mean.as_secs_f64() * 1000.0,
        draw_max.as_secs_f64() * 1000.0
    );
    println!(
        "terminal output: {:.1} KiB/s",
        bytes.0.load(Ordering::Relaxed) as f64 / 1024.0 / wall.as_secs_f64()
    );
    println!(
        "CPU of the HUD thread: {:.3} s over {:.2} s wall = {:.1}% of one core",
        cpu.as_secs_f64(),
        wall.as_secs_f64(),
        100.0 * cpu.as_secs_f64() / wall.as_secs_f64()
    );
}

/// CPU time (user + system) of the calling thread.
fn thread_cpu() -> Duration {
    let usage = getrusage(UsageWho::RUSAGE_THREAD).expect("getrusage");
    let time = |t: nix::sys::time::TimeVal| {
        Duration::new(
            u64::try_from(t.tv_sec()).unwrap_or(0),
            u32::try_from(t.tv_usec()).unwrap_or(0) * 1000,
        )
    };
    time(usage.user_time()) + time(usage.system_time())
}

/// Event number `i` of a busy session: mostly tool calls and text, a context reading
/// every tenth, a subagent now and then, a session boundary every 2,000.
fn event(i: u64) -> Event {
    let phase_id = "2".to_owned();
    if i == 0 {
        return Event::RunStarted {
            run_id: "bench".into(),
            plan_title: "Shop Checkout".into(),
            plan_path: "plans/checkout/MASTER_PLAN.md".into(),
            phases: (1..=12)
                .map(|n| PhaseInfo {
                    id: n.to_string(),
                    title: format!("Phase number {n}"),
                    status: debussy::events::PhaseState::Pending,
                })
                .collect(),
            agent: "claude".into(),
            model: "opus".into(),
            context_threshold: debussy::context::ContextLimit::At(80.0),
            max_restarts: 3,
            resumed: false,
        };
    }
    if i % 2_000 == 1 {
        return Event::SessionStarted {
            agent: "claude".into(),
            model: "opus".into(),
            phase_id,
            attempt: 1,
            restart: u32::try_from(i / 2_000).unwrap_or(0),
            max_restarts: 3,
            pid: 4242,
            log_path: "/work/shop/.debussy/runs/bench/2/attempt-1-session-1.jsonl".into(),
            no_restart: None,
            workdir: None,
        };
    }
    if i.is_multiple_of(10) {
        let tokens = (i % 2_000) * 80;
        return Event::Context {
            phase_id,
            snapshot: Snapshot {
                tokens,
                reported_tokens: tokens,
                estimated_tokens: 0,
                exactness: Exactness::Exact,
                window: Window {
                    tokens: 200_000,
                    source: WindowSource::Table,
                },
                percent: tokens as f64 / 2_000.0,
                tool_calls: u32::try_from(i % 2_000 / 3).unwrap_or(0),
                turns: u32::try_from(i % 2_000 / 3).unwrap_or(0),
                cost_usd: Some(i as f64 / 10_000.0),
                cost_estimated: false,
                billed: debussy::context::cost::Billed::default(),
                model: Some("claude-opus-4".into()),
                stop: None,
            },
        };
    }
    let thread = if i.is_multiple_of(7) {
        Thread::Subagent(Subagent {
            parent_tool_use_id: "toolu_task".into(),
            subagent_type: Some("code-reviewer".into()),
            description: None,
        })
    } else {
        Thread::Main
    };
    let kind = match i % 3 {
        0 => ActivityKind::Text {
            text: format!(
                "Step {i}: the cart routes compile; next I will add the remove-item endpoint and its tests."
            ),
        },
        1 => ActivityKind::ToolCall {
            id: format!("toolu_{i}"),
            name: "Bash".into(),
            input: json!({"command": format!("cargo test -p cart -- item_{i} --nocapture 2>&1 | tail -n 40"), "description": "run the tests"}),
        },
        _ => ActivityKind::ToolCall {
            id: format!("toolu_{i}"),
            name: "Edit".into(),
            input: json!({"file_path": format!("/work/shop/src/cart/item_{i}.rs"), "old_string": "fn old() {}", "new_string": "fn new() {}"}),
        },
    };
    Event::Activity {
        phase_id,
        activity: Activity { thread, kind },
    }
}
