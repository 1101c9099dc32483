//! A run's git work: a dirty tree or a merge in progress refused, commits without an
//! identity, commits and hooks that fail, a checkout switched, reset or stashed mid-run, pauses, and run
//! data kept private.

use std::path::Path;

use crate::support::project::{Project, events_named, sim_run_args};
use crate::support::scenario::{Scenario, Script, Turn};

use super::kit::{LiveRun, block_object_writes, filling, run_error, sleeping_project, summary};
use super::witness;

/// Phase 1 writes `work.txt` with `content`, its notes, and reports done.
fn writing_work(content: &str) -> Scenario {
    Scenario::new().script(Script::writing("1", 10, "work.txt", content))
}

#[test]
fn a_dirty_tree_is_refused_with_the_files_named() {
    let project = Project::new();
    project.plan(
        &[("1", "N/A", "true")],
        &Scenario::playing([Turn::say("hi")]),
    );
    std::fs::write(project.root().join("plan/MASTER_PLAN.md"), "# changed\n").expect("write");
    let output = project
        .command(&sim_run_args("plan/MASTER_PLAN.md", &["--skip-audit"]))
        .output()
        .expect("run");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("plan/MASTER_PLAN.md") && stderr.contains("--allow-dirty"),
        "{stderr}"
    );
    // What the refused run wrote (its lock, state and log) is not there for the user's
    // `git add -A` to sweep in, and the next run is refused only for the user's edit.
    let status = witness::git(project.root(), &["status", "--porcelain"]);
    assert_eq!(status, "M plan/MASTER_PLAN.md", "{status}");
}

/// Outside a git repository a run that commits is refused before it writes anything.
#[test]
fn a_run_outside_a_repository_is_refused_before_it_writes_anything() {
    let project = Project::new();
    project.plan(&[("1", "N/A", "true")], &writing_work("done"));
    std::fs::remove_dir_all(project.root().join(".git")).expect("no repository");
    let dir = project.root().join("elsewhere");
    std::fs::create_dir(&dir).expect("a directory");
    let output = project
        .command(&sim_run_args("../plan/MASTER_PLAN.md", &[]))
        .current_dir(&dir)
        .output()
        .expect("run");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("is not inside a git repository") && stderr.contains("git init"),
        "{stderr}"
    );
    let left: Vec<_> = std::fs::read_dir(&dir).expect("dir").collect();
    assert!(left.is_empty(), "{left:?}");
}

/// A key pair made by `ssh-keygen` in `dir`, protected by `passphrase` (empty for none):
/// the private key's path. Fails the test, naming the package, without ssh-keygen.
fn ssh_key(dir: &Path, passphrase: &str) -> std::path::PathBuf {
    std::fs::create_dir_all(dir).expect("mkdir");
    let key = dir.join("key");
    let made = std::process::Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", passphrase, "-C", "test", "-f"])
        .arg(&key)
        .output()
        .expect("ssh-keygen must be installed (openssh-client; scripts/test-tools)");
    assert!(made.status.success(), "{made:?}");
    key
}

