//! The worktree module against real git repositories: merges into the run's branch,
//! work brought back onto a phase's branch, and conflicts concluded only by the index.

use std::path::Path;
use std::time::Duration;

use super::*;
pub(super) use crate::git::test_git::git;
use crate::git::{ConflictKind, GitCli};

const GIT: GitCli = GitCli::new(Duration::from_secs(60));

pub(super) fn repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    git(root, &["init", "-q", "-b", "main"]);
    for (key, value) in [("user.name", "T"), ("user.email", "t@example.com")] {
        git(root, &["config", key, value]);
    }
    // As a run does: its worktrees are never part of the project's commits.
    crate::git::vcs::ignore_run_data(root).expect("ignore");
    std::fs::write(root.join("a.txt"), "one\ntwo\nthree\n").expect("write");
    git(root, &["add", "-A"]);
    git(root, &["commit", "-qm", "base"]);
    dir
}

pub(super) fn commit_in(dir: &Path, file: &str, text: &str) -> String {
    std::fs::write(dir.join(file), text).expect("write");
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-qm", file]);
    git(dir, &["rev-parse", "HEAD"])
}

pub(super) fn run_branch(root: &Path) -> RunBranch {
    RunBranch {
        name: "main".into(),
        tip: git(root, &["rev-parse", "main"]),
    }
}

/// The phase's worktree made from `main`, as a run makes it.
pub(super) async fn phase(root: &Path, id: &str) -> Worktree {
    let worktree = Worktree::of(root, "r1", id);
    assert!(ensure(&GIT, root, &worktree, "main").await.expect("add"));
    worktree
}

pub(super) async fn merge(root: &Path, run: &mut RunBranch, worktree: &Worktree) -> MergeOutcome {
    merge_into_run(
        &GIT,
        root,
        &merge_place(root, "r1"),
        run,
        &worktree.branch,
        &format!("merge {}", worktree.branch),
        true,
    )
    .await
    .expect("merge")
}

