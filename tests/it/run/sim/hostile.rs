//! The hostile suite, part one: SIGKILL of `debussy run --jobs 2` at six moments (in a
//! session, in a hook, in a merge, in the fast-forward of the user's checkout, in a
//! handoff, in a fix session), each synchronised on a FIFO the process at that moment
//! writes to. After each: `status` tells the truth, one
//! `--resume` (no flag) completes the run, no commit of the run is unreachable, and no
//! process of the run is left. Then the git lock files a kill mid-write leaves: the resume
//! removes those nobody holds, and refuses to touch one a live process holds.

use serde_json::Value;

use super::kit::{fork, half_done, notes, refusal, resume_to_completion, work, work_turns};
use super::parallel::conflicting;
use super::witness::{
    Beacon, LiveRun, LockHolder, assert_died, assert_none_lost, commits_of, git, git_ok, hook,
};
use crate::support::processes::assert_no_process_left;
use crate::support::project::{Project, events_named, output_within, story};
use crate::support::scenario::{Scenario, Script, Turn};

/// Phase `id` writes `path`, then runs `bash`, writes the notes and reports done.
fn work_then(id: &str, path: &str, bash: &str) -> Script {
    Script::phase(id)
        .turn(Turn::write(10, path, id).bash(bash))
        .turn(notes(id))
        .turn(Turn::done())
}

/// Phases 1, 2 and 3 each writing `fN.txt`, holding `N`.
fn each_its_file() -> Scenario {
    Scenario::new().scripts(["1", "2", "3"].map(|id| work(id, &format!("f{id}.txt"), id, 0)))
}

/// Phases 2 and 3 after phase 1, each gated on its own file.
fn each_gated_on_its_file(project: &Project, scenario: &Scenario) {
    fork(
        project,
        ["test -f f1.txt", "test -f f2.txt", "test -f f3.txt"],
        scenario,
    );
}

/// Start `debussy run --jobs 2` with `extra` and SIGKILL it once `beacon` fires; what it
/// printed, and the pid of the process the beacon fired in.
fn kill_at(project: &Project, beacon: &Beacon, extra: &[&str]) -> (Vec<Value>, u64) {
    let mut args = vec!["--jobs", "2"];
    args.extend_from_slice(extra);
    let (live, pid) = beacon.wait(LiveRun::start(project, &args));
    (live.kill(), pid)
}

/// The run of [`each_its_file`] killed while the git hook `name` blocks its first call
/// (the hook is gone with it); what it printed.
fn killed_in_hook(project: &Project, scratch: &std::path::Path, name: &str) -> Vec<Value> {
    let beacon = Beacon::new(scratch, name);
    each_gated_on_its_file(project, &each_its_file());
    hook(project.root(), name, &beacon.once());
    let (killed, hook_pid) = kill_at(project, &beacon, &[]);
    assert_died(hook_pid, &format!("the {name} hook"));
    killed
}

/// Every one of `files` is in the user's checkout.
fn assert_merged(project: &Project, files: &[&str]) {
    for file in files {
        assert!(project.root().join(file).exists(), "{file} merged");
    }
}

/// What every kill is followed by: the truth from `status`, one `--resume` that
/// completes and leaves the user's checkout clean, every commit of both invocations
/// reachable, no process left. The checkout itself may read dirty before the resume:
/// a kill of a phase's session can land in another phase's fast-forward of it.
fn after_the_kill(project: &Project, killed: &[Value]) -> Vec<Value> {
    let root = project.root();
    let status = project.status_json();
    assert_eq!(status["run"]["status"], "interrupted", "{status:#}");
    assert_eq!(
        status["running_phases"],
        serde_json::json!([]),
        "{status:#}"
    );
    let executions = status["executions"].as_array().expect("executions");
    assert!(
        executions
            .iter()
            .all(|e| !matches!(e["status"].as_str(), Some("running" | "validating"))),
        "no attempt of a dead run reads as running: {status:#}"
    );
    assert!(
        !git_ok(root, &["rev-parse", "--verify", "--quiet", "MERGE_HEAD"]),
        "the user's checkout was left mid-merge"
    );

    let events = resume_to_completion(project);
    let status = project.status_json();
    assert_eq!(status["run"]["status"], "completed", "{status:#}");
    assert_eq!(
        git(root, &["status", "--porcelain"]),
        "",
        "the checkout is clean"
    );
    assert_eq!(
        git(root, &["branch", "--list", "debussy/*"]),
        "",
        "{events:#?}"
    );

    let mut commits = commits_of(killed);
    commits.extend(commits_of(&events));
    assert_none_lost(root, &commits);
    assert_no_process_left(root);
    events
}

/// A run of phases side by side, killed while phase 2's session sleeps (phase 1 may be
/// finishing, committing and merging meanwhile), the session's command dying with it;
/// what it printed. Returns once no process of it is left.
fn killed_mid_session(project: &Project, scratch: &std::path::Path) -> Vec<Value> {
    let beacon = Beacon::new(scratch, "session");
    let scenario = Scenario::new()
        .script(work("1", "f1.txt", "one", 0))
        .script(work_then("2", "f2.txt", &beacon.once()))
        .script(work("3", "f3.txt", "three", 0));
    each_gated_on_its_file(project, &scenario);
    let (killed, sleeper) = kill_at(project, &beacon, &[]);
    assert_died(sleeper, "the agent's tool command");
    assert_no_process_left(project.root());
    killed
}

