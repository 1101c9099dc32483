//! The hostile suite, part two: runs with `--jobs` whose agents and users do git
//! themselves (move `HEAD`, commit, switch the checkout, delete branches), delete and edit
//! the same files and change binaries. A phase's work is merged into the branch the run
//! started on, or the phase waits for a human with what is missing named; nothing is
//! lost and nothing is left running.

use serde_json::Value;

use super::kit::{fork, merging_after, notes, refusal, summary};
use super::parallel::conflicting;
use super::witness::{assert_none_lost, commits_of, git, git_ok, hook};
use crate::support::processes::{assert_no_process_left, processes_in};
use crate::support::project::{Project, events_named, sim_run_args};
use crate::support::scenario::{Scenario, Script, Turn};

/// Phase `id` runs each of `commands`, then writes its notes and reports done.
pub(super) fn shell(id: &str, commands: &[&str]) -> Script {
    Script::phase(id).turns(shell_turns(id, commands))
}

/// The turns of [`shell`].
fn shell_turns(id: &str, commands: &[&str]) -> [Turn; 3] {
    let work = commands
        .iter()
        .fold(Turn::say("working").percent(10), |turn, command| {
            turn.bash(command)
        });
    [work, notes(id), Turn::done()]
}

/// The status of `phase`'s `phase_finished` event, and its error.
fn finished<'a>(events: &'a [Value], phase: &str) -> (&'a str, &'a str) {
    let event = events_named(events, "phase_finished")
        .into_iter()
        .rfind(|e| e["phase_id"] == phase)
        .unwrap_or_else(|| panic!("phase {phase} finished: {events:#?}"));
    (
        event["status"].as_str().unwrap_or_default(),
        event["error"].as_str().unwrap_or_default(),
    )
}

/// Run `project`'s plan with `--jobs 2`, which must stop with phase 1 awaiting a human:
/// why it waits.
pub(super) fn phase_1_awaiting_human(project: &Project) -> String {
    let (code, events) = project.run(&["--jobs", "2"]);
    assert_eq!(code, 1, "{events:#?}");
    let (status, error) = finished(&events, "1");
    assert_eq!(status, "awaiting_human");
    error.to_owned()
}

/// Resume `project`'s run with `--jobs 2`, which must complete.
pub(super) fn resume_completes(project: &Project) {
    let (code, events) = project.run(&["--jobs", "2", "--resume"]);
    assert_eq!(code, 0, "{events:#?}");
}

/// Run `project`'s plan with `--jobs 2`, which must be refused before it starts: what
/// it said, without white space.
fn jobs_refused(project: &Project) -> String {
    let output = project
        .command(&sim_run_args("plan/MASTER_PLAN.md", &["--jobs", "2"]))
        .output()
        .expect("run");
    refusal(&output)
}

#[test]
fn agents_that_move_head_commit_delete_and_change_binaries_lose_nothing() {
    let project = Project::new();
    let scenario = Scenario::new()
        .script(shell(
            "1",
            &[
                r"printf 'a\nb\nc\n' > doc.txt",
                r"printf 'BIN\000one' > logo.bin",
                "echo old > old.txt",
            ],
        ))
        // A new branch, a deletion: debussy's commit lands where HEAD went.
        .script(shell(
            "2",
            &["git checkout -q -b side", "echo two > a2.txt", "rm old.txt"],
        ))
        // A detached HEAD, a binary changed, a shared file edited at its end.
        .script(shell(
            "3",
            &[
                "git checkout -q --detach",
                r"printf 'BIN\000three' > logo.bin",
                "echo three >> doc.txt",
            ],
        ))
        // The agent commits itself, the same shared file edited at its start.
        .script(shell(
            "4",
            &[
                r"printf 'four\na\nb\nc\n' > doc.txt && git add -A && git commit -qm 'the agent commits itself'",
            ],
        ));
    project.plan(
        &[
            ("1", "N/A", "test -f doc.txt"),
            ("2", "Phase 1", "test -f a2.txt && test ! -e old.txt"),
            ("3", "Phase 1", "grep -q three doc.txt"),
            ("4", "Phase 1", "grep -q four doc.txt"),
        ],
        &scenario,
    );

    let (code, events) = project.run(&["--jobs", "3"]);
    assert_eq!(code, 0, "{events:#?}");
    assert_eq!(summary(&events)["status"], "completed");
    let root = project.root();
    let brought: Vec<&str> = events_named(&events, "warning")
        .iter()
        .filter_map(|w| w["message"].as_str())
        .filter(|m| m.contains("brought back onto"))
        .collect();
    assert_eq!(brought.len(), 2, "phases 2 and 3 moved HEAD: {brought:#?}");
    assert!(root.join("a2.txt").exists() && !root.join("old.txt").exists());
    assert_eq!(
        std::fs::read(root.join("logo.bin")).expect("read"),
        b"BIN\0three"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("doc.txt")).expect("read"),
        "four\na\nb\nc\nthree\n"
    );
    assert!(
        git(root, &["log", "--format=%s", "HEAD"]).contains("the agent commits itself"),
        "the agent's own commit is merged"
    );
    assert_eq!(git(root, &["branch", "--list", "debussy/*"]), "");
    assert_none_lost(root, &commits_of(&events));
    assert_no_process_left(root);
}