#[tokio::test]
async fn a_phase_branch_fast_forwards_then_merges_then_conflicts() {
    let dir = repo();
    let root = dir.path();
    let first = phase(root, "2").await;
    let second = phase(root, "3").await;
    let third = phase(root, "4").await;
    assert!(
        !ensure(&GIT, root, &first, "main").await.expect("again"),
        "reused"
    );
    commit_in(&first.path, "b.txt", "b\n");
    commit_in(&second.path, "c.txt", "c\n");
    commit_in(&third.path, "a.txt", "one\nTWO\nthree\n");

    let mut run = run_branch(root);
    // A fast-forward killed with debussy left its lock on the checkout's index.
    std::fs::write(root.join(".git/index.lock"), "").expect("stale lock");
    let ff = merge(root, &mut run, &first).await;
    assert!(
        matches!(
            ff,
            MergeOutcome::Merged {
                fast_forward: true,
                ..
            }
        ),
        "{ff:?}"
    );
    let merged = merge(root, &mut run, &second).await;
    assert!(
        matches!(
            merged,
            MergeOutcome::Merged {
                fast_forward: false,
                ..
            }
        ),
        "{merged:?}"
    );
    assert_eq!(
        git(root, &["log", "-1", "--format=%s"]),
        format!("merge {}", second.branch)
    );
    assert!(
        root.join("b.txt").exists() && root.join("c.txt").exists(),
        "the user's checkout of the run's branch follows"
    );
    assert_eq!(run.tip, git(root, &["rev-parse", "main"]));

    commit_in(root, "a.txt", "one\nzwei\nthree\n");
    run.tip = git(root, &["rev-parse", "main"]);
    let conflict = merge(root, &mut run, &third).await;
    assert_eq!(conflict, MergeOutcome::Conflict(vec!["a.txt".into()]));
    assert_eq!(
        std::fs::read_to_string(root.join("a.txt")).expect("read"),
        "one\nzwei\nthree\n",
        "the user's checkout is never half merged"
    );
    assert_eq!(
        git(root, &["status", "--porcelain", "--untracked-files=no"]),
        ""
    );

    let files = merge_into_worktree(&GIT, &third.path, &run.tip, "merge main")
        .await
        .expect("start");
    assert_eq!(files, ["a.txt"]);
    let unsettled = conclude_merge(&GIT, &third.path, &run.tip, &files, true)
        .await
        .expect_err("markers");
    assert_eq!(unsettled, Unsettled::Markers(vec!["a.txt".into()]));
    std::fs::write(third.path.join("a.txt"), "one\nzwei TWO\nthree\n").expect("resolve");
    conclude_merge(&GIT, &third.path, &run.tip, &files, true)
        .await
        .expect("conclude");
    let merged = merge(root, &mut run, &third).await;
    assert!(matches!(merged, MergeOutcome::Merged { .. }), "{merged:?}");

    // A parked worktree is taken up by the next phase on a new branch.
    let spare = root.join(WORKTREES_DIR).join("r1").join(".spare-1");
    park(&GIT, root, &first, &spare).await.expect("park");
    assert!(!branch_exists(&GIT, root, &first.branch).await && !first.path.exists());
    let fifth = Worktree::of(root, "r1", "5");
    adopt(&GIT, root, &spare, &fifth, "main")
        .await
        .expect("adopt");
    assert_eq!(
        std::fs::read_to_string(fifth.path.join("a.txt")).expect("read"),
        "one\nzwei TWO\nthree\n",
        "the adopted worktree holds the run branch's files"
    );
    assert_eq!(
        git(&fifth.path, &["branch", "--show-current"]),
        fifth.branch
    );
    let parked = root.join(WORKTREES_DIR).join("r1").join(".spare-2");
    park(&GIT, root, &fifth, &parked).await.expect("park");
    let idle = phase(root, "6").await;
    assert_eq!(merge(root, &mut run, &idle).await, MergeOutcome::UpToDate);
    remove(&GIT, root, &idle).await.expect("remove");
    remove_parked(&GIT, root, &[parked, merge_place(root, "r1")])
        .await
        .expect("remove parked");
    let (worktrees, branches) = leftovers(&GIT, root).await.expect("list");
    assert_eq!(worktrees.len(), 2, "{worktrees:?}");
    assert_eq!(branches.len(), 2, "{branches:?}");
    for wt in [&second, &third] {
        remove(&GIT, root, wt).await.expect("remove");
    }
    assert_eq!(
        leftovers(&GIT, root).await.expect("list"),
        (Vec::new(), Vec::new())
    );
    assert!(!root.join(WORKTREES_DIR).join("r1").exists());
}

/// A phase whose agent committed `n` files on a detached `HEAD` (or another branch).
/// The record git keeps of the worktree at `path`: `.git/worktrees/<name>`.
fn record_of(path: &Path) -> std::path::PathBuf {
    let link = std::fs::read_to_string(path.join(".git")).expect(".git");
    link.trim().trim_start_matches("gitdir: ").into()
}

/// `worktree` is one git keeps, on its own branch.
fn assert_on_its_branch(root: &Path, worktree: &Worktree) {
    assert_eq!(
        git(&worktree.path, &["symbolic-ref", "HEAD"]),
        format!("refs/heads/{}", worktree.branch)
    );
    let listed = git(root, &["worktree", "list", "--porcelain"]);
    let path = worktree.path.canonicalize().expect("path");
    assert!(
        listed.contains(&format!("worktree {}", path.display())),
        "{listed}"
    );
}

#[tokio::test]
async fn a_worktree_a_killed_move_left_is_made_anew_not_worked_in() {
    let dir = repo();
    let root = dir.path();
    let done = phase(root, "2").await;
    commit_in(&done.path, "b.txt", "b\n");
    let spare = root.join(WORKTREES_DIR).join("r1").join("spare");
    park(&GIT, root, &done, &spare).await.expect("park");
    // `git worktree move` renames the directory, then rewrites git's record of it:
    // killed in between, the record is left empty.
    let next = Worktree::of(root, "r1", "3");
    std::fs::rename(&spare, &next.path).expect("rename");
    std::fs::write(record_of(&next.path).join("gitdir"), "").expect("truncate");
    let lost = crate::git::Repo::discover(&next.path).expect_err("no usable record");
    assert!(lost.to_string().contains("no usable record"), "{lost}");

    let made = ensure(&GIT, root, &next, "main").await.expect("ensure");

    assert!(made, "made anew");
    assert_on_its_branch(root, &next);
    assert!(
        !next.path.join("b.txt").exists(),
        "from main, not the parked phase"
    );
}

