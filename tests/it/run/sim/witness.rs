//! What the hostile runs watch with: a FIFO a hook or an agent writes to when it reaches
//! the moment a test waits for (so kills land on an event, never after a sleep), a
//! `debussy run` in the background whose events are collected as they come, and the
//! checks that follow a kill: no commit of the run unreachable, no process of the run
//! alive; and a script run in a user and mount namespace of its own, for the disks
//! tests fill or make read-only.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::Value;

use crate::support::processes::process_gone;
use crate::support::project::{Project, story, wait_exit};

/// How long a test waits for a beacon before failing.
const BEACON_WAIT: Duration = Duration::from_secs(90);

/// A FIFO in a scratch directory outside the project. The shell snippet from
/// [`Beacon::once`] writes its pid there (blocking until the test reads) the first time
/// it runs, then stays put until killed; later runs go straight on.
pub struct Beacon {
    fifo: PathBuf,
    mark: PathBuf,
}

impl Beacon {
    /// A beacon named `name` in `dir`.
    pub fn new(dir: &Path, name: &str) -> Beacon {
        let fifo = dir.join(format!("{name}.fifo"));
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).expect("mkfifo");
        Beacon {
            fifo,
            mark: dir.join(format!("{name}.fired")),
        }
    }

    /// Shell code: the first time, say our pid on the FIFO and sleep until killed.
    pub fn once(&self) -> String {
        format!(
            "if [ ! -e '{mark}' ]; then touch '{mark}'; echo $$ > '{fifo}'; exec sleep 600; fi",
            mark = self.mark.display(),
            fifo = self.fifo.display(),
        )
    }

    /// Shell code: the first time, say our pid on the FIFO and wait until `release`
    /// exists (a slow step the test ends); later runs go straight on.
    pub fn until(&self, release: &Path) -> String {
        format!(
            "if [ ! -e '{mark}' ]; then touch '{mark}'; echo $$ > '{fifo}'; while [ ! -e '{release}' ]; do sleep 0.05; done; fi",
            mark = self.mark.display(),
            fifo = self.fifo.display(),
            release = release.display(),
        )
    }

    /// Wait for the snippet to fire in `run`; the pid of the process now sleeping. When
    /// it does not fire in time, the run is killed and the test fails with what it said.
    pub fn wait(&self, mut run: LiveRun) -> (LiveRun, u64) {
        let (sender, receiver) = mpsc::channel();
        let fifo = self.fifo.clone();
        std::thread::spawn(move || {
            let mut text = String::new();
            let read = std::fs::File::open(&fifo).and_then(|mut f| f.read_to_string(&mut text));
            let _ = sender.send(read.map(|_| text));
        });
        let Ok(text) = receiver.recv_timeout(BEACON_WAIT) else {
            let ended = run.stop();
            panic!(
                "{} did not fire within {BEACON_WAIT:?}; the run (ended {ended}) said:\n{}",
                self.fifo.display(),
                story(&run.printed())
            )
        };
        (
            run,
            text.expect("read the beacon")
                .trim()
                .parse()
                .expect("a pid"),
        )
    }
}

/// A `debussy run … --output-format json` in the background; its events, and the lines
/// it writes to stderr, are collected by threads as they come. Dropping it kills the
/// process.
pub struct LiveRun {
    child: Child,
    events: mpsc::Receiver<Value>,
    seen: Vec<Value>,
    said: mpsc::Receiver<String>,
}

impl LiveRun {
    /// Start `debussy run plan/MASTER_PLAN.md --agent sim` with `extra`.
    pub fn start(project: &Project, extra: &[&str]) -> LiveRun {
        let mut args = vec!["--restart-delay", "0"];
        args.extend_from_slice(extra);
        LiveRun::start_with(project, &args)
    }

