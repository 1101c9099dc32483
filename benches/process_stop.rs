//! Measures the process layer with real children:
//!
//! - **stop → reaped**: how long `stop()` takes for a well-behaved child that exits on
//!   SIGINT (issue 3 asks for "well under a second"), for a bare `sleep` killed by it
//!   and for a program that handles it and exits;
//! - **spawn → first line**: the cost of starting a child (below its reaper) and reading
//!   its first line, beside the same with a bare `tokio::process` spawn;
//! - **output throughput**: lines per second and MB/s through the framed readers.
//!
//! Run with `cargo bench --bench process_stop` (add `-- --quick` for fewer rounds).

#![allow(
    clippy::cast_precision_loss,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "a benchmark turns counts and durations into figures for its report"
)]
mod common;

use std::time::{Duration, Instant};

use debussy::process::{Child, ProcessCommand, ProcessEvent, Stream};

fn main() {
    let quick = std::env::args().any(|arg| arg == "--quick");
    let rounds = if quick { 20 } else { 200 };
    let runtime = common::runtime();
    runtime.block_on(async {
        // A shell `trap` loop is no good here: a SIGINT landing between fork and exec
        // of its inner command is swallowed by the forked shell. perl handles it.
        let sleep = "echo ready; exec sleep 100";
        let handler =
            r#"exec perl -e '$SIG{INT} = sub { exit 0 }; $| = 1; print "ready\n"; sleep 100'"#;
        common::report(
            "stop → reaped (exec sleep, SIGINT)",
            &stop_times(sleep, rounds).await,
        );
        common::report(
            "stop → reaped (perl SIGINT handler → exit 0)",
            &stop_times(handler, rounds).await,
        );
        common::report(
            "spawn → first line (sh echo, below its reaper)",
            &first_line_times(rounds).await,
        );
        common::report(
            "spawn → first line (sh echo, bare tokio spawn: the reaper's cost is the difference)",
            &bare_first_line_times(rounds).await,
        );
        throughput(if quick { 64 } else { 512 }).await;
    });
}

fn sh(script: &str) -> ProcessCommand {
    ProcessCommand::new("sh").arg("-c").arg(script)
}

async fn first_stdout_line(child: &mut Child) {
    let wait = async {
        while let Some(event) = child.next_event().await {
            if let ProcessEvent::Line {
                stream: Stream::Stdout,
                ..
            } = event
            {
                return;
            }
        }
        panic!("the child exited before printing a line");
    };
    if tokio::time::timeout(Duration::from_secs(10), wait)
        .await
        .is_err()
    {
        panic!("no line within 10 s");
    }
}

async fn stop_times(script: &str, rounds: usize) -> Vec<Duration> {
    let mut times = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let mut child = sh(script).spawn().expect("spawn sh");
        first_stdout_line(&mut child).await;
        let started = Instant::now();
        let report = tokio::time::timeout(Duration::from_secs(10), child.stop())
            .await
            .expect("stop within 10 s");
        times.push(started.elapsed());
        let actions = report.stop.map(|stop| stop.actions).unwrap_or_default();
        assert_eq!(
            actions.len(),
            1,
            "expected SIGINT alone to work: {actions:?}"
        );
    }
    times
}

async fn first_line_times(rounds: usize) -> Vec<Duration> {
    let mut times = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let started = Instant::now();
        let mut child = sh("echo ready").spawn().expect("spawn sh");
        first_stdout_line(&mut child).await;
        times.push(started.elapsed());
        child.wait().await;
    }
    times
}

/// The same as [`first_line_times`] with no process layer at all, for comparison.
async fn bare_first_line_times(rounds: usize) -> Vec<Duration> {
    use tokio::io::AsyncBufReadExt as _;
    let mut times = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let started = Instant::now();
        let mut child = tokio::process::Command::new("sh")
            .args(["-c", "echo ready"])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("spawn sh");
        let stdout = child.stdout.take().expect("stdout");
        let mut line = String::new();
        tokio::io::BufReader::new(stdout)
            .read_line(&mut line)
            .await
            .expect("read");
        times.push(started.elapsed());
        child.wait().await.expect("wait");
    }
    times
}

async fn throughput(megabytes: usize) {
    // 100-byte lines (99 + newline) from `yes`, far faster than the readers.
    let line = "x".repeat(99);
    let bytes = megabytes * 1024 * 1024 / 100 * 100;
    let mut child = sh(&format!("yes {line} | head -c {bytes}"))
        .spawn()
        .expect("spawn sh");
    let started = Instant::now();
    let mut lines = 0_usize;
    let mut seen = 0_usize;
    while let Some(event) = child.next_event().await {
        match event {
            ProcessEvent::Line { line, .. } => {
                lines += 1;
                seen += line.len() + 1;
            }
            ProcessEvent::Exited(_) => break,
            _ => {}
        }
    }
    let secs = started.elapsed().as_secs_f64();
    assert_eq!(seen, bytes, "every byte arrives");
    #[expect(clippy::cast_precision_loss, reason = "figures for people")]
    let (mb_s, lines_s) = ((seen as f64) / secs / 1e6, lines as f64 / secs);
    println!(
        "output throughput ({megabytes} MiB, 100-byte lines): {mb_s:.0} MB/s, {:.2} M lines/s",
        lines_s / 1e6
    );
}