/// With `commit.gpgSign` on and a key git cannot use without a prompt, the run is refused
/// before any session spends anything, with git's words and the ways out; with a usable
/// key, every commit of the run is signed.
#[test]
#[ignore = "needs ssh-keygen (openssh-client; scripts/test-tools)"]
fn signing_is_checked_before_the_run_and_every_commit_signed() {
    let keys = tempfile::tempdir().expect("tempdir");
    let project = Project::new();
    project.plan(&[("1", "N/A", "test -f work.txt")], &writing_work("done"));
    let locked = ssh_key(keys.path(), "secret");
    for (key, value) in [
        ("gpg.format", "ssh"),
        ("user.signingKey", &locked.to_string_lossy()),
        ("commit.gpgSign", "true"),
    ] {
        assert!(witness::git_ok(project.root(), &["config", key, value]));
    }
    let output = project
        .command(&sim_run_args("plan/MASTER_PLAN.md", &[]))
        .output()
        .expect("run");
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    let stderr: String = String::from_utf8_lossy(&output.stderr)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        stderr.contains("commit.gpgSign is on") && stderr.contains("passphrase"),
        "{stderr}"
    );
    assert!(!project.root().join(".debussy/transcripts").exists());

    let usable = ssh_key(&keys.path().join("usable"), "");
    let public = std::fs::read_to_string(usable.with_extension("pub")).expect("public key");
    let signers = keys.path().join("allowed_signers");
    std::fs::write(&signers, format!("test@example.com {public}")).expect("write");
    for (key, value) in [
        ("user.signingKey", usable.to_string_lossy()),
        ("gpg.ssh.allowedSignersFile", signers.to_string_lossy()),
    ] {
        assert!(witness::git_ok(project.root(), &["config", key, &value]));
    }
    let plan = witness::git(project.root(), &["rev-parse", "HEAD"]);
    let (code, events) = project.run(&[]);
    assert_eq!(code, 0, "{events:#?}");
    let range = format!("{plan}..HEAD");
    let signatures = witness::git(project.root(), &["log", "--format=%G? %s", &range]);
    assert!(
        signatures.lines().count() > 0 && signatures.lines().all(|line| line.starts_with("G ")),
        "{signatures}"
    );
}

/// A sparse checkout runs: the files outside its cone, absent from the working tree, are
/// neither uncommitted changes that refuse the run nor deleted by its commits.
#[test]
fn a_sparse_checkout_runs_and_keeps_the_files_outside_it() {
    let project = Project::new();
    project.write("outside/kept.txt", "kept\n");
    project.plan(&[("1", "N/A", "test -f work.txt")], &writing_work("done"));
    assert!(witness::git_ok(
        project.root(),
        &["sparse-checkout", "set", "plan", "notes"]
    ));
    assert!(!project.root().join("outside/kept.txt").exists());
    let (code, events) = project.run(&[]);
    assert_eq!(code, 0, "{events:#?}");
    let tree = witness::git(project.root(), &["ls-tree", "-r", "--name-only", "HEAD"]);
    assert!(
        tree.lines().any(|path| path == "outside/kept.txt")
            && tree.lines().any(|path| path == "work.txt"),
        "{tree}"
    );
}

#[test]
fn without_a_git_identity_commits_are_made_as_debussy() {
    let project = Project::new();
    let repo = git2::Repository::open(project.root()).expect("open");
    let mut config = repo.config().expect("config");
    config.remove("user.name").expect("unset name");
    config.remove("user.email").expect("unset email");
    drop(config);
    let scenario = Scenario::playing([
        Turn::write(10, "x.txt", "x"),
        Turn::notes("1"),
        Turn::done(),
    ]);
    project.plan(&[("1", "N/A", "test -f x.txt")], &scenario);
    // The plan commit above came from the test's own signature; the run's come from debussy.
    let (code, events) = project.run(&[]);
    assert_eq!(code, 0, "{events:#?}");
    let repo = git2::Repository::open(project.root()).expect("open");
    let head = repo.head().expect("head").peel_to_commit().expect("commit");
    assert_eq!(head.author().name().ok(), Some("debussy"));
    assert_eq!(head.author().email().ok(), Some("debussy@localhost"));
}

