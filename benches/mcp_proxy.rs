//! What `debussy mcp supervise` costs, measured against the same server without it.
//!
//! A raw newline-JSON-RPC client drives a minimal fast server (this binary re-run with
//! `MCP_BENCH_SERVER=1`: it answers at once, so the proxy's share is not hidden behind an
//! SDK's millisecond per call) directly, through a bare C poll relay (`common/relay.c`,
//! built with `cc`: the least any stdio proxy costs) and through the supervisor, in
//! rotating rounds within one run:
//!
//! - added latency per sequential request (mean, p50, p99 of each path minus direct),
//!   and the supervisor's added p50 as a multiple of the relay's, for a legacy client
//!   (`initialize`) and for a 2026-07-28 one (`server/discover`, every request
//!   carrying its `_meta` envelope);
//! - pipelined throughput (requests per second, 64 in flight);
//! - `restart_server` time minus the server's own startup-to-ready time;
//! - the supervisor's resident memory when idle;
//! - lost requests: a pipelined stream runs through 20 restarts and every request must
//!   come back exactly once.
//!
//! Run with `cargo bench --bench mcp_proxy`.

#![allow(
    clippy::cast_precision_loss,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "a benchmark turns counts and durations into figures for its report"
)]
use std::collections::HashSet;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

#[path = "common/figures.rs"]
mod figures;

use figures::{Stats, median, resident};

const ROUNDS: usize = 6;
const SEQUENTIAL_PER_ROUND: usize = 3000;
const PIPELINED: usize = 20_000;
const WINDOW: usize = 64;
const RESTARTS: usize = 30;

/// How the bench client reaches the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Path {
    Direct,
    /// Through the bare C relay.
    Relayed,
    /// Through `debussy mcp supervise`.
    Proxied,
}

/// Which protocol revision the bench client speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Era {
    /// `initialize` first, bare requests.
    Legacy,
    /// 2026-07-28: `server/discover` first, the envelope in every request's `_meta`.
    Stateless,
}

/// The routes measured in every round: each path with a client of each era (the
/// 2026-07-28 messages are longer, so each era has its own direct baseline).
const ROUTES: [(Path, Era); 6] = [
    (Path::Direct, Era::Legacy),
    (Path::Relayed, Era::Legacy),
    (Path::Proxied, Era::Legacy),
    (Path::Direct, Era::Stateless),
    (Path::Relayed, Era::Stateless),
    (Path::Proxied, Era::Stateless),
];

/// Build the bare relay into `dir`.
fn build_relay(dir: &std::path::Path) -> PathBuf {
    let source = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("benches/common/relay.c");
    let relay = dir.join("relay");
    let status = Command::new("cc")
        .args(["-O2", "-o"])
        .arg(&relay)
        .arg(&source)
        .status()
        .expect("the bench builds its C relay with `cc`; install a C compiler");
    assert!(status.success(), "cc could not build {}", source.display());
    relay
}

