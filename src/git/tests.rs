use std::fs;
use std::path::Path;
use std::time::Duration;

use git2::Repository;

use super::*;

/// A repository in a temp dir with a local identity, so the user's config never matters.
pub(super) fn repo() -> (tempfile::TempDir, Repo) {
    let dir = tempfile::tempdir().expect("tempdir");
    let raw = Repository::init(dir.path()).expect("init");
    let mut config = raw.config().expect("config");
    config.set_str("user.name", "Test").expect("name");
    config
        .set_str("user.email", "test@example.com")
        .expect("email");
    let repo = Repo::discover(dir.path()).expect("discover");
    (dir, repo)
}

pub(super) const WAIT: Duration = Duration::from_secs(2);
pub(super) const GIT: GitCli = GitCli::new(Duration::from_secs(60));
const HOOKS: HookPolicy = HookPolicy::Run {
    timeout: Duration::from_secs(60),
};

fn hook(dir: &Path, name: &str, script: &str) {
    use std::os::unix::fs::PermissionsExt as _;
    let path = dir.join(name);
    fs::create_dir_all(dir).expect("hooks dir");
    fs::write(&path, format!("#!/bin/sh\n{script}\n")).expect("hook");
    fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).expect("chmod");
}

fn last_message(repo: &Repo) -> String {
    let head = repo.head_commit().expect("head").expect("a commit");
    repo.inner
        .find_commit(head)
        .expect("commit")
        .message()
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn a_linked_worktree_runs_the_repositorys_hooks() {
    let (dir, repo) = repo();
    fs::write(dir.path().join("a.txt"), "one\n").expect("write");
    repo.commit_all("base", &GIT, WAIT, HookPolicy::Skip)
        .expect("base");
    hook(
        &dir.path().join(".git/hooks"),
        "pre-commit",
        "echo 'refused in the worktree' >&2; exit 1",
    );
    let linked = dir.path().join("linked");
    let added = std::process::Command::new("git")
        .args(["worktree", "add", "-q", "-b", "side"])
        .arg(&linked)
        .current_dir(dir.path())
        .status()
        .expect("git worktree add");
    assert!(added.success());
    let worktree = Repo::discover(&linked).expect("discover");
    fs::write(linked.join("b.txt"), "two\n").expect("write");
    let err = worktree
        .commit_all("work", &GIT, WAIT, HOOKS)
        .expect_err("the hook refuses");
    assert!(err.to_string().contains("refused in the worktree"), "{err}");
}

#[test]
fn a_failing_pre_commit_hook_refuses_the_commit_with_its_output() {
    let (dir, repo) = repo();
    hook(
        &dir.path().join(".git/hooks"),
        "pre-commit",
        "echo 'lint: trailing whitespace in a.txt' >&2; exit 1",
    );
    fs::write(dir.path().join("a.txt"), "one \n").expect("write");
    let err = repo
        .commit_all("work", &GIT, WAIT, HOOKS)
        .expect_err("refused");
    let text = err.to_string();
    assert!(
        text.contains("the pre-commit hook refused the commit (exit code 1)")
            && text.contains("lint: trailing whitespace in a.txt"),
        "{text}"
    );
    assert_eq!(repo.head_commit().expect("head"), None, "nothing committed");
    // Off, the hook is not run and the commit is made.
    assert!(matches!(
        repo.commit_all("work", &GIT, WAIT, HookPolicy::Skip)
            .expect("commit"),
        CommitOutcome::Committed { .. }
    ));
}

#[test]
fn commit_msg_edits_the_message_and_pre_commit_may_stage_more() {
    let (dir, repo) = repo();
    let hooks = dir.path().join("ci-hooks");
    repo.inner
        .config()
        .expect("config")
        .set_str("core.hooksPath", "ci-hooks")
        .expect("hooksPath");
    hook(
        &hooks,
        "pre-commit",
        "echo generated > gen.txt && git add gen.txt",
    );
    hook(
        &hooks,
        "commit-msg",
        "printf '\\nSigned-off-by: hook\\n' >> \"$1\"",
    );
    hook(&hooks, "post-commit", "exit 3");
    fs::write(dir.path().join("a.txt"), "one\n").expect("write");
    let CommitOutcome::Committed { id, .. } =
        repo.commit_all("work", &GIT, WAIT, HOOKS).expect("commit")
    else {
        panic!("nothing committed")
    };
    assert_eq!(last_message(&repo), "work\nSigned-off-by: hook\n");
    let tree = repo
        .inner
        .find_commit(id)
        .expect("commit")
        .tree()
        .expect("tree");
    assert!(
        tree.get_name("gen.txt").is_some(),
        "what pre-commit staged is committed"
    );
}

#[test]
fn unborn_branch_is_reported_and_committable() {
    let (dir, repo) = repo();
    assert!(matches!(
        repo.head().expect("head"),
        HeadState::Unborn { .. }
    ));
    assert_eq!(
        repo.commit_all("empty", &GIT, WAIT, HOOKS).expect("commit"),
        CommitOutcome::NothingToCommit
    );
    fs::write(dir.path().join("a.txt"), "one\n").expect("write");
    let CommitOutcome::Committed {
        files_changed,
        identity,
        ..
    } = repo.commit_all("first", &GIT, WAIT, HOOKS).expect("commit")
    else {
        panic!("expected a commit")
    };
    assert_eq!((files_changed, identity), (1, Identity::Configured));
    assert!(matches!(
        repo.head().expect("head"),
        HeadState::Branch { .. }
    ));
}

#[test]
fn commit_all_stages_new_modified_and_deleted_but_not_ignored() {
    let (dir, repo) = repo();
    fs::write(dir.path().join(".gitignore"), "secret.txt\n").expect("write");
    fs::write(dir.path().join("keep.txt"), "1\n").expect("write");
    fs::write(dir.path().join("gone.txt"), "1\n").expect("write");
    repo.commit_all("base", &GIT, WAIT, HOOKS).expect("commit");

    fs::write(dir.path().join("keep.txt"), "1\n2\n").expect("write");
    fs::remove_file(dir.path().join("gone.txt")).expect("rm");
    fs::create_dir(dir.path().join("new")).expect("mkdir");
    fs::write(dir.path().join("new/file.rs"), "fn main() {}\n").expect("write");
    fs::write(dir.path().join("secret.txt"), "token\n").expect("write");
    let CommitOutcome::Committed { files_changed, .. } =
        repo.commit_all("work", &GIT, WAIT, HOOKS).expect("commit")
    else {
        panic!("expected a commit")
    };
    assert_eq!(files_changed, 3);
    assert!(repo.dirty_tracked_files().expect("status").is_empty());
    let head = repo
        .inner
        .head()
        .expect("head")
        .peel_to_tree()
        .expect("tree");
    assert!(
        head.get_path(Path::new("secret.txt")).is_err(),
        "ignored file was committed"
    );
    assert!(
        head.get_path(Path::new("gone.txt")).is_err(),
        "deletion was not staged"
    );
    assert_eq!(
        repo.commit_all("again", &GIT, WAIT, HOOKS).expect("commit"),
        CommitOutcome::NothingToCommit
    );
}

#[test]
fn changes_since_lists_untracked_files_with_line_counts() {
    let (dir, repo) = repo();
    fs::write(dir.path().join("a.txt"), "1\n2\n3\n").expect("write");
    repo.commit_all("base", &GIT, WAIT, HOOKS).expect("commit");
    let base = repo.head_commit().expect("head");
    fs::write(dir.path().join("a.txt"), "1\n3\n4\n5\n").expect("write");
    fs::write(dir.path().join("b.txt"), "x\ny\n").expect("write");
    let mut changes = repo.changes_since(base).expect("diff");
    changes.sort_by(|a, b| a.path.cmp(&b.path));
    assert_eq!(
        changes,
        [
            FileChange {
                path: "a.txt".into(),
                kind: ChangeKind::Modified,
                insertions: 2,
                deletions: 1
            },
            FileChange {
                path: "b.txt".into(),
                kind: ChangeKind::Added,
                insertions: 2,
                deletions: 0
            },
        ]
    );
    assert_eq!(
        diffstat(&changes),
        "M a.txt | +2 -1\nA b.txt | +2 -0\n2 files changed, 4 insertions(+), 1 deletion(-)"
    );
    // Changes committed mid-phase still count against the phase's base.
    repo.commit_all("checkpoint", &GIT, WAIT, HOOKS)
        .expect("commit");
    assert_eq!(repo.changes_since(base).expect("diff").len(), 2);
}

#[test]
fn dirty_tracked_files_ignores_untracked() {
    let (dir, repo) = repo();
    fs::write(dir.path().join("a.txt"), "1\n").expect("write");
    repo.commit_all("base", &GIT, WAIT, HOOKS).expect("commit");
    fs::write(dir.path().join("untracked.txt"), "1\n").expect("write");
    assert!(repo.dirty_tracked_files().expect("status").is_empty());
    fs::write(dir.path().join("a.txt"), "2\n").expect("write");
    assert_eq!(repo.dirty_tracked_files().expect("status"), ["a.txt"]);
}

#[test]
fn detached_head_is_reported() {
    let (dir, repo) = repo();
    fs::write(dir.path().join("a.txt"), "1\n").expect("write");
    repo.commit_all("base", &GIT, WAIT, HOOKS).expect("commit");
    let id = repo.head_commit().expect("head").expect("commit");
    repo.inner.set_head_detached(id).expect("detach");
    assert_eq!(
        repo.head().expect("head"),
        HeadState::Detached { commit: id }
    );
}

#[test]
fn stale_index_lock_is_removed() {
    let (dir, repo) = repo();
    fs::write(dir.path().join("a.txt"), "1\n").expect("write");
    fs::write(dir.path().join(".git/index.lock"), "").expect("lock");
    let CommitOutcome::Committed {
        removed_stale_lock, ..
    } = repo
        .commit_all("after kill", &GIT, WAIT, HOOKS)
        .expect("commit")
    else {
        panic!("expected a commit")
    };
    assert!(removed_stale_lock.is_some_and(|lock| lock.last_written.is_some()));
}

#[test]
fn live_index_lock_fails_after_waiting() {
    let (dir, repo) = repo();
    fs::write(dir.path().join("a.txt"), "1\n").expect("write");
    let lock_path = dir.path().join(".git/index.lock");
    let _held = fs::File::create(&lock_path).expect("lock");
    let err = repo
        .commit_all("blocked", &GIT, Duration::from_millis(200), HOOKS)
        .expect_err("must fail");
    let GitError::IndexLocked { pids, .. } = &err else {
        panic!("wrong error: {err}")
    };
    assert!(pids.contains(&std::process::id()));
    assert!(err.to_string().contains("index.lock"));
}

#[test]
fn not_a_repository_says_how_to_fix_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let err = Repo::discover(dir.path()).expect_err("no repo");
    assert!(
        err.to_string().contains("is not inside a git repository"),
        "{err}"
    );
    let help = miette::Diagnostic::help(&err).expect("a fix").to_string();
    assert!(help.contains("git init"), "{help}");
}