/// Phase 1 makes a binary and a text file; phase 2 changes the binary and deletes the
/// text file; phase 3, finishing later, changes both: its merge conflicts on a binary
/// and a modify/delete, neither with markers. `fix` is phase 3's fix session.
fn markerless_conflicts(project: &Project, fix: &[&str]) {
    let scenario = Scenario::new()
        .script(shell(
            "1",
            &[r"printf 'BIN\000one' > logo.bin", "echo doc > doc.txt"],
        ))
        .script(shell(
            "2",
            &[r"printf 'BIN\000two' > logo.bin", "rm doc.txt"],
        ))
        .script(merging_after(
            "logo.bin",
            "two",
            shell_turns(
                "3",
                &[r"printf 'BIN\000three' > logo.bin", "echo more >> doc.txt"],
            ),
        ))
        .script(shell("3", fix));
    fork(project, ["test -f logo.bin"; 3], &scenario);
}

#[test]
fn conflicts_without_markers_wait_for_a_human_unless_the_fix_session_settles_them() {
    let project = Project::new();
    markerless_conflicts(&project, &["true"]);
    let (code, events) = project.run(&["--jobs", "2"]);
    assert_eq!(code, 1, "{events:#?}");
    let (status, error) = finished(&events, "3");
    assert_eq!(status, "awaiting_human", "{events:#?}");
    assert!(
        error.contains("logo.bin (a binary file changed on both sides)")
            && error.contains("doc.txt (changed on one side, deleted or renamed on the other)"),
        "{error}"
    );
    let root = project.root();
    assert_eq!(
        std::fs::read(root.join("logo.bin")).expect("read"),
        b"BIN\0two",
        "phase 2's merged work is untouched"
    );
    assert!(!root.join("doc.txt").exists());
    assert_none_lost(root, &commits_of(&events));
    assert_no_process_left(root);

    let project = Project::new();
    markerless_conflicts(
        &project,
        &["git checkout --ours -- logo.bin && git add logo.bin && git rm -q doc.txt"],
    );
    let (code, events) = project.run(&["--jobs", "2"]);
    assert_eq!(code, 0, "{events:#?}");
    assert_eq!(
        std::fs::read(project.root().join("logo.bin")).expect("read"),
        b"BIN\0three",
        "the fix session's choice, settled in the index"
    );
    assert_none_lost(project.root(), &commits_of(&events));
}

#[test]
fn merges_go_into_the_branch_the_run_started_on_whatever_is_checked_out() {
    let project = Project::new();
    let scenario = Scenario::new()
        // Someone switches the project's checkout to another branch mid-run.
        .script(shell(
            "1",
            &[
                "echo one > f1.txt",
                "git -C $DEBUSSY_PROJECT_ROOT switch -q -c elsewhere",
            ],
        ))
        .script(shell("2", &["echo two > f2.txt"]));
    project.plan(
        &[
            ("1", "N/A", "test -f f1.txt"),
            ("2", "Phase 1", "test -f f1.txt && test -f f2.txt"),
        ],
        &scenario,
    );
    let root = project.root();
    let started_on = git(root, &["branch", "--show-current"]);
    let (code, events) = project.run(&["--jobs", "2"]);
    assert_eq!(code, 0, "{events:#?}");
    assert_eq!(git(root, &["branch", "--show-current"]), "elsewhere");
    let on_main = git(root, &["ls-tree", "--name-only", "-r", &started_on]);
    assert!(
        on_main.contains("f1.txt") && on_main.contains("f2.txt"),
        "{on_main}"
    );
    assert!(
        !root.join("f1.txt").exists(),
        "the other branch is left alone"
    );
    assert_none_lost(root, &commits_of(&events));
}

