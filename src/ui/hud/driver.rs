//! The HUD's loop: one task that owns the terminal and the [`App`], fed by run events,
//! keys and a tick (see the theory of operation in [`super`]).

use std::io;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crossterm::event::{Event as TermEvent, EventStream};
use futures_util::{Stream, StreamExt};
use ratatui::Terminal;
use ratatui::backend::Backend;

use super::{App, Command, Ending, FRAME, strings, terminal};
use crate::events::{Event, EventReceiver, RequestSender, RunRequest};
use crate::ui::{self, Sink, summary};

/// Most events applied before the loop looks at keys and the frame clock again.
const BATCH: usize = 4_096;

/// What the HUD needs besides the channels.
pub struct Options {
    /// The project root: tool paths under it are shown relative to it.
    pub root: Option<PathBuf>,
    /// Where events go if the terminal cannot be used (setup or drawing fails).
    pub fallback: Box<dyn Sink>,
}

/// One frame, as reported to [`drive`]'s observer.
#[derive(Debug, Clone, Copy)]
pub struct FrameReport {
    /// When drawing finished.
    pub drawn_at: Instant,
    /// Run events applied so far, all of them included in this frame.
    pub events_applied: u64,
    /// How long drawing took.
    pub draw_time: Duration,
}

/// Show the run's events on the terminal until the run finishes, sending the user's keys
/// back as requests. Restores the terminal on every way out and then prints the summary.
/// If the terminal cannot be set up or drawn on, says so on stderr and shows the rest
/// of the run through `options.fallback`.
pub async fn run(mut events: EventReceiver, requests: RequestSender, options: Options) -> Ending {
    let Options { root, fallback } = options;
    // Touch the terminal only once the run has started: a run refused at pre-flight
    // never flashes the alternate screen.
    let Some(first) = events.recv().await else {
        return Ending::Closed;
    };
    let mut app = App::new(root, Instant::now());
    app.event(&first, Instant::now());
    let mut guard = match terminal::TerminalGuard::enter() {
        Ok(guard) => guard,
        Err(err) => {
            crate::exit::to_stderr(&format!("{}\n", strings::fell_back(&err)));
            return plain(events, fallback, Some(first)).await;
        }
    };
    let mut input = EventStream::new();
    let result = drive(
        &mut app,
        guard.screen(),
        &mut events,
        &mut input,
        &requests,
        &mut |_| {},
    )
    .await;
    drop(guard);
    match result {
        Ok(Ending::Abort) => Ending::Abort,
        Ok(Ending::Closed) => {
            if let Some(summary) = app.summary() {
                crate::exit::to_stdout(&summary::render(summary));
            }
            Ending::Closed
        }
        Err(err) => {
            crate::exit::to_stderr(&format!("{}\n", strings::fell_back(&err)));
            plain(events, fallback, None).await
        }
    }
}

/// Show what is left of the run through the fallback sink.
async fn plain(mut events: EventReceiver, mut sink: Box<dyn Sink>, first: Option<Event>) -> Ending {
    if let Some(event) = first
        && sink.event(&event).is_err()
    {
        // The fallback's output is gone too; keep draining so the run is not held up.
        while events.recv().await.is_some() {}
        return Ending::Closed;
    }
    ui::drain(events, sink).await;
    Ending::Closed
}

/// The HUD's loop on any backend and input stream (the benchmark drives it on a test
/// backend): apply events, answer keys, draw at most once per [`FRAME`]. Returns when
/// the run finishes, the event channel closes, or the user aborts.
///
/// # Errors
/// When drawing fails or the input stream reports an error.
pub async fn drive<B, S>(
    app: &mut App,
    terminal: &mut Terminal<B>,
    events: &mut EventReceiver,
    input: &mut S,
    requests: &RequestSender,
    observe: &mut (dyn FnMut(FrameReport) + Send),
) -> io::Result<Ending>
where
    B: Backend,
    B::Error: std::error::Error + Send + Sync + 'static,
    S: Stream<Item = io::Result<TermEvent>> + Unpin,
{
    let mut ticker = tokio::time::interval(FRAME);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut applied: u64 = 0;
    let mut dirty = true;
    let mut last_draw: Option<Instant> = None;
    let mut input_open = true;
    loop {
        let now = Instant::now();
        if dirty && last_draw.is_none_or(|at| now.duration_since(at) >= FRAME) {
            app.tick(now);
            terminal
                .draw(|frame| app.draw(frame))
                .map_err(io::Error::other)?;
            let drawn_at = Instant::now();
            observe(FrameReport {
                drawn_at,
                events_applied: applied,
                draw_time: drawn_at - now,
            });
            last_draw = Some(drawn_at);
            dirty = false;
        }
        if app.summary().is_some() {
            return Ok(Ending::Closed);
        }
        tokio::select! {
            event = events.recv() => {
                let Some(event) = event else {
                    return Ok(Ending::Closed);
                };
                let now = Instant::now();
                app.event(&event, now);
                applied += 1;
                // Drain what is already waiting: one frame for a whole burst.
                for _ in 0..BATCH {
                    let Ok(event) = events.try_recv() else { break };
                    app.event(&event, now);
                    applied += 1;
                }
                dirty = true;
            }
            term = input.next(), if input_open => match term {
                Some(Ok(TermEvent::Key(key))) => {
                    app.set_busy(crate::process::busy());
                    match app.key(&key) {
                        Some(Command::Send(request)) => send(requests, request),
                        Some(Command::Abort) => return Ok(Ending::Abort),
                        None => {}
                    }
                    dirty = true;
                }
                Some(Ok(TermEvent::Resize(..))) => {
                    terminal.autoresize().map_err(io::Error::other)?;
                    dirty = true;
                }
                Some(Ok(_)) => {}
                Some(Err(err)) => return Err(err),
                // No more input (stdin closed): keep showing the run.
                None => input_open = false,
            },
            _ = ticker.tick() => {
                // Elapsed clocks move once a second.
                if last_draw.is_none_or(|at| at.elapsed() >= Duration::from_secs(1)) {
                    dirty = true;
                }
            }
        }
    }
}

/// Give the terminal back (normal screen, cursor, cooked mode) if the HUD holds it;
/// for exits that cannot wait for the HUD to close. Harmless when it does not.
pub fn restore_terminal() {
    terminal::restore();
}

fn send(requests: &RequestSender, request: RunRequest) {
    if let Err(err) = requests.send(request) {
        tracing::debug!(request = ?err.0, "the run no longer takes requests");
    }
}

/// A stream that never yields, for driving the loop without a keyboard.
pub fn no_input() -> impl Stream<Item = io::Result<TermEvent>> + Unpin {
    futures_util::stream::pending()
}