#[test]
fn sigkill_mid_session_recovers_the_sessions_work_on_resume() {
    let scratch = tempfile::tempdir().expect("scratch");
    let project = Project::new();
    let killed = killed_mid_session(&project, scratch.path());

    let events = after_the_kill(&project, &killed);
    let recovered: Vec<&Value> = events_named(&events, "committed")
        .into_iter()
        .filter(|c| {
            c["phase_id"] == "2"
                && c["message"]
                    .as_str()
                    .is_some_and(|m| m.contains("recovered (interrupted)"))
        })
        .collect();
    assert_eq!(recovered.len(), 1, "{events:#?}");
    let commit = recovered[0]["commit"].as_str().expect("commit");
    assert!(
        git(
            project.root(),
            &["show", "--name-only", "--format=%B", commit]
        )
        .contains("f2.txt"),
        "the recovered checkpoint lists the killed session's file"
    );
    assert!(git_ok(
        project.root(),
        &["merge-base", "--is-ancestor", commit, "HEAD"]
    ));
}

#[test]
fn sigkill_mid_fast_forward_of_the_checkout_sets_its_files_back_and_resume_merges() {
    let scratch = tempfile::tempdir().expect("scratch");
    let project = Project::new();
    let root = project.root().canonicalize().expect("root");
    let branch = git(&root, &["symbolic-ref", "--short", "HEAD"]);
    let beacon = Beacon::new(scratch.path(), "fast-forward");
    each_gated_on_its_file(&project, &each_its_file());
    // Git runs it when the checkout's files and index are written, before the branch
    // moves: the last moment of a fast-forward of the user's checkout.
    let in_the_checkouts_fast_forward = format!(
        "[ \"$1\" = prepared ] || exit 0\n\
         grep -q ' refs/heads/{branch}$' || exit 0\n\
         [ \"$(pwd -P)\" = '{}' ] || exit 0\n{}",
        root.display(),
        beacon.once()
    );
    hook(
        &root,
        "reference-transaction",
        &in_the_checkouts_fast_forward,
    );

    let (killed, hook_pid) = kill_at(&project, &beacon, &[]);
    assert_died(hook_pid, "the reference-transaction hook");
    let staged = git(&root, &["status", "--porcelain", "--untracked-files=no"]);
    assert!(staged.contains("f1.txt"), "{staged}");

    let events = after_the_kill(&project, &killed);
    let warnings: Vec<&str> = events_named(&events, "warning")
        .iter()
        .filter_map(|w| w["message"].as_str())
        .collect();
    assert!(
        warnings
            .iter()
            .any(|w| w.starts_with("set back f1.txt") && w.contains(&branch)),
        "{}",
        story(&events)
    );
    assert_merged(&project, &["f1.txt", "f2.txt", "f3.txt"]);
}

#[test]
fn resume_removes_the_git_locks_a_killed_run_left_and_says_so() {
    let scratch = tempfile::tempdir().expect("scratch");
    let project = Project::new();
    let killed = killed_mid_session(&project, scratch.path());
    // As a write cut short by the kill leaves them: a branch deletion's, a merge's.
    let git_dir = project.root().join(".git");
    let left = ["packed-refs.lock", "index.lock"].map(|name| git_dir.join(name));
    for lock in &left {
        std::fs::write(lock, "").expect("leave a lock");
    }

    let events = after_the_kill(&project, &killed);
    let warnings: Vec<&str> = events_named(&events, "warning")
        .iter()
        .filter_map(|w| w["message"].as_str())
        .collect();
    for (lock, name) in left
        .iter()
        .zip([".git/packed-refs.lock", ".git/index.lock"])
    {
        assert!(!lock.exists(), "{name} removed");
        assert!(
            warnings
                .iter()
                .any(|w| w.contains(&format!("removed {name}")) && w.contains("interrupted run")),
            "{name} named: {warnings:#?}"
        );
    }
}

#[test]
fn a_removed_lock_is_said_once_as_the_runs_warning() {
    let scratch = tempfile::tempdir().expect("scratch");
    let project = Project::new();
    killed_mid_session(&project, scratch.path());
    std::fs::write(project.root().join(".git/packed-refs.lock"), "").expect("leave a lock");

    let output = output_within(
        project.run_command(&["--resume"]),
        std::time::Duration::from_secs(60),
    );
    let (stdout, stderr) = (
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
    );
    let said = |text: &str| text.matches("removed .git/packed-refs.lock").count();
    assert_eq!(said(&stdout), 1, "{stdout}");
    assert_eq!(
        said(&stderr),
        0,
        "not logged over the run's own output: {stderr}"
    );
}