#[test]
fn a_merge_in_progress_is_refused_even_with_allow_dirty() {
    let project = Project::new();
    project.write("shared.txt", "base\n");
    project.plan(
        &[("1", "N/A", "true")],
        &Scenario::new().script(Script::phase("1").turn(Turn::done())),
    );
    let git = |args: &[&str]| witness::git(project.root(), args);
    let main = git(&["rev-parse", "--abbrev-ref", "HEAD"]);
    git(&["checkout", "-q", "-b", "other"]);
    project.write("shared.txt", "theirs\n");
    git(&["commit", "-qam", "theirs"]);
    git(&["checkout", "-q", &main]);
    project.write("shared.txt", "ours\n");
    git(&["commit", "-qam", "ours"]);
    git(&["merge", "other"]);
    let merge_head = project.root().join(".git/MERGE_HEAD");
    assert!(merge_head.exists(), "the merge stopped on its conflict");

    let output = project
        .command(&sim_run_args("plan/MASTER_PLAN.md", &["--allow-dirty"]))
        .output()
        .expect("run");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("a merge is in progress") && stderr.contains("merge --abort"),
        "{stderr}"
    );
    assert!(merge_head.exists(), "the merge is left as it was");
    assert!(
        std::fs::read_to_string(project.root().join("shared.txt"))
            .expect("shared")
            .contains("<<<<<<<"),
        "the conflict is left for the user"
    );
    assert_eq!(git(&["log", "--format=%s", "-1"]), "ours");
}

#[test]
fn a_commit_that_fails_fails_the_phase_with_gits_words_and_keeps_the_work() {
    let project = Project::new();
    project.plan(&[("1", "N/A", "true")], &writing_work("the agent's work"));
    block_object_writes(&project);
    let (code, events) = project.run(&[]);
    assert_eq!(code, 1, "{events:#?}");
    let summary = summary(&events);
    assert_eq!(summary["status"], "failed", "{summary:#}");
    assert_eq!(summary["phases"][0]["status"], "failed", "{summary:#}");
    let error = summary["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("could not be committed") && error.contains("still in the working tree"),
        "{error}"
    );
    assert!(
        events_named(&events, "warning")
            .iter()
            .any(|w| w.to_string().contains("could not commit")),
        "{events:#?}"
    );
    assert_eq!(
        std::fs::read_to_string(project.root().join("work.txt")).expect("work kept"),
        "the agent's work"
    );
}

#[test]
fn a_checkout_switched_mid_run_gets_none_of_its_commits_and_resume_commits_on_the_run_branch() {
    use witness::{git, git_ok};
    let project = Project::new();
    // The switch a user (or the agent) makes in the project's checkout while the phase
    // works there.
    let scenario = Scenario::new().script(
        Script::phase("1").turns([
            Turn::say("working")
                .percent(10)
                .bash("echo one > f1.txt")
                .bash("git switch -q -c elsewhere"),
            super::kit::notes("1"),
            Turn::done(),
        ]),
    );
    project.plan(&[("1", "N/A", "test -f f1.txt")], &scenario);
    let root = project.root();
    let started_on = git(root, &["branch", "--show-current"]);
    let base = git(root, &["rev-parse", "HEAD"]);
    let (code, events) = project.run(&[]);
    assert_eq!(code, 1, "{events:#?}");
    let error = run_error(&events);
    assert!(
        error.contains(&format!(
            "the run commits on {started_on}, and the checkout is on elsewhere now"
        )) && error.contains(&format!("git switch {started_on}")),
        "{error}"
    );
    assert_eq!(
        git(root, &["rev-parse", "elsewhere"]),
        base,
        "no commit there"
    );
    assert_eq!(git(root, &["rev-parse", &started_on]), base);

    assert!(git_ok(root, &["switch", "-q", &started_on]));
    let (code, events) = project.run(&["--resume"]);
    assert_eq!(code, 0, "{events:#?}");
    let files = git(root, &["ls-tree", "--name-only", &started_on]);
    assert!(files.lines().any(|file| file == "f1.txt"), "{files}");
}

