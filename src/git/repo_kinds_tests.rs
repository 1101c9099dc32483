//! Repositories that are not plain: a shallow clone, clean filters, a sparse checkout,
//! signing, formats libgit2 cannot read, a repository made inside the work tree,
//! conflicts left unresolved, and a checkout that left the branch a run commits on.

use std::fs;
use std::time::Duration;

use super::tests::{GIT, WAIT, repo};
use super::*;

/// A repository whose first commit ("base") holds `a.txt` with `text`.
fn repo_with_a(text: &str) -> (tempfile::TempDir, Repo) {
    let (dir, repo) = repo();
    fs::write(dir.path().join("a.txt"), text).expect("write");
    repo.commit_all("base", &GIT, WAIT, HookPolicy::Skip)
        .expect("base");
    (dir, repo)
}

/// A shallow clone's history ends at its boundary: asked from the repository or from
/// one of its worktrees, the ancestry questions stop there instead of failing on the
/// parents it lacks (libgit2's walk does not stop, and in a worktree does not see the
/// boundary).
#[tokio::test]
async fn ancestry_in_a_shallow_clone_stops_at_its_boundary() {
    use super::test_git::git;
    let (origin_dir, origin) = repo();
    let origin_root = origin_dir.path();
    for n in 0..3 {
        fs::write(origin_root.join("f.txt"), format!("{n}\n")).expect("write");
        origin
            .commit_all(&format!("c{n}"), &GIT, WAIT, HookPolicy::Skip)
            .expect("commit");
    }
    let clone_dir = tempfile::tempdir().expect("tempdir");
    let clone_root = clone_dir.path().join("clone");
    let origin_url = format!("file://{}", origin_root.display());
    git(
        clone_dir.path(),
        &["clone", "-q", "--depth", "1", &origin_url, "clone"],
    );
    git(&clone_root, &["config", "user.name", "Test"]);
    git(&clone_root, &["config", "user.email", "test@example.com"]);
    let boundary: git2::Oid = git(&clone_root, &["rev-parse", "HEAD"])
        .parse()
        .expect("oid");
    git(&clone_root, &["worktree", "add", "-q", "-b", "side", "wt"]);
    let worktree_root = clone_root.join("wt");
    fs::write(worktree_root.join("g.txt"), "new\n").expect("write");
    git(&worktree_root, &["add", "-A"]);
    git(&worktree_root, &["commit", "-q", "-m", "on top"]);
    let new: git2::Oid = git(&worktree_root, &["rev-parse", "HEAD"])
        .parse()
        .expect("oid");
    let cli = GitCli::new(Duration::from_secs(30));
    for root in [&clone_root, &worktree_root] {
        assert_eq!(
            cli.only_in(root, &[new], &[boundary]).await.expect("walk"),
            vec![new]
        );
        assert_eq!(
            cli.only_in(root, &[new], &[]).await.expect("walk"),
            vec![new, boundary]
        );
        assert!(cli.is_ancestor(root, boundary, new).await.expect("ask"));
        assert!(!cli.is_ancestor(root, new, boundary).await.expect("ask"));
        assert!(cli.adds_nothing(root, new, boundary).await.expect("merge"));
        assert!(!cli.adds_nothing(root, boundary, new).await.expect("merge"));
    }
    let missing = git2::Oid::from_str(&"1".repeat(40)).expect("oid");
    assert_eq!(
        cli.only_in(&clone_root, &[missing, new], &[missing])
            .await
            .expect("walk"),
        vec![new, boundary]
    );
    assert!(cli.is_ancestor(&clone_root, missing, new).await.is_err());
}

/// A clean filter (Git LFS's, git-crypt's) turns what the agent wrote into what the
/// repository keeps: a commit stores what `git add` would, never the raw file.
#[test]
fn a_commit_stores_what_the_clean_filter_makes() {
    use super::test_git::git;
    let (dir, repo) = repo();
    let root = dir.path();
    fs::write(root.join(".gitattributes"), "*.up filter=upper\n").expect("write");
    git(root, &["config", "filter.upper.clean", "tr a-z A-Z"]);
    git(root, &["config", "filter.upper.smudge", "cat"]);
    repo.commit_all("base", &GIT, WAIT, HookPolicy::Skip)
        .expect("commit");
    fs::write(root.join("secret.up"), "hello\n").expect("write");
    repo.commit_all("filtered", &GIT, WAIT, HookPolicy::Skip)
        .expect("commit");
    assert_eq!(git(root, &["show", "HEAD:secret.up"]), "HELLO");
    assert_eq!(git(root, &["status", "--porcelain"]), "");
}

