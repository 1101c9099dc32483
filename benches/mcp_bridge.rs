//! What `debussy mcp bridge` costs, measured against the same daemon without it.
//!
//! The daemon is this binary re-run with `MCP_BENCH_DAEMON=1`: a minimal streamable-HTTP
//! MCP server (axum, plain JSON answers, one session id) that answers at once, so the
//! bridge's share is not hidden behind an SDK's per-call cost. In rotating rounds within
//! one run, a client calls a tool sequentially:
//!
//! - directly over HTTP (keep-alive, the same headers a streamable-HTTP client sends);
//! - through the bridge over stdio;
//! - through `mcp-remote`, the stdio-to-HTTP proxy clients use today (installed by
//!   `scripts/bench-tools`; `MCP_REMOTE` names another copy).
//!
//! Reported: the added latency per call (p50, p99 of each path minus direct) and the
//! bridge's as a share of `mcp-remote`'s, the time of `restart_server` beyond the daemon's
//! own startup-to-first-answer time, and the bridge's resident memory when idle.
//!
//! Run with `cargo bench --bench mcp_bridge`.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

#[path = "common/figures.rs"]
mod figures;
#[path = "common/mcp.rs"]
mod mcp;

use figures::{Stats, median, resident};
use mcp::{StdioPeer, bench_result};

const ROUNDS: usize = 6;
const CALLS_PER_ROUND: usize = 3000;
const RESTARTS: usize = 20;
const STARTUPS: usize = 20;

fn main() {
    if std::env::var_os("MCP_BENCH_DAEMON").is_some() {
        daemon();
        return;
    }
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let quick = !std::env::args().any(|a| a == "--bench");
    let scale = if quick { 30 } else { 1 };
    let state = tempfile::tempdir().expect("tempdir");
    let port = free_port();

    let mut bridge = bridge_client(port, state.path());
    bridge.initialize();
    sequential(&mut bridge, 10);
    std::thread::sleep(Duration::from_millis(500));
    let fresh = resident(bridge.child.id());
    let mut remote = mcp_remote(quick).map(|program| {
        let mut remote = mcp_remote_client(&program, port);
        remote.initialize();
        sequential(&mut remote, 100);
        remote
    });
    let mut direct = Direct::connect(port);
    let mut direct_samples = Vec::new();
    let mut bridged_samples = Vec::new();
    let mut remote_samples = Vec::new();
    for round in 0..ROUNDS {
        for turn in 0..3 {
            let calls = CALLS_PER_ROUND / scale;
            match (round + turn) % 3 {
                0 => direct_samples.extend(direct.sequential(calls)),
                1 => bridged_samples.extend(sequential(&mut bridge, calls)),
                _ => {
                    if let Some(remote) = &mut remote {
                        remote_samples.extend(sequential(remote, calls));
                    }
                }
            }
        }
    }
    if let Some(remote) = remote {
        remote.close();
    }
    let direct_stats = Stats::of(&mut direct_samples);
    let bridged_stats = Stats::of(&mut bridged_samples);

    std::thread::sleep(Duration::from_millis(500));
    let idle = resident(bridge.child.id());

    let mut startups: Vec<f64> = (0..STARTUPS / (scale.min(STARTUPS)))
        .map(|_| own_startup_ms(free_port()))
        .collect();
    let startup = median(&mut startups);
    let mut restarts = Vec::new();
    for _ in 0..(RESTARTS / scale.min(RESTARTS)).max(1) {
        let started = Instant::now();
        let reply = bridge.call(
            "tools/call",
            json!({"name": "restart_server", "arguments": {}}),
        );
        let took = started.elapsed().as_secs_f64() * 1000.0;
        let text = reply["result"]["content"][0]["text"].as_str().unwrap_or("");
        assert!(
            text.contains("\"status\": \"ok\""),
            "restart failed: {reply}"
        );
        // The first call after a restart goes through the new session.
        bridge.call(
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "x"}}),
        );
        restarts.push(took);
    }
    let restart = median(&mut restarts);
    bridge.close();

    println!("mcp bridge benchmark (a daemon answering at once over loopback HTTP)");
    println!(
        "  per call, direct HTTP:  mean {:>7.1} µs   p50 {:>7.1} µs   p99 {:>7.1} µs   ({} calls)",
        direct_stats.mean,
        direct_stats.p50,
        direct_stats.p99,
        direct_samples.len()
    );
    println!(
        "  per call, via bridge:   mean {:>7.1} µs   p50 {:>7.1} µs   p99 {:>7.1} µs   ({} calls)",
        bridged_stats.mean,
        bridged_stats.p50,
        bridged_stats.p99,
        bridged_samples.len()
    );
    println!(
        "  added by the bridge:    p50 {:>7.1} µs   p99 {:>7.1} µs",
        bridged_stats.p50 - direct_stats.p50,
        bridged_stats.p99 - direct_stats.p99
    );
    if remote_samples.is_empty() {
        println!("  via mcp-remote:         not measured (a quick run; `cargo bench` measures it)");
    } else {
        let remote_stats = Stats::of(&mut remote_samples);
        println!(
            "  per call, mcp-remote:   mean {:>7.1} µs   p50 {:>7.1} µs   p99 {:>7.1} µs   ({} calls)",
            remote_stats.mean,
            remote_stats.p50,
            remote_stats.p99,
            remote_samples.len()
        );
        println!(
            "  added by mcp-remote:    p50 {:>7.1} µs   p99 {:>7.1} µs",
            remote_stats.p50 - direct_stats.p50,
            remote_stats.p99 - direct_stats.p99
        );
        println!(
            "  the bridge's added p50 is {:.3}× mcp-remote's   (goal: ≤ 0.15×)",
            (bridged_stats.p50 - direct_stats.p50) / (remote_stats.p50 - direct_stats.p50)
        );
    }
    println!(
        "  restart_server:         {restart:>7.1} ms median, daemon's own startup {startup:.1} ms, overhead {:.1} ms   (goal: < 20 ms)",
        restart - startup
    );
    println!(
        "  bridge idle RSS:        {:>7.1} MiB after connecting, {:.1} MiB after the calls above   (goal: < 10 MiB)",
        fresh.total_mib(),
        idle.total_mib()
    );
    println!(
        "    of which heap and stacks {:.1} MiB and {:.1} MiB; the rest are pages of the executable and libc",
        fresh.anon_mib(),
        idle.anon_mib()
    );
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

