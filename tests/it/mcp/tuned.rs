//! The supervisor as a library, with short limits: readiness timeouts, degraded mode and
//! request deadlines without waiting for the production defaults. Real server processes;
//! the client side is an in-memory pipe.

use std::path::Path;
use std::time::Duration;

use debussy::mcp::{Limits, SuperviseOptions, SuperviseOutcome, supervise};
use debussy::restart::{Backoff, RestartConfig};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines};

use super::support::{
    WAIT, error_message, event_types, initialize_params, read_audit, test_server,
};

/// The supervisor's task, ending with its outcome.
type Task = tokio::task::JoinHandle<Result<SuperviseOutcome, debussy::mcp::McpError>>;

struct Client {
    write: DuplexStream,
    lines: Lines<BufReader<DuplexStream>>,
}

impl Client {
    async fn send(&mut self, message: Value) {
        let mut line = serde_json::to_vec(&message).expect("json");
        line.push(b'\n');
        self.write.write_all(&line).await.expect("write");
    }

    async fn next(&mut self) -> Value {
        let line = tokio::time::timeout(WAIT, self.lines.next_line())
            .await
            .expect("a message in time")
            .expect("read")
            .expect("not closed");
        serde_json::from_str(&line).expect("json")
    }
}

fn options(dir: &Path, server_args: &[&str]) -> SuperviseOptions {
    let mut command = vec![test_server().display().to_string()];
    command.extend(server_args.iter().map(|s| (*s).to_owned()));
    let mut opts = SuperviseOptions::new("tuned", command);
    opts.state_dir = dir.join("state");
    opts.limits = Limits {
        readiness_timeout: Duration::from_millis(300),
        first_readiness_timeout: Duration::from_millis(300),
        buffer_deadline: Duration::from_millis(200),
        stop_close_grace: Duration::from_millis(500),
        stop_term_grace: Duration::from_millis(500),
        ..Limits::default()
    };
    opts.restart = RestartConfig {
        backoff: Backoff::new([], Duration::from_millis(100)),
        max_crashes: 2,
        ..RestartConfig::default()
    };
    opts
}

fn start(opts: SuperviseOptions) -> (Client, Task) {
    let (client_write, supervisor_read) = tokio::io::duplex(1 << 16);
    let (supervisor_write, client_read) = tokio::io::duplex(1 << 16);
    let task = tokio::spawn(supervise(opts, supervisor_read, supervisor_write, |_| {}));
    let client = Client {
        write: client_write,
        lines: BufReader::new(client_read).lines(),
    };
    (client, task)
}

/// The `initialize` request numbered `id`.
fn initialize(id: u64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": initialize_params("2025-06-18")})
}

/// Ask the supervisor for `server_status` and return it parsed.
async fn status(client: &mut Client, id: u64) -> Value {
    client
        .send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "server_status", "arguments": {}}}))
        .await;
    let reply = client.next().await;
    assert_eq!(reply["id"], id, "{reply}");
    let text = reply["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no status text: {reply}"));
    serde_json::from_str(text).expect("status json")
}

/// Close the client's side: the supervisor ends, as `ClientClosed`.
async fn closed(client: Client, task: Task) {
    drop(client);
    let outcome = tokio::time::timeout(WAIT, task)
        .await
        .expect("ends")
        .expect("task");
    assert_eq!(outcome.expect("ran"), SuperviseOutcome::ClientClosed);
}

/// The next message, the answer to request 1 failing because the server went
/// degraded; its error message.
async fn degraded_answer(client: &mut Client) -> String {
    let reply = client.next().await;
    assert_eq!(reply["id"], 1, "{reply}");
    let message = error_message(&reply);
    assert!(message.contains("degraded"), "{reply}");
    message.to_owned()
}

/// The audit in the state directory under `dir` names the event `name` `times` times.
fn assert_audited(dir: &Path, name: &str, times: usize) {
    let events = event_types(&read_audit(&dir.join("state")));
    let count = events.iter().filter(|e| *e == name).count();
    assert_eq!(count, times, "{name}: {events:?}");
}

#[tokio::test]
async fn a_server_that_never_answers_initialize_ends_degraded() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut opts = options(dir.path(), &["--no-initialize"]);
    opts.limits.buffer_deadline = Duration::from_secs(10);
    let (mut client, task) = start(opts);
    client.send(initialize(1)).await;
    // Two readiness timeouts (the initialize is retried on the second server), then the
    // crash limit: the held initialize is answered with the reason.
    degraded_answer(&mut client).await;
    let status = status(&mut client, 2).await;
    assert_eq!(status["mode"], "degraded", "{status}");
    closed(client, task).await;
    assert_audited(dir.path(), "readiness_timeout", 2);
    assert_audited(dir.path(), "degraded", 1);
}

