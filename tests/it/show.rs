//! `debussy show RUN [PHASE]` after a real run with the simulated agent: the prompt and
//! checkpoint each session was given, the transcript summary, gate output and commits.

use std::path::Path;
use std::process::Output;
use std::time::Duration;

use crate::support::project::{
    commit_all, init_repo, json_of, output_within, sim_run_args, write_file,
};
use crate::support::scenario::{Scenario, Script, Turn};
use serde_json::Value;

const PLAN: &str = "# Show Plan - Master Plan\n\n## Phases\n\n| Phase | Title | Status |\n|---|---|---|\n| 1 | [One](phase-1.md) | Pending |\n| 2 | [Two](phase-2.md) | Pending |\n";

fn phase(id: &str, depends: &str, gate: &str) -> String {
    format!(
        "# Show Phase {id}: Step {id}\n\n**Status:** Pending\n**Depends On:** {depends}\n\n\
         ## Process Wrapper\n- [ ] Write notes to: `notes/phase-{id}.md`\n\n\
         ## Gates\n- check: `{gate}` passes\n\n## Tasks\n- [ ] {id}.1: Do step {id}\n"
    )
}

/// Phase 1 fills its context once (a restart with a checkpoint), then finishes; phase 2
/// is one session.
fn scenario() -> Scenario {
    Scenario::new()
        .script(Script::phase("1").restart(0).turns([
            Turn::write(50, "a.txt", "a"),
            Turn::write(90, "a2.txt", "a2"),
            Turn::sleep(5000),
        ]))
        .script(Script::phase("1").restart(1).turns([
            Turn::write(30, "b.txt", "b"),
            Turn::say("logging").progress("wrote a.txt and b.txt"),
            Turn::notes("1"),
            Turn::done(),
        ]))
        .script(Script::writing("2", 10, "c.txt", "c"))
}

struct Project {
    dir: tempfile::TempDir,
}

impl Project {
    /// A repository with the plan, after one completed run.
    fn after_a_run() -> Project {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        init_repo(root);
        let write = |relative: &str, text: &str| write_file(root, relative, text);
        write("plan/MASTER_PLAN.md", PLAN);
        write(
            "plan/phase-1.md",
            &phase("1", "N/A", "echo gate-one-ran; test -f b.txt"),
        );
        write("plan/phase-2.md", &phase("2", "Phase 1", "test -f c.txt"));
        write("plan/sim-scenario.yaml", &scenario().to_yaml());
        write(".gitignore", ".home/\n");
        commit_all(root, "plan");
        let project = Project { dir };
        let output = project.debussy(&sim_run_args(
            "plan/MASTER_PLAN.md",
            &["--no-interactive", "--restart-delay", "0"],
        ));
        assert_eq!(
            output.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        project
    }

    /// `debussy ARGS` in the project, within two minutes.
    fn debussy(&self, args: &[&str]) -> Output {
        output_within(
            crate::support::debussy(self.dir.path(), args),
            Duration::from_secs(120),
        )
    }

    fn root(&self) -> &Path {
        self.dir.path()
    }
}

fn json(output: &Output) -> Value {
    json_of(output, "debussy show")
}

#[test]
fn show_answers_what_happened_in_a_phase() {
    let project = Project::after_a_run();

    let shown = json(&project.debussy(&["show", "latest", "1", "--format", "json"]));
    assert_eq!(shown["phase_id"], "1");
    assert_eq!(shown["attempt"], 1);
    let sessions = shown["sessions"].as_array().expect("sessions");
    assert_eq!(sessions.len(), 2, "{shown:#}");
    let first_prompt = sessions[0]["prompt"].as_str().expect("prompt");
    assert!(
        first_prompt.contains("phase 1 of the plan"),
        "{first_prompt}"
    );
    assert!(sessions[0]["checkpoint"].is_null());
    let checkpoint = sessions[1]["checkpoint"].as_str().expect("a checkpoint");
    assert!(checkpoint.contains("a.txt"), "{checkpoint}");
    assert_eq!(sessions[0]["outcome"], "context_limit");
    let transcript = &sessions[1]["transcript"];
    assert!(
        transcript["tool_calls"]["Write"].as_u64() >= Some(2),
        "{transcript:#}"
    );
    assert_eq!(transcript["tool_calls"]["Bash"], 2, "progress and done");
    assert_eq!(transcript["last_message"], "done");
    let gates = shown["gates"].as_array().expect("gates");
    assert!(
        gates[0]["output"]
            .as_str()
            .is_some_and(|o| o.contains("gate-one-ran")),
        "{gates:?}"
    );
    let commits = shown["commits"].as_array().expect("commits");
    assert!(
        commits.len() >= 2,
        "the checkpoint and the phase: {commits:?}"
    );
    assert_eq!(shown["progress"][0], "wrote a.txt and b.txt");

    // No phase: the last one that ran; no run: the latest.
    let latest = project.debussy(&["show"]);
    let text = String::from_utf8_lossy(&latest.stdout);
    assert!(
        latest.status.success(),
        "{}",
        String::from_utf8_lossy(&latest.stderr)
    );
    assert!(text.contains("phase 2"), "{text}");
    assert!(text.contains("Prompt"), "{text}");
    let run_id = shown["run_id"].as_str().expect("run id");
    let by_prefix = project.debussy(&["show", &run_id[..8], "1"]);
    let text = String::from_utf8_lossy(&by_prefix.stdout);
    assert!(text.contains("Checkpoint"), "{text}");
    assert!(text.contains("gate-one-ran"), "{text}");
    assert!(project.root().join("a.txt").exists());
}

#[test]
fn show_names_what_it_cannot_find() {
    let project = Project::after_a_run();
    let missing_run = project.debussy(&["show", "nosuchrun"]);
    assert_eq!(missing_run.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing_run.stderr).contains("no run matches `nosuchrun`"));
    let missing_phase = project.debussy(&["show", "latest", "9"]);
    assert_eq!(missing_phase.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&missing_phase.stderr);
    assert!(stderr.contains("phase 9 did not run"), "{stderr}");
    assert!(stderr.contains("1, 2"), "{stderr}");
    let missing_attempt = project.debussy(&["show", "latest", "1", "--attempt", "4"]);
    assert_eq!(missing_attempt.status.code(), Some(2));
}

#[test]
fn a_session_still_running_shows_its_prompt() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir(dir.path().join(".debussy")).expect("mkdir");
    let store = debussy::state::Store::open(dir.path()).expect("store");
    let run = store.create_run("/p/MASTER_PLAN.md", "Plan").expect("run");
    let execution = store
        .start_execution(&run, "3", 1, false, None)
        .expect("execution");
    store
        .record_prompt(execution, 0, "You are working on phase 3", None)
        .expect("prompt");
    let project = Project { dir };
    let shown = json(&project.debussy(&["show", "--format", "json"]));
    assert_eq!(shown["phase_id"], "3");
    let sessions = shown["sessions"].as_array().expect("sessions");
    assert_eq!(sessions.len(), 1, "{shown:#}");
    assert_eq!(sessions[0]["outcome"], "running");
    assert_eq!(sessions[0]["prompt"], "You are working on phase 3");
    let text = project.debussy(&["show"]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("Session 1: running"), "{text}");
    assert!(text.contains("You are working on phase 3"), "{text}");
}
