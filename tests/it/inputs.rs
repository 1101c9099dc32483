//! Inputs that are not plain files: every file debussy reads — master plans, phase files,
//! `--config` files, sim scenarios, transcripts — is opened only when it is a regular
//! file and read with a bound, and the error names the file. A FIFO never hangs a
//! command, `/dev/zero` never exhausts its memory, and a transcript line without a
//! newline is read in bounded memory. Every command here runs under a timeout.

use std::path::Path;
use std::time::Duration;

use assert_cmd::Command;

/// The most any command here may take: a hang guard, far above what each needs.
const LIMIT: Duration = Duration::from_secs(30);

/// `debussy ARGS` in `dir`, isolated and bounded.
fn debussy(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::from_std(crate::support::debussy(dir, args))
        .timeout(LIMIT)
        .output()
        .expect("run")
}

fn stderr(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Both streams: the audit reports on stdout, the other commands on stderr.
fn said(output: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// `debussy ARGS` in `dir` fails, naming `file` and `what` it is.
fn assert_refused(dir: &Path, args: &[&str], file: &str, what: &str) {
    let output = debussy(dir, args);
    let text = said(&output);
    assert!(!output.status.success(), "{args:?}: {text}");
    assert!(
        text.contains(file) && text.contains(what),
        "{args:?} should name {file} as {what}: {text}"
    );
}

fn fifo(path: &Path) {
    nix::unistd::mkfifo(path, nix::sys::stat::Mode::S_IRWXU).expect("mkfifo");
}

/// A plan directory whose master plan links `phase-1.md`.
fn plan_dir(dir: &Path) {
    std::fs::create_dir_all(dir.join("plan")).expect("mkdir");
    std::fs::write(
        dir.join("plan/MASTER_PLAN.md"),
        "# Plan\n\n| Phase | Title | Status |\n|---|---|---|\n| 1 | [One](phase-1.md) | Pending |\n",
    )
    .expect("write");
}

/// [`plan_dir`] with a plain `phase-1.md`.
fn plan_with_phase(dir: &Path) {
    plan_dir(dir);
    std::fs::write(dir.join("plan/phase-1.md"), "# Phase 1: One\n").expect("write");
}

#[test]
fn a_fifo_as_the_master_plan_is_refused_at_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    fifo(&dir.path().join("MASTER_PLAN.md"));
    for args in [
        &["audit", "MASTER_PLAN.md"][..],
        &["run", "MASTER_PLAN.md", "--agent", "sim", "--dry-run"][..],
    ] {
        assert_refused(dir.path(), args, "MASTER_PLAN.md", "FIFO");
    }
}

#[test]
fn a_fifo_or_dev_zero_as_a_phase_file_is_reported_by_the_audit() {
    for special in ["fifo", "zero"] {
        let dir = tempfile::tempdir().expect("tempdir");
        plan_dir(dir.path());
        let phase = dir.path().join("plan/phase-1.md");
        match special {
            "fifo" => fifo(&phase),
            _ => std::os::unix::fs::symlink("/dev/zero", &phase).expect("link"),
        }
        let what = if special == "fifo" {
            "a FIFO"
        } else {
            "a character device"
        };
        assert_refused(
            dir.path(),
            &["audit", "plan/MASTER_PLAN.md"],
            "phase-1.md",
            what,
        );
    }
}

#[test]
fn a_fifo_or_dev_zero_as_the_config_file_is_refused_with_its_name() {
    let dir = tempfile::tempdir().expect("tempdir");
    plan_with_phase(dir.path());
    fifo(&dir.path().join("config.yaml"));
    for (config, what) in [("config.yaml", "FIFO"), ("/dev/zero", "character device")] {
        for command in [&["audit", "plan/MASTER_PLAN.md"][..], &["config"][..]] {
            let mut args = command.to_vec();
            args.extend(["--config", config]);
            assert_refused(dir.path(), &args, config.trim_start_matches('/'), what);
        }
    }
}

#[test]
fn a_fifo_as_the_sim_scenario_stops_the_run_before_it_starts() {
    let dir = tempfile::tempdir().expect("tempdir");
    plan_with_phase(dir.path());
    fifo(&dir.path().join("plan/sim-scenario.yaml"));
    let output = debussy(
        dir.path(),
        &["run", "plan/MASTER_PLAN.md", "--agent", "sim", "--dry-run"],
    );
    let text = said(&output);
    assert!(
        text.contains("sim-scenario.yaml") && text.contains("FIFO"),
        "{text}"
    );
}

#[test]
fn replay_of_dev_zero_is_refused_and_an_endless_line_read_in_bounded_memory() {
    let dir = tempfile::tempdir().expect("tempdir");
    let output = debussy(dir.path(), &["replay", "/dev/zero"]);
    let text = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{text}");
    assert!(
        text.contains("/dev/zero") && text.contains("character device"),
        "{text}"
    );
    let fifo_path = dir.path().join("session.jsonl");
    fifo(&fifo_path);
    let output = debussy(dir.path(), &["replay", "session.jsonl"]);
    assert!(stderr(&output).contains("FIFO"), "{}", stderr(&output));

    // 40 MiB without a newline: more than any line debussy keeps, read and skipped.
    let long = dir.path().join("long.jsonl");
    let file = std::fs::File::create(&long).expect("create");
    file.set_len(40 * 1024 * 1024).expect("grow");
    let output = debussy(dir.path(), &["replay", "long.jsonl"]);
    let text = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert!(text.contains("no transcript lines (1 line read)"), "{text}");
}

#[test]
fn a_config_line_of_100_kb_is_refused_in_a_few_lines_naming_its_place() {
    let dir = tempfile::tempdir().expect("tempdir");
    plan_with_phase(dir.path());
    let long = "b".repeat(100_000);
    for (text, place) in [
        (format!("k{long}: 1\n"), "config.yaml:1:1"),
        (
            format!("timeout: {}x\n", " ".repeat(70_000)),
            "config.yaml:1:70010",
        ),
        (format!("timeout: \"{long}\"\n"), "config.yaml:1:10"),
        (format!("agent:\n  kind: {long}\n"), "config.yaml:2:9"),
    ] {
        std::fs::write(dir.path().join("config.yaml"), &text).expect("write");
        let output = debussy(dir.path(), &["config", "--config", "config.yaml"]);
        let said = stderr(&output);
        let head: String = text.chars().take(30).collect();
        assert_eq!(output.status.code(), Some(2), "{head}: {said}");
        assert!(!said.contains("panicked"), "{head}: {said}");
        assert!(said.contains(place), "{head}: should name {place}: {said}");
        assert!(said.len() < 3_000, "{head}: {} bytes said", said.len());
    }
}

#[test]
fn a_float_out_of_its_keys_range_is_named_in_its_shortest_form() {
    let dir = tempfile::tempdir().expect("tempdir");
    plan_with_phase(dir.path());
    std::fs::write(dir.path().join("config.yaml"), "restart_delay: 1e-300\n").expect("write");
    let output = debussy(dir.path(), &["config", "--config", "config.yaml"]);
    let said = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{said}");
    assert!(said.contains("found floating point `1e-300`"), "{said}");
}
