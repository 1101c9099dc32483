//! Every command with machine-readable output, writing into a pipe whose reader is
//! already gone (as `debussy status --format json | head -0` leaves it): each exits 0
//! quietly, with no panic message on stderr.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use debussy::state::Store;

const LIMIT: Duration = Duration::from_secs(30);

/// A project with one recorded run, a plan and a transcript to replay.
struct Project {
    dir: tempfile::TempDir,
}

impl Project {
    fn new() -> Project {
        let dir = crate::support::project::dir_with_state();
        let store = Store::open(dir.path()).expect("store");
        for _ in 0..3 {
            let run = store
                .create_run("/plan/MASTER_PLAN.md", "Plan")
                .expect("run");
            let execution = store
                .start_execution(&run, "1", 1, false, None)
                .expect("execution");
            store
                .record_prompt(execution, 0, &"a long prompt\n".repeat(5000), None)
                .expect("prompt");
        }
        Project { dir }
    }

    fn root(&self) -> &Path {
        self.dir.path()
    }

    /// Run `debussy ARGS` with stdout a pipe nobody reads: (exit code, stderr).
    fn write_to_closed_pipe(&self, args: &[&str]) -> (i32, String) {
        let mut child = crate::support::debussy(self.root(), args)
            .stdout(closed_pipe())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn debussy");
        let stderr = child.stderr.take().expect("stderr");
        let reader =
            std::thread::spawn(move || std::io::read_to_string(stderr).unwrap_or_default());
        let code = crate::support::project::wait_exit(&mut child, LIMIT);
        (code, reader.join().expect("stderr reader"))
    }
}

/// The writing end of a pipe whose reader is already gone.
fn closed_pipe() -> std::io::PipeWriter {
    let (reader, writer) = std::io::pipe().expect("pipe");
    drop(reader);
    writer
}

fn fixture(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

fn assert_quiet(project: &Project, args: &[&str]) {
    let (code, stderr) = project.write_to_closed_pipe(args);
    assert_eq!(
        code,
        0,
        "`debussy {}` into a closed pipe exited {code}: {stderr}",
        args.join(" ")
    );
    assert!(
        !stderr.contains("panicked"),
        "`debussy {}` panicked: {stderr}",
        args.join(" ")
    );
}

#[test]
fn reports_survive_a_closed_pipe() {
    let project = Project::new();
    for format in ["text", "json"] {
        assert_quiet(&project, &["status", "--format", format]);
        assert_quiet(&project, &["show", "--format", format]);
        assert_quiet(&project, &["history", "--format", format]);
    }
}

#[test]
fn audit_config_and_replay_survive_a_closed_pipe() {
    let project = Project::new();
    let plan = fixture("examples/demo/MASTER_PLAN.md");
    let plan = plan.to_str().expect("utf-8 path");
    let transcript = fixture("tests/fixtures/transcripts/claude-custom-agent.jsonl");
    let transcript = transcript.to_str().expect("utf-8 path");
    for format in ["text", "json"] {
        assert_quiet(&project, &["audit", plan, "--format", format]);
        assert_quiet(&project, &["replay", transcript, "--format", format]);
    }
    for format in ["yaml", "json"] {
        assert_quiet(&project, &["config", "--format", format]);
    }
    for format in ["text", "json"] {
        assert_quiet(&project, &["doctor", "--agent", "sim", "--format", format]);
        assert_quiet(&project, &["run", plan, "--dry-run", "--agent", "sim"]);
    }
}

#[test]
fn completions_survive_a_closed_pipe() {
    let project = Project::new();
    for shell in ["bash", "zsh", "fish"] {
        assert_quiet(&project, &["completions", shell]);
    }
}

/// Run `debussy ARGS` with stdout and stderr one pipe nobody reads, as `2>&1 | head`
/// leaves them once `head` has exited: the exit code.
fn both_to_closed_pipe(project: &Project, args: &[&str]) -> i32 {
    let writer = closed_pipe();
    let mut child = crate::support::debussy(project.root(), args)
        .stdout(writer.try_clone().expect("clone"))
        .stderr(writer)
        .spawn()
        .expect("spawn debussy");
    crate::support::project::wait_exit(&mut child, LIMIT)
}

#[test]
fn errors_into_a_closed_pipe_keep_their_exit_code_and_never_panic() {
    let project = Project::new();
    let plan = fixture("examples/demo/MASTER_PLAN.md");
    let plan = plan.to_str().expect("utf-8 path");
    for (args, code) in [
        (vec!["run", "nope/MASTER_PLAN.md"], 1),
        (vec!["replay", "nope.jsonl"], 2),
        (vec!["run", plan, "--timeout", "0"], 2),
        (
            vec![
                "run",
                plan,
                "--agent",
                "claude",
                "--agent-command",
                "/nonexistent/claude",
            ],
            2,
        ),
    ] {
        assert_eq!(
            both_to_closed_pipe(&project, &args),
            code,
            "`debussy {}` 2>&1 into a closed pipe",
            args.join(" ")
        );
    }
}