/// A repository with `inside/a.txt` and `outside/b.txt` committed, checked out sparse
/// with only `inside/` in its cone.
fn sparse_checkout() -> (tempfile::TempDir, Repo) {
    let (dir, repo) = repo();
    let root = dir.path();
    for file in ["inside/a.txt", "outside/b.txt"] {
        fs::create_dir_all(root.join(file).parent().expect("parent")).expect("mkdir");
        fs::write(root.join(file), "1\n").expect("write");
    }
    repo.commit_all("base", &GIT, WAIT, HookPolicy::Skip)
        .expect("commit");
    super::test_git::git(root, &["sparse-checkout", "set", "inside"]);
    let repo = Repo::discover(root).expect("discover");
    (dir, repo)
}

/// In a sparse checkout the files outside its cone are not in the working tree, and are
/// not deleted by a commit.
#[test]
fn a_commit_in_a_sparse_checkout_keeps_the_files_outside_it() {
    use super::test_git::git;
    let (dir, repo) = sparse_checkout();
    let root = dir.path();
    assert!(!root.join("outside/b.txt").exists());
    fs::write(root.join("inside/a.txt"), "2\n").expect("write");
    repo.commit_all("work", &GIT, WAIT, HookPolicy::Skip)
        .expect("commit");
    assert_eq!(
        git(root, &["ls-tree", "-r", "--name-only", "HEAD"]),
        "inside/a.txt\noutside/b.txt"
    );
    assert_eq!(git(root, &["show", "HEAD:inside/a.txt"]), "2");
}

/// With `commit.gpgSign`, debussy's commits are signed as `git commit` signs them (here
/// with an SSH key, `gpg.format=ssh`), and the signature verifies. Needs `ssh-keygen`
/// (openssh-client), so it is `#[ignore]`d and run with `--run-ignored all`.
#[test]
#[ignore = "needs ssh-keygen (openssh-client); run with --run-ignored all"]
fn a_commit_is_signed_when_the_repository_asks_for_it() {
    use super::test_git::git;
    let (dir, repo) = repo();
    let root = dir.path();
    let keys = tempfile::tempdir().expect("tempdir");
    let key = keys.path().join("key");
    let made = std::process::Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-C", "test", "-f"])
        .arg(&key)
        .output()
        .expect("ssh-keygen must be installed (openssh-client)");
    assert!(made.status.success(), "{made:?}");
    let public = fs::read_to_string(key.with_extension("pub")).expect("public key");
    let signers = keys.path().join("allowed_signers");
    fs::write(&signers, format!("test@example.com {public}")).expect("write");
    git(root, &["config", "gpg.format", "ssh"]);
    git(root, &["config", "user.signingKey", &key.to_string_lossy()]);
    git(
        root,
        &[
            "config",
            "gpg.ssh.allowedSignersFile",
            &signers.to_string_lossy(),
        ],
    );
    git(root, &["config", "commit.gpgSign", "true"]);
    fs::write(root.join("a.txt"), "1\n").expect("write");
    repo.commit_all("signed", &GIT, WAIT, HookPolicy::Skip)
        .expect("commit");
    assert!(
        git(root, &["cat-file", "commit", "HEAD"]).contains("gpgsig -----BEGIN SSH SIGNATURE-----")
    );
    git(root, &["verify-commit", "HEAD"]);
}