#[tokio::test]
async fn a_branch_whose_worktree_cannot_be_made_again_says_why() {
    let dir = repo();
    let root = dir.path();
    let worktree = Worktree::of(root, "r1", "1");
    let elsewhere = root.join("elsewhere");
    git(
        root,
        &["worktree", "add", "-q", "-b", &worktree.branch, "elsewhere"],
    );

    let refused = ensure(&GIT, root, &worktree, "main")
        .await
        .expect_err("checked out elsewhere")
        .to_string();

    assert!(!refused.contains("already exists"), "{refused}");
    assert!(
        refused.contains(&*elsewhere.to_string_lossy()),
        "names where it is checked out: {refused}"
    );
}

#[tokio::test]
async fn a_worktree_git_was_still_adding_is_made_anew() {
    let dir = repo();
    let root = dir.path();
    let half = phase(root, "2").await;
    // What `git worktree add` keeps there until it has checked the files out.
    let record = record_of(&half.path);
    std::fs::write(record.join("locked"), "initializing\n").expect("lock");
    std::fs::write(record.join("HEAD"), format!("{}\n", "0".repeat(40))).expect("head");

    let made = ensure(&GIT, root, &half, "main").await.expect("ensure");

    assert!(made, "made anew");
    assert_on_its_branch(root, &half);
}

async fn moved_phase(root: &Path, how: &[&str]) -> (Worktree, String) {
    let worktree = phase(root, "1").await;
    commit_in(&worktree.path, "first.txt", "on the branch\n");
    git(&worktree.path, how);
    let made = commit_in(&worktree.path, "second.txt", "after the move\n");
    (worktree, made)
}

#[tokio::test]
async fn work_on_a_detached_head_or_another_branch_is_brought_back_onto_the_phase_branch() {
    for how in [
        &["checkout", "-q", "--detach"][..],
        &["checkout", "-q", "-b", "x"][..],
    ] {
        let dir = repo();
        let root = dir.path();
        let (worktree, made) = moved_phase(root, how).await;
        let run = run_branch(root);
        let salvaged = secure(&GIT, &worktree, &run.tip, 0).await.expect("secured");
        assert_eq!(salvaged.tip, made, "{how:?}");
        assert!(
            salvaged.notes[0].contains("brought back onto debussy/r1/phase-1"),
            "{salvaged:?}"
        );
        assert_eq!(git(root, &["rev-parse", &worktree.branch]), made);
        assert_eq!(
            git(&worktree.path, &["symbolic-ref", "HEAD"]),
            format!("refs/heads/{}", worktree.branch),
            "HEAD is back on the branch"
        );
        // Nothing left to do a second time.
        let again = secure(&GIT, &worktree, &run.tip, 0).await.expect("again");
        assert!(again.notes.is_empty(), "{again:?}");
    }
}

#[tokio::test]
async fn commits_a_reset_left_behind_are_named_and_nothing_is_merged() {
    let dir = repo();
    let root = dir.path();
    let worktree = phase(root, "1").await;
    let lost = commit_in(&worktree.path, "kept.txt", "work\n");
    git(&worktree.path, &["reset", "-q", "--hard", "HEAD~1"]);
    commit_in(&worktree.path, "other.txt", "other work\n");
    let run = run_branch(root);
    let Err(Unsaved::Work(places)) = secure(&GIT, &worktree, &run.tip, 0).await else {
        panic!("the reset's commit must be named");
    };
    assert!(places[0].contains(&lost[..12]), "{places:?}");
}

