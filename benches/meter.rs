//! Throughput of the transcript parsers and the context meter on large transcripts.
//!
//! Builds a Claude Code transcript of at least 100 MB by repeating the recorded fixtures
//! into a temp file, then streams it through `stream_json::parse_line` and
//! `ContextMeter::observe` with a buffered reader; then the same for a Codex rollout of at
//! least 100 MB through `codex::rollout::parse_line` (as `debussy replay` reads it), and a
//! Gemini CLI transcript of at least 100 MB through its parser. It prints MB/s and peak
//! memory (`VmHWM`). Memory must stay flat: no file is ever loaded
//! whole. Run with `cargo bench --bench meter`.

#![allow(
    clippy::cast_precision_loss,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "a benchmark turns counts and durations into figures for its report"
)]
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::Path;
use std::time::Instant;

use debussy::agent::codex::rollout;
use debussy::agent::{AgentEvent, UsageReporting, stream_json};
use debussy::context::{ContextMeter, MeterSettings, WindowInputs};

const TARGET_BYTES: u64 = 100 * 1024 * 1024;
const MIB: f64 = 1024.0 * 1024.0;

fn main() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/transcripts");
    let mut sample = Vec::new();
    for name in ["claude-task-subagent.jsonl", "claude-custom-agent.jsonl"] {
        let text = std::fs::read(fixtures.join(name)).expect("read fixture");
        sample.extend_from_slice(&text);
        if !sample.ends_with(b"\n") {
            sample.push(b'\n');
        }
    }

    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("big.jsonl");
    let mut out = BufWriter::new(File::create(&path).expect("create"));
    let mut written = 0u64;
    let mut copies = 0u64;
    while written < TARGET_BYTES {
        out.write_all(&sample).expect("write");
        written += sample.len() as u64;
        copies += 1;
    }
    out.flush().expect("flush");
    drop(out);
    println!(
        "transcript: {:.1} MiB ({copies} copies of the two fixtures, {} KiB each)",
        written as f64 / MIB,
        sample.len() / 1024
    );
    println!(
        "peak RSS before the tokenizer is loaded: {} KiB",
        peak_rss_kib()
    );
    // Warm the page cache and the tokenizer so every pass measures the same thing.
    let _ = read_only(&path);
    let _ = debussy::context::estimate::count_tokens("warm up");
    let baseline = peak_rss_kib();
    println!("peak RSS with the tokenizer loaded, before streaming: {baseline} KiB");

    let (bytes, timing) = read_only(&path);
    report("read lines only", bytes, timing);
    let (bytes, timing) = parse_only(&path);
    report("parse", bytes, timing);
    let (bytes, timing, stops) = parse_and_meter(&path, 80.0);
    report("parse + meter, 80% threshold", bytes, timing);
    println!("    {stops} stops in {} sessions", 2 * copies);
    let (bytes, timing, stops) = parse_and_meter(&path, 12.5);
    report(
        "parse + meter, 12.5% (tokenizes each Task result)",
        bytes,
        timing,
    );
    println!("    {stops} stops in {} sessions", 2 * copies);

    let peak = peak_rss_kib();
    println!(
        "peak RSS after streaming: {peak} KiB (+{} KiB while streaming {:.0} MiB)",
        peak.saturating_sub(baseline),
        written as f64 / MIB
    );

    let rollout = std::fs::read(fixtures.join("codex-rollout.jsonl")).expect("read fixture");
    let path = dir.path().join("rollout.jsonl");
    let (written, copies) = repeat_into(&path, &rollout);
    println!(
        "codex rollout: {:.1} MiB ({copies} copies of the fixture, {} KiB each)",
        written as f64 / MIB,
        rollout.len() / 1024
    );
    let _ = read_only(&path);
    let (bytes, timing, stops) = rollout_and_meter(&path);
    report("codex rollout: parse (full) + meter, 80%", bytes, timing);
    println!("    {stops} stops in {copies} sessions");
    let peak_after = peak_rss_kib();
    println!(
        "peak RSS after the rollout: {peak_after} KiB (+{} KiB over the Claude pass)",
        peak_after.saturating_sub(peak)
    );

    let transcript = std::fs::read(fixtures.join("gemini-stream.jsonl")).expect("read fixture");
    let path = dir.path().join("gemini.jsonl");
    let (written, copies) = repeat_into(&path, &transcript);
    println!(
        "gemini transcript: {:.1} MiB ({copies} copies of the fixture, {} B each)",
        written as f64 / MIB,
        transcript.len()
    );
    let _ = read_only(&path);
    let (bytes, timing) = gemini_and_meter(&path);
    report(
        "gemini: parse + meter (estimated throughout)",
        bytes,
        timing,
    );
    let peak_gemini = peak_rss_kib();
    println!(
        "peak RSS after the gemini transcript: {peak_gemini} KiB (+{} KiB)",
        peak_gemini.saturating_sub(peak_after)
    );
}

/// A Gemini CLI transcript through its parser and a meter per session (a new one at each
/// `init`), everything estimated, as `debussy replay` reads it.
fn gemini_and_meter(path: &Path) -> (u64, Timing) {
    let settings = MeterSettings {
        threshold: 80.0.into(),
        tool_call_threshold: 0,
        token_estimate_factor: 1.0,
        usage_reporting: UsageReporting::Nothing,
        stop_on_compact: true,
        prices: Vec::new(),
    };
    let parser = debussy::agent::gemini::stream_json::Parser::with_prompt();
    let mut meter = ContextMeter::new(settings.clone(), WindowInputs::default());
    lines(path, |line| {
        for event in parser.parse_line(line) {
            if matches!(&event, AgentEvent::Init(_)) {
                meter = ContextMeter::new(settings.clone(), WindowInputs::default());
            }
            std::hint::black_box(meter.observe(&event));
        }
    })
}