#[test]
fn resume_leaves_a_git_lock_a_live_process_holds_and_says_what_to_do() {
    let scratch = tempfile::tempdir().expect("scratch");
    let project = Project::new();
    let killed = killed_mid_session(&project, scratch.path());
    let lock = project.root().join(".git/packed-refs.lock");
    let holder = LockHolder::of(&lock);

    let output = output_within(
        project.run_command(&["--resume"]),
        std::time::Duration::from_secs(60),
    );
    let said = refusal(&output);
    assert!(
        said.contains(".git/packed-refs.lockisinusebyarunninggitcommand"),
        "{said}"
    );
    assert!(said.contains("waitforthatgitcommandtofinish"), "{said}");
    assert!(said.contains("ifnogitcommandisrunning"), "{said}");
    assert!(lock.exists(), "a held lock is left alone");

    // Its holder gone, the same lock is one the interrupted run left: the next resume
    // removes it and completes.
    drop(holder);
    after_the_kill(&project, &killed);
    assert!(!lock.exists());
}

#[test]
fn sigkill_mid_hook_takes_the_hook_along_and_resume_commits_the_work() {
    let scratch = tempfile::tempdir().expect("scratch");
    let project = Project::new();
    // The first commit debussy makes (phase 1's, in its worktree) blocks in the hook.
    let killed = killed_in_hook(&project, scratch.path(), "pre-commit");

    after_the_kill(&project, &killed);
    assert_merged(&project, &["f1.txt", "f2.txt", "f3.txt"]);
}

#[test]
fn sigkill_mid_merge_leaves_no_merge_head_and_resume_merges() {
    let scratch = tempfile::tempdir().expect("scratch");
    let project = Project::new();
    // Run by `git merge` for the second of the side-by-side phases (a merge commit).
    let killed = killed_in_hook(&project, scratch.path(), "pre-merge-commit");
    // The merge it ran in is gone with it: nothing finishes the merge later.
    assert_no_process_left(project.root());
    // Merges and fast-forwards take turns: none of the checkout's was under way.
    assert_eq!(
        git(project.root(), &["status", "--porcelain"]),
        "",
        "the user's checkout was left dirty"
    );

    after_the_kill(&project, &killed);
    assert_merged(&project, &["f1.txt", "f2.txt", "f3.txt"]);
}

#[test]
fn sigkill_mid_handoff_resumes_the_phase() {
    let scratch = tempfile::tempdir().expect("scratch");
    let beacon = Beacon::new(scratch.path(), "handoff");
    let project = Project::new();
    let scenario = Scenario::new()
        .script(work("1", "f1.txt", "one", 0))
        // Phase 2 fills its context; resumed for its handoff, it blocks the first time.
        .script(
            half_done("2", 70)
                .handoff(Turn::say("writing the handoff").bash(&beacon.once()))
                .handoff(Turn::say("## Goal\nf2\n## Next steps\nwrite f2.txt")),
        )
        .script(work("2", "f2.txt", "two", 0))
        .script(work("3", "f3.txt", "three", 0));
    each_gated_on_its_file(&project, &scenario);

    let (killed, sleeper) = kill_at(&project, &beacon, &["--context-threshold", "60"]);
    assert!(
        !events_named(&killed, "handoff_requested").is_empty(),
        "killed while the handoff ran: {killed:#?}"
    );
    assert_died(sleeper, "the handoff session's tool command");

    after_the_kill(&project, &killed);
    assert_merged(&project, &["half.txt", "f2.txt", "f3.txt"]);
    let leftover_guards: Vec<_> = walk(&project.root().join(".debussy/runs"))
        .into_iter()
        .filter(|path| path.extension().is_some_and(|ext| ext == "guard"))
        .collect();
    assert!(leftover_guards.is_empty(), "{leftover_guards:?}");
}

#[test]
fn sigkill_mid_remediation_goes_on_with_the_fix_on_resume() {
    let scratch = tempfile::tempdir().expect("scratch");
    let beacon = Beacon::new(scratch.path(), "fix");
    let project = Project::new();
    // Phase 3's fix sessions (any attempt after the first) block the first time, then
    // resolve keeping both sides.
    let fix = Script::phase("3")
        .expect_prompt("shared.txt")
        .turn(Turn::say("looking at the conflict").bash(&beacon.once()))
        .turns(work_turns("3", "shared.txt", "two\nthree\n", 0));
    conflicting(&project, fix);

    let (killed, sleeper) = kill_at(&project, &beacon, &[]);
    assert_eq!(
        events_named(&killed, "merge_conflict").len(),
        1,
        "{killed:#?}"
    );
    assert_died(sleeper, "the fix session's tool command");

    let events = after_the_kill(&project, &killed);
    assert_eq!(
        std::fs::read_to_string(project.root().join("shared.txt")).expect("read"),
        "two\nthree\n",
        "both sides kept"
    );
    assert!(
        events_named(&events, "merge_conflict")
            .iter()
            .all(|e| e["phase_id"] == "3"),
        "{events:#?}"
    );
}

/// Every file under `dir`, recursively.
fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return found;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(walk(&path));
        } else {
            found.push(path);
        }
    }
    found
}
