//! Peak memory of `debussy run` while the agent floods its output: 100 MB on stderr, and
//! 100 MB of stream-json text lines on stdout, each through the real binary with a fake
//! agent program (a shell script that answers `--version` like Claude Code). The target
//! (issue "Nothing lost, nothing orphaned", item 5) is a peak RSS under 50 MB for each:
//! stderr goes to the session's `.stderr.log`, the transcript keeps stdout, and only a
//! paced share of either reaches the outputs.
//!
//! Peak RSS is the kernel's `ru_maxrss` for the waited-for `debussy` process (its
//! children, the shell and `yes`, are a few MB). Run with
//! `cargo bench --bench output_flood`.

#![allow(
    clippy::cast_precision_loss,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "a benchmark turns counts and durations into figures for its report"
)]
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use nix::sys::resource::{UsageWho, getrusage};

const FAKE_AGENT: &str = r#"#!/bin/sh
case "$1" in --version) echo "2.1.330 (Claude Code)"; exit 0;; esac
cat > /dev/null
echo '{"type":"system","subtype":"init","session_id":"s","model":"m"}'
if [ "$FLOOD" = stderr ]; then
  yes 'a line of agent stderr output that goes on for a while, about a hundred bytes long ..........' | head -c 100000000 >&2
else
  yes '{"type":"assistant","message":{"id":"m1","model":"m","content":[{"type":"text","text":"a line of text"}],"usage":{"input_tokens":10,"output_tokens":1}},"parent_tool_use_id":null}' | head -c 100000000
  echo
fi
echo '{"type":"result","subtype":"success","is_error":false,"result":"done","session_id":"s"}'
"#;

fn write(root: &Path, relative: &str, text: &str) {
    let path = root.join(relative);
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
}

fn git(root: &Path, args: &[&str]) {
    let status = Command::new("git")
        .args(args)
        .current_dir(root)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .stdout(Stdio::null())
        .status()
        .expect("git");
    assert!(status.success(), "git {args:?}");
}

fn project() -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    write(root, "fake-agent.sh", FAKE_AGENT);
    std::fs::set_permissions(
        root.join("fake-agent.sh"),
        std::fs::Permissions::from_mode(0o755),
    )
    .expect("chmod");
    write(
        root,
        "plan/MASTER_PLAN.md",
        "# Flood\n\n| Phase | Title | Status |\n|---|---|---|\n| 1 | [One](phase-1.md) | Pending |\n",
    );
    write(
        root,
        "plan/phase-1.md",
        "# Phase 1: One\n\n**Status:** Pending\n**Depends On:** N/A\n\n## Gates\n- ok: `true` passes\n\n## Tasks\n- [ ] 1.1: flood\n",
    );
    write(
        root,
        ".debussy/config.yaml",
        &format!(
            "auto_commit: false\nagent:\n  command: {}\n",
            root.join("fake-agent.sh").display()
        ),
    );
    git(root, &["init", "-q"]);
    dir
}

fn measure(flood: &str) -> (f64, u64) {
    let dir = project();
    let started = Instant::now();
    let status = Command::new(env!("CARGO_BIN_EXE_debussy"))
        .args(["run", "plan", "--no-interactive", "--output-format", "json"])
        .current_dir(dir.path())
        .env("FLOOD", flood)
        .env("HOME", dir.path())
        .env_remove("DEBUSSY_LOG")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("debussy run");
    let elapsed = started.elapsed().as_secs_f64();
    assert!(status.success(), "debussy run failed for the {flood} flood");
    let usage = getrusage(UsageWho::RUSAGE_CHILDREN).expect("getrusage");
    (elapsed, u64::try_from(usage.max_rss()).unwrap_or(0))
}

fn main() {
    // ru_maxrss of RUSAGE_CHILDREN is the largest child so far: measure the smaller flood
    // in a process of its own first would need a re-exec; stderr (the smaller) goes first,
    // so its figure is its own, and stdout's figure is the larger of the two.
    for flood in ["stderr", "stdout"] {
        let (secs, max_rss_kib) = measure(flood);
        println!(
            "100 MB on {flood}: {secs:.1} s, peak RSS {:.1} MiB (target < 50 MiB)",
            max_rss_kib as f64 / 1024.0
        );
    }
}
