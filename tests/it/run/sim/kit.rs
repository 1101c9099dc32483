//! What the run tests share: the plan and run helpers on [`Project`], the scripts of
//! phases that work, wait, sleep or fail in common ways, and a run that lives while a test works on it ([`LiveRun`]).

use std::io::{BufRead, BufReader, Lines};
use std::path::Path;
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::Duration;

use super::witness::git_ok;
use crate::support::project::{self, Project, run_json, sim_run_args, wait_exit};
use crate::support::scenario::{Scenario, Script, Turn};
use crate::support::wait::wait_until;
use serde_json::Value;

/// What the run tests do with a project: a plan, runs, and what they recorded.
impl Project {
    /// A plan with phases `(id, depends_on, gate command)` and a sim scenario.
    pub(super) fn plan(&self, phases: &[(&str, &str, &str)], scenario: &Scenario) {
        self.plan_in("", phases, scenario);
    }

    /// [`Project::plan`] in `plan/` of the directory `dir` of the repository (`""`: its
    /// top level), committed.
    pub(super) fn plan_in(&self, dir: &str, phases: &[(&str, &str, &str)], scenario: &Scenario) {
        let at = |file: &str| {
            Path::new(dir)
                .join("plan")
                .join(file)
                .to_string_lossy()
                .into_owned()
        };
        let mut master = String::from(
            "# Test Plan - Master Plan\n\n## Phases\n\n| Phase | Title | Status |\n|---|---|---|\n",
        );
        for (id, depends, gate) in phases {
            master.push_str(&format!(
                "| {id} | [Phase {id}](phase-{id}.md) | Pending |\n"
            ));
            self.write(
                &at(&format!("phase-{id}.md")),
                &format!(
                    "# Test Phase {id}: Step {id}\n\n**Status:** Pending\n**Depends On:** {depends}\n\n\
                     ## Process Wrapper\n- [ ] Write notes to: `notes/phase-{id}.md`\n\n\
                     ## Gates\n- check: `{gate}` passes\n\n## Tasks\n- [ ] {id}.1: Do step {id}\n"
                ),
            );
        }
        self.write(&at("MASTER_PLAN.md"), &master);
        self.write(&at("sim-scenario.yaml"), &scenario.to_yaml());
        self.commit_all("plan");
    }

    /// Replace the plan's scenario with `scenario` and commit it with `message`, as a
    /// user does between a run and its resume.
    pub(super) fn rescript(&self, scenario: &Scenario, message: &str) {
        self.write("plan/sim-scenario.yaml", &scenario.to_yaml());
        self.commit_all(message);
    }

    /// `debussy run plan/MASTER_PLAN.md --agent sim --output-format json` plus `extra`.
    pub(super) fn run_command(&self, extra: &[&str]) -> Command {
        let args = sim_run_args(
            "plan/MASTER_PLAN.md",
            &[&["--output-format", "json"], extra].concat(),
        );
        self.command(&args)
    }

