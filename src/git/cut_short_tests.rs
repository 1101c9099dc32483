//! Setting back a cut-short fast-forward in real repositories: both moments a kill can
//! cut it at, and the user's files it must never touch.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use git2::Oid;

use crate::git::Repo;
use crate::git::test_git::{git, main_in_a_worktree_of_its_own};

fn write(root: &Path, file: &str, text: &str, mode: u32) {
    let path = root.join(file);
    std::fs::write(&path, text).expect("write");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

/// A checkout on `main` at a commit with `a.txt` and `gone.txt`, and the commit `next`
/// after it changes `a.txt`, deletes `gone.txt` and adds `new file's.txt` (a name to
/// quote) and an executable `tool.sh`; `next`'s id.
fn checkout_before_next() -> (tempfile::TempDir, Oid) {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    git(root, &["init", "-q", "-b", "main"]);
    for (key, value) in [("user.name", "T"), ("user.email", "t@example.com")] {
        git(root, &["config", key, value]);
    }
    write(root, "a.txt", "one\n", 0o644);
    write(root, "gone.txt", "gone\n", 0o644);
    git(root, &["add", "-A"]);
    git(root, &["commit", "-qm", "base"]);
    git(root, &["switch", "-qc", "next"]);
    the_next_files(root);
    git(root, &["add", "-A"]);
    git(root, &["commit", "-qm", "next"]);
    let next = git(root, &["rev-parse", "HEAD"]);
    git(root, &["switch", "-q", "main"]);
    (dir, Oid::from_str(&next).expect("id"))
}

/// The working tree's files as `next` has them.
fn the_next_files(root: &Path) {
    write(root, "a.txt", "ONE\n", 0o644);
    std::fs::remove_file(root.join("gone.txt")).expect("rm");
    write(root, "new file's.txt", "new\n", 0o644);
    write(root, "tool.sh", "#!/bin/sh\n", 0o755);
}

/// What setting back a fast-forward to `to` that was cut short sets back in `root`.
fn set_back(root: &Path, to: Oid) -> Vec<String> {
    let repo = Repo::discover(root).expect("repo");
    repo.undo_cut_short_fast_forward(to).expect("set back")
}

/// The checkout is clean, on `main` as it was, and the fast-forward goes through.
fn assert_clean_and_mergeable(root: &Path) {
    assert_eq!(git(root, &["status", "--porcelain"]), "");
    assert_eq!(
        std::fs::read_to_string(root.join("a.txt")).expect("a"),
        "one\n"
    );
    assert!(root.join("gone.txt").exists());
    git(root, &["merge", "--ff-only", "-q", "next"]);
}

const EVERY_PATH: [&str; 4] = ["a.txt", "gone.txt", "new file's.txt", "tool.sh"];

#[test]
fn files_written_before_the_index_are_set_back() {
    let (dir, next) = checkout_before_next();
    let root = dir.path();
    the_next_files(root);

    let set_back = set_back(root, next);

    assert_eq!(set_back, EVERY_PATH);
    assert_clean_and_mergeable(root);
}

#[test]
fn files_staged_before_the_branch_moved_are_set_back() {
    let (dir, next) = checkout_before_next();
    let root = dir.path();
    git(root, &["read-tree", "-m", "-u", "HEAD", "next"]);
    assert_ne!(git(root, &["status", "--porcelain"]), "");

    let set_back = set_back(root, next);

    assert_eq!(set_back, EVERY_PATH);
    assert_clean_and_mergeable(root);
}

#[test]
fn what_git_leaves_of_a_file_it_was_writing_is_set_back() {
    let (dir, next) = checkout_before_next();
    let root = dir.path();
    // Killed between removing the old `a.txt` and creating the new one, and between
    // creating the new file and writing it.
    std::fs::remove_file(root.join("a.txt")).expect("rm");
    write(root, "new file's.txt", "", 0o644);

    let set_back = set_back(root, next);

    assert_eq!(set_back, ["a.txt", "new file's.txt"]);
    assert_clean_and_mergeable(root);
}

#[test]
fn a_file_unlike_the_merges_is_the_users_and_stays() {
    let (dir, next) = checkout_before_next();
    let root = dir.path();
    write(root, "a.txt", "the user's\n", 0o644);
    write(root, "new file's.txt", "new\n", 0o644);
    write(root, "tool.sh", "#!/bin/sh\n", 0o644);

    let set_back = set_back(root, next);

    assert_eq!(set_back, ["new file's.txt"]);
    assert_eq!(
        std::fs::read_to_string(root.join("a.txt")).expect("a"),
        "the user's\n"
    );
    assert!(root.join("tool.sh").exists(), "a mode unlike the merge's");
}

#[test]
fn nothing_is_set_back_toward_a_commit_the_checkout_does_not_lead_to() {
    let (dir, next) = checkout_before_next();
    let root = dir.path();
    write(root, "b.txt", "b\n", 0o644);
    git(root, &["add", "-A"]);
    git(root, &["commit", "-qm", "the user's own"]);
    the_next_files(root);
    let before = git(root, &["status", "--porcelain"]);

    let set_back = set_back(root, next);

    assert!(set_back.is_empty(), "{set_back:?}");
    assert_eq!(git(root, &["status", "--porcelain"]), before);
}

#[test]
fn a_file_reached_through_a_linked_directory_is_never_touched() {
    let (dir, _) = checkout_before_next();
    let root = dir.path();
    git(root, &["switch", "-qc", "deeper"]);
    std::fs::create_dir(root.join("docs")).expect("mkdir");
    write(root, "docs/new.txt", "new\n", 0o644);
    git(root, &["add", "-A"]);
    git(root, &["commit", "-qm", "deeper"]);
    let deeper = Oid::from_str(&git(root, &["rev-parse", "HEAD"])).expect("id");
    git(root, &["switch", "-q", "main"]);
    let outside = tempfile::tempdir().expect("outside");
    write(outside.path(), "new.txt", "new\n", 0o644);
    std::os::unix::fs::symlink(outside.path(), root.join("docs")).expect("link");

    let set_back = set_back(root, deeper);

    assert!(set_back.is_empty(), "{set_back:?}");
    assert!(outside.path().join("new.txt").exists());
}

#[tokio::test]
async fn a_linked_worktree_on_the_branch_is_set_back_too() {
    let (dir, next) = checkout_before_next();
    let root = dir.path();
    // The user works on a feature branch, with main checked out in a worktree of its own;
    // the killed run was fast-forwarding main there from its merge place.
    let (elsewhere, main_tree) = main_in_a_worktree_of_its_own(root);
    let place = elsewhere.path().join("merge");
    git(
        root,
        &[
            "worktree",
            "add",
            "-q",
            "--detach",
            place.to_str().expect("utf-8"),
            &next.to_string(),
        ],
    );
    the_next_files(&main_tree);

    let said = crate::git::vcs::undo_cut_short_fast_forwards(root.to_path_buf(), vec![place])
        .await
        .expect("set back");

    assert_eq!(said.len(), 1, "{said:?}");
    assert!(
        said[0].contains(&format!(
            "in the worktree {}",
            main_tree.canonicalize().expect("path").display()
        )),
        "{said:?}"
    );
    assert_clean_and_mergeable(&main_tree);
    assert_eq!(
        git(root, &["status", "--porcelain"]),
        "",
        "the checkout is untouched"
    );
}