fn main() {
    if std::env::var_os("MCP_BENCH_SERVER").is_some() {
        serve();
        return;
    }
    // A test runner listing tests (`cargo nextest`: `--list --format terse`) finds none
    // here: this is a measurement, run with `cargo bench`.
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    // `cargo bench` passes `--bench`; anything else (e.g. `cargo test --benches`) only
    // checks that it runs, on a small scale.
    let quick = !std::env::args().any(|a| a == "--bench");
    let scale = if quick { 20 } else { 1 };
    let state = tempfile::tempdir().expect("tempdir");
    let relay = build_relay(state.path());

    let mut samples: [Vec<f64>; 6] = Default::default();
    let mut rates: [Vec<f64>; 6] = Default::default();
    for round in 0..ROUNDS {
        for turn in 0..ROUTES.len() {
            let index = (round + turn) % ROUTES.len();
            let (path, era) = ROUTES[index];
            let mut session = Session::start(path, &relay, state.path());
            session.era = era;
            session.open();
            samples[index].extend(session.sequential(SEQUENTIAL_PER_ROUND / scale));
            rates[index].push(session.pipelined(PIPELINED / scale));
            session.close();
        }
    }
    let stats = samples.each_mut().map(|s| Stats::of(s));
    let rates = rates.each_mut().map(|r| median(r));
    for (era, at) in [("legacy client", 0), ("2026-07-28 client", 3)] {
        report_sequential(
            era,
            samples[at].len(),
            &stats[at..at + 3],
            &rates[at..at + 3],
        );
    }

    // The server's own startup: spawn to initialize answered, directly.
    let mut startups = Vec::new();
    for _ in 0..RESTARTS / scale.min(RESTARTS) {
        let started = Instant::now();
        let mut session = Session::start(Path::Direct, &relay, state.path());
        session.open();
        startups.push(started.elapsed().as_secs_f64() * 1e3);
        session.close();
    }
    let startup = median(&mut startups);

    let mut session = Session::start(Path::Proxied, &relay, state.path());
    session.open();
    let mut restarts = Vec::new();
    for _ in 0..RESTARTS / scale.min(RESTARTS) {
        let started = Instant::now();
        let reply = session.call(
            "tools/call",
            json!({"name": "restart_server", "arguments": {"reason": "bench"}}),
        );
        assert!(reply["result"]["isError"] != true, "{reply}");
        restarts.push(started.elapsed().as_secs_f64() * 1e3);
    }
    let restart = median(&mut restarts);
    println!(
        "restart_server: {restart:.1} ms; server startup alone: {startup:.1} ms; overhead {:.1} ms   (target < 10 ms)",
        restart - startup
    );

    // Idle memory: let the supervisor settle, then read its resident set.
    let _ = session.call("ping", json!({}));
    std::thread::sleep(Duration::from_millis(500));
    let rss = resident(session.child.id());
    println!(
        "supervisor idle RSS: {:.1} MiB, of which heap and stacks {:.1} MiB   (target < 10 MiB)",
        rss.total_kib as f64 / 1024.0,
        rss.anon_kib as f64 / 1024.0
    );

    // Nothing lost: a pipelined stream through restarts.
    let (sent, answered) = session.stream_through_restarts(PIPELINED / scale, 20 / scale.min(20));
    println!(
        "lost requests across {} restarts: {} of {sent}",
        20 / scale.min(20),
        sent - answered
    );
    assert_eq!(sent, answered, "requests were lost");
    session.close();
}

/// The latency and throughput lines of one era's three paths (direct, relayed,
/// proxied).
fn report_sequential(era: &str, count: usize, stats: &[Stats], rates: &[f64]) {
    let [direct, relayed, proxied] = stats else {
        unreachable!("three paths")
    };
    println!("sequential requests, {era} ({count} per path, rotating rounds):");
    for (name, stats) in [
        ("direct ", direct),
        ("relayed", relayed),
        ("proxied", proxied),
    ] {
        println!(
            "  {name}  mean {:>7.1} µs  p50 {:>7.1} µs  p99 {:>7.1} µs",
            stats.mean, stats.p50, stats.p99
        );
    }
    for (name, stats) in [("relay", relayed), ("debussy", proxied)] {
        println!(
            "  added by {name:<7}  mean {:>+7.1} µs  p50 {:>+7.1} µs  p99 {:>+7.1} µs",
            stats.mean - direct.mean,
            stats.p50 - direct.p50,
            stats.p99 - direct.p99
        );
    }
    println!(
        "  debussy's added p50 is {:.2}× the bare relay's   (target ≤ 1.3×)",
        (proxied.p50 - direct.p50) / (relayed.p50 - direct.p50)
    );
    println!(
        "  pipelined throughput ({WINDOW} in flight): direct {:.0} req/s, relayed {:.0} req/s, proxied {:.0} req/s",
        rates[0], rates[1], rates[2]
    );
}

struct Session {
    child: Child,
    input: BufWriter<ChildStdin>,
    output: BufReader<ChildStdout>,
    next_id: u64,
    line: String,
    era: Era,
}

