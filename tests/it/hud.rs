//! The HUD end to end: the real binary in a real terminal (tmux) with the simulated
//! agent in a temporary git repository. The screen must show the context gauge moving
//! and a restart; `q` then `y` must stop the agent, leave the terminal restored (normal
//! screen, visible cursor, canonical mode) and the run paused. Also: without a terminal,
//! or with `--no-interactive`, the output is plain lines.
//!
//! tmux is an external tool: the tests that need it are `#[ignore]`d, run with
//! `--run-ignored all` (as `scripts/check` runs the suite), and fail when it is missing.

use std::path::PathBuf;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use crate::support::project::{Project, commit_all};
use crate::support::scenario::{Scenario, Script, Turn};
use debussy::run_env;

/// Longest wait for anything to appear on the screen.
const SCREEN_WAIT: Duration = Duration::from_secs(30);

/// What the HUD tests do with a project.
impl Project {
    /// A git repository with a one-phase plan and a sim scenario.
    fn with_hud_scenario(scenario: &Scenario) -> Project {
        let project = Project::new();
        project.write(
            "plan/MASTER_PLAN.md",
            "# HUD Test - Master Plan\n\n## Phases\n\n| Phase | Title | Status |\n|---|---|---|\n\
             | 1 | [Fill the context](phase-1.md) | Pending |\n",
        );
        project.write(
            "plan/phase-1.md",
            "# HUD Test Phase 1: Fill the context\n\n**Status:** Pending\n**Depends On:** N/A\n\n\
             ## Process Wrapper\n- [ ] Write notes to: `notes/phase-1.md`\n\n\
             ## Gates\n- check: `test -f a.txt` passes\n\n## Tasks\n- [ ] 1.1: Write a.txt\n",
        );
        project.write("plan/sim-scenario.yaml", &scenario.to_yaml());
        commit_all(project.root(), "plan");
        project
    }

    /// The sandboxed environment every debussy process here gets.
    fn env(&self) -> Vec<(&'static str, PathBuf)> {
        vec![
            ("HOME", self.root().join(".home")),
            ("XDG_CONFIG_HOME", self.root().join(".home/config")),
        ]
    }
}

/// Fail the test unless tmux can be used (these tests are `#[ignore]`d and run with
/// `--run-ignored all`).
fn require_tmux() {
    let found = Command::new("tmux")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        crate::support::cli::missing("tmux", "it is not installed (apt-get install tmux)");
    }
}

/// A private tmux server (its own socket in a temp dir) with one 100×30 pane running a
/// run of the plan in a shell ([`shell_line`]); killed, with everything in it, on drop.
struct Tmux {
    socket: PathBuf,
    _dir: tempfile::TempDir,
}

impl Tmux {
    /// The server, its pane running `debussy run` of the project's plan with the sim
    /// agent and `flags`; fails the test unless tmux can be used.
    fn run_plan(project: &Project, flags: &str) -> Tmux {
        Tmux::run_plan_in(project, "xterm-256color", flags)
    }

