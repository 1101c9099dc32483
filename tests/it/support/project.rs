//! Temporary git projects ([`Project`]) and bounded process helpers for the tests that
//! drive `debussy`.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// A git repository in a temporary directory, with a local identity, removed when
/// dropped. Areas add the methods they need in their own `impl Project` blocks.
pub struct Project {
    dir: tempfile::TempDir,
}

impl Project {
    /// An empty repository.
    pub fn new() -> Project {
        let dir = tempfile::tempdir().expect("tempdir");
        init_repo(dir.path());
        Project { dir }
    }

    /// A clone of `origin` that holds only its last `depth` commits (`git clone
    /// --depth`), as CI checkouts are.
    pub fn shallow_clone(origin: &Project, depth: u32) -> Project {
        let dir = tempfile::tempdir().expect("tempdir");
        let cloned = Command::new("git")
            .args(["clone", "-q", "--depth", &depth.to_string()])
            .arg(format!("file://{}", origin.root().display()))
            .arg(dir.path())
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .output()
            .expect("git clone");
        assert!(cloned.status.success(), "{cloned:?}");
        init_repo(dir.path());
        Project { dir }
    }

    /// Its working tree.
    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    /// Write `text` to `relative`, creating directories.
    pub fn write(&self, relative: &str, text: &str) {
        write_file(self.root(), relative, text);
    }

    /// Stage everything and commit it.
    pub fn commit_all(&self, message: &str) {
        commit_all(self.root(), message);
    }

    /// `debussy ARGS` in the project (see [`crate::support::debussy`]).
    pub fn command(&self, args: &[&str]) -> Command {
        crate::support::debussy(self.root(), args)
    }

    /// `debussy status --format json`, which must succeed.
    pub fn status_json(&self) -> Value {
        let output = self
            .command(&["status", "--format", "json"])
            .output()
            .expect("status");
        json_of(&output, "debussy status")
    }
}

/// Write `text` to `relative` under `root`, creating directories.
pub fn write_file(root: &Path, relative: &str, text: &str) {
    let path = root.join(relative);
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
}

/// `git init` in `dir` with a local identity, so the developer's config never matters.
pub fn init_repo(dir: &Path) {
    let repo = git2::Repository::init(dir).expect("git init");
    let mut config = repo.config().expect("config");
    config.set_str("user.name", "Test").expect("name");
    config
        .set_str("user.email", "test@example.com")
        .expect("email");
}

/// Stage everything and commit it with a fixed test signature.
pub fn commit_all(dir: &Path, message: &str) {
    let repo = git2::Repository::open(dir).expect("open");
    let mut index = repo.index().expect("index");
    index
        .add_all(["*"], git2::IndexAddOption::DEFAULT, None)
        .expect("add");
    index.write().expect("write index");
    let tree = repo
        .find_tree(index.write_tree().expect("tree"))
        .expect("find tree");
    let sig = git2::Signature::now("Test", "test@example.com").expect("signature");
    let parent = repo.head().ok().and_then(|h| h.peel_to_commit().ok());
    let parents: Vec<&git2::Commit<'_>> = parent.iter().collect();
    repo.commit(Some("HEAD"), &sig, &sig, message, &tree, &parents)
        .expect("commit");
}

/// Commit summaries, newest first.
pub fn commit_messages(dir: &Path) -> Vec<String> {
    let repo = git2::Repository::open(dir).expect("open");
    let mut walk = repo.revwalk().expect("revwalk");
    walk.push_head().expect("head");
    walk.map(|oid| {
        let commit = repo.find_commit(oid.expect("oid")).expect("commit");
        commit.summary().ok().flatten().unwrap_or("").to_owned()
    })
    .collect()
}

/// A new temporary directory holding an empty `.debussy`, where a state database goes.
pub fn dir_with_state() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir(dir.path().join(".debussy")).expect("mkdir");
    dir
}

/// Exactly `count` of `messages`, a project's commit summaries, are restart checkpoints.
pub fn assert_checkpoint_commits(messages: &[String], count: usize) {
    let checkpoints = messages
        .iter()
        .filter(|m| m.contains("checkpoint (restart"))
        .count();
    assert_eq!(checkpoints, count, "{messages:?}");
}

/// Wait for `child` to exit, killing it and failing the test after `limit`.
pub fn wait_exit(child: &mut Child, limit: Duration) -> i32 {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            return status.code().unwrap_or(-1);
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            panic!("the process did not finish within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Run `command` to its end, within `limit` (killed past it), with its stdout and
/// stderr read as it goes so a full pipe never stalls it.
pub fn output_within(mut command: Command, limit: Duration) -> std::process::Output {
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let drain = |mut pipe: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = pipe.read_to_end(&mut bytes);
            bytes
        })
    };
    let stdout = drain(Box::new(child.stdout.take().expect("stdout")));
    let stderr = drain(Box::new(child.stderr.take().expect("stderr")));
    let code = wait_exit(&mut child, limit);
    std::process::Output {
        status: std::os::unix::process::ExitStatusExt::from_raw(code << 8),
        stdout: stdout.join().expect("stdout"),
        stderr: stderr.join().expect("stderr"),
    }
}

