//! Which events notify, in what words; delivery to a real ntfy-compatible HTTP server on
//! 127.0.0.1 and to a stand-in `notify-send`.

use std::sync::{Arc, Mutex};

use axum::Json;
use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::post;
use serde::Deserialize;

use super::desktop::Desktop;
use super::ntfy::Ntfy;
use super::*;
use crate::agent::FailureKind;
use crate::config::{NotificationProvider, NotificationsConfig};
use crate::events::{Event, PhaseState};
use crate::events::{PhaseInfo, PhaseSummary, RunSummary};
use crate::state::RunStatus;
use crate::ui::Sink;

fn started() -> Event {
    Event::RunStarted {
        run_id: "r1".into(),
        plan_title: "Greeting Demo".into(),
        plan_path: "examples/demo/MASTER_PLAN.md".into(),
        phases: vec![
            PhaseInfo {
                id: "1".into(),
                title: "Write the greeting".into(),
                status: PhaseState::Pending,
            },
            PhaseInfo {
                id: "2".into(),
                title: "Say goodbye".into(),
                status: PhaseState::Pending,
            },
        ],
        agent: "sim".into(),
        model: "opus".into(),
        context_threshold: crate::context::ContextLimit::At(80.0),
        max_restarts: 3,
        resumed: false,
    }
}

fn finished(status: RunStatus, error: Option<&str>) -> Event {
    Event::RunFinished {
        summary: RunSummary {
            run_id: "r1".into(),
            status,
            phases: vec![PhaseSummary {
                id: "1".into(),
                status: PhaseState::Completed,
                ..PhaseSummary::default()
            }],
            billed: crate::context::cost::Billed {
                input: 4_788,
                cache_write: 40_000,
                cache_read: 200_000,
                output: 0,
            },
            cost_usd: 0.95,
            cost_estimated: false,
            duration_secs: 65.0,
            error: error.map(str::to_owned),
            ..RunSummary::default()
        },
    }
}

fn phase_finished(status: PhaseState, error: Option<&str>) -> Event {
    Event::PhaseFinished {
        phase_id: "1".into(),
        status,
        attempts: 2,
        restarts: 1,
        error: error.map(str::to_owned),
    }
}

fn restart() -> Event {
    Event::Restart {
        phase_id: "1".into(),
        attempt: 1,
        restart: 1,
        max_restarts: 3,
        reason: "context".into(),
        context_percent: 88.0,
        commit: None,
        delay_secs: 2,
    }
}

fn notices(events: &[Event]) -> Vec<Notice> {
    let mut facts = RunFacts::default();
    events
        .iter()
        .filter_map(|event| {
            facts.observe(event);
            notice_for(event, &facts)
        })
        .collect()
}

#[test]
fn a_long_plan_title_or_reason_is_cut_to_fit_a_notice() {
    let mut long = started();
    if let Event::RunStarted { plan_title, .. } = &mut long {
        *plan_title = format!("P{}", "t".repeat(70_000));
    }
    let reason = format!("{}the end", "r".repeat(100_000));
    let got = notices(&[long, phase_finished(PhaseState::Failed, Some(&reason))]);
    for notice in &got {
        assert!(notice.title.chars().count() <= 120, "{}", notice.title);
        assert!(
            notice.message.chars().count() <= 1_000,
            "{}",
            notice.message
        );
    }
    assert!(got[1].message.ends_with("the end"), "{}", got[1].message);
}

#[test]
fn the_events_people_want_to_hear_about() {
    let got = notices(&[
        started(),
        Event::Warning {
            message: "ignored".into(),
        },
        restart(),
        phase_finished(PhaseState::Completed, None),
        phase_finished(PhaseState::Failed, Some("gate tests failed")),
        phase_finished(PhaseState::Blocked, Some("the API key is missing")),
        phase_finished(PhaseState::AwaitingHuman, Some("it conflicts in a.txt")),
        phase_finished(PhaseState::Skipped, None),
        finished(RunStatus::Failed, Some("phase 1 failed")),
    ]);
    let lines: Vec<String> = got
        .iter()
        .map(|n| {
            format!(
                "[{}] {} | {} | {}",
                n.priority.number(),
                n.title,
                n.message,
                n.tags.join(",")
            )
        })
        .collect();
    assert_eq!(
        lines,
        [
            "[3] debussy: run started | Greeting Demo: 2 phases to run with sim (opus) | arrow_forward",
            "[2] debussy: context restart 1/3 | Greeting Demo: phase 1 \"Write the greeting\" restarted with a checkpoint at 88.0% context | arrows_counterclockwise",
            "[3] debussy: phase 1 completed | Greeting Demo: phase 1 \"Write the greeting\" completed after 2 attempts and 1 restart | white_check_mark",
            "[4] debussy: phase 1 failed | Greeting Demo: phase 1 \"Write the greeting\" failed: gate tests failed | x",
            "[5] debussy: phase 1 needs you | Greeting Demo: phase 1 \"Write the greeting\" is blocked: the API key is missing | warning,raising_hand",
            "[5] debussy: phase 1 needs you | Greeting Demo: phase 1 \"Write the greeting\"'s branch could not be merged: it conflicts in a.txt | warning,raising_hand",
            "[4] debussy: run failed | Greeting Demo: 1/1 phases completed in 1m05s, 244,788 tokens billed, $0.95; phase 1 failed | x",
        ]
    );
}