    /// [`Project::run_command`] in the background: the child and its event lines as
    /// they come.
    pub(super) fn start_run(&self, extra: &[&str]) -> (Child, Lines<BufReader<ChildStdout>>) {
        let mut child = self
            .run_command(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn");
        let lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        (child, lines)
    }

    /// [`Project::run_command`] with `--restart-delay 0` and `extra`, under a hard
    /// timeout; returns the exit code and the events.
    pub(super) fn run(&self, extra: &[&str]) -> (i32, Vec<Value>) {
        let mut args = vec!["--restart-delay", "0"];
        args.extend_from_slice(extra);
        run_json(self.run_command(&args), Duration::from_secs(120))
    }

    pub(super) fn commit_messages(&self) -> Vec<String> {
        project::commit_messages(self.root())
    }
}

pub(super) fn summary(events: &[Value]) -> &Value {
    &events.last().expect("events")["summary"]
}

/// The run's error, from its summary; empty when it has none.
pub(super) fn run_error(events: &[Value]) -> String {
    summary(events)["error"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// A first session that writes `path`, then fills its context to `percent` and waits
/// `wait_ms` for debussy to stop it.
pub(super) fn filling(path: &str, content: &str, percent: u32, wait_ms: u64) -> [Turn; 3] {
    [
        Turn::write(10, path, content),
        Turn::say("crossing").percent(percent),
        Turn::sleep(wait_ms),
    ]
}

/// Phase `id`'s script: write `path` with `content`, pause `sleep_ms`, write the phase's
/// notes into the worktree and report done.
pub(super) fn work(id: &str, path: &str, content: &str, sleep_ms: u64) -> Script {
    Script::phase(id).turns(work_turns(id, path, content, sleep_ms))
}

/// The turns of [`work`].
pub(super) fn work_turns(id: &str, path: &str, content: &str, sleep_ms: u64) -> [Turn; 4] {
    [
        Turn::write(10, path, content),
        Turn::sleep(sleep_ms),
        notes(id),
        Turn::done(),
    ]
}

/// The notes turn, relative to the agent's directory (its worktree).
pub(super) fn notes(id: &str) -> Turn {
    Turn::notes_to(&format!("plan/notes/phase-{id}.md"))
}

/// Phase `id`'s first session writes `half.txt`, then fills its context to `percent`
/// and idles.
pub(super) fn half_done(id: &str, percent: u32) -> Script {
    Script::phase(id)
        .restart(0)
        .turn(
            Turn::say("half done")
                .percent(10)
                .writes("half.txt", "half"),
        )
        .turn(Turn::say("filling up").percent(percent))
        .turn(Turn::sleep(5000))
}

/// Phase 3's first attempt, merged second: it waits (in its Bash tool) until the run's
/// branch, checked out in the project, holds `text` in `file` (another phase's work is
/// merged), then plays `turns`.
pub(super) fn merging_after(
    file: &str,
    text: &str,
    turns: impl IntoIterator<Item = Turn>,
) -> Script {
    let wait = Turn::say("waiting for the other phase").bash(&format!(
        "until git -C $DEBUSSY_PROJECT_ROOT show HEAD:{file} 2>/dev/null | grep -q {text}; do sleep 0.05; done"
    ));
    Script::phase("3").attempt(1).turn(wait).turns(turns)
}

/// A plan whose phases 2 and 3 follow phase 1, each checked by its gate in `gates`.
pub(super) fn fork(project: &Project, gates: [&str; 3], scenario: &Scenario) {
    project.plan(
        &[
            ("1", "N/A", gates[0]),
            ("2", "Phase 1", gates[1]),
            ("3", "Phase 1", gates[2]),
        ],
        scenario,
    );
}

/// Phase 1's first attempt: it writes `out.txt` wrong (for a gate wanting `right`), its
/// notes, and reports done.
pub(super) fn wrong_first() -> Script {
    Script::writing("1", 10, "out.txt", "wrong").attempt(1)
}

/// The diagnostic of a command refused with exit code 2, squashed: it is wrapped to the
/// terminal's width anywhere (even inside an id) and framed, so whitespace and the
/// frame's `│` are taken out.
pub(super) fn refusal(output: &std::process::Output) -> String {
    let said = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{said}");
    said.chars()
        .filter(|c| !c.is_whitespace() && *c != '│')
        .collect()
}

/// A scenario whose phase 1 first sleeps (until killed) after touching `started`, and on
/// later sessions writes its notes and reports done.
pub(super) fn sleeping_scenario() -> Scenario {
    Scenario::new().script(
        Script::phase("1")
            .turn(
                Turn::say("working")
                    .percent(10)
                    .writes("work.txt", "agent edit")
                    .bash("if [ ! -f started ]; then touch started; sleep 60; fi"),
            )
            .turn(Turn::notes("1"))
            .turn(Turn::done()),
    )
}

/// A project whose phase 1 sleeps on its first session (see [`sleeping_scenario`]), with
/// a tracked `work.txt` the agent edits.
pub(super) fn sleeping_project() -> Project {
    let project = Project::new();
    project.write("work.txt", "original\n");
    project.write(".gitignore", "started\n");
    project.plan(&[("1", "N/A", "test -f started")], &sleeping_scenario());
    project
}

/// A `debussy run` in the background printing JSON events.
pub(super) struct LiveRun {
    pub(super) child: Child,
    lines: Lines<BufReader<ChildStdout>>,
    pub(super) run_id: String,
    pub(super) agent_pid: u64,
}

impl LiveRun {
    /// Start `debussy run … --output-format json` plus `extra` and wait until the agent
    /// has touched `started`.
    pub(super) fn start(project: &Project, extra: &[&str]) -> LiveRun {
        let (child, mut lines) = project.start_run(&[&["--restart-delay", "0"], extra].concat());
        let mut run_id = None;
        let mut agent_pid = None;
        for line in lines.by_ref().map_while(Result::ok) {
            let event: Value = serde_json::from_str(&line).expect("json");
            if event["event"] == "run_started" {
                run_id = event["run_id"].as_str().map(str::to_owned);
            }
            if event["event"] == "session_started" {
                agent_pid = event["pid"].as_u64();
                break;
            }
        }
        wait_until(
            "the agent's sleep to start",
            Duration::from_secs(30),
            || project.root().join("started").exists(),
        );
        LiveRun {
            child,
            lines,
            run_id: run_id.expect("run_started"),
            agent_pid: agent_pid.expect("session_started"),
        }
    }

    pub(super) fn pid(&self) -> u32 {
        self.child.id()
    }

    pub(super) fn signal(&self, signal: nix::sys::signal::Signal) {
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(i32::try_from(self.pid()).expect("pid")),
            signal,
        )
        .expect("signal");
    }

    /// SIGINT, then the remaining events and the exit code.
    pub(super) fn interrupt(self) -> (i32, Vec<Value>) {
        self.stop_with(nix::sys::signal::Signal::SIGINT)
    }

    /// `signal`, then the remaining events and the exit code.
    pub(super) fn stop_with(mut self, signal: nix::sys::signal::Signal) -> (i32, Vec<Value>) {
        self.signal(signal);
        let rest: Vec<Value> = self
            .lines
            .map_while(Result::ok)
            .map(|line| serde_json::from_str(&line).expect("json"))
            .collect();
        let code = wait_exit(&mut self.child, Duration::from_secs(30));
        (code, rest)
    }
}

/// `--resume` of `project`'s run, which must complete it; its events.
pub(super) fn resume_to_completion(project: &Project) -> Vec<Value> {
    let (code, events) = project.run(&["--resume"]);
    assert_eq!(code, 0, "the resume:\n{}", project::story(&events));
    assert_eq!(events[0]["resumed"], true);
    assert_eq!(
        summary(&events)["status"],
        "completed",
        "{}",
        project::story(&events)
    );
    events
}

/// A new project whose `vendor/lib` is a submodule (a library with `lib.txt`), and the
/// library's project, which the submodule's URL names.
pub(super) fn with_a_submodule() -> (Project, Project) {
    let library = Project::new();
    library.write("lib.txt", "lib\n");
    library.commit_all("library");
    let project = Project::new();
    let added = Command::new("git")
        .args(["-c", "protocol.file.allow=always", "submodule", "add", "-q"])
        .arg(library.root())
        .arg("vendor/lib")
        .current_dir(project.root())
        .output()
        .expect("git submodule add");
    assert!(added.status.success(), "{added:?}");
    (project, library)
}

/// `git show -s --format=%B COMMIT` in `root`.
pub(super) fn git_show(root: &Path, commit: &str) -> String {
    let output = Command::new("git")
        .args(["show", "-s", "--format=%B", commit])
        .current_dir(root)
        .output()
        .expect("git show");
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Let git read the repository but not write a single object: everything is packed and
/// every loose-object directory is a file (what a read-only `.git` does, even for root).
pub(super) fn block_object_writes(project: &Project) {
    for args in [&["repack", "-a", "-d", "-q"][..], &["prune-packed"]] {
        assert!(git_ok(project.root(), args), "git {args:?}");
    }
    let objects = project.root().join(".git/objects");
    for byte in 0..=255u8 {
        let dir = objects.join(format!("{byte:02x}"));
        if dir.is_dir() {
            std::fs::remove_dir(&dir).expect("empty loose-object directory");
        }
        std::fs::write(&dir, "").expect("block the directory");
    }
}
