//! Run data made read-only: the state database, or one of debussy's directories in
//! `.debussy/`, bind-mounted read-only in a user and mount namespace (`unshare -Urm`),
//! as a backup restored read-only or a container's volume leaves it. Before any session
//! starts, the run must name what cannot be written and how to free it, and lose
//! nothing; `status` still reads the history.

use std::path::Path;

use super::kit::{summary, work};
use super::witness::in_a_namespace;
use crate::support::project::Project;
use crate::support::scenario::Scenario;

/// What [`read_only`] runs in `$1` (the project), with `$4` (relative to it) mounted
/// read-only: a run with `--jobs 2`, `status`, the agent's `progress` call for the run
/// `$5` and an MCP supervisor given `$4` as its state directory. Each step's output and exit code are
/// in `$2`.
const WITH_A_READ_ONLY_PATH: &str = r#"
set -u
cd "$1" && out=$2 debussy=$3 path=$4 || exit 90
mount --bind "$path" "$path" && mount -o remount,bind,ro "$path" || exit 91
"$debussy" run plan/MASTER_PLAN.md --agent sim --jobs 2 > "$out/run.out" 2>&1
echo $? > "$out/run.code"
"$debussy" status > "$out/status.out" 2>&1
echo $? > "$out/status.code"
DEBUSSY_RUN_ID=$5 "$debussy" progress --phase 1 "a step" > "$out/progress.out" 2>&1
echo $? > "$out/progress.code"
"$debussy" mcp supervise --state-dir "$path" -- true < /dev/null > "$out/supervise.out" 2>&1
echo $? > "$out/supervise.code"
"#;

/// A project whose two phases have run once, so that each directory and the database
/// exist.
fn project_that_has_run() -> Project {
    let project = Project::new();
    project.plan(
        &[
            ("1", "N/A", "grep -q hello greeting.txt"),
            ("2", "N/A", "grep -q goodbye farewell.txt"),
        ],
        &Scenario::new().scripts([
            work("1", "greeting.txt", "hello", 0),
            work("2", "farewell.txt", "goodbye", 0),
        ]),
    );
    let (code, events) = project.run(&["--jobs", "2"]);
    assert_eq!(code, 0, "{:#}", summary(&events));
    project
}

/// Play [`WITH_A_READ_ONLY_PATH`] in `project` with `path` read-only; the scratch
/// directory that holds the outputs.
fn read_only(project: &Project, path: &str) -> tempfile::TempDir {
    let out = tempfile::tempdir().expect("tempdir");
    let debussy = project.command(&[]);
    let run_id = project.status_json()["run"]["id"]
        .as_str()
        .expect("run id")
        .to_owned();
    in_a_namespace(
        project,
        project.root(),
        WITH_A_READ_ONLY_PATH,
        &[
            project.root().as_os_str(),
            out.path().as_os_str(),
            debussy.get_program(),
            path.as_ref(),
            run_id.as_ref(),
        ],
        "mount a path read-only, for root too",
    );
    out
}

/// Step `name`'s exit code and output.
fn step(out: &Path, name: &str) -> (String, String) {
    let read = |file: String| {
        std::fs::read_to_string(out.join(&file)).unwrap_or_else(|err| panic!("{file}: {err}"))
    };
    (
        read(format!("{name}.code")).trim().to_owned(),
        read(format!("{name}.out")),
    )
}

/// The run was refused before it started (exit 2), naming `path` as read-only, and
/// nothing was committed: the branch still holds the `commits` it had.
fn refused_naming(project: &Project, out: &Path, path: &str, commits: &[String]) {
    let (code, said) = step(out, "run");
    assert_eq!(code, "2", "{said}");
    let named = format!(
        "{}: Read-only file system",
        project.root().join(path).display()
    );
    assert!(
        said.contains("✗ writable: cannot write:") && said.contains(&named),
        "{said}"
    );
    assert!(said.contains("a read-only mount"), "{said}");
    assert!(!said.contains("run "), "no run started: {said}");
    assert_eq!(project.commit_messages(), commits, "{said}");
}

#[test]
#[ignore = "needs unshare (util-linux) and user namespaces, to mount a path read-only"]
fn a_read_only_state_database_is_named_before_a_run_and_still_read() {
    let project = project_that_has_run();
    let commits = project.commit_messages();
    let out = read_only(&project, ".debussy/state.db");
    refused_naming(&project, out.path(), ".debussy/state.db", &commits);

    let (code, said) = step(out.path(), "status");
    assert_eq!(code, "0", "{said}");
    assert!(said.contains("completed"), "{said}");

    // The agent's own call, which no pre-flight check guards.
    let (code, said) = step(out.path(), "progress");
    assert_ne!(code, "0", "{said}");
    assert!(
        said.contains("cannot open state database")
            && said.contains("for writing")
            && said.contains("Read-only file system")
            && said.contains("look for the owner and mode, or a read-only mount"),
        "{said}"
    );
}

#[test]
#[ignore = "needs unshare (util-linux) and user namespaces, to mount a path read-only"]
fn read_only_run_directories_are_named_before_a_run() {
    let project = project_that_has_run();
    let commits = project.commit_messages();
    for path in [".debussy/worktrees", ".debussy/runs"] {
        let out = read_only(&project, path);
        refused_naming(&project, out.path(), path, &commits);
        let (code, said) = step(out.path(), "status");
        assert_eq!(code, "0", "{path}: {said}");

        let (code, said) = step(out.path(), "supervise");
        assert_eq!(code, "2", "{path}: {said}");
        assert!(
            said.contains("Read-only file system") && said.contains("pass `--state-dir DIR`"),
            "{path}: {said}"
        );
    }
}