/// Outside a sparse checkout's cone the files are not in the working tree, and are not
/// changes: not dirty, not uncommitted, not in a checkpoint's list; a change inside is.
#[test]
fn a_sparse_checkout_has_only_its_own_changes() {
    let (dir, repo) = sparse_checkout();
    let root = dir.path();
    let head = repo.head_commit().expect("head");
    assert_eq!(
        repo.dirty_tracked_files().expect("status"),
        Vec::<String>::new()
    );
    assert_eq!(
        repo.uncommitted_files().expect("status"),
        Vec::<String>::new()
    );
    assert_eq!(repo.changes_since(head).expect("diff"), Vec::new());
    fs::write(root.join("inside/a.txt"), "2\n").expect("write");
    assert_eq!(
        repo.dirty_tracked_files().expect("status"),
        ["inside/a.txt"]
    );
    assert_eq!(repo.uncommitted_files().expect("status"), ["inside/a.txt"]);
    let changes = repo.changes_since(head).expect("diff");
    assert_eq!(changes.len(), 1, "{changes:?}");
    assert_eq!(changes[0].path, "inside/a.txt");
}

/// A repository git uses and libgit2 cannot read is named as such, with what to do, not
/// taken for no repository: one of SHA-256 objects, and one with a split index.
#[tokio::test]
async fn a_repository_libgit2_cannot_read_is_named_with_the_way_out() {
    use super::test_git::git;
    let dir = tempfile::tempdir().expect("tempdir");
    git(dir.path(), &["init", "-q", "--object-format=sha256"]);
    let err = Repo::discover(dir.path()).expect_err("sha-256");
    assert!(matches!(err, GitError::Unsupported { .. }), "{err:?}");
    let help = miette::Diagnostic::help(&err).expect("help").to_string();
    assert!(
        help.contains("SHA-256") && help.contains("--no-auto-commit"),
        "{help}"
    );

    let (dir, _) = repo_with_a("1\n");
    let root = dir.path();
    git(root, &["config", "core.splitIndex", "true"]);
    git(root, &["update-index", "--split-index"]);
    let err = vcs::preflight(root.to_path_buf(), false)
        .await
        .expect_err("split index");
    let help = miette::Diagnostic::help(&err).expect("help").to_string();
    assert!(
        help.contains("git update-index --no-split-index"),
        "{err}: {help}"
    );
    git(root, &["config", "core.splitIndex", "false"]);
    git(root, &["update-index", "--no-split-index"]);
    assert!(vcs::preflight(root.to_path_buf(), false).await.is_ok());
}

/// A git repository the agent made inside the work tree (`git init`, a clone) would be
/// committed as a gitlink, without its files, which go with a phase's worktree: the commit
/// is refused, naming it. With its `.git` removed its files are committed; a gitlink the
/// last commit already had (a repository the user keeps that way) is no reason to refuse.
#[test]
fn a_repository_made_inside_the_work_tree_is_refused_not_committed_without_its_files() {
    use super::test_git::git;
    let (dir, repo) = repo_with_a("1\n");
    let root = dir.path();
    let refused_for_app = || {
        let err = repo
            .commit_all("work", &GIT, WAIT, HookPolicy::Skip)
            .expect_err("refused");
        assert!(
            matches!(&err, GitError::EmbeddedRepository { paths } if paths == &["app"]),
            "{err:?}"
        );
    };
    let app = root.join("app");
    fs::create_dir(&app).expect("mkdir");
    git(&app, &["init", "-q"]);
    fs::write(app.join("main.txt"), "precious\n").expect("write");
    // Before its first commit, git refuses to stage it at all.
    refused_for_app();
    git(&app, &["add", "main.txt"]);
    git(
        &app,
        &[
            "-c",
            "user.name=T",
            "-c",
            "user.email=t@e",
            "commit",
            "-q",
            "-m",
            "x",
        ],
    );
    refused_for_app();
    assert!(app.join("main.txt").is_file());

    let kept = tempfile::tempdir().expect("tempdir");
    fs::rename(app.join(".git"), kept.path().join("app.git")).expect("move .git");
    repo.commit_all("work", &GIT, WAIT, HookPolicy::Skip)
        .expect("commit");
    assert_eq!(git(root, &["show", "HEAD:app/main.txt"]), "precious");

    git(root, &["rm", "-q", "-r", "--cached", "app"]);
    fs::rename(kept.path().join("app.git"), app.join(".git")).expect("restore .git");
    git(root, &["add", "app"]);
    git(root, &["commit", "-q", "-m", "keep app as a gitlink"]);
    fs::write(root.join("a.txt"), "2\n").expect("write");
    repo.commit_all("more", &GIT, WAIT, HookPolicy::Skip)
        .expect("a known gitlink is no reason to refuse");

    // A submodule the agent adds is declared in `.gitmodules`: committed as git would.
    git(
        root,
        &[
            "-c",
            "protocol.file.allow=always",
            "submodule",
            "add",
            "-q",
            &app.to_string_lossy(),
            "lib",
        ],
    );
    repo.commit_all("submodule", &GIT, WAIT, HookPolicy::Skip)
        .expect("a declared submodule is committed");
    assert!(git(root, &["ls-tree", "HEAD", "lib"]).starts_with("160000 commit"));
}

