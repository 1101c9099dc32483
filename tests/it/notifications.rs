//! Notifications end to end: `debussy run` with the simulated agent and
//! `notifications.provider: ntfy` pointed at an ntfy-compatible HTTP server on 127.0.0.1
//! (axum). The server must receive the run start, the context restart, the completed
//! phase and the run's end, in order, in ntfy's JSON publishing form; a server that refuses every
//! post must not change the run's outcome.

use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::support::project::{commit_all, init_repo, sim_run_args, wait_exit, write_file};
use crate::support::scenario::{Scenario, Script, Turn};
use axum::Json;
use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::post;
use serde::Deserialize;

/// One post: topic, title, priority, tags, message.
type Post = [String; 5];

#[derive(Clone)]
struct Server {
    posts: Arc<Mutex<Vec<Post>>>,
    status: StatusCode,
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
    server.posts.lock().expect("lock").push([
        post.topic,
        post.title,
        post.priority.to_string(),
        post.tags.join(","),
        post.message,
    ]);
    server.status
}

/// Start the server on its own runtime thread; returns its URL and what it receives.
fn serve(status: StatusCode) -> (String, Arc<Mutex<Vec<Post>>>, tokio::runtime::Runtime) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let posts: Arc<Mutex<Vec<Post>>> = Arc::default();
    let app = Router::new().route("/", post(publish)).with_state(Server {
        posts: posts.clone(),
        status,
    });
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .expect("bind");
    let address = listener.local_addr().expect("address");
    runtime.spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (format!("http://{address}"), posts, runtime)
}

/// A git repository whose one phase restarts once for context (the first session only
/// fills the context, so the stop cannot race any work), then finishes.
fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    init_repo(root);
    let write = |relative: &str, text: &str| write_file(root, relative, text);
    write(
        "plan/MASTER_PLAN.md",
        "# Notify Test - Master Plan\n\n## Phases\n\n| Phase | Title | Status |\n|---|---|---|\n\
         | 1 | [Fill the context](phase-1.md) | Pending |\n",
    );
    write(
        "plan/phase-1.md",
        "# Notify Test Phase 1: Fill the context\n\n**Status:** Pending\n**Depends On:** N/A\n\n\
         ## Process Wrapper\n- [ ] Write notes to: `notes/phase-1.md`\n\n\
         ## Gates\n- check: `test -f a.txt` passes\n\n## Tasks\n- [ ] 1.1: Write a.txt\n",
    );
    write(
        "plan/sim-scenario.yaml",
        &Scenario::new()
            .script(Script::phase("1").restart(0).turns([
                Turn::say("Reading everything.").percent(85),
                Turn::sleep(10_000),
            ]))
            .script(Script::phase("1").restart(1).turns([
                Turn::say("Writing a.txt.").percent(10).writes("a.txt", "a"),
                Turn::say("notes").writes(
                    "${SCENARIO_DIR}/notes/phase-1.md",
                    "## Summary\nok\n## Key Decisions\nnone\n## Files Modified\na.txt\n",
                ),
                Turn::done(),
            ]))
            .to_yaml(),
    );
    commit_all(root, "plan");
    dir
}

/// Run the plan with notifications to `server`; returns the exit code, within a deadline.
fn run(root: &Path, server: &str) -> i32 {
    let mut child = crate::support::debussy(
        root,
        &sim_run_args(
            "plan/MASTER_PLAN.md",
            &["--restart-delay", "0", "--output-format", "json"],
        ),
    )
    .env("DEBUSSY_NOTIFICATIONS__ENABLED", "true")
    .env("DEBUSSY_NOTIFICATIONS__PROVIDER", "ntfy")
    .env("DEBUSSY_NOTIFICATIONS__NTFY__SERVER", server)
    .env("DEBUSSY_NOTIFICATIONS__NTFY__TOPIC", "runs")
    .stdout(Stdio::null())
    .stderr(Stdio::null())
    .spawn()
    .expect("spawn");
    wait_exit(&mut child, Duration::from_secs(60))
}

#[test]
fn a_run_posts_its_milestones_to_ntfy() {
    let (server, posts, _runtime) = serve(StatusCode::OK);
    let dir = project();
    assert_eq!(run(dir.path(), &server), 0);
    // debussy waits for queued notifications before it exits: all are here now.
    let posts = posts.lock().expect("lock").clone();
    let titles: Vec<&str> = posts.iter().map(|p| p[1].as_str()).collect();
    assert_eq!(
        titles,
        [
            "debussy: run started",
            "debussy: context restart 1/3",
            "debussy: phase 1 completed",
            "debussy: run completed",
        ],
        "{posts:#?}"
    );
    assert!(posts.iter().all(|p| p[0] == "runs"));
    assert_eq!(posts[1][2], "2", "restarts are low priority");
    assert_eq!(posts[1][3], "arrows_counterclockwise");
    assert!(
        posts[1][4].starts_with("Notify Test: phase 1 \"Fill the context\" restarted"),
        "{}",
        posts[1][4]
    );
    assert!(
        posts[2][4].ends_with("completed after 1 attempt and 1 restart"),
        "{}",
        posts[2][4]
    );
    assert_eq!(posts[3][3], "tada");
}

#[test]
fn a_failing_server_does_not_change_the_run() {
    let (server, posts, _runtime) = serve(StatusCode::INTERNAL_SERVER_ERROR);
    let dir = project();
    assert_eq!(run(dir.path(), &server), 0);
    assert_eq!(
        posts.lock().expect("lock").len(),
        4,
        "every notice was tried"
    );
}
