//! Runs with `--jobs` while someone works in the checkout the run merges into: a rebase
//! of the run's branch stopped midway, files not committed where a phase's merge writes.
//! Nothing is merged under them; the run stops saying what to finish, and `--resume`
//! merges once it is done.

use super::merges::{phase_1_awaiting_human, resume_completes, shell};
use super::witness::{git, git_ok};
use crate::support::project::Project;
use crate::support::scenario::Scenario;

#[test]
fn a_rebase_of_the_run_branch_stopped_midway_stops_the_run_and_resume_merges() {
    let project = Project::new();
    // The user starts rebasing the run's branch while the phase works, and stops at its
    // first commit to edit it.
    let scenario = Scenario::new().script(shell(
        "1",
        &[
            "echo one > f1.txt",
            "cd $DEBUSSY_PROJECT_ROOT && GIT_SEQUENCE_EDITOR='sed -i 1s/^pick/edit/' git rebase -q -i --root",
        ],
    ));
    project.plan(&[("1", "N/A", "test -f f1.txt")], &scenario);
    let root = project.root();
    let started_on = git(root, &["branch", "--show-current"]);
    let error = phase_1_awaiting_human(&project);
    assert!(
        error.contains(&format!("a rebase of {started_on} is under way"))
            && error.contains("git rebase --continue"),
        "{error}"
    );
    assert!(!root.join("f1.txt").exists(), "nothing merged under it");

    assert!(git_ok(root, &["rebase", "--continue"]));
    resume_completes(&project);
    assert!(root.join("f1.txt").exists());
    assert_eq!(git(root, &["branch", "--show-current"]), started_on);
}

#[test]
fn a_file_not_committed_where_the_merge_writes_stops_the_run_and_resume_merges() {
    let project = Project::new();
    // The user writes f1.txt in the checkout, untracked, as the phase adds its own.
    let scenario = Scenario::new().script(shell(
        "1",
        &[
            "echo one > f1.txt",
            "echo mine > $DEBUSSY_PROJECT_ROOT/f1.txt",
        ],
    ));
    project.plan(&[("1", "N/A", "test -f f1.txt")], &scenario);
    let root = project.root();
    let error = phase_1_awaiting_human(&project);
    assert!(
        error.contains("the merge would overwrite a file not committed in the checkout of")
            && error.contains(": f1.txt.")
            && error.contains("git stash -u"),
        "{error}"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("f1.txt")).expect("read"),
        "mine\n",
        "the user's file is left as it is"
    );

    std::fs::remove_file(root.join("f1.txt")).expect("remove");
    resume_completes(&project);
    assert_eq!(
        std::fs::read_to_string(root.join("f1.txt")).expect("read"),
        "one\n"
    );
}

/// A stash the user made just before the run (git dates stashes to the second, so it
/// reads as made during the phase's first second; here it is dated a minute ahead) is
/// the user's, not the phase's work: the run completes and leaves it alone.
#[test]
fn a_stash_made_just_before_the_run_is_not_taken_for_the_phases_work() {
    let project = Project::new();
    project.write("tracked.txt", "before\n");
    project.plan(
        &[("1", "N/A", "test -f one.txt")],
        &Scenario::new().script(shell("1", &["echo one > one.txt"])),
    );
    let root = project.root();
    std::fs::write(root.join("tracked.txt"), "the user's own edit\n").expect("write");
    let ahead = jiff::Timestamp::now() + jiff::SignedDuration::from_secs(60);
    let stashed = std::process::Command::new("git")
        .args(["stash", "-q"])
        .env(
            "GIT_COMMITTER_DATE",
            format!("@{} +0000", ahead.as_second()),
        )
        .current_dir(root)
        .status()
        .expect("git stash");
    assert!(stashed.success());

    let (code, events) = project.run(&[]);
    assert_eq!(code, 0, "{events:#?}");
    assert_eq!(git(root, &["stash", "list"]).lines().count(), 1, "kept");
}

/// An agent edits a file of a submodule and leaves it uncommitted there: no commit of
/// the project holds it, so the phase is not completed; it names the submodule, its file
/// and what to do, and once that is done the resume completes with the submodule's new
/// commit recorded.
#[test]
fn work_left_uncommitted_in_a_submodule_is_not_completed() {
    let (project, _library) = super::kit::with_a_submodule();
    project.plan(
        &[("1", "N/A", "grep -q patched vendor/lib/lib.txt")],
        &Scenario::new().script(shell(
            "1",
            &["echo patched > vendor/lib/lib.txt", "echo one > one.txt"],
        )),
    );
    let root = project.root();
    let (code, events) = project.run(&[]);
    assert_eq!(code, 1, "{events:#?}");
    let error = super::kit::run_error(&events);
    assert!(
        error.contains("submodule vendor/lib has changes not committed there (lib.txt)")
            && error.contains("git -C vendor/lib commit -am"),
        "{error}"
    );

    let lib = root.join("vendor/lib");
    git(
        &lib,
        &[
            "-c",
            "user.name=u",
            "-c",
            "user.email=u@x",
            "commit",
            "-qam",
            "patch",
        ],
    );
    let (code, events) = project.run(&["--resume", "--allow-dirty"]);
    assert_eq!(code, 0, "{events:#?}");
    let recorded = git(root, &["ls-tree", "HEAD", "vendor/lib"]);
    let patched = git(&lib, &["rev-parse", "HEAD"]);
    assert!(recorded.contains(&patched), "{recorded} / {patched}");
}