impl Session {
    fn start(path: Path, relay: &std::path::Path, state: &std::path::Path) -> Session {
        let me = std::env::current_exe().expect("current exe");
        let mut command = match path {
            Path::Direct => Command::new(&me),
            Path::Relayed => {
                let mut c = Command::new(relay);
                c.arg(&me);
                c
            }
            Path::Proxied => {
                let mut c = Command::new(PathBuf::from(env!("CARGO_BIN_EXE_debussy")));
                c.args(["-q", "mcp", "supervise", "--state-dir"])
                    .arg(state)
                    .arg("--")
                    .arg(&me);
                c
            }
        };
        let mut child = command
            .env("MCP_BENCH_SERVER", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn");
        let input = BufWriter::new(child.stdin.take().expect("stdin"));
        let output = BufReader::new(child.stdout.take().expect("stdout"));
        Session {
            child,
            input,
            output,
            next_id: 0,
            line: String::new(),
            era: Era::Legacy,
        }
    }

    fn send(&mut self, id: u64, method: &str, params: &Value) {
        let message = match self.era {
            Era::Legacy => json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
            Era::Stateless => {
                let mut params = params.clone();
                params["_meta"] = json!({
                    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"},
                    "io.modelcontextprotocol/clientCapabilities": {},
                });
                json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
            }
        };
        serde_json::to_writer(&mut self.input, &message).expect("write");
        self.input.write_all(b"\n").expect("write");
    }

    fn read(&mut self) -> Value {
        loop {
            self.line.clear();
            let n = self.output.read_line(&mut self.line).expect("read");
            assert!(n > 0, "the server closed its output");
            let value: Value = serde_json::from_str(&self.line).expect("json");
            if value.get("id").is_some() {
                return value;
            }
        }
    }

    fn call(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(id, method, &params);
        self.input.flush().expect("flush");
        let reply = self.read();
        assert_eq!(reply["id"], id);
        reply
    }

    /// Start the conversation as a client of this era does.
    fn open(&mut self) {
        if self.era == Era::Stateless {
            self.call("server/discover", json!({}));
            return;
        }
        self.call("initialize", json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}));
        self.input
            .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n")
            .expect("write");
        self.input.flush().expect("flush");
    }

    /// Per-request round trips in microseconds.
    fn sequential(&mut self, count: usize) -> Vec<f64> {
        let params = json!({"name": "echo", "arguments": {"text": "hello"}});
        for _ in 0..100 {
            self.call("tools/call", params.clone());
        }
        (0..count)
            .map(|_| {
                let started = Instant::now();
                self.call("tools/call", params.clone());
                started.elapsed().as_secs_f64() * 1e6
            })
            .collect()
    }

    /// Requests per second with `WINDOW` in flight.
    fn pipelined(&mut self, count: usize) -> f64 {
        let params = json!({"name": "echo", "arguments": {"text": "hello"}});
        let started = Instant::now();
        let mut sent = 0;
        let mut received = 0;
        while received < count {
            while sent < count && sent - received < WINDOW {
                self.next_id += 1;
                self.send(self.next_id, "tools/call", &params);
                sent += 1;
            }
            self.input.flush().expect("flush");
            self.read();
            received += 1;
        }
        count as f64 / started.elapsed().as_secs_f64()
    }

    /// Send `count` pipelined requests while restarting `restarts` times; returns
    /// (sent, answered exactly once).
    fn stream_through_restarts(&mut self, count: usize, restarts: usize) -> (usize, usize) {
        let params = json!({"name": "echo", "arguments": {"text": "hello"}});
        let every = count / (restarts + 1);
        let mut outstanding = HashSet::new();
        let mut answered = 0;
        let mut sent = 0;
        let mut restart_ids = HashSet::new();
        while sent < count || !outstanding.is_empty() || !restart_ids.is_empty() {
            while sent < count && outstanding.len() < WINDOW {
                self.next_id += 1;
                self.send(self.next_id, "tools/call", &params);
                outstanding.insert(self.next_id);
                sent += 1;
                if every > 0 && sent % every == 0 && restart_ids.is_empty() && sent < count {
                    self.next_id += 1;
                    self.send(
                        self.next_id,
                        "tools/call",
                        &json!({"name": "restart_server", "arguments": {"reason": "bench"}}),
                    );
                    restart_ids.insert(self.next_id);
                }
            }
            self.input.flush().expect("flush");
            let reply = self.read();
            let id = reply["id"].as_u64().expect("id");
            if restart_ids.remove(&id) {
                continue;
            }
            assert!(
                outstanding.remove(&id),
                "answer to {id} twice or never asked"
            );
            if reply.get("result").is_some() {
                answered += 1;
            }
        }
        (sent, answered)
    }

    fn close(mut self) {
        drop(self.input);
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The minimal fast server: answers every request at once.
fn serve() {
    let mut out = BufWriter::new(std::io::stdout().lock());
    let mut line = String::new();
    let mut input = BufReader::new(std::io::stdin().lock());
    loop {
        line.clear();
        match input.read_line(&mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let Ok(message) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let Some(id) = message.get("id") else {
            continue;
        };
        let result = match message["method"].as_str() {
            Some("server/discover") => json!({
                "resultType": "complete",
                "supportedVersions": ["2026-07-28"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "bench", "version": "1"}
            }),
            Some("initialize") => json!({
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "bench", "version": "1"}
            }),
            Some("tools/list") => {
                json!({"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]})
            }
            Some("tools/call") => {
                json!({"content": [{"type": "text", "text": message["params"]["arguments"]["text"]}]})
            }
            _ => json!({}),
        };
        let _ = serde_json::to_writer(
            &mut out,
            &json!({"jsonrpc": "2.0", "id": id, "result": result}),
        );
        let _ = out.write_all(b"\n");
        // Flush when no more input is already buffered: one write per burst.
        if input.buffer().is_empty() {
            let _ = out.flush();
        }
    }
}