#[test]
fn a_reset_over_a_checkpoint_mid_run_fails_the_phase_and_the_merge_it_names_brings_the_work_back() {
    use witness::git;
    let project = Project::new();
    let scenario = Scenario::new()
        .script(Script::phase("1").restart(0).turns(filling(
            "half.txt",
            "half done",
            95,
            5000,
        )))
        // The restarted session throws the checkpoint away, once.
        .script(Script::phase("1").turns([
            Turn::say("starting over").percent(10).bash(
                "test -f .git/reset-done || { git reset -q --hard HEAD~1 && touch .git/reset-done; }",
            ),
            Turn::write(20, "work.txt", "done"),
            super::kit::notes("1"),
            Turn::done(),
        ]));
    project.plan(&[("1", "N/A", "test -f work.txt")], &scenario);
    let root = project.root();
    let base = git(root, &["rev-parse", "HEAD"]);
    let (code, events) = project.run(&[]);
    assert_eq!(code, 1, "{events:#?}");
    let checkpoint = events_named(&events, "committed")
        .first()
        .and_then(|event| event["commit"].as_str())
        .expect("the checkpoint")
        .to_owned();
    let error = run_error(&events);
    let merge = format!("git merge {}", &checkpoint[..12]);
    assert!(
        error.contains("is no longer in its history") && error.contains(&merge),
        "{error}"
    );
    assert_eq!(git(root, &["rev-parse", "HEAD"]), base, "nothing committed");

    witness::follow(root, &merge);
    let (code, events) = project.run(&["--resume"]);
    assert_eq!(code, 0, "{events:#?}");
    let files = git(root, &["ls-tree", "--name-only", "HEAD"]);
    for file in ["half.txt", "work.txt"] {
        assert!(files.lines().any(|line| line == file), "{file}: {files}");
    }
}

#[test]
fn work_stashed_in_the_checkout_and_not_taken_back_is_not_completed() {
    use witness::git;
    let project = Project::new();
    project.write("tracked.txt", "before\n");
    // An agent that stashes to look at the tree without its changes, and never pops.
    let scenario = Scenario::new().script(
        Script::phase("1").turns([
            Turn::write(10, "new.txt", "new work")
                .bash("echo after > tracked.txt")
                .bash("test -f .git/stashed || { git stash -q -u && touch .git/stashed; }"),
            super::kit::notes("1"),
            Turn::done(),
        ]),
    );
    project.plan(&[("1", "N/A", "true")], &scenario);
    let root = project.root();
    let (code, events) = project.run(&[]);
    assert_eq!(code, 1, "{events:#?}");
    let error = run_error(&events);
    let stash = git(root, &["rev-parse", "--short=12", "stash@{0}"]);
    let apply = format!("git stash apply {stash}");
    assert!(
        error.contains("stash@{0}") && error.contains(&apply),
        "{error}"
    );

    witness::follow(root, &apply);
    let (code, events) = project.run(&["--resume", "--allow-dirty"]);
    assert_eq!(code, 0, "{events:#?}");
    assert_eq!(git(root, &["show", "HEAD:new.txt"]), "new work");
    assert_eq!(git(root, &["show", "HEAD:tracked.txt"]), "after");
}

#[test]
fn a_checkpoint_that_cannot_be_committed_stops_the_run_instead_of_restarting() {
    let project = Project::new();
    let scenario = Scenario::new()
        .script(
            Script::phase("1")
                .restart(0)
                .turns(filling("work.txt", "half done", 95, 5000)),
        )
        .script(Script::phase("1").restart(1).turn(Turn::done()));
    project.plan(&[("1", "N/A", "true")], &scenario);
    block_object_writes(&project);
    let (code, events) = project.run(&[]);
    assert_eq!(code, 1, "{events:#?}");
    assert!(events_named(&events, "restart").is_empty(), "{events:#?}");
    let error = run_error(&events);
    assert!(
        error.contains("checkpoint could not be committed"),
        "{error}"
    );
    assert_eq!(
        std::fs::read_to_string(project.root().join("work.txt")).expect("work kept"),
        "half done"
    );
}