fn daemon_command(port: u16) -> Command {
    let mut command = Command::new(std::env::current_exe().expect("current exe"));
    command
        .env("MCP_BENCH_DAEMON", "1")
        .env("DEBUSSY_MCP_PORT", port.to_string());
    command
}

/// The daemon's own time from spawn to its first answered `initialize`.
fn own_startup_ms(port: u16) -> f64 {
    let started = Instant::now();
    let mut child = daemon_command(port)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn the daemon");
    let took = loop {
        if Direct::try_connect(port).is_some() {
            break started.elapsed();
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the daemon never answered"
        );
        std::thread::sleep(Duration::from_micros(200));
    };
    let _ = child.kill();
    let _ = child.wait();
    took.as_secs_f64() * 1000.0
}

/// A client talking to the daemon directly: reqwest driven on this thread by a runtime
/// of its own, so a call costs no hop to another thread and the baseline stays as lean
/// as the paths measured against it.
struct Direct {
    runtime: tokio::runtime::Runtime,
    client: reqwest::Client,
    url: String,
    session: String,
    next_id: u64,
}

impl Direct {
    fn try_connect(port: u16) -> Option<Direct> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let client = debussy::http::client(reqwest::ClientBuilder::no_proxy).expect("client");
        let url = format!("http://127.0.0.1:{port}/mcp");
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}});
        let response = runtime
            .block_on(
                client
                    .post(&url)
                    .header("accept", "application/json, text/event-stream")
                    .header("content-type", "application/json")
                    .body(init.to_string())
                    .send(),
            )
            .ok()?;
        let session = response
            .headers()
            .get("mcp-session-id")?
            .to_str()
            .ok()?
            .to_owned();
        Some(Direct {
            runtime,
            client,
            url,
            session,
            next_id: 0,
        })
    }

    fn connect(port: u16) -> Direct {
        Direct::try_connect(port).expect("connect to the daemon")
    }

    fn sequential(&mut self, count: usize) -> Vec<f64> {
        (0..count)
            .map(|_| {
                self.next_id += 1;
                let body = json!({"jsonrpc": "2.0", "id": self.next_id, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "hello"}}}).to_string();
                let started = Instant::now();
                let text = self.runtime.block_on(async {
                    self.client
                        .post(&self.url)
                        .header("accept", "application/json, text/event-stream")
                        .header("content-type", "application/json")
                        .header("mcp-session-id", &self.session)
                        .header("mcp-protocol-version", "2025-06-18")
                        .body(body)
                        .send()
                        .await
                        .expect("post")
                        .text()
                        .await
                        .expect("body")
                });
                let reply: Value = serde_json::from_str(&text).expect("json");
                let took = started.elapsed().as_secs_f64() * 1e6;
                assert_eq!(reply["id"], self.next_id);
                took
            })
            .collect()
    }
}

