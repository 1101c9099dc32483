use std::time::{Duration, SystemTime};

use super::*;

#[test]
fn a_lock_older_than_the_run_is_said_to_predate_it() {
    let started = SystemTime::now();
    let before = StaleLock {
        last_written: Some(started - Duration::from_secs(3_600)),
    };
    let text = describe_stale_lock(before, started);
    assert!(text.contains("predates this run"), "{text}");
    let during = StaleLock {
        last_written: Some(started + Duration::from_secs(5)),
    };
    let text = describe_stale_lock(during, started);
    assert!(text.contains("left during this run"), "{text}");
    assert!(!text.contains("agent"), "{text}");
}

#[test]
fn commit_messages_fill_every_placeholder() {
    assert_eq!(
        commit_message(
            "debussy: phase {phase_id} - {phase_name} {status}",
            "2",
            "API",
            "completed"
        ),
        "debussy: phase 2 - API completed"
    );
}

#[tokio::test]
async fn run_data_is_ignored_but_config_is_not() {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = git2::Repository::init(dir.path()).expect("init");
    ignore_run_data(dir.path()).expect("ignore");
    std::fs::write(dir.path().join(".debussy/config.yaml"), "model: opus\n").expect("write");
    std::fs::write(dir.path().join(".debussy/state.db"), "").expect("write");
    std::fs::create_dir_all(dir.path().join(".debussy/runs/r")).expect("mkdir");
    for ignored in [
        ".debussy/state.db",
        ".debussy/runs/r/x.jsonl",
        ".debussy/worktrees/r/1/a.txt",
    ] {
        assert!(
            repo.is_path_ignored(Path::new(ignored)).expect("check"),
            "{ignored}"
        );
    }
    assert!(
        !repo
            .is_path_ignored(Path::new(".debussy/config.yaml"))
            .expect("check")
    );
    assert!(
        !dir.path().join(".debussy/.gitignore").exists(),
        "no file of the project is written"
    );
}

#[test]
fn a_tracked_ignore_file_is_left_as_it_is_and_the_entries_go_to_info_exclude() {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = git2::Repository::init(dir.path()).expect("init");
    std::fs::create_dir_all(dir.path().join(".debussy")).expect("mkdir");
    // Written by a debussy from before phases ran in worktrees, and committed.
    std::fs::write(dir.path().join(".debussy/.gitignore"), "state.db*\nruns/").expect("old");
    ignore_run_data(dir.path()).expect("ignore");
    ignore_run_data(dir.path()).expect("again");
    assert_eq!(
        std::fs::read_to_string(dir.path().join(".debussy/.gitignore")).expect("read"),
        "state.db*\nruns/",
        "the user's file is untouched"
    );
    let exclude = std::fs::read_to_string(dir.path().join(".git/info/exclude")).expect("read");
    assert_eq!(
        exclude.matches("/.debussy/worktrees/").count(),
        1,
        "written once: {exclude}"
    );
    assert!(
        repo.is_path_ignored(Path::new(".debussy/worktrees/r/1/a.txt"))
            .expect("check")
    );
}

#[test]
fn a_project_in_a_subdirectory_of_the_repository_is_anchored_there() {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = git2::Repository::init(dir.path()).expect("init");
    let project = dir.path().join("tools/my [app]");
    std::fs::create_dir_all(&project).expect("mkdir");
    ignore_run_data(&project).expect("ignore");
    assert!(
        repo.is_path_ignored(Path::new("tools/my [app]/.debussy/runs/r/x.jsonl"))
            .expect("check")
    );
    assert!(
        !repo
            .is_path_ignored(Path::new(".debussy/runs/r/x.jsonl"))
            .expect("check"),
        "anchored at the project, not anywhere"
    );
}

#[tokio::test]
async fn a_projects_place_is_its_path_from_the_repositorys_top_level() {
    let dir = tempfile::tempdir().expect("tempdir");
    git2::Repository::init(dir.path()).expect("init");
    let project = dir.path().join("pkg/app");
    std::fs::create_dir_all(&project).expect("mkdir");
    assert_eq!(project_place(project).await, Path::new("pkg/app"));
    assert_eq!(project_place(dir.path().to_path_buf()).await, Path::new(""));
    let outside = tempfile::tempdir().expect("tempdir");
    assert_eq!(
        project_place(outside.path().to_path_buf()).await,
        Path::new(""),
        "outside a repository"
    );
}

#[tokio::test]
async fn preflight_refuses_dirty_and_detached_trees() {
    let dir = tempfile::tempdir().expect("tempdir");
    let raw = git2::Repository::init(dir.path()).expect("init");
    let mut config = raw.config().expect("config");
    config.set_str("user.name", "T").expect("name");
    config
        .set_str("user.email", "t@example.com")
        .expect("email");
    let root = dir.path().to_path_buf();

    assert!(
        preflight(root.clone(), false).await.is_ok(),
        "an unborn branch is fine"
    );
    std::fs::write(root.join("a.txt"), "1").expect("write");
    let git = GitCli::new(Duration::from_secs(60));
    commit_all(root.clone(), "base".into(), git, HookPolicy::Skip, None)
        .await
        .expect("commit");
    std::fs::write(root.join("a.txt"), "2").expect("write");
    let err = preflight(root.clone(), false).await.expect_err("dirty");
    assert!(err.to_string().contains("a.txt"), "{err}");
    assert!(preflight(root.clone(), true).await.is_ok());

    commit_all(root.clone(), "more".into(), git, HookPolicy::Skip, None)
        .await
        .expect("commit");
    let head = raw.head().expect("head").target().expect("oid");
    raw.set_head_detached(head).expect("detach");
    let err = preflight(root, false).await.expect_err("detached");
    assert!(matches!(err, PreflightError::Detached { .. }));
}

#[tokio::test]
async fn what_debussy_left_on_the_branch_must_stay_in_its_history() {
    use super::super::test_git::git;
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    git(root, &["init", "-q"]);
    git(root, &["config", "user.name", "T"]);
    git(root, &["config", "user.email", "t@example.com"]);
    let cli = GitCli::new(Duration::from_secs(60));
    let commit = |message: &str| {
        std::fs::write(root.join(format!("{message}.txt")), message).expect("write");
        git(root, &["add", "-A"]);
        git(root, &["commit", "-q", "-m", message]);
        git2::Oid::from_str(&git(root, &["rev-parse", "HEAD"])).expect("id")
    };
    commit("base");
    let checkpoint = commit("checkpoint");
    let on = OnBranch {
        branch: git(root, &["branch", "--show-current"]),
        after: Some(checkpoint),
    };

    commit("user");
    check_on_branch(root, cli, &on).await.expect("built on");
    git(root, &["reset", "-q", "--hard", "HEAD~1"]);
    git(root, &["commit", "-q", "--amend", "-m", "amended"]);
    check_on_branch(root, cli, &on)
        .await
        .expect("rewritten with its changes");

    git(root, &["reset", "-q", "--hard", "HEAD~1"]);
    let err = check_on_branch(root, cli, &on).await.expect_err("reset");
    let short = &checkpoint.to_string()[..12];
    assert!(
        matches!(&err, GitError::LeftHistory { commit, .. } if commit == short),
        "{err:?}"
    );
}