/// Write `sample` into `path` until it holds [`TARGET_BYTES`]; returns the bytes written
/// and the copies made.
fn repeat_into(path: &Path, sample: &[u8]) -> (u64, u64) {
    let mut out = BufWriter::new(File::create(path).expect("create"));
    let (mut written, mut copies) = (0u64, 0u64);
    while written < TARGET_BYTES {
        out.write_all(sample).expect("write");
        written += sample.len() as u64;
        copies += 1;
    }
    out.flush().expect("flush");
    (written, copies)
}

/// A Codex rollout through the parser (conversation included) and a meter per session
/// (a new one at each `session_meta`), with a 1,200-token window so the stop fires.
fn rollout_and_meter(path: &Path) -> (u64, Timing, u64) {
    let settings = MeterSettings {
        threshold: 80.0.into(),
        tool_call_threshold: 0,
        token_estimate_factor: 1.0,
        usage_reporting: UsageReporting::PerRequest,
        stop_on_compact: true,
        prices: Vec::new(),
    };
    let inputs = WindowInputs {
        configured: Some(1_200),
        ..WindowInputs::default()
    };
    let mut meter = ContextMeter::new(settings.clone(), inputs.clone());
    let mut stops = 0u64;
    let (bytes, timing) = lines(path, |line| {
        for event in rollout::parse_line(line, rollout::Mode::Full) {
            if matches!(&event, AgentEvent::Init(init) if init.session_id.is_some()) {
                meter = ContextMeter::new(settings.clone(), inputs.clone());
            }
            if meter.observe(&event).is_some() {
                stops += 1;
            }
        }
    });
    (bytes, timing, stops)
}

/// Wall-clock and on-CPU throughput. The machine may be shared: on-CPU time (from the
/// scheduler's accounting) is what the code costs, wall time what it took.
fn report(what: &str, bytes: u64, timing: Timing) {
    let mb = bytes as f64 / 1e6;
    let cpu = timing
        .cpu
        .map(|cpu| format!("{:>7.1} MB/s on CPU", mb / cpu))
        .unwrap_or_default();
    println!(
        "{what:<52} {:>7.1} MB/s wall ({:.2} s)  {cpu}",
        mb / timing.wall,
        timing.wall
    );
}

/// How long a pass took.
#[derive(Clone, Copy)]
struct Timing {
    wall: f64,
    cpu: Option<f64>,
}

/// Nanoseconds this thread has spent on a CPU, from `/proc/thread-self/schedstat`.
fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let nanos: u64 = stat.split_whitespace().next()?.parse().ok()?;
    Some(nanos as f64 / 1e9)
}

fn lines(path: &Path, mut each: impl FnMut(&[u8])) -> (u64, Timing) {
    let mut reader = BufReader::with_capacity(1 << 20, File::open(path).expect("open"));
    let mut buf = Vec::with_capacity(1 << 16);
    let mut bytes = 0u64;
    let started = Instant::now();
    let cpu_started = cpu_seconds();
    loop {
        buf.clear();
        let n = reader.read_until(b'\n', &mut buf).expect("read");
        if n == 0 {
            break;
        }
        bytes += n as u64;
        each(&buf);
    }
    let timing = Timing {
        wall: started.elapsed().as_secs_f64(),
        cpu: cpu_started
            .zip(cpu_seconds())
            .map(|(start, end)| end - start),
    };
    (bytes, timing)
}

fn read_only(path: &Path) -> (u64, Timing) {
    let mut count = 0u64;
    let result = lines(path, |line| count += line.len() as u64);
    std::hint::black_box(count);
    result
}

fn parse_only(path: &Path) -> (u64, Timing) {
    let mut events = 0u64;
    let result = lines(path, |line| {
        if let Some(event) = stream_json::parse_line(line) {
            std::hint::black_box(&event);
            events += 1;
        }
    });
    std::hint::black_box(events);
    result
}

/// Parse and meter every line, with a new meter for each session (after each `result`).
fn parse_and_meter(path: &Path, threshold_percent: f64) -> (u64, Timing, u64) {
    let settings = MeterSettings {
        threshold: threshold_percent.into(),
        tool_call_threshold: 0,
        token_estimate_factor: 1.0,
        usage_reporting: UsageReporting::PerMessage,
        stop_on_compact: true,
        prices: Vec::new(),
    };
    let mut meter = ContextMeter::new(settings.clone(), WindowInputs::default());
    let mut stops = 0u64;
    let (bytes, timing) = lines(path, |line| {
        if let Some(event) = stream_json::parse_line(line) {
            if meter.observe(&event).is_some() {
                stops += 1;
            }
            if matches!(event, AgentEvent::Result(_)) {
                meter = ContextMeter::new(settings.clone(), WindowInputs::default());
            }
        }
    });
    (bytes, timing, stops)
}

/// Peak resident set size of this process, from `/proc/self/status`.
fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|line| line.strip_prefix("VmHWM:"))
                .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}