#[tokio::test]
async fn requests_held_past_the_deadline_are_answered_with_an_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut opts = options(dir.path(), &["--no-initialize"]);
    opts.limits.first_readiness_timeout = Duration::from_secs(30);
    let (mut client, task) = start(opts);
    client.send(initialize(1)).await;
    client
        .send(json!({"jsonrpc": "2.0", "id": "held", "method": "tools/list"}))
        .await;
    // A cancelled held request gets no answer at all.
    client
        .send(json!({"jsonrpc": "2.0", "id": "cancelled", "method": "tools/list"}))
        .await;
    client
        .send(
            json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": "cancelled", "reason": "changed my mind"}}),
        )
        .await;
    let reply = client.next().await;
    assert_eq!(reply["id"], "held", "{reply}");
    assert_eq!(reply["error"]["code"], -32603);
    let message = error_message(&reply);
    assert!(message.contains("not ready within 200 ms"), "{message}");
    closed(client, task).await;
}

/// Exit 42 asks for a restart only from a server that became ready: one that exits 42
/// before answering `initialize` failed to start, goes through the crash backoff and
/// the crash limit like any other, and is counted.
#[tokio::test]
async fn exit_42_before_readiness_is_a_failed_start() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut opts = options(dir.path(), &["--exit-at-start", "42"]);
    opts.limits.buffer_deadline = Duration::from_secs(10);
    let (mut client, task) = start(opts);
    client.send(initialize(1)).await;
    let message = degraded_answer(&mut client).await;
    assert!(message.contains("code 42"), "{message}");
    let status = status(&mut client, 2).await;
    assert_eq!(status["mode"], "degraded", "{status}");
    assert_eq!(status["crash_count"], 2, "{status}");
    assert_eq!(status["restart_count"], 1, "{status}");
    closed(client, task).await;
    assert_audited(dir.path(), "server_started", 2);
    assert_audited(dir.path(), "crash_backoff", 1);
    assert_audited(dir.path(), "degraded", 1);
    assert_audited(dir.path(), "restart_requested", 0);
}

/// A server that needs longer than the restart readiness timeout to start (`npx` or
/// `uv run` on a cold cache) gets the longer first-start wait, and the client's own
/// `initialize` stays pending across a failed first start, past the request deadline,
/// until a server answers it. Restarts keep the short readiness timeout.
#[tokio::test]
async fn a_slow_first_start_is_waited_for_and_answers_the_clients_initialize() {
    let dir = tempfile::tempdir().expect("tempdir");
    let count = dir.path().join("starts");
    let script = format!(
        "n=$(cat '{count}' 2>/dev/null || echo 0); n=$((n+1)); echo $n > '{count}'; \
         if [ $n = 1 ]; then echo 'first start fails' >&2; exit 3; fi; \
         sleep 0.8; exec '{server}'",
        count = count.display(),
        server = test_server().display()
    );
    let mut opts = options(dir.path(), &[]);
    opts.command = vec!["sh".to_owned(), "-c".to_owned(), script];
    opts.limits.first_readiness_timeout = Duration::from_secs(10);
    opts.restart.backoff = Backoff::new([], Duration::from_millis(400));
    opts.restart.max_crashes = 5;
    let (mut client, task) = start(opts);
    client.send(initialize(1)).await;
    let reply = client.next().await;
    assert_eq!(reply["id"], 1, "{reply}");
    assert!(reply["result"]["serverInfo"].is_object(), "{reply}");
    client
        .send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await;
    // A restart must be ready within 300 ms: this server needs 800.
    client
        .send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "restart_server", "arguments": {"reason": "slow"}}}))
        .await;
    let reply = loop {
        let message = client.next().await;
        if message.get("id").is_some() {
            break message;
        }
    };
    assert_eq!(reply["id"], 2, "{reply}");
    assert_eq!(reply["result"]["isError"], true, "{reply}");
    closed(client, task).await;
    let audit = read_audit(&dir.path().join("state"));
    let timeouts: Vec<_> = audit
        .iter()
        .filter(|e| e["event_type"] == "readiness_timeout")
        .collect();
    assert!(!timeouts.is_empty(), "{audit:?}");
    assert!(timeouts.iter().all(|e| e["timeout_ms"] == 300), "{audit:?}");
}

#[tokio::test]
async fn a_client_that_stops_reading_while_the_server_floods_is_given_up() {
    let dir = tempfile::tempdir().expect("tempdir");
    let flood = r#"while :; do echo '{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"0123456789abcdef0123456789abcdef"}}'; done"#;
    let mut opts = SuperviseOptions::new("flood", vec!["sh".into(), "-c".into(), flood.into()]);
    opts.state_dir = dir.path().join("state");
    opts.limits = Limits {
        buffer_max_bytes: 64 * 1024,
        max_line_length: 4096,
        stop_close_grace: Duration::from_millis(200),
        stop_term_grace: Duration::from_millis(200),
        ..Limits::default()
    };
    // The client keeps its end open and never reads: 4 KiB fit in the pipe.
    let (_client_write, supervisor_read) = tokio::io::duplex(1024);
    let (supervisor_write, _unread) = tokio::io::duplex(4096);
    let outcome = tokio::time::timeout(
        WAIT,
        supervise(opts, supervisor_read, supervisor_write, |_| {}),
    )
    .await
    .expect("the supervisor gives the client up in time")
    .expect("supervised");
    assert_eq!(outcome, SuperviseOutcome::ClientClosed);
    let events = event_types(&read_audit(&dir.path().join("state")));
    assert!(
        events.iter().any(|event| event == "supervisor_exiting"),
        "{events:?}"
    );
}