/// Where `mcp-remote` is: `MCP_REMOTE`, else the copy `scripts/bench-tools` installs.
/// `None` in a quick run without it; a measuring run without it stops and says how to
/// get it.
fn mcp_remote(quick: bool) -> Option<PathBuf> {
    let program = std::env::var_os("MCP_REMOTE").map_or_else(
        || {
            PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join(".tools/bench/node_modules/.bin/mcp-remote")
        },
        PathBuf::from,
    );
    if program.exists() {
        return Some(program);
    }
    assert!(
        quick,
        "{} is missing: run scripts/bench-tools (or name a copy in MCP_REMOTE)",
        program.display()
    );
    None
}

/// `debussy mcp bridge`, starting the daemon on `port`.
fn bridge_client(port: u16, state: &std::path::Path) -> StdioPeer {
    let me = std::env::current_exe().expect("current exe");
    let mut command = Command::new(PathBuf::from(env!("CARGO_BIN_EXE_debussy")));
    command
        .args(["-q", "mcp", "bridge", "--stop-daemon-on-exit", "--port"])
        .arg(port.to_string())
        .arg("--state-dir")
        .arg(state)
        .arg("--")
        .arg(&me)
        .env("MCP_BENCH_DAEMON", "1");
    StdioPeer::spawn(&mut command)
}

/// `mcp-remote`, to the daemon on `port`.
fn mcp_remote_client(program: &std::path::Path, port: u16) -> StdioPeer {
    let mut command = Command::new(program);
    command.arg(format!("http://127.0.0.1:{port}/mcp")).args([
        "--transport",
        "http-only",
        "--silent",
    ]);
    StdioPeer::spawn(&mut command)
}

/// `count` sequential `echo` calls through `client`: each round trip in microseconds.
fn sequential(client: &mut StdioPeer, count: usize) -> Vec<f64> {
    let params = json!({"name": "echo", "arguments": {"text": "hello"}});
    (0..count)
        .map(|_| {
            let started = Instant::now();
            let reply = client.call("tools/call", params.clone());
            let took = started.elapsed().as_secs_f64() * 1e6;
            assert!(reply.get("result").is_some(), "{reply}");
            took
        })
        .collect()
}

/// The minimal fast daemon: plain JSON answers, one session id, no GET stream.
fn daemon() {
    use axum::http::{HeaderMap, StatusCode};
    use axum::response::IntoResponse;
    let port: u16 = std::env::var("DEBUSSY_MCP_PORT")
        .ok()
        .and_then(|p| p.parse().ok())
        .expect("DEBUSSY_MCP_PORT");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async move {
        async fn handle(_headers: HeaderMap, body: String) -> axum::response::Response {
            let Ok(message) = serde_json::from_str::<Value>(&body) else {
                return StatusCode::BAD_REQUEST.into_response();
            };
            let Some(id) = message.get("id").cloned() else {
                return StatusCode::ACCEPTED.into_response();
            };
            let result = bench_result(&message);
            let reply = json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string();
            (
                [
                    ("content-type", "application/json"),
                    ("mcp-session-id", "bench-session"),
                ],
                reply,
            )
                .into_response()
        }
        let app = axum::Router::new().route(
            "/mcp",
            axum::routing::post(handle).get(|| async { StatusCode::METHOD_NOT_ALLOWED }),
        );
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
            .await
            .expect("bind");
        axum::serve(listener, app).await.expect("serve");
    });
}