    /// Start `debussy run plan/MASTER_PLAN.md --agent sim` with `args` alone (no
    /// `--restart-delay 0`).
    pub fn start_with(project: &Project, args: &[&str]) -> LiveRun {
        let mut child = project
            .run_command(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn");
        let lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let (sender, events) = mpsc::channel();
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                let event: Value = serde_json::from_str(&line).expect("a JSON event");
                if sender.send(event).is_err() {
                    break;
                }
            }
        });
        let stderr = BufReader::new(child.stderr.take().expect("stderr")).lines();
        let (sender, said) = mpsc::channel();
        std::thread::spawn(move || {
            for line in stderr.map_while(Result::ok) {
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        LiveRun {
            child,
            events,
            seen: Vec::new(),
            said,
        }
    }

    /// Send debussy `signal` and wait, up to [`BEACON_WAIT`], for the first line it
    /// then writes to stderr (blank lines skipped); when none comes, the run is killed
    /// and the test fails.
    pub fn signal_and_hear(&mut self, signal: nix::sys::signal::Signal) -> String {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(i32::try_from(self.child.id()).expect("pid")),
            signal,
        );
        let deadline = std::time::Instant::now() + BEACON_WAIT;
        while let Some(left) = deadline.checked_duration_since(std::time::Instant::now()) {
            match self.said.recv_timeout(left) {
                Ok(line) if line.trim().is_empty() => {}
                Ok(line) => return line,
                Err(_) => break,
            }
        }
        let ended = self.stop();
        panic!(
            "nothing said on stderr after {signal} within {BEACON_WAIT:?}; the run (ended {ended}) said:\n{}",
            story(&self.printed())
        )
    }

    /// Wait for debussy to end, up to 30 s: its exit code and every event it printed.
    pub fn finish(mut self) -> (i32, Vec<Value>) {
        let code = wait_exit(&mut self.child, Duration::from_secs(30));
        (code, self.printed())
    }

    /// Wait for the run's first event named `name`, up to [`BEACON_WAIT`]; when none
    /// comes, the run is killed and the test fails with what it said.
    pub fn wait_for(&mut self, name: &str) -> Value {
        if let Some(event) = self.event_within(BEACON_WAIT, |event| event["event"] == name) {
            return event;
        }
        let ended = self.stop();
        panic!(
            "no `{name}` event within {BEACON_WAIT:?}; the run (ended {ended}) said:\n{}",
            story(&self.printed())
        )
    }

    /// The run's next event that `wanted` picks, if it prints one within `limit`.
    pub fn event_within(
        &mut self,
        limit: Duration,
        wanted: impl Fn(&Value) -> bool,
    ) -> Option<Value> {
        let deadline = std::time::Instant::now() + limit;
        while let Some(left) = deadline.checked_duration_since(std::time::Instant::now()) {
            let Ok(event) = self.events.recv_timeout(left) else {
                break;
            };
            self.seen.push(event.clone());
            if wanted(&event) {
                return Some(event);
            }
        }
        None
    }

    /// Send debussy `signal`.
    pub fn signal(&self, signal: nix::sys::signal::Signal) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(i32::try_from(self.child.id()).expect("pid")),
            signal,
        );
    }

    /// Wait for debussy to end: its exit code and every event it printed.
    pub fn ended(mut self) -> (i32, Vec<Value>) {
        let code = wait_exit(&mut self.child, Duration::from_secs(30));
        (code, self.printed())
    }

    /// Send debussy `signal` and wait for it to end: its exit code and every event it
    /// printed.
    pub fn stop_with(self, signal: nix::sys::signal::Signal) -> (i32, Vec<Value>) {
        self.signal(signal);
        self.ended()
    }

    /// SIGKILL debussy, wait for it, and return every event it printed.
    pub fn kill(mut self) -> Vec<Value> {
        assert_eq!(self.stop(), -1, "killed by the signal");
        self.printed()
    }

    /// SIGKILL debussy if it still runs and wait for it; how it ended (-1: by a signal).
    fn stop(&mut self) -> i32 {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(i32::try_from(self.child.id()).expect("pid")),
            nix::sys::signal::Signal::SIGKILL,
        );
        wait_exit(&mut self.child, Duration::from_secs(30))
    }

    /// Every event the run printed, once it has ended.
    fn printed(&mut self) -> Vec<Value> {
        self.seen.extend(self.events.try_iter());
        while let Ok(event) = self.events.recv_timeout(Duration::from_secs(5)) {
            self.seen.push(event);
        }
        std::mem::take(&mut self.seen)
    }
}

impl Drop for LiveRun {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Every commit the events name: checkpoints, completions, merges, recovered work.
pub fn commits_of(events: &[Value]) -> Vec<String> {
    let mut commits: Vec<String> = events
        .iter()
        .filter(|e| {
            matches!(
                e["event"].as_str(),
                Some("committed" | "merged" | "restart")
            )
        })
        .filter_map(|e| e["commit"].as_str().map(str::to_owned))
        .collect();
    commits.sort();
    commits.dedup();
    commits
}

/// The commits `git fsck --unreachable` reports.
pub fn unreachable(root: &Path) -> Vec<String> {
    let output = std::process::Command::new("git")
        .args(["fsck", "--unreachable", "--no-progress"])
        .current_dir(root)
        .output()
        .expect("git fsck");
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| line.strip_prefix("unreachable commit "))
        .map(str::to_owned)
        .collect()
}