#[test]
fn a_run_branch_moved_underneath_stops_the_run_and_resume_merges() {
    let project = Project::new();
    // Someone commits to the run's branch while the phase works.
    let scenario = Scenario::new().script(shell(
        "1",
        &[
            "echo one > f1.txt",
            "cd $DEBUSSY_PROJECT_ROOT && echo mine > user.txt && git add user.txt && git commit -qm 'the user commits meanwhile'",
        ],
    ));
    project.plan(&[("1", "N/A", "test -f f1.txt")], &scenario);
    let root = project.root();
    let started_on = git(root, &["branch", "--show-current"]);
    let error = phase_1_awaiting_human(&project);
    assert!(
        error.contains(&format!(
            "the run's branch {started_on} moved while the run went on"
        )),
        "{error}"
    );
    assert!(!root.join("f1.txt").exists(), "nothing merged over it");

    resume_completes(&project);
    assert!(root.join("f1.txt").exists() && root.join("user.txt").exists());
    assert!(git(root, &["log", "--format=%s"]).contains("the user commits meanwhile"));
}

#[test]
fn a_repository_with_submodules_refuses_jobs_and_says_why() {
    let (project, _library) = super::kit::with_a_submodule();
    project.plan(
        &[("1", "N/A", "true")],
        &Scenario::new().script(shell("1", &["true"])),
    );
    let squashed = jobs_refused(&project);
    assert!(
        squashed.contains("submodules(vendor/lib)") && squashed.contains("--jobs1"),
        "{squashed}"
    );
}

/// Git cannot make `debussy/<run>/phase-<id>` beside a branch named `debussy`: the run
/// is refused before it starts, naming the branch, instead of failing every phase.
#[test]
fn a_branch_named_debussy_refuses_jobs_and_says_how_to_free_the_name() {
    let project = Project::new();
    project.plan(
        &[("1", "N/A", "true"), ("2", "N/A", "true")],
        &Scenario::new()
            .script(shell("1", &["true"]))
            .script(shell("2", &["true"])),
    );
    assert!(git_ok(project.root(), &["branch", "debussy"]));
    let squashed = jobs_refused(&project);
    assert!(
        squashed.contains("branchnameddebussy") && squashed.contains("gitbranch-mdebussy"),
        "{squashed}"
    );
    assert!(!project.root().join(".debussy/worktrees").exists());
}

/// A shallow clone (as CI checks out) runs phases side by side: each phase's work is
/// secured and merged, though the history ends at the clone's boundary.
#[test]
fn phases_side_by_side_in_a_shallow_clone_are_merged() {
    let origin = Project::new();
    origin.write("README", "one\n");
    origin.commit_all("one");
    origin.plan(
        &[
            ("1", "N/A", "test -f one.txt"),
            ("2", "N/A", "test -f two.txt"),
        ],
        &Scenario::new()
            .script(shell("1", &["touch one.txt"]))
            .script(shell("2", &["touch two.txt"])),
    );
    let project = Project::shallow_clone(&origin, 1);
    let (code, events) = project.run(&["--jobs", "2"]);
    assert_eq!(code, 0, "{events:#?}");
    for file in ["one.txt", "two.txt"] {
        assert!(project.root().join(file).is_file(), "{file}: {events:#?}");
    }
}

/// A phase whose agent made a git repository of its own inside its worktree is not
/// completed with a commit that holds only that repository's commit id: its files would
/// go with the worktree. The phase fails naming the repository, and its files are kept.
#[test]
fn a_repository_an_agent_made_inside_its_worktree_is_not_committed_without_its_files() {
    let project = Project::new();
    let nested = "mkdir app && cd app && git init -q && echo precious > main.txt \
                  && git add main.txt && git -c user.name=a -c user.email=a@b commit -qm x";
    project.plan(
        &[("1", "N/A", "true"), ("2", "N/A", "test -f two.txt")],
        &Scenario::new()
            .script(shell("1", &[nested]))
            .script(shell("2", &["echo two > two.txt"])),
    );
    let (code, events) = project.run(&["--jobs", "2"]);
    assert_eq!(code, 1, "{events:#?}");
    let (status, error) = finished(&events, "1");
    assert_eq!(status, "failed", "{events:#?}");
    assert!(
        error.contains("app is a git repository of its own")
            && error.contains("rm -rf app/.git")
            && error.contains("its worktree"),
        "{error}"
    );
    let run_id = events[0]["run_id"].as_str().expect("run id");
    let kept = project
        .root()
        .join(".debussy/worktrees")
        .join(run_id)
        .join("1/app/main.txt");
    assert_eq!(std::fs::read_to_string(&kept).expect("kept"), "precious\n");
}