#[tokio::test]
async fn an_amended_commit_is_kept_in_the_branch_history_without_changing_the_tree() {
    let dir = repo();
    let root = dir.path();
    let worktree = phase(root, "1").await;
    let amended = commit_in(&worktree.path, "b.txt", "b\n");
    git(
        &worktree.path,
        &["commit", "-q", "--amend", "-m", "better words"],
    );
    let tree = git(&worktree.path, &["rev-parse", "HEAD^{tree}"]);
    let run = run_branch(root);
    let salvaged = secure(&GIT, &worktree, &run.tip, 0).await.expect("secured");
    assert_eq!(
        git(root, &["rev-parse", &format!("{}^{{tree}}", salvaged.tip)]),
        tree
    );
    assert!(
        GIT.succeeds(
            root,
            &["merge-base", "--is-ancestor", &amended, &worktree.branch]
        )
        .await,
        "the amended-away commit stays reachable"
    );
}

#[tokio::test]
async fn a_stash_or_uncommitted_work_holds_the_merge() {
    let dir = repo();
    let root = dir.path();
    let worktree = phase(root, "1").await;
    commit_in(&worktree.path, "b.txt", "b\n");
    std::fs::write(worktree.path.join("b.txt"), "stashed work\n").expect("write");
    git(&worktree.path, &["stash", "-q"]);
    let run = run_branch(root);
    let Err(Unsaved::Work(places)) = secure(&GIT, &worktree, &run.tip, 0).await else {
        panic!("the stash must be named");
    };
    assert!(places[0].starts_with("stash@{0}"), "{places:?}");
    // Applied, committed, dropped: nothing is held any more.
    git(&worktree.path, &["stash", "pop", "-q"]);
    let Err(Unsaved::Work(places)) = secure(&GIT, &worktree, &run.tip, 0).await else {
        panic!("uncommitted work must be named");
    };
    assert!(places[0].contains("uncommitted changes") && places[0].contains("b.txt"));
    commit_in(&worktree.path, "b.txt", "stashed work\n");
    secure(&GIT, &worktree, &run.tip, 0).await.expect("secured");
}

/// Phase `id` and the run's branch both changed `path`: the fix session's merge of the
/// run's branch into the phase's worktree is in progress.
async fn conflict_over(
    root: &Path,
    id: &str,
    ours: impl Fn(&Path),
    theirs: impl Fn(&Path),
) -> (Worktree, String, Vec<String>) {
    let worktree = phase(root, id).await;
    ours(&worktree.path);
    git(&worktree.path, &["add", "-A"]);
    git(&worktree.path, &["commit", "-qm", "ours"]);
    theirs(root);
    git(root, &["add", "-A"]);
    git(root, &["commit", "-qm", "theirs"]);
    let tip = git(root, &["rev-parse", "main"]);
    let files = merge_into_worktree(&GIT, &worktree.path, &tip, "merge main")
        .await
        .expect("start");
    (worktree, tip, files)
}

#[tokio::test]
async fn a_binary_conflict_is_resolved_only_when_the_index_says_so() {
    let dir = repo();
    let root = dir.path();
    let (worktree, tip, files) = conflict_over(
        root,
        "1",
        |dir| std::fs::write(dir.join("logo.png"), b"\x89PNG\0ours").expect("write"),
        |dir| std::fs::write(dir.join("logo.png"), b"\x89PNG\0theirs").expect("write"),
    )
    .await;
    assert_eq!(files, ["logo.png"]);
    // No markers in a binary file: a fix session that did nothing resolved nothing.
    let Err(Unsettled::Paths(paths)) =
        conclude_merge(&GIT, &worktree.path, &tip, &files, true).await
    else {
        panic!("a binary conflict is not settled by doing nothing");
    };
    assert_eq!(paths[0].kind, ConflictKind::Binary);
    git(&worktree.path, &["checkout", "--theirs", "--", "logo.png"]);
    git(&worktree.path, &["add", "logo.png"]);
    conclude_merge(&GIT, &worktree.path, &tip, &files, true)
        .await
        .expect("settled in the index");
    assert_eq!(
        std::fs::read(worktree.path.join("logo.png")).expect("read"),
        b"\x89PNG\0theirs"
    );
}