#[test]
fn a_wait_for_a_usage_limit_says_until_when() {
    let got = notices(&[
        started(),
        Event::WaitingForLimit {
            phase_id: "1".into(),
            kind: FailureKind::UsageLimit,
            attempt: 1,
            until: "soon".into(),
            reset_known: true,
            wait_secs: 20,
            said: "You've hit your 5-hour limit".into(),
        },
        Event::WaitingForLimit {
            phase_id: "1".into(),
            kind: FailureKind::Unreachable,
            attempt: 1,
            until: "later".into(),
            reset_known: false,
            wait_secs: 30,
            said: "cannot reach the API: fetch failed".into(),
        },
    ]);
    let wait = &got[1];
    assert_eq!(wait.title, "debussy: waiting for the usage limit");
    assert_eq!(
        wait.message,
        "Greeting Demo: phase 1 \"Write the greeting\" waits for the usage limit until soon (“You've hit your 5-hour limit”); the run goes on then"
    );
    assert_eq!(wait.tags, ["hourglass_flowing_sand"]);
    assert_eq!(got[2].title, "debussy: waiting for the agent's API");
    assert!(
        got[2].message.contains(
            "waits for the agent's API until later (“cannot reach the API: fetch failed”)"
        ),
        "{}",
        got[2].message
    );
}

#[test]
fn finished_runs_say_how() {
    let completed = notices(&[finished(RunStatus::Completed, None)]);
    assert_eq!(completed[0].tags, ["tada"]);
    assert_eq!(completed[0].priority, Priority::Default);
    let paused = notices(&[finished(RunStatus::Paused, None)]);
    assert_eq!(paused[0].title, "debussy: run paused");
    assert_eq!(paused[0].tags, ["pause_button"]);
}

#[test]
fn notifications_off_means_no_notifier() {
    let mut config = NotificationsConfig::default();
    assert!(Notifier::from_config(&config).is_none());
    config.enabled = true;
    assert!(Notifier::from_config(&config).is_none(), "provider none");
    config.provider = NotificationProvider::Ntfy;
    config.ntfy.topic = Some("runs".into());
    assert!(Notifier::from_config(&config).is_some());
}

/// What the test server received: topic, title, priority, tags, message.
type Received = Arc<Mutex<Vec<[String; 5]>>>;

#[derive(Clone)]
struct Server {
    received: Received,
    /// Answer this many requests with 500 before accepting.
    failures: Arc<Mutex<u32>>,
}

/// ntfy's JSON publishing form, every field required: a post missing one fails.
#[derive(Deserialize)]
struct Published {
    topic: String,
    title: String,
    priority: u8,
    tags: Vec<String>,
    message: String,
}

async fn publish(State(server): State<Server>, Json(post): Json<Published>) -> StatusCode {
    {
        let mut failures = server.failures.lock().expect("lock");
        if *failures > 0 {
            *failures -= 1;
            return StatusCode::INTERNAL_SERVER_ERROR;
        }
    }
    server.received.lock().expect("lock").push([
        post.topic,
        post.title,
        post.priority.to_string(),
        post.tags.join(","),
        post.message,
    ]);
    StatusCode::OK
}

/// An ntfy-compatible server on 127.0.0.1; returns its base URL and what it receives.
async fn serve(failures: u32) -> (String, Received) {
    let received: Received = Arc::default();
    let server = Server {
        received: received.clone(),
        failures: Arc::new(Mutex::new(failures)),
    };
    let app = Router::new().route("/", post(publish)).with_state(server);
    (serve_app(app).await, received)
}

/// Serve `app` on 127.0.0.1; returns its base URL.
async fn serve_app(app: Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let address = listener.local_addr().expect("address");
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    format!("http://{address}")
}