#[test]
fn commits_on_a_branch_are_refused_once_the_checkout_left_it() {
    let (dir, repo) = repo_with_a("one\n");
    let root = dir.path();
    let started_on = super::test_git::git(root, &["branch", "--show-current"]);
    repo.check_commits_on(&started_on).expect("on it");

    super::test_git::git(root, &["switch", "-q", "-c", "feature"]);
    let err = repo.check_commits_on(&started_on).expect_err("switched");
    assert!(matches!(err, GitError::OffBranch { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        format!("the run commits on {started_on}, and the checkout is on feature now")
    );

    super::test_git::git(root, &["checkout", "-q", "--detach"]);
    let err = repo.check_commits_on(&started_on).expect_err("detached");
    assert!(err.to_string().contains("HEAD detached at"), "{err}");

    // A merge with conflicts, on the run's own branch.
    super::test_git::git(root, &["switch", "-q", "feature"]);
    fs::write(root.join("a.txt"), "feature\n").expect("write");
    super::test_git::git(root, &["commit", "-q", "-am", "feature"]);
    super::test_git::git(root, &["switch", "-q", &started_on]);
    fs::write(root.join("a.txt"), "main\n").expect("write");
    super::test_git::git(root, &["commit", "-q", "-am", "main"]);
    let merged = std::process::Command::new("git")
        .args(["merge", "-q", "feature"])
        .current_dir(root)
        .output()
        .expect("git merge");
    assert!(!merged.status.success(), "the merge conflicts");
    let err = repo.check_commits_on(&started_on).expect_err("merging");
    assert!(
        matches!(
            err,
            GitError::OperationUnderWay {
                operation: "a merge",
                ..
            }
        ),
        "{err:?}"
    );
}

#[test]
fn a_conflict_a_stash_pop_left_is_not_committed_as_resolved() {
    use super::test_git::git;
    let (dir, repo) = repo_with_a("base\n");
    let root = dir.path();
    let branch = git(root, &["branch", "--show-current"]);
    fs::write(root.join("a.txt"), "stashed\n").expect("write");
    git(root, &["stash", "-q"]);
    fs::write(root.join("a.txt"), "committed\n").expect("write");
    git(root, &["commit", "-q", "-am", "meanwhile"]);
    let popped = std::process::Command::new("git")
        .args(["stash", "pop", "-q"])
        .current_dir(root)
        .output()
        .expect("git stash pop");
    assert!(!popped.status.success(), "the pop conflicts");
    assert_eq!(repo.operation_in_progress(), None, "nothing to finish");

    let err = repo
        .commit_all("work", &GIT, WAIT, HookPolicy::Skip)
        .expect_err("unresolved");
    assert!(
        matches!(&err, GitError::Unmerged { paths } if paths == &["a.txt"]),
        "{err:?}"
    );
    assert_eq!(git(root, &["branch", "--show-current"]), branch);
    assert!(
        git(root, &["ls-files", "--unmerged"]).contains("a.txt"),
        "left as git left it"
    );
    git(root, &["checkout", "--theirs", "--", "a.txt"]);
    git(root, &["add", "a.txt"]);
    repo.commit_all("work", &GIT, WAIT, HookPolicy::Skip)
        .expect("resolved");
    assert_eq!(git(root, &["show", "HEAD:a.txt"]), "stashed");
}

/// An agent in a phase's worktree starts a merge, a cherry-pick or a merge with
/// `--no-commit` and leaves it: a commit there would stage the markers as resolved and
/// drop the merge's second parent, so it is refused, naming the operation and the tree.
#[test]
fn a_commit_in_a_linked_worktree_with_a_merge_half_done_is_refused() {
    use super::test_git::git;
    let (dir, _) = repo_with_a("base\n");
    let root = dir.path();
    git(root, &["switch", "-q", "-c", "other"]);
    fs::write(root.join("a.txt"), "theirs\n").expect("write");
    fs::write(root.join("b.txt"), "theirs\n").expect("write");
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "other"]);
    git(root, &["switch", "-q", "-"]);
    let linked = root.join("linked");
    git(root, &["worktree", "add", "-q", "-b", "phase-2", "linked"]);
    fs::write(linked.join("a.txt"), "mine\n").expect("write");
    git(&linked, &["commit", "-q", "-am", "mine"]);
    let in_linked = Repo::discover(&linked).expect("linked");
    let tried = |how: &[&str]| {
        let tip = git(&linked, &["rev-parse", "HEAD"]);
        let _ = std::process::Command::new("git")
            .args(how)
            .current_dir(&linked)
            .output()
            .expect("git");
        let err = in_linked
            .commit_all("phase done", &GIT, WAIT, HookPolicy::Skip)
            .expect_err("half done");
        assert_eq!(git(&linked, &["rev-parse", "HEAD"]), tip, "{how:?}");
        err.to_string()
    };
    let merge = tried(&["merge", "other"]);
    assert_eq!(
        merge,
        format!(
            "a merge was started in {}, so a commit now would record it half done",
            linked.display()
        )
    );
    git(&linked, &["merge", "--abort"]);
    let pick = tried(&["cherry-pick", "other"]);
    assert!(pick.starts_with("a cherry-pick was started in "), "{pick}");
    git(&linked, &["cherry-pick", "--abort"]);
    fs::write(linked.join("a.txt"), "theirs\n").expect("write");
    git(&linked, &["commit", "-q", "-am", "agree"]);
    let clean = tried(&["merge", "--no-ff", "--no-commit", "other"]);
    assert!(clean.starts_with("a merge was started in "), "{clean}");
}