#[tokio::test]
async fn modify_delete_and_submodule_conflicts_wait_for_their_paths_to_be_settled() {
    let dir = repo();
    let root = dir.path();
    let (worktree, tip, files) = conflict_over(
        root,
        "1",
        |dir| std::fs::remove_file(dir.join("a.txt")).expect("delete"),
        |dir| std::fs::write(dir.join("a.txt"), "one\nchanged\nthree\n").expect("write"),
    )
    .await;
    assert_eq!(files, ["a.txt"]);
    let Err(Unsettled::Paths(paths)) =
        conclude_merge(&GIT, &worktree.path, &tip, &files, true).await
    else {
        panic!("modify/delete is not settled by the file being there");
    };
    assert_eq!(paths[0].kind, ConflictKind::DeletedOnOneSide);
    git(&worktree.path, &["rm", "-q", "a.txt"]);
    conclude_merge(&GIT, &worktree.path, &tip, &files, true)
        .await
        .expect("settled");

    // A submodule (a gitlink) at different commits on each side.
    let dir = repo();
    let root = dir.path();
    let base = git(root, &["rev-parse", "HEAD"]);
    git(
        root,
        &[
            "update-index",
            "--add",
            "--cacheinfo",
            &format!("160000,{base},lib"),
        ],
    );
    git(root, &["commit", "-qm", "a submodule"]);
    let (worktree, tip, files) = conflict_over(
        root,
        "2",
        |dir| {
            let head = git(dir, &["rev-parse", "HEAD"]);
            git(
                dir,
                &["update-index", "--cacheinfo", &format!("160000,{head},lib")],
            );
        },
        |dir| {
            std::fs::write(dir.join("x.txt"), "x\n").expect("write");
            git(dir, &["add", "x.txt"]);
            git(dir, &["commit", "-qm", "x"]);
            let head = git(dir, &["rev-parse", "HEAD"]);
            git(
                dir,
                &["update-index", "--cacheinfo", &format!("160000,{head},lib")],
            );
        },
    )
    .await;
    assert_eq!(files, ["lib"]);
    let Err(Unsettled::Paths(paths)) =
        conclude_merge(&GIT, &worktree.path, &tip, &files, true).await
    else {
        panic!("a submodule conflict is not settled by itself");
    };
    assert_eq!(paths[0].kind, ConflictKind::Submodule);
}

#[tokio::test]
async fn a_merge_the_fix_session_abandoned_is_not_a_resolution() {
    let dir = repo();
    let root = dir.path();
    let (worktree, tip, files) = conflict_over(
        root,
        "1",
        |dir| std::fs::write(dir.join("a.txt"), "ours\n").expect("write"),
        |dir| std::fs::write(dir.join("a.txt"), "theirs\n").expect("write"),
    )
    .await;
    git(&worktree.path, &["merge", "--abort"]);
    assert_eq!(
        conclude_merge(&GIT, &worktree.path, &tip, &files, true).await,
        Err(Unsettled::Abandoned)
    );
}

#[tokio::test]
async fn a_merge_a_killed_debussy_left_in_the_merge_place_is_abandoned_before_the_next() {
    let dir = repo();
    let root = dir.path();
    let first = phase(root, "1").await;
    commit_in(&first.path, "b.txt", "b\n");
    let place = merge_place(root, "r1");
    let mut run = run_branch(root);
    ensure_merge_place(&GIT, root, &place, &run.tip)
        .await
        .expect("place");
    // What a merge killed in its pre-merge-commit hook leaves.
    commit_in(root, "c.txt", "c\n");
    run.tip = git(root, &["rev-parse", "main"]);
    git(&place, &["checkout", "-q", "--detach", &run.tip]);
    git(&place, &["merge", "--no-commit", "--no-ff", &first.branch]);
    assert!(matches!(
        merge_state(&GIT, &place).await,
        MergeState::InProgress { .. }
    ));
    // And a lock a killed git left behind there.
    let admin = git(&place, &["rev-parse", "--git-dir"]);
    std::fs::write(std::path::Path::new(&admin).join("index.lock"), "").expect("lock");
    let merged = merge(root, &mut run, &first).await;
    assert!(matches!(merged, MergeOutcome::Merged { .. }), "{merged:?}");
    assert_eq!(merge_state(&GIT, root).await, MergeState::Clear);
}