/// A checkpoint that cannot be committed stops the run, and in a worktree says which one
/// holds the work.
#[test]
fn a_checkpoint_refused_in_a_worktree_names_the_worktree_that_holds_the_work() {
    let project = Project::new();
    let nested = "mkdir app && cd app && git init -q && echo precious > main.txt";
    project.plan(
        &[("1", "N/A", "true"), ("2", "N/A", "true")],
        &Scenario::new()
            .script(
                Script::phase("1")
                    .turn(Turn::say("working").percent(10).bash(nested))
                    .turn(Turn::say("still working").percent(90))
                    .turn(Turn::done()),
            )
            .script(shell("2", &["true"])),
    );
    let (code, events) = project.run(&["--jobs", "2"]);
    assert_ne!(code, 0, "{events:#?}");
    let said = serde_json::to_string(&events).expect("json");
    assert!(
        said.contains("the checkpoint could not be committed")
            && said.contains("the work is still in its worktree"),
        "{events:#?}"
    );
}

#[test]
fn a_branch_deleted_by_hand_before_its_merge_is_not_taken_for_merged() {
    let project = Project::new();
    let leave_markers = Script::phase("3")
        .turn(Turn::say("I leave the markers"))
        .turn(Turn::done());
    conflicting(&project, leave_markers);
    let (code, events) = project.run(&["--jobs", "2"]);
    assert_eq!(code, 1, "{events:#?}");
    let run_id = events[0]["run_id"].as_str().expect("run id").to_owned();
    let branch = format!("debussy/{run_id}/phase-3");
    let root = project.root();
    let worktree = root.join(".debussy/worktrees").join(&run_id).join("3");
    assert!(git_ok(
        root,
        &["worktree", "remove", "--force", &worktree.to_string_lossy()]
    ));
    assert!(git_ok(root, &["branch", "-D", &branch]));

    let (code, events) = project.run(&["--jobs", "2", "--resume"]);
    assert!(
        events_named(&events, "phase_skipped")
            .iter()
            .all(|e| e["phase_id"] != "3"),
        "not 'completed, and merged by hand': {events:#?}"
    );
    assert!(
        events_named(&events, "warning").iter().any(|w| w["message"]
            .as_str()
            .is_some_and(|m| m.contains("was deleted before its work was merged"))),
        "{events:#?}"
    );
    assert_eq!(code, 1, "the conflict is still there: {events:#?}");
    assert_eq!(finished(&events, "3").0, "awaiting_human");
    assert_eq!(
        git(
            root,
            &["branch", "--list", "--format=%(refname:short)", &branch]
        ),
        branch,
        "made again from its recorded tip"
    );
    assert!(git(root, &["log", "--format=%s", &branch]).contains("phase 3"));
}

#[test]
fn a_merge_hook_past_git_timeout_is_stopped_and_the_limit_named() {
    let project = Project::new();
    let scenario = Scenario::new()
        .scripts(["1", "2"].map(|id| shell(id, &[&format!("echo {id} > f{id}.txt")])));
    project.plan(
        &[
            ("1", "N/A", "test -f f1.txt"),
            ("2", "N/A", "test -f f2.txt"),
        ],
        &scenario,
    );
    hook(project.root(), "pre-merge-commit", "exec sleep 300");
    let mut command = project.run_command(&["--jobs", "2"]);
    command.env("DEBUSSY_GIT__TIMEOUT", "2");
    let (code, events) =
        crate::support::project::run_json(command, std::time::Duration::from_secs(120));
    assert_eq!(code, 1, "{events:#?}");
    let stuck = events_named(&events, "phase_finished")
        .into_iter()
        .find(|e| e["status"] == "awaiting_human")
        .unwrap_or_else(|| panic!("one merge was stopped: {events:#?}"));
    let error = stuck["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("did not finish within git.timeout (2s)"),
        "{error}"
    );
    assert!(
        processes_in(project.root()).is_empty(),
        "the hook was stopped"
    );
}