/// A submodule's changed tracked files are named; files untracked there (build output)
/// are not work a commit of the project could hold either way, and are left out.
#[test]
fn uncommitted_changes_in_a_submodule_are_named_but_not_its_untracked_files() {
    use super::test_git::git;
    let (library, lib_repo) = repo();
    fs::write(library.path().join("lib.txt"), "lib\n").expect("write");
    lib_repo
        .commit_all("library", &GIT, WAIT, HookPolicy::Skip)
        .expect("library");
    let (dir, repo) = repo();
    let root = dir.path();
    let library_path = library.path().display().to_string();
    let args = ["-c", "protocol.file.allow=always", "submodule", "add", "-q"];
    git(
        root,
        &[&args[..], &[library_path.as_str(), "vendor/lib"]].concat(),
    );
    git(root, &["commit", "-qm", "submodule"]);
    assert_eq!(repo.uncommitted_submodules().expect("list"), []);

    fs::write(root.join("vendor/lib/build.o"), "output").expect("write");
    assert_eq!(repo.uncommitted_submodules().expect("list"), []);
    fs::write(root.join("vendor/lib/lib.txt"), "patched\n").expect("write");
    assert_eq!(
        repo.uncommitted_submodules().expect("list"),
        [crate::git::UncommittedSubmodule {
            path: "vendor/lib".to_owned(),
            files: vec!["lib.txt".to_owned()],
        }]
    );
}

/// The run's branch renamed mid-run: switching back to a branch that is gone cannot be
/// the fix, renaming it back is.
#[test]
fn a_run_branch_renamed_mid_run_is_named_with_the_rename_back() {
    let (dir, repo) = repo_with_a("one\n");
    let root = dir.path();
    let started_on = super::test_git::git(root, &["branch", "--show-current"]);
    super::test_git::git(root, &["branch", "-m", "trunk"]);
    let err = repo.check_commits_on(&started_on).expect_err("renamed");
    assert_eq!(
        err.to_string(),
        format!(
            "the run commits on {started_on}, which no longer exists; the checkout is on trunk now"
        )
    );
    let help = miette::Diagnostic::help(&err).expect("help").to_string();
    assert!(
        help.contains(&format!("git branch -m trunk {started_on}")),
        "{help}"
    );
    super::test_git::git(root, &["branch", "-m", &started_on]);
    repo.check_commits_on(&started_on).expect("renamed back");
}