#[test]
fn the_projects_pre_commit_hook_runs_and_a_refusal_fails_the_phase() {
    use std::os::unix::fs::PermissionsExt as _;
    let project = Project::new();
    project.plan(&[("1", "N/A", "true")], &writing_work("the agent's work"));
    let hook = project.root().join(".git/hooks/pre-commit");
    std::fs::create_dir_all(hook.parent().expect("hooks")).expect("mkdir");
    std::fs::write(
        &hook,
        "#!/bin/sh\necho 'policy: no commits today' >&2\nexit 1\n",
    )
    .expect("hook");
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let (code, events) = project.run(&[]);
    assert_eq!(code, 1, "{events:#?}");
    let error = run_error(&events);
    assert!(
        error.contains("pre-commit hook refused the commit")
            && error.contains("policy: no commits today"),
        "{error}"
    );
    // With the hooks switched off the same run commits.
    project.write(".debussy/config.yaml", "git:\n  run_hooks: false\n");
    let (code, events) = project.run(&["--restart", "--allow-dirty"]);
    assert_eq!(code, 0, "{events:#?}");
}

#[test]
fn a_pause_without_a_commit_lets_the_resume_accept_exactly_the_paused_files() {
    let project = sleeping_project();
    let live = LiveRun::start(&project, &["--no-auto-commit"]);
    let (code, _) = live.interrupt();
    assert_eq!(code, 130);
    assert_eq!(
        std::fs::read_to_string(project.root().join("work.txt")).expect("work"),
        "agent edit",
        "the paused work stays in the tree"
    );

    // Someone else's edit is still refused, naming it.
    project.write(".gitignore", "started\nother\n");
    let (code, events) = project.run(&["--resume", "--auto-commit"]);
    assert_eq!(code, 2, "{events:#?}");
    project.write(".gitignore", "started\n");

    let (code, events) = project.run(&["--resume", "--auto-commit"]);
    assert_eq!(code, 0, "{events:#?}");
    let messages = project.commit_messages();
    assert!(
        messages[0].contains("phase 1") && messages[0].contains("completed"),
        "{messages:?}"
    );
}

#[test]
fn a_pause_in_a_switched_checkout_keeps_the_work_and_refuses_a_resume_there() {
    use witness::{git, git_ok};
    let project = sleeping_project();
    let root = project.root();
    let started_on = git(root, &["branch", "--show-current"]);
    let base = git(root, &["rev-parse", "HEAD"]);
    let live = LiveRun::start(&project, &[]);
    assert!(git_ok(root, &["switch", "-q", "-c", "elsewhere"]));
    let (code, _) = live.interrupt();
    assert_eq!(code, 130);
    assert_eq!(
        git(root, &["rev-parse", "HEAD"]),
        base,
        "no pause commit there"
    );

    let (code, events) = project.run(&["--resume"]);
    assert_eq!(code, 2, "{events:#?}");
    assert_eq!(
        git(root, &["rev-parse", "HEAD"]),
        base,
        "nothing committed there"
    );
    assert!(git_ok(root, &["switch", "-q", &started_on]));
    let (code, events) = project.run(&["--resume"]);
    assert_eq!(code, 0, "{events:#?}");
    assert_eq!(
        git(root, &["show", &format!("{started_on}:work.txt")]),
        "agent edit"
    );
}

#[test]
fn run_data_is_readable_by_its_owner_only() {
    use std::os::unix::fs::PermissionsExt;
    let project = Project::new();
    let scenario =
        Scenario::new().script(Script::phase("1").turns([Turn::notes("1"), Turn::done()]));
    project.plan(&[("1", "N/A", "true")], &scenario);
    let dir = project.root().join(".debussy");
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let (code, events) = project.run(&[]);
    assert_eq!(code, 0, "{events:#?}");
    let mode = |path: &Path| {
        std::fs::metadata(path)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
            .permissions()
            .mode()
            & 0o777
    };
    assert_eq!(mode(&dir), 0o700, ".debussy");
    assert_eq!(mode(&dir.join("state.db")), 0o600, "state.db");
    for extra in ["state.db-wal", "state.db-shm"] {
        let path = dir.join(extra);
        if path.exists() {
            assert_eq!(mode(&path), 0o600, "{extra}");
        }
    }
}