    /// [`Tmux::run_plan`] with debussy's `TERM` set to `term`.
    fn run_plan_in(project: &Project, term: &str, flags: &str) -> Tmux {
        require_tmux();
        let args = format!("run plan/MASTER_PLAN.md --agent sim {flags}");
        let dir = tempfile::tempdir().expect("tempdir");
        let socket = dir.path().join("tmux.sock");
        let tmux = Tmux { socket, _dir: dir };
        let mut start = Command::new("tmux");
        start
            .arg("-S")
            .arg(&tmux.socket)
            .args([
                "-f",
                "/dev/null",
                "new-session",
                "-d",
                "-s",
                "hud",
                "-x",
                "100",
                "-y",
                "30",
                "-c",
            ])
            .arg(project.root())
            .arg(shell_line(&format!("TERM={term}"), &args))
            .envs(project.env())
            .env("TERM", "xterm-256color")
            .env_remove("TMUX")
            .env_remove("DEBUSSY_LOG")
            .env_remove(run_env::RUN_ID)
            .env_remove(run_env::PHASE_ID)
            .env_remove(run_env::PROJECT_ROOT);
        let output = start.output().expect("start tmux");
        assert!(
            output.status.success(),
            "tmux new-session failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        tmux
    }

    fn run(&self, args: &[&str]) -> Output {
        Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .args(args)
            .output()
            .expect("tmux")
    }

    fn screen(&self) -> String {
        String::from_utf8_lossy(&self.run(&["capture-pane", "-p", "-t", "hud"]).stdout).into_owned()
    }

    fn keys(&self, keys: &str) {
        let output = self.run(&["send-keys", "-t", "hud", keys]);
        assert!(output.status.success(), "send-keys {keys} failed");
    }

    /// A pane property (`#{alternate_on}`, `#{cursor_flag}`).
    fn property(&self, format: &str) -> String {
        String::from_utf8_lossy(
            &self
                .run(&["display-message", "-p", "-t", "hud", format])
                .stdout,
        )
        .trim()
        .to_owned()
    }

    /// Poll the screen until `found` says yes; panics with the screen after the deadline.
    fn wait_for(&self, what: &str, found: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + SCREEN_WAIT;
        loop {
            let screen = self.screen();
            if found(&screen) {
                return screen;
            }
            assert!(
                Instant::now() < deadline,
                "the screen did not show {what} within {SCREEN_WAIT:?}:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(25));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.run(&["kill-server"]);
    }
}

/// `sh` line that runs debussy, then reports its exit code and the terminal's modes,
/// prints `shell-done` once everything is on screen, and stays open so the screen can be
/// read.
fn shell_line(env: &str, args: &str) -> String {
    format!(
        "{env} {} {args}; echo \"exit=$?\"; stty -a | tr ' ;' '\\n\\n' | grep -x -e icanon -e -icanon -e echo -e -echo | tr '\\n' ' '; echo; echo 'shell-done'; exec sleep 120",
        crate::support::DEBUSSY
    )
}

/// The context climbs 30 % → 55 % → 88 % (a restart at 80 %), then the restarted
/// session works for a long time, so the test can quit in the middle of it.
fn climbing() -> Scenario {
    Scenario::new()
        .script(
            Script::phase("1").restart(0).turns([
                Turn::say("Reading the task.").percent(30).sleep_ms(400),
                Turn::say("Writing a.txt.")
                    .percent(55)
                    .sleep_ms(800)
                    .writes("a.txt", "a"),
                Turn::say("Checking the file.").percent(88).sleep_ms(800),
                Turn::sleep(20_000),
            ]),
        )
        .script(
            Script::phase("1").restart(1).turns([
                Turn::say("Resuming from the checkpoint.")
                    .percent(12)
                    .sleep_ms(200),
                Turn::sleep(20_000),
            ]),
        )
}

/// One session that does the work, writes the notes and reports done.
fn finishing() -> Scenario {
    Scenario::new().script(Script::phase("1").turns([
        Turn::say("Writing.").percent(20).writes("a.txt", "a"),
        Turn::say("notes").writes(
            "${SCENARIO_DIR}/notes/phase-1.md",
            "## Summary\nok\n## Key Decisions\nnone\n## Files Modified\na.txt\n",
        ),
        Turn::done(),
    ]))
}

#[test]
#[ignore = "needs tmux (scripts/test-tools)"]
fn the_gauge_moves_a_restart_shows_and_quit_pauses_the_run_and_restores_the_terminal() {
    let project = Project::with_hud_scenario(&climbing());
    let tmux = Tmux::run_plan(&project, "--restart-delay 0");

    tmux.wait_for("the gauge at 30 %", |s| s.contains("30.0%"));
    assert_eq!(
        tmux.property("#{alternate_on}"),
        "1",
        "the HUD uses the alternate screen"
    );
    tmux.wait_for("the gauge at 55 %", |s| s.contains("55.0%"));
    let restarted = tmux.wait_for("a restart", |s| {
        s.contains("restart 1/3 at 88.0%") && s.contains("12.0%")
    });
    assert!(restarted.contains("▸ Write a.txt"), "{restarted}");

    tmux.keys("q");
    tmux.wait_for("the quit question", |s| {
        s.contains("Stop the agent and pause the run?")
    });
    tmux.keys("y");
    let after = tmux.wait_for("the shell again", |s| s.contains("shell-done"));

    assert!(
        after.contains("exit=130"),
        "interrupted exit code:\n{after}"
    );
    assert!(
        after.contains("paused") && after.contains("Continue with: debussy run --resume"),
        "the summary stays on the normal screen:\n{after}"
    );
    assert!(
        after.contains("icanon") && !after.contains("-icanon") && !after.contains("-echo"),
        "the terminal is back in canonical mode with echo:\n{after}"
    );
    assert_eq!(
        tmux.property("#{alternate_on}"),
        "0",
        "back on the normal screen"
    );
    assert_eq!(
        tmux.property("#{cursor_flag}"),
        "1",
        "the cursor is visible"
    );
    assert!(
        !after.contains("┌ Context"),
        "no HUD left on screen:\n{after}"
    );

    let status = project.status_json();
    assert_eq!(status["run"]["status"], "paused", "{status:#}");
}

#[test]
#[ignore = "needs tmux (scripts/test-tools)"]
fn no_interactive_prints_plain_lines_in_a_terminal() {
    let project = Project::with_hud_scenario(&finishing());
    let tmux = Tmux::run_plan(&project, "--no-interactive");
    let screen = tmux.wait_for("the end of the run", |s| s.contains("shell-done"));
    assert!(screen.contains("exit=0"), "{screen}");
    assert!(
        screen.contains("] run ") && screen.contains(" started: HUD Test"),
        "{screen}"
    );
    assert!(!screen.contains("┌ Context"), "{screen}");
}

#[test]
#[ignore = "needs tmux (scripts/test-tools)"]
fn a_dumb_terminal_gets_plain_lines_without_colour() {
    let project = Project::with_hud_scenario(&finishing());
    let tmux = Tmux::run_plan_in(&project, "dumb", "");
    let screen = tmux.wait_for("the end of the run", |s| s.contains("shell-done"));
    assert!(screen.contains("exit=0"), "{screen}");
    assert!(screen.contains("] run "), "{screen}");
    assert!(!screen.contains("┌ Context"), "{screen}");
    let painted = tmux.run(&["capture-pane", "-p", "-e", "-t", "hud"]);
    let painted = String::from_utf8_lossy(&painted.stdout);
    assert!(
        !painted.contains('\u{1b}'),
        "no colour in a dumb terminal:\n{painted:?}"
    );
}

#[test]
fn plain_lines_when_stdout_is_not_a_terminal() {
    let project = Project::with_hud_scenario(&finishing());
    let output = project
        .command(&["run", "plan/MASTER_PLAN.md", "--agent", "sim"])
        .output()
        .expect("run");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        !stdout.contains('\u{1b}'),
        "no terminal control codes:\n{stdout}"
    );
    assert!(stdout.contains("] run "), "{stdout}");
    assert!(
        stdout.contains("PHASE  TITLE"),
        "the summary table:\n{stdout}"
    );
}