/// Post `notice` to the ntfy server at `server` (topic `runs`) from a blocking thread,
/// as the notifier's own thread does.
async fn deliver(server: &str, notice: Notice) -> Result<(), NotifyError> {
    let mut ntfy = Ntfy::new(server, "runs");
    tokio::task::spawn_blocking(move || ntfy.deliver(&notice))
        .await
        .expect("delivered without a panic")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ntfy_gets_title_priority_tags_and_message() {
    let (server, received) = serve(0).await;
    let mut notifier = Notifier::start(Box::new(Ntfy::new(&server, "runs")));
    for event in [
        started(),
        restart(),
        phase_finished(PhaseState::Blocked, Some("no key")),
    ] {
        notifier.event(&event).expect("queued");
    }
    tokio::task::spawn_blocking(move || notifier.close())
        .await
        .expect("closed");
    let got = received.lock().expect("lock").clone();
    assert_eq!(got.len(), 3, "{got:?}");
    assert_eq!(
        got[0],
        [
            "runs".to_owned(),
            "debussy: run started".to_owned(),
            "3".to_owned(),
            "arrow_forward".to_owned(),
            "Greeting Demo: 2 phases to run with sim (opus)".to_owned(),
        ]
    );
    assert_eq!(got[1][2], "2");
    assert_eq!(got[2][1], "debussy: phase 1 needs you");
    assert_eq!(got[2][2], "5");
    assert_eq!(got[2][3], "warning,raising_hand");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn any_text_arrives_as_written() {
    let (server, received) = serve(0).await;
    let notice = Notice {
        title: "debussy: « Café » ♪ finished".into(),
        message: "line one\nline two: 🎵 \"quoted\"".into(),
        priority: Priority::Default,
        tags: vec!["tada"],
    };
    deliver(&server, notice).await.expect("accepted");
    let got = received.lock().expect("lock").clone();
    assert_eq!(got[0][1], "debussy: « Café » ♪ finished");
    assert_eq!(got[0][4], "line one\nline two: 🎵 \"quoted\"");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_post_is_logged_and_the_next_still_goes_out() {
    let (server, received) = serve(1).await;
    let mut ntfy = Ntfy::new(&server, "runs");
    let notice = notices(&[started()]).remove(0);
    let failed = tokio::task::spawn_blocking(move || {
        let first = ntfy.deliver(&notice);
        let second = ntfy.deliver(&notice);
        (first, second)
    })
    .await
    .expect("delivered");
    let err = failed.0.expect_err("the server said 500");
    assert!(err.to_string().contains("500"), "{err}");
    assert!(failed.1.is_ok());
    assert_eq!(received.lock().expect("lock").len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusal_names_the_url_the_status_and_what_the_server_said() {
    // What ntfy.sh answers a post to a reserved topic.
    const SAID: &str = "{\"code\":40301,\"http\":403,\"error\":\"forbidden\",\"link\":\"https://ntfy.sh/docs/publish/#authentication\"}\n";
    let server =
        serve_app(Router::new().route("/", post(|| async { (StatusCode::FORBIDDEN, SAID) }))).await;
    let notice = notices(&[started()]).remove(0);
    let err = deliver(&server, notice)
        .await
        .expect_err("the server said 403");
    assert!(matches!(err, NotifyError::Refused { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        format!(
            "failed to post to {server}/: the server answered HTTP 403 Forbidden: {}",
            SAID.trim_end()
        )
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_https_server_is_spoken_to_in_tls() {
    // A plain-HTTP server behind an `https://` URL: the client must build its TLS (the
    // ring provider is its own, none is installed for the process) and open with a TLS
    // handshake, which the server cannot answer. No post arrives.
    let (server, received) = serve(0).await;
    let url = server.replacen("http://", "https://", 1);
    let notice = notices(&[started()]).remove(0);
    let err = deliver(&url, notice)
        .await
        .expect_err("no TLS server there");
    assert!(matches!(err, NotifyError::Http { .. }), "{err:?}");
    let text = err.to_string();
    assert!(
        text.starts_with(&format!("failed to post to {url}/: ")),
        "{text}"
    );
    assert_eq!(
        text.matches(&url).count(),
        1,
        "the URL is named once: {text}"
    );
    assert!(received.lock().expect("lock").is_empty());
    assert!(rustls::crypto::CryptoProvider::get_default().is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_server_never_holds_up_the_sink() {
    // A port nothing listens on: bind one, note it, close it.
    let address = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("address");
    let mut notifier = Notifier::start(Box::new(Ntfy::new(&format!("http://{address}"), "runs")));
    let started_at = std::time::Instant::now();
    notifier.event(&started()).expect("queued");
    assert!(started_at.elapsed() < std::time::Duration::from_millis(100));
    tokio::task::spawn_blocking(move || notifier.close())
        .await
        .expect("closed");
}

/// Write an executable `notify-send` into `dir` that runs the shell commands `body`.
#[cfg(not(target_os = "macos"))]
pub(super) fn stand_in_notify_send(dir: &std::path::Path, body: &str) {
    use std::os::unix::fs::PermissionsExt;
    let script = dir.join("notify-send");
    std::fs::write(&script, format!("#!/bin/sh\n{body}")).expect("script");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

#[cfg(not(target_os = "macos"))]
#[test]
fn desktop_notifications_run_notify_send() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("calls.txt");
    stand_in_notify_send(
        dir.path(),
        &format!(
            "for a in \"$@\"; do printf '%s\\n' \"$a\" >> '{}'; done\n",
            log.display()
        ),
    );
    let mut notifier = Notifier::start(Box::new(Desktop::search(Some(
        dir.path().as_os_str().to_owned(),
    ))));
    notifier
        .event(&phase_finished(
            PhaseState::Failed,
            Some("gate tests failed"),
        ))
        .expect("queued");
    notifier.close();
    let calls = std::fs::read_to_string(&log).expect("notify-send ran");
    assert_eq!(
        calls.lines().collect::<Vec<_>>(),
        [
            "--app-name=debussy",
            "--urgency=critical",
            "--",
            "debussy: phase 1 failed",
            "phase 1 failed: gate tests failed",
        ]
    );
}
