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
//!   carrying its `_meta` envelope), with the spread of that multiple over the rounds;
//! - the CPU the relay and the supervisor use per sequential request, which moves less
//!   than the latencies with where the host's scheduler wakes each process;
//! - pipelined throughput (requests per second, 64 in flight);
//! - `restart_server` time minus the server's own startup-to-ready time;
//! - the supervisor's resident memory when idle;
//! - lost requests: a pipelined stream runs through 20 restarts and every request must
//!   come back exactly once.
//!
//! Run with `cargo bench --bench mcp_proxy`.

use std::collections::HashSet;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

#[path = "common/figures.rs"]
mod figures;
#[path = "common/mcp.rs"]
mod mcp;

use figures::{Stats, cpu_ns, median, micros_each, resident};
use mcp::{StdioPeer, bench_result};

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
    let mut rounds: [Vec<Round>; 6] = Default::default();
    let mut rates: [Vec<f64>; 6] = Default::default();
    for round in 0..ROUNDS {
        for turn in 0..ROUTES.len() {
            let index = (round + turn) % ROUTES.len();
            let (path, era) = ROUTES[index];
            let mut session = Session::start(path, &relay, state.path());
            session.era = era;
            session.open();
            let (mut latencies, cpu_us) = session.sequential(SEQUENTIAL_PER_ROUND / scale);
            samples[index].extend(&latencies);
            rounds[index].push(Round {
                p50: Stats::of(&mut latencies).p50,
                cpu_us,
            });
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
            &rounds[at..at + 3],
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
    let rss = resident(session.peer.child.id());
    println!(
        "supervisor idle RSS: {:.1} MiB, of which heap and stacks {:.1} MiB   (target < 10 MiB)",
        rss.total_mib(),
        rss.anon_mib()
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
fn report_sequential(
    era: &str,
    count: usize,
    stats: &[Stats],
    rounds: &[Vec<Round>],
    rates: &[f64],
) {
    let [direct, relayed, proxied] = stats else {
        unreachable!("three paths")
    };
    let [direct_rounds, relayed_rounds, proxied_rounds] = rounds else {
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
    let ratio = |direct: f64, relayed: f64, proxied: f64| (proxied - direct) / (relayed - direct);
    // The same ratio within each round, where the three paths run seconds apart: how far
    // the host's scheduling moves it.
    let mut ratios: Vec<f64> = direct_rounds
        .iter()
        .zip(relayed_rounds)
        .zip(proxied_rounds)
        .map(|((direct, relayed), proxied)| ratio(direct.p50, relayed.p50, proxied.p50))
        .collect();
    ratios.sort_by(f64::total_cmp);
    println!(
        "  debussy's added p50 is {:.2}× the bare relay's   (target ≤ 1.3×; rounds {:.2}× to {:.2}×)",
        ratio(direct.p50, relayed.p50, proxied.p50),
        ratios[0],
        ratios[ratios.len() - 1]
    );
    let cpu = |rounds: &[Round]| median(&mut rounds.iter().map(|r| r.cpu_us).collect::<Vec<_>>());
    let (relay_cpu, debussy_cpu) = (cpu(relayed_rounds), cpu(proxied_rounds));
    println!(
        "  CPU per request in the middle: relay {relay_cpu:.1} µs, debussy {debussy_cpu:.1} µs ({:+.1} µs)",
        debussy_cpu - relay_cpu
    );
    println!(
        "  pipelined throughput ({WINDOW} in flight): direct {:.0} req/s, relayed {:.0} req/s, proxied {:.0} req/s",
        rates[0], rates[1], rates[2]
    );
}

/// One round of one route: its median latency, and the CPU the process in the middle
/// (the server itself on the direct path) used per request, in microseconds.
struct Round {
    p50: f64,
    cpu_us: f64,
}

struct Session {
    peer: StdioPeer,
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
        Session {
            peer: StdioPeer::spawn(command.env("MCP_BENCH_SERVER", "1")),
            era: Era::Legacy,
        }
    }

    /// The request as this era's client writes it, one line with its newline.
    fn line(&self, id: u64, method: &str, params: &Value) -> Vec<u8> {
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
        let mut line = serde_json::to_vec(&message).expect("serialize");
        line.push(b'\n');
        line
    }

    fn send(&mut self, id: u64, method: &str, params: &Value) {
        let line = self.line(id, method, params);
        self.peer.write_raw(&line);
    }

    fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.peer.next_id();
        self.send(id, method, &params);
        self.peer.flush();
        let reply = self.peer.read();
        assert_eq!(reply["id"], id);
        reply
    }

    /// Start the conversation as a client of this era does.
    fn open(&mut self) {
        if self.era == Era::Stateless {
            self.call("server/discover", json!({}));
            return;
        }
        self.peer.initialize();
    }

    /// Per-request round trips in microseconds: from writing a request's line to
    /// reading its answer's. The line is built before the clock starts and the answer
    /// read after it stops, so that the bench client's own JSON work (larger for a
    /// 2026-07-28 request) is not counted as the path's.
    fn sequential(&mut self, count: usize) -> (Vec<f64>, f64) {
        let params = json!({"name": "echo", "arguments": {"text": "hello"}});
        for _ in 0..100 {
            self.call("tools/call", params.clone());
        }
        let middle = self.peer.child.id();
        let cpu_before = cpu_ns(middle);
        let latencies = (0..count)
            .map(|_| {
                let id = self.peer.next_id();
                let line = self.line(id, "tools/call", &params);
                let started = Instant::now();
                self.peer.write_raw(&line);
                self.peer.flush();
                let (elapsed, reply) = self.peer.read_timed(started);
                assert_eq!(reply["id"], id);
                elapsed.as_secs_f64() * 1e6
            })
            .collect();
        let cpu_us = micros_each(cpu_ns(middle).saturating_sub(cpu_before), count);
        (latencies, cpu_us)
    }

    /// Requests per second with `WINDOW` in flight.
    fn pipelined(&mut self, count: usize) -> f64 {
        let params = json!({"name": "echo", "arguments": {"text": "hello"}});
        let started = Instant::now();
        let mut sent = 0;
        let mut received = 0;
        while received < count {
            while sent < count && sent - received < WINDOW {
                let id = self.peer.next_id();
                self.send(id, "tools/call", &params);
                sent += 1;
            }
            self.peer.flush();
            self.peer.read();
            received += 1;
        }
        f64::from(u32::try_from(count).expect("a count that fits"))
            / started.elapsed().as_secs_f64()
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
                let id = self.peer.next_id();
                self.send(id, "tools/call", &params);
                outstanding.insert(id);
                sent += 1;
                if every > 0 && sent % every == 0 && restart_ids.is_empty() && sent < count {
                    let id = self.peer.next_id();
                    self.send(
                        id,
                        "tools/call",
                        &json!({"name": "restart_server", "arguments": {"reason": "bench"}}),
                    );
                    restart_ids.insert(id);
                }
            }
            self.peer.flush();
            let reply = self.peer.read();
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

    fn close(self) {
        self.peer.close();
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
            _ => bench_result(&message),
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