/// Run a command printing JSON lines, bounded by `limit`: its exit code and events.
pub fn run_json(mut command: Command, limit: Duration) -> (i32, Vec<Value>) {
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let stdout = child.stdout.take().expect("stdout");
    let stderr = child.stderr.take().expect("stderr");
    let out = std::thread::spawn(move || {
        BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
            .collect::<Vec<_>>()
    });
    let err = std::thread::spawn(move || {
        BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
            .collect::<Vec<_>>()
    });
    let code = wait_exit(&mut child, limit);
    let lines = out.join().expect("stdout reader");
    let errors = err.join().expect("stderr reader");
    let events = lines
        .iter()
        .map(|l| {
            serde_json::from_str(l)
                .unwrap_or_else(|e| panic!("not JSON ({e}): {l}\nstderr: {errors:#?}"))
        })
        .collect();
    (code, events)
}

/// Check a run whose model never answers under `timeout: 3`: it fails within 30 s,
/// saying the session timed out.
pub fn assert_timed_out(run: impl FnOnce() -> (i32, Vec<Value>)) {
    let started = Instant::now();
    let (code, events) = run();
    assert_eq!(code, 1, "events: {events:#?}");
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
    let text = serde_json::to_string(&events).expect("json");
    assert!(
        text.contains("timed out") || text.contains("timeout"),
        "{events:#?}"
    );
}

/// The error the first finished phase reports; a phase without one fails the test.
pub fn phase_error(events: &[Value]) -> String {
    events_named(events, "phase_finished")
        .first()
        .and_then(|phase| phase["error"].as_str())
        .unwrap_or_else(|| panic!("no phase error: {events:#?}"))
        .to_owned()
}

/// The run's one `restart` event; any other number of them fails the test.
pub fn only_restart(events: &[Value]) -> &Value {
    let restarts = events_named(events, "restart");
    assert_eq!(restarts.len(), 1, "{events:#?}");
    restarts[0]
}

/// The run restarted its session once, for an agent's compaction that debussy blocked.
pub fn assert_restarted_once_for_a_blocked_compaction(events: &[Value]) {
    let restart = only_restart(events);
    assert!(
        restart["reason"]
            .as_str()
            .is_some_and(|r| r.starts_with("agent_compaction_blocked")),
        "{restart:#}"
    );
}

/// Every session of the run said it worked in a worktree of the run's own.
pub fn assert_every_session_in_a_worktree(events: &[Value]) {
    let started = events_named(events, "session_started");
    assert!(
        started.iter().all(|e| e["workdir"]
            .as_str()
            .is_some_and(|w| w.contains(".debussy/worktrees/"))),
        "every session says its worktree: {started:#?}"
    );
}

/// The arguments of `debussy run` of the plan at `plan` with the sim agent, then `extra`.
pub fn sim_run_args<'a>(plan: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["run", plan, "--agent", "sim"];
    args.extend_from_slice(extra);
    args
}

/// The arguments of `debussy run` of the plan, not interactive and with no delay between
/// restarts, then `extra`.
pub fn quiet_run_args<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "run",
        "plan/MASTER_PLAN.md",
        "--no-interactive",
        "--restart-delay",
        "0",
    ];
    args.extend_from_slice(extra);
    args
}

/// The events named `name`.
/// The run's events one line each, the kind, the phase and what it said: a failure
/// message that still shows the cause when a CI log keeps only its ends.
pub fn story(events: &[Value]) -> String {
    let said = ["status", "reason", "error", "message", "kind", "exit_code"];
    events
        .iter()
        .map(|event| {
            let mut line = format!("{} {}", event["event"], event["phase_id"]);
            for key in said {
                if !event[key].is_null() {
                    line.push_str(&format!(" {key}={}", event[key]));
                }
            }
            line
        })
        .collect::<Vec<_>>()
        .join("\n")
}

pub fn events_named<'a>(events: &'a [Value], name: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["event"] == name).collect()
}

/// Asserts that the command `what` succeeded, showing its stderr when it did not.
pub fn assert_success(output: &Output, what: &str) {
    assert!(
        output.status.success(),
        "{what} failed ({}): {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
}

/// The JSON the command `what`, which must succeed, printed on stdout.
pub fn json_of(output: &Output, what: &str) -> Value {
    assert_success(output, what);
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|error| panic!("{what} printed no JSON ({error}): {output:?}"))
}
