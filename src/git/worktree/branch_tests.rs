//! Merges into the run's branch as the user's trees stand: the branch checked out
//! elsewhere, moved, being rebased, with a commit being written or files not committed in
//! the tree that has it. Nothing is ever merged over or under the user's work.

use super::tests::{commit_in, git, merge, phase, repo, run_branch};
use super::*;

#[tokio::test]
async fn merges_go_into_the_run_branch_whatever_is_checked_out() {
    let dir = repo();
    let root = dir.path();
    let first = phase(root, "1").await;
    let mut run = run_branch(root);
    git(root, &["switch", "-q", "-c", "elsewhere"]);
    // The worktree branches from the run's branch, not from what is checked out now.
    commit_in(root, "user.txt", "the user's own work\n");
    let second = phase(root, "2").await;
    assert!(!second.path.join("user.txt").exists());
    commit_in(&first.path, "b.txt", "b\n");
    commit_in(&second.path, "c.txt", "c\n");
    for wt in [&first, &second] {
        let merged = merge(root, &mut run, wt).await;
        assert!(matches!(merged, MergeOutcome::Merged { .. }), "{merged:?}");
    }
    assert_eq!(git(root, &["branch", "--show-current"]), "elsewhere");
    assert!(
        !root.join("b.txt").exists(),
        "the user's branch is left alone"
    );
    assert_eq!(
        git(root, &["ls-tree", "--name-only", "main"]),
        "a.txt\nb.txt\nc.txt"
    );
    assert_eq!(run.tip, git(root, &["rev-parse", "main"]));
}

#[tokio::test]
async fn a_run_branch_moved_underneath_is_never_merged_over() {
    let dir = repo();
    let root = dir.path();
    let first = phase(root, "1").await;
    commit_in(&first.path, "b.txt", "b\n");
    let mut run = run_branch(root);
    let expected = run.tip.clone();
    let theirs = commit_in(root, "user.txt", "committed by the user mid-run\n");
    assert_eq!(
        merge(root, &mut run, &first).await,
        MergeOutcome::Moved {
            expected: expected.clone(),
            found: Some(theirs.clone()),
        }
    );
    assert_eq!(git(root, &["rev-parse", "main"]), theirs, "nothing merged");
    git(root, &["reset", "-q", "--hard", "HEAD~1"]);
    git(root, &["switch", "-q", "-c", "other"]);
    git(root, &["branch", "-q", "-D", "main"]);
    assert_eq!(
        merge(root, &mut run, &first).await,
        MergeOutcome::Moved {
            expected,
            found: None,
        }
    );
}

#[tokio::test]
async fn a_commit_the_user_is_writing_in_the_checkout_is_never_merged_under() {
    let dir = repo();
    let root = dir.path();
    let first = phase(root, "1").await;
    commit_in(&first.path, "b.txt", "b\n");
    let mut run = run_branch(root);
    let before = run.tip.clone();
    std::fs::write(root.join("a.txt"), "the user's\n").expect("write");
    let user = crate::git::test_git::CommitInEditor::start(root);

    assert_eq!(
        merge(root, &mut run, &first).await,
        MergeOutcome::CheckoutBusy {
            tree: root.canonicalize().expect("path"),
            pids: vec![user.pid()]
        }
    );
    assert_eq!(git(root, &["rev-parse", "main"]), before, "nothing merged");
    assert!(user.finish("the user's"), "the user's commit is not broken");
    assert_eq!(git(root, &["log", "-1", "--format=%s"]), "the user's");
    assert!(
        matches!(
            merge(root, &mut run, &first).await,
            MergeOutcome::Moved { .. }
        ),
        "the user's commit moved the branch"
    );
}

#[tokio::test]
async fn a_rebase_of_the_run_branch_under_way_is_never_merged_under() {
    let dir = repo();
    let root = dir.path();
    let first = phase(root, "1").await;
    commit_in(&first.path, "b.txt", "b\n");
    commit_in(root, "user.txt", "the user's\n");
    let mut run = run_branch(root);
    let before = run.tip.clone();
    // The user rebases main and stops at their commit to edit it: HEAD is detached
    // until the rebase ends, and `git rebase --abort` sets main back to where it began.
    let stopped = std::process::Command::new("git")
        .args(["rebase", "-q", "-i", "HEAD~1"])
        .current_dir(root)
        .env("GIT_SEQUENCE_EDITOR", "sed -i 1s/^pick/edit/")
        .output()
        .expect("git");
    assert!(stopped.status.success(), "{stopped:?}");

    let outcome = merge(root, &mut run, &first).await;
    let MergeOutcome::OperationUnderWay(under_way) = &outcome else {
        panic!("{outcome:?}");
    };
    assert_eq!(under_way.operation, "a rebase");
    assert_eq!(git(root, &["rev-parse", "main"]), before, "nothing merged");

    git(root, &["rebase", "--abort"]);
    assert!(
        matches!(
            merge(root, &mut run, &first).await,
            MergeOutcome::Merged { .. }
        ),
        "merged once the rebase is over"
    );
    assert_eq!(
        git(root, &["ls-tree", "--name-only", "main"]),
        "a.txt\nb.txt\nuser.txt"
    );
}

#[tokio::test]
async fn files_the_user_has_not_committed_are_never_merged_over() {
    let dir = repo();
    let root = dir.path();
    let first = phase(root, "1").await;
    commit_in(&first.path, "a.txt", "one\ntwo\nthree\nfour\n");
    commit_in(&first.path, "new.txt", "the phase's\n");
    let mut run = run_branch(root);
    let before = run.tip.clone();
    std::fs::write(root.join("a.txt"), "the user's, not committed\n").expect("write");

    assert_eq!(
        merge(root, &mut run, &first).await,
        MergeOutcome::CheckoutChanges {
            tree: root.canonicalize().expect("path"),
            paths: vec!["a.txt".into()]
        }
    );
    assert_eq!(git(root, &["rev-parse", "main"]), before, "nothing merged");
    assert_eq!(
        std::fs::read_to_string(root.join("a.txt")).expect("read"),
        "the user's, not committed\n"
    );

    git(root, &["checkout", "--", "a.txt"]);
    std::fs::write(root.join("new.txt"), "the user's, untracked\n").expect("write");
    assert_eq!(
        merge(root, &mut run, &first).await,
        MergeOutcome::CheckoutChanges {
            tree: root.canonicalize().expect("path"),
            paths: vec!["new.txt".into()]
        }
    );
    std::fs::remove_file(root.join("new.txt")).expect("remove");
    assert!(matches!(
        merge(root, &mut run, &first).await,
        MergeOutcome::Merged { .. }
    ));
}

#[tokio::test]
async fn a_linked_worktree_on_the_run_branch_is_fast_forwarded_with_it() {
    let dir = repo();
    let root = dir.path();
    let first = phase(root, "1").await;
    commit_in(&first.path, "b.txt", "b\n");
    let mut run = run_branch(root);
    let (_elsewhere, main_tree) = crate::git::test_git::main_in_a_worktree_of_its_own(root);

    assert!(matches!(
        merge(root, &mut run, &first).await,
        MergeOutcome::Merged { .. }
    ));
    assert_eq!(
        git(&main_tree, &["status", "--porcelain"]),
        "",
        "its files follow the branch, or they read as the merge undone"
    );
    assert_eq!(
        std::fs::read_to_string(main_tree.join("b.txt")).expect("read"),
        "b\n"
    );
}
