//! A project in a directory of its repository (a monorepo): its phases work in the
//! project's directory, whether one at a time in the project itself or side by side in
//! the project's copy in their worktrees, and the commits and merges take the whole
//! repository.

use std::time::Duration;

use serde_json::Value;

use super::kit::{filling, notes, summary, work};
use super::witness::git;
use crate::support::project::{Project, assert_every_session_in_a_worktree, run_json};
use crate::support::scenario::{Scenario, Script, Turn};

/// Where the project sits in the test repository.
const PLACE: &str = "pkg/app";

/// A repository whose project, in [`PLACE`], has two phases that do not depend on each
/// other. Each phase's gate checks, from where the gates run, that it sees the plan and
/// its own file; phase 1 is stopped for its context once, and its next session must be
/// told of its file by its path in the repository, as git names it.
fn monorepo() -> Project {
    let project = Project::new();
    project.write("README.md", "the repository's own files\n");
    project.write(".gitignore", ".home/\n");
    let scenario = Scenario::new()
        .script(
            Script::phase("1")
                .restart(0)
                .turns(filling("out-1.txt", "one", 90, 5000)),
        )
        .script(
            Script::phase("1")
                .restart(1)
                .expect_prompt(&format!("{PLACE}/out-1.txt"))
                .turns([notes("1"), Turn::done()]),
        )
        .script(work("2", "out-2.txt", "two", 0));
    project.plan_in(
        PLACE,
        &[
            (
                "1",
                "N/A",
                "test -f plan/MASTER_PLAN.md && test -f out-1.txt",
            ),
            (
                "2",
                "N/A",
                "test -f plan/MASTER_PLAN.md && test -f out-2.txt",
            ),
        ],
        &scenario,
    );
    project
}

/// `debussy run` of the project's plan from its directory, with `--jobs jobs`.
fn run(project: &Project, jobs: &str) -> (i32, Vec<Value>) {
    let args = [
        "run",
        "plan/MASTER_PLAN.md",
        "--agent",
        "sim",
        "--output-format",
        "json",
        "--restart-delay",
        "0",
        "--jobs",
        jobs,
    ];
    let command = crate::support::debussy(&project.root().join(PLACE), &args);
    run_json(command, Duration::from_secs(120))
}

/// The run completed with every file in the project's directory on the branch, none at
/// the repository's top level, and the checkpoint holding the file where it belongs.
fn assert_worked_in_the_project(project: &Project, events: &[Value]) {
    assert_eq!(summary(events)["status"], "completed", "{events:#?}");
    let files = git(project.root(), &["ls-tree", "-r", "--name-only", "HEAD"]);
    for file in ["out-1.txt", "out-2.txt", "plan/notes/phase-1.md"] {
        assert!(
            files.lines().any(|f| f == format!("{PLACE}/{file}")),
            "{PLACE}/{file} is on the branch: {files}"
        );
    }
    assert!(
        !files
            .lines()
            .any(|f| f.starts_with("out-") || f.starts_with("plan/")),
        "nothing landed at the repository's top level: {files}"
    );
    let restart = events
        .iter()
        .find(|e| e["event"] == "restart")
        .unwrap_or_else(|| panic!("phase 1 restarted: {events:#?}"));
    let checkpoint = restart["commit"].as_str().expect("checkpoint commit");
    assert_eq!(
        git(
            project.root(),
            &["show", "--name-only", "--format=", checkpoint]
        ),
        format!("{PLACE}/out-1.txt")
    );
}

#[test]
fn phases_side_by_side_work_in_the_projects_directory_of_their_worktrees() {
    let project = monorepo();
    let (code, events) = run(&project, "2");
    assert_eq!(code, 0, "{events:#?}");
    assert_every_session_in_a_worktree(&events);
    assert_worked_in_the_project(&project, &events);
}

#[test]
fn one_phase_at_a_time_works_in_the_projects_directory() {
    let project = monorepo();
    let (code, events) = run(&project, "1");
    assert_eq!(code, 0, "{events:#?}");
    assert_worked_in_the_project(&project, &events);
}