#[test]
fn a_hook_past_git_timeout_is_stopped_with_what_it_started() {
    let (dir, repo) = repo();
    let scratch = tempfile::tempdir().expect("scratch");
    let pid_file = scratch.path().join("sleep.pid");
    hook(
        &dir.path().join(".git/hooks"),
        "pre-commit",
        &format!("sleep 60 & echo $! > '{}'; wait", pid_file.display()),
    );
    fs::write(dir.path().join("a.txt"), "one\n").expect("write");
    let started = std::time::Instant::now();
    let err = repo
        .commit_all(
            "work",
            &GIT,
            WAIT,
            HookPolicy::Run {
                timeout: Duration::from_secs(1),
            },
        )
        .expect_err("stopped");
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    assert!(
        err.to_string()
            .contains("did not finish within git.timeout (1s) and was stopped"),
        "{err}"
    );
    let pid: i32 = fs::read_to_string(&pid_file)
        .expect("pid")
        .trim()
        .parse()
        .expect("number");
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_ok()
        && fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| !stat.contains(") Z "))
    {
        assert!(
            std::time::Instant::now() < deadline,
            "what the hook started outlived it"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(repo.head_commit().expect("head"), None, "nothing committed");
}

#[test]
fn an_index_lock_a_commit_in_its_editor_keeps_is_waited_on_and_left() {
    let (dir, repo) = repo();
    fs::write(dir.path().join("a.txt"), "1\n").expect("write");
    repo.commit_all("base", &GIT, WAIT, HOOKS).expect("base");
    fs::write(dir.path().join("a.txt"), "2\n").expect("write");
    let user = test_git::CommitInEditor::start(dir.path());
    let lock = dir.path().join(".git/index.lock");
    assert!(lock.exists(), "git keeps its lock while the editor runs");

    fs::write(dir.path().join("b.txt"), "the agent's\n").expect("write");
    let err = repo
        .commit_all("checkpoint", &GIT, Duration::from_millis(200), HOOKS)
        .expect_err("the index is in use");
    let GitError::IndexLocked { pids, .. } = &err else {
        panic!("wrong error: {err}")
    };
    assert_eq!(pids, &[user.pid()]);
    assert!(lock.exists(), "the lock is the commit's, not removed");

    assert!(user.finish("the user's"), "the user's commit is not broken");
    assert_eq!(last_message(&repo), "the user's\n");
    let outcome = repo
        .commit_all("checkpoint", &GIT, WAIT, HOOKS)
        .expect("commit");
    assert!(
        matches!(
            outcome,
            CommitOutcome::Committed {
                removed_stale_lock: None,
                ..
            }
        ),
        "{outcome:?}"
    );
}