/// Fail naming any of `commits` that `git fsck --unreachable` reports lost.
pub fn assert_none_lost(root: &Path, commits: &[String]) {
    assert!(!commits.is_empty(), "the run made commits");
    let lost: Vec<&String> = unreachable(root)
        .into_iter()
        .filter_map(|sha| commits.iter().find(|c| **c == sha))
        .collect();
    assert!(
        lost.is_empty(),
        "commits of the run are unreachable: {lost:?}"
    );
}

/// Fail unless `pid` dies (the watchdog kills what debussy started when it dies).
pub fn assert_died(pid: u64, what: &str) {
    assert!(process_gone(pid), "{what} (pid {pid}) outlived debussy");
}

/// `git args…` in `dir`, blind to the user's global git configuration: its output.
fn git_output(dir: &Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .expect("git")
}

/// `git args…` in `dir`; its trimmed stdout, whether or not it succeeded.
pub fn git(dir: &Path, args: &[&str]) -> String {
    String::from_utf8_lossy(&git_output(dir, args).stdout)
        .trim()
        .to_owned()
}

/// Whether `git args…` succeeds in `dir`.
pub fn git_ok(dir: &Path, args: &[&str]) -> bool {
    git_output(dir, args).status.success()
}

/// Do what debussy told the user to do: `sh -c advice` in `root`, which must succeed.
pub fn follow(root: &Path, advice: &str) {
    let status = std::process::Command::new("sh")
        .args(["-c", advice])
        .current_dir(root)
        .status()
        .expect("sh");
    assert!(status.success(), "`{advice}` failed");
}

/// Install `body` as the repository's hook `name`.
pub fn hook(root: &Path, name: &str, body: &str) {
    use std::os::unix::fs::PermissionsExt as _;
    let path = root.join(".git/hooks").join(name);
    std::fs::create_dir_all(path.parent().expect("hooks")).expect("mkdir");
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).expect("hook");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

/// A process holding a file open for writing, as a git command holds its lock file for as
/// long as it runs. Killed and reaped when dropped, so none outlives its test.
pub struct LockHolder(Child);

impl LockHolder {
    /// Create `path` and hold it open; returns once it is open.
    pub fn of(path: &Path) -> LockHolder {
        let mut child = std::process::Command::new("sh")
            .arg("-c")
            .arg("exec 3>\"$1\"; echo ready; exec sleep 60")
            .arg("sh")
            .arg(path)
            .stdout(Stdio::piped())
            .spawn()
            .expect("sh");
        let mut ready = String::new();
        // The line comes once the file is open; EOF (the shell failed) ends the read too.
        let _ = BufReader::new(child.stdout.take().expect("stdout")).read_line(&mut ready);
        let holder = LockHolder(child);
        assert_eq!(ready.trim(), "ready", "{} held open", path.display());
        holder
    }
}

impl Drop for LockHolder {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Run the shell `script` with `args` (`$1`…) as root of a user and mount namespace of
/// its own (`unshare -Urm`: mounts without root, nothing of the machine's touched), in
/// `dir`, with the environment `project`'s debussy runs with; `needed_for` says why, if
/// the namespace cannot be had. The script's own failures are its outputs' to tell.
pub fn in_a_namespace(
    project: &Project,
    dir: &Path,
    script: &str,
    args: &[&std::ffi::OsStr],
    needed_for: &str,
) {
    let debussy = project.command(&[]);
    let mut command = std::process::Command::new("unshare");
    command
        .args([
            "--user",
            "--map-root-user",
            "--mount",
            "sh",
            "-c",
            script,
            "sh",
        ])
        .args(args)
        .current_dir(dir)
        .env_clear();
    for (key, value) in debussy.get_envs() {
        if let Some(value) = value {
            command.env(key, value);
        }
    }
    command.env("PATH", std::env::var_os("PATH").unwrap_or_default());
    let done = crate::support::project::output_within(command, Duration::from_secs(120));
    assert!(
        done.status.success(),
        "a user and mount namespace of its own (`unshare -Urm`, from util-linux) is needed \
         to {needed_for}; install util-linux, or allow unprivileged user namespaces: {done:?}"
    );
}