#[test]
fn a_tracked_debussy_gitignore_is_never_edited() {
    let project = Project::new();
    // As an older debussy wrote it, committed by the user.
    project.write(".debussy/.gitignore", "state.db*\nruns/\nlogs/\n");
    let scenario = Scenario::new().script(shell("1", &["echo one > f1.txt"]));
    project.plan(&[("1", "N/A", "test -f f1.txt")], &scenario);
    let root = project.root();
    for extra in [&["--jobs", "2"][..], &["--jobs", "2", "--restart"][..]] {
        let (code, events) = project.run(extra);
        assert_eq!(code, 0, "{extra:?}: {events:#?}");
        assert_eq!(
            std::fs::read_to_string(root.join(".debussy/.gitignore")).expect("read"),
            "state.db*\nruns/\nlogs/\n"
        );
        assert_eq!(git(root, &["status", "--porcelain"]), "", "{extra:?}");
    }
    assert_eq!(
        git(root, &["log", "--format=%s", "--", ".debussy/.gitignore"]),
        "plan",
        "no commit of a run touches it"
    );
}

#[test]
fn the_demo_runs_side_by_side_without_writing_into_the_users_tree() {
    let project = Project::new();
    let demo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/demo");
    for entry in std::fs::read_dir(&demo).expect("demo").flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if entry.path().is_file() {
            project.write(
                &format!("examples/demo/{name}"),
                &std::fs::read_to_string(entry.path()).expect("read"),
            );
        }
    }
    project.write(".gitignore", ".home/\n");
    project.commit_all("the demo");
    let mut command = project.command(&sim_run_args(
        "examples/demo",
        &[
            "--output-format",
            "json",
            "--restart-delay",
            "0",
            "--jobs",
            "2",
        ],
    ));
    command.stdin(std::process::Stdio::null());
    let (code, events) =
        crate::support::project::run_json(command, std::time::Duration::from_secs(120));
    assert_eq!(code, 0, "{events:#?}");
    let root = project.root();
    assert_eq!(
        git(root, &["status", "--porcelain"]),
        "",
        "nothing written behind the run's back"
    );
    let tracked = git(root, &["ls-files"]);
    for file in [
        "demo/greeting.txt",
        "demo/farewell.txt",
        "examples/demo/notes/phase-1.md",
        "examples/demo/notes/phase-2.md",
    ] {
        assert!(tracked.contains(file), "{file} merged: {tracked}");
    }
}

#[test]
fn a_run_resumed_one_phase_at_a_time_on_another_branch_is_refused() {
    let project = Project::new();
    let scenario = Scenario::new().script(shell("1", &["echo one > f1.txt"]));
    project.plan(&[("1", "N/A", "false")], &scenario);
    let root = project.root();
    let started_on = git(root, &["branch", "--show-current"]);
    let (code, events) = project.run(&["--max-retries", "0"]);
    assert_eq!(code, 1, "{events:#?}");
    assert!(git_ok(root, &["switch", "-q", "-c", "elsewhere"]));
    let output = project
        .command(&["run", "plan/MASTER_PLAN.md", "--agent", "sim", "--resume"])
        .output()
        .expect("resume");
    let squashed = refusal(&output);
    assert!(
        squashed.contains(&format!(
            "startedonbranch{started_on},andelsewhereischeckedoutnow"
        )),
        "{squashed}"
    );
}

/// An agent that takes its worktree onto the run's branch, where another phase was
/// merged meanwhile, is told of the commits made there, not of that merge.
#[test]
fn an_agent_gone_onto_the_run_branch_is_told_only_of_the_commits_made_there() {
    let project = Project::new();
    let onto_the_run_branch =
        "git checkout -q -b mine \"$(git -C $DEBUSSY_PROJECT_ROOT branch --show-current)\"";
    let scenario = Scenario::new()
        .script(shell("1", &["echo one > f1.txt"]))
        .script(shell("2", &["echo two > f2.txt"]))
        .script(merging_after(
            "f2.txt",
            "two",
            shell_turns("3", &[onto_the_run_branch, "echo three > f3.txt"]),
        ));
    fork(
        &project,
        ["test -f f1.txt", "test -f f2.txt", "test -f f3.txt"],
        &scenario,
    );

    let (code, events) = project.run(&["--jobs", "2"]);
    assert_eq!(code, 0, "{events:#?}");
    let brought: Vec<&str> = events_named(&events, "warning")
        .iter()
        .filter_map(|w| w["message"].as_str())
        .filter(|m| m.contains("brought back onto"))
        .collect();
    assert_eq!(brought.len(), 1, "{brought:#?}");
    assert!(
        brought[0].contains("to branch mine, with 1 commit made there:"),
        "phase 3's own commit, not phase 2's merged before: {}",
        brought[0]
    );
}