/// An agent in its phase's worktree merges a branch that conflicts and leaves the merge:
/// the phase's work is not committed with the markers (nor merged into the run's
/// branch), the phase fails naming the merge and the worktree, and once the merge is
/// aborted there the resume completes.
#[test]
fn a_merge_an_agent_left_in_its_worktree_is_not_committed_with_its_markers() {
    let project = Project::new();
    let conflict = "echo mine > shared.txt && git commit -qam mine && git merge conflicting; true";
    project.plan(
        &[("1", "N/A", "true"), ("2", "N/A", "true")],
        &Scenario::new()
            .script(super::merges::shell("1", &["echo one > one.txt"]))
            .script(super::merges::shell("2", &[conflict, "echo two > two.txt"])),
    );
    let root = project.root();
    std::fs::write(root.join("shared.txt"), "base\n").expect("write");
    witness::git(root, &["add", "shared.txt"]);
    witness::git(root, &["commit", "-qm", "shared"]);
    witness::git(root, &["switch", "-q", "-c", "conflicting"]);
    std::fs::write(root.join("shared.txt"), "theirs\n").expect("write");
    witness::git(root, &["commit", "-qam", "theirs"]);
    witness::git(root, &["switch", "-q", "-"]);

    let (code, events) = project.run(&["--jobs", "2"]);
    assert_eq!(code, 1, "{events:#?}");
    let failed = events_named(&events, "phase_finished")
        .into_iter()
        .find(|event| event["phase_id"] == "2")
        .expect("phase 2 finished");
    assert_eq!(failed["status"], "failed", "{failed:#}");
    let error = failed["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("a merge was started in ")
            && error.contains(".debussy/worktrees/")
            && error.contains("git merge --abort"),
        "{error}"
    );
    assert_eq!(witness::git(root, &["show", "HEAD:shared.txt"]), "base");

    let run_id = events[0]["run_id"].as_str().expect("run id");
    let tree = root.join(".debussy/worktrees").join(run_id).join("2");
    witness::git(&tree, &["merge", "--abort"]);
    let (code, events) = project.run(&["--jobs", "2", "--resume"]);
    assert_eq!(code, 0, "{events:#?}");
    let merged = witness::git(root, &["show", "HEAD:shared.txt"]);
    assert_eq!(merged, "mine", "no markers: {merged}");
}

/// Run data committed by hand (before a run kept it out of git) is named with the
/// command that untracks it; once that is done and committed, the run goes on.
#[test]
fn run_data_tracked_by_git_is_refused_with_the_command_that_untracks_it() {
    let project = Project::new();
    project.plan(&[("1", "N/A", "true")], &writing_work("done"));
    let (code, events) = project.run(&[]);
    assert_eq!(code, 0, "{events:#?}");
    let root = project.root();
    witness::git(root, &["add", "-f", ".debussy/state.db", ".debussy/runs"]);
    witness::git(root, &["commit", "-qm", "everything"]);

    let output = project
        .command(&sim_run_args("plan/MASTER_PLAN.md", &["--restart"]))
        .output()
        .expect("run");
    let said = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{said}");
    let squashed: String = said.split_whitespace().collect::<Vec<_>>().join(" ");
    let fix = "git rm -r -q --cached -- .debussy/runs .debussy/state.db";
    assert!(
        squashed.contains("run data is tracked by git") && squashed.contains(fix),
        "{said}"
    );
    let mut untrack = vec!["rm", "-r", "-q", "--cached", "--"];
    untrack.extend([".debussy/runs", ".debussy/state.db"]);
    witness::git(root, &untrack);
    witness::git(root, &["commit", "-qm", "untrack the run data"]);
    let (code, events) = project.run(&["--restart"]);
    assert_eq!(code, 0, "{events:#?}");
}
